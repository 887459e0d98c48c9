"""A campaign's row read back as :class:`CampaignInfo` (``store.campaigns._info``, through
``models.row_info``): every field as the positional reading it replaced gave it."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Engine, select

from monitor.core.catalog import Kind
from monitor.store.campaigns import CampaignInfo, CampaignSpec, _info, create_campaign
from monitor.store.engine import transaction
from monitor.store.migrate import upgrade
from monitor.store.models import Campaign


def _positional(c: Campaign) -> CampaignInfo:
    return CampaignInfo(
        c.id,
        c.name,
        Kind(c.kind),
        c.level,
        c.scale_min,
        c.scale_max,
        tuple(c.categories) if c.categories is not None else None,
        c.open,
        c.strict,
        dict(c.settings or {}),
        c.platform or "none",
        bool(c.archived),
        c.changed_at,
    )


def test_info_is_the_row_field_by_field(engine: Engine) -> None:
    upgrade(engine)
    specs = [
        CampaignSpec("r", Kind.RATING, scale_min=1, scale_max=5, settings={"a": {"seed": 1}}),
        CampaignSpec("l", Kind.LABEL, categories=("x", "y"), platform="toloka"),
        CampaignSpec("m", Kind.MULTILABEL, open=True),
        CampaignSpec("p", Kind.PAIRWISE, strict=True),
    ]
    with transaction(engine) as s:
        made = [create_campaign(s, spec) for spec in specs]
        rows = s.scalars(select(Campaign).order_by(Campaign.id)).all()
        rows[0].archived = True
        rows[1].changed_at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
        s.flush()
        for row in rows:
            info, old = _info(row), _positional(row)
            assert info == old
            assert [type(getattr(info, k)) for k in vars(info)] == [
                type(getattr(old, k)) for k in vars(old)
            ]
    assert made[1] == CampaignInfo(
        made[1].id, "l", Kind.LABEL, "nominal", None, None, ("x", "y"), False, False, {}, "toloka"
    )
