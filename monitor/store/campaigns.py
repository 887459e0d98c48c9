"""Campaigns: create, find, describe (plain dataclasses, never ORM rows)."""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, Text, delete, func, select, text
from sqlalchemy.dialects.postgresql import aggregate_order_by
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from monitor.core.catalog import Kind
from monitor.core.errors import NotFound, UsageError
from monitor.store.models import (
    Campaign,
    Item,
    Judgment,
    JudgmentAnnotation,
    JudgmentTally,
    MemberTally,
    Preference,
    Worker,
    row_info,
)

SCALE_LIMIT = 1e60
"""The largest ``|--min|`` and ``|--max|`` of a rating scale. The measures square the ratings
and multiply sums of squares (a correlation's ``sxx * syy``): fourth powers of the width, at
most 1.6e241 here, leave a factor of 1e67 for the counts before a double overflows (1.8e308,
as a ±1e308 or a ±1e100 scale did). A wider scale is refused at creation rather than a run
failing on overflow."""


@dataclass(frozen=True)
class CampaignSpec:
    """What defines a campaign (CONTRACT.md section 1)."""

    name: str
    kind: Kind
    level: str | None = None
    scale_min: float | None = None
    scale_max: float | None = None
    categories: tuple[str, ...] | None = None
    open: bool = False
    strict: bool = False
    settings: dict[str, Any] = field(default_factory=dict)
    platform: str | None = None

    def validated(self) -> CampaignSpec:
        """The spec with its default level, or UsageError naming the option that is wrong."""
        level = self.level
        if not self.name or len(self.name) > 200:
            raise UsageError("a campaign name has 1 to 200 characters")
        if self.kind == Kind.RATING:
            if self.scale_min is None or self.scale_max is None:
                raise UsageError(
                    "a rating campaign needs --min and --max", hint="e.g. --min 1 --max 5"
                )
            if not self.scale_min < self.scale_max:
                raise UsageError(f"--min {self.scale_min} must be below --max {self.scale_max}")
            if max(abs(self.scale_min), abs(self.scale_max)) > SCALE_LIMIT:
                raise UsageError(
                    f"--min {self.scale_min:g} --max {self.scale_max:g}: a rating scale must lie "
                    f"within ±{SCALE_LIMIT:g} (the measures' sums of squared ratings must "
                    "fit a double)",
                    hint="rescale the ratings (e.g. into thousands or millions)",
                )
            level = level or "interval"
            if level not in ("ordinal", "interval", "ratio"):
                raise UsageError(
                    f"--level {level}: a rating campaign is ordinal, interval or ratio"
                )
            if level == "ratio" and self.scale_min < 0:
                raise UsageError("--level ratio needs a scale that starts at 0 or above")
        elif self.kind == Kind.LABEL:
            level = level or "nominal"
            if level not in ("nominal", "ordinal"):
                raise UsageError(f"--level {level}: a label campaign is nominal or ordinal")
            if level == "ordinal" and not self.categories:
                raise UsageError("--level ordinal needs the ordered --categories")
        elif self.kind == Kind.MULTILABEL:
            level = "nominal"
            if self.open == bool(self.categories):
                raise UsageError(
                    "a multilabel campaign is either closed (--options a,b,c) or --open",
                    hint="give exactly one of --options and --open",
                )
        elif self.kind == Kind.PAIRWISE:
            level = "nominal"
        else:
            raise UsageError(
                f"unknown kind {self.kind!r}", hint="rating, label, multilabel or pairwise"
            )
        if self.categories is not None and len(set(self.categories)) != len(self.categories):
            raise UsageError("the categories or options contain duplicates")
        if self.platform is not None and not (0 < len(self.platform) <= 32):
            raise UsageError("a platform name has 1 to 32 characters", hint="e.g. --platform mturk")
        return CampaignSpec(
            self.name,
            Kind(self.kind),
            level,
            self.scale_min,
            self.scale_max,
            self.categories,
            self.open,
            self.strict,
            dict(self.settings),
            self.platform,
        )


@dataclass(frozen=True)
class CampaignInfo:
    id: int
    name: str
    kind: Kind
    level: str
    scale_min: float | None
    scale_max: float | None
    categories: tuple[str, ...] | None
    open: bool
    strict: bool
    settings: dict[str, Any]
    platform: str = "none"
    archived: bool = False
    changed_at: datetime | None = None
    """When judgments were last taken out (``monitor ingest undo``): a run started before it
    cannot be extended."""

    @property
    def own_settings(self) -> dict[str, Any]:
        """The settings given to this campaign alone (``monitor campaign set``)."""
        return dict(self.settings.get(OWN_SETTINGS) or {})


OWN_SETTINGS = "own"
"""The key of ``Campaign.settings`` that holds the campaign's own settings."""


def _info(c: Campaign) -> CampaignInfo:
    return row_info(
        CampaignInfo,
        c,
        kind=Kind(c.kind),
        categories=tuple(c.categories) if c.categories is not None else None,
        settings=dict(c.settings or {}),
        platform=c.platform or "none",
        archived=bool(c.archived),
    )


def create_campaign(session: Session, spec: CampaignSpec) -> CampaignInfo:
    spec = spec.validated()
    row = Campaign(
        name=spec.name,
        kind=spec.kind,
        level=spec.level,
        scale_min=spec.scale_min,
        scale_max=spec.scale_max,
        open=spec.open,
        strict=spec.strict,
        settings=spec.settings,
        categories=list(spec.categories) if spec.categories is not None else None,
        platform=spec.platform or "none",
    )
    session.add(row)
    try:
        session.flush()
    except IntegrityError:
        raise UsageError(f"a campaign named {spec.name!r} exists already") from None
    return _info(row)


def get_campaign(session: Session, name: str) -> CampaignInfo:
    row = session.scalars(select(Campaign).where(Campaign.name == name)).one_or_none()
    if row is None:
        names = session.scalars(select(Campaign.name).order_by(Campaign.name)).all()
        hint = f"campaigns: {', '.join(names)}" if names else "create one: monitor campaign create"
        raise NotFound(f"no campaign named {name!r}", hint=hint)
    return _info(row)


def list_campaigns(session: Session, *, archived: bool = False) -> list[CampaignInfo]:
    """The campaigns by name; the archived ones only with ``archived`` (the runs over every
    campaign and the index of reports leave them out)."""
    q = select(Campaign).order_by(Campaign.name)
    if not archived:
        q = q.where(Campaign.archived.is_(False))
    return [_info(c) for c in session.scalars(q)]


def rename_campaign(session: Session, name: str, new_name: str) -> CampaignInfo:
    """Give a campaign another name (its id, data and runs stay); UsageError when the new name
    is taken or not a name."""
    info = get_campaign(session, name)
    if not new_name or len(new_name) > 200:
        raise UsageError("a campaign name has 1 to 200 characters")
    if new_name != name and session.scalar(select(Campaign.id).where(Campaign.name == new_name)):
        raise UsageError(f"a campaign named {new_name!r} exists already")
    session.get_one(Campaign, info.id).name = new_name
    session.flush()
    return get_campaign(session, new_name)


def set_archived(session: Session, name: str, archived: bool) -> bool:
    """Archive or unarchive a campaign; False when it was so already."""
    row = session.get_one(Campaign, get_campaign(session, name).id)
    if row.archived == archived:
        return False
    row.archived = archived
    return True


def delete_campaign(session: Session, info: CampaignInfo) -> None:
    """Delete a campaign with everything it holds: workers, items, judgments, batches, runs,
    decisions, plans (the foreign keys and the triggers of migration 0003 cascade)."""
    session.execute(delete(Campaign).where(Campaign.id == info.id))


def set_own_settings(session: Session, campaign_id: int, changes: dict[str, Any]) -> dict[str, Any]:
    """Set (a value) or drop (None) the campaign's own settings; returns them all. The values
    are checked by the caller (:func:`monitor.core.settings.campaign_value`)."""
    row = session.get_one(Campaign, campaign_id)
    settings = dict(row.settings or {})
    own = dict(settings.get(OWN_SETTINGS) or {})
    for key, value in changes.items():
        if value is None:
            own.pop(key, None)
        else:
            own[key] = value
    if own:
        settings[OWN_SETTINGS] = dict(sorted(own.items()))
    else:
        settings.pop(OWN_SETTINGS, None)
    row.settings = settings
    return own


def changed_at(session: Session, campaign_id: int) -> datetime | None:
    """When judgments were last taken out of the campaign (``monitor ingest undo``)."""
    return session.scalar(select(Campaign.changed_at).where(Campaign.id == campaign_id))


def set_categories(session: Session, campaign_id: int, categories: list[str]) -> None:
    """Record the categories found in the data (label campaigns created without them)."""
    session.get_one(Campaign, campaign_id).categories = categories


@dataclass(frozen=True)
class CampaignCounts:
    n_workers: int
    n_items: int
    n_judgments: int
    max_id: int
    id_sum: int = 0
    """The sum of the judgment ids (with the count, what tells an extension of kept arrays
    from a set that changed below the watermark)."""


def newest_judgment_id(session: Session, campaign: CampaignInfo) -> int:
    """The id of the campaign's newest judgment (0 without any): what a run's watermark is
    compared with, read from the index alone."""
    table = Preference if campaign.kind == Kind.PAIRWISE else Judgment
    top = session.scalar(select(func.max(table.id)).where(table.campaign_id == campaign.id))
    return int(top or 0)


def campaign_counts(session: Session, campaign: CampaignInfo) -> CampaignCounts:
    """The campaign's numbers of workers, items and judgments, with the newest judgment id and
    the sum of the ids. On PostgreSQL the numbers and the sum come from the tallies the
    triggers keep (:class:`~monitor.store.models.JudgmentTally`,
    :class:`~monitor.store.models.MemberTally`), the newest id from the index: no scan."""
    table = Preference if campaign.kind == Kind.PAIRWISE else Judgment
    if session.get_bind().dialect.name == "postgresql":
        n_workers, n_items = session.execute(
            select(
                func.coalesce(func.sum(MemberTally.workers), 0),
                func.coalesce(func.sum(MemberTally.items), 0),
            ).where(MemberTally.campaign_id == campaign.id)
        ).one()
    else:
        n_workers = (
            session.scalar(select(func.count(Worker.id)).where(Worker.campaign_id == campaign.id))
            or 0
        )
        n_items = (
            session.scalar(select(func.count(Item.id)).where(Item.campaign_id == campaign.id)) or 0
        )
    if table is Judgment and session.get_bind().dialect.name == "postgresql":
        n, total = session.execute(
            select(
                func.coalesce(func.sum(JudgmentTally.n), 0),
                func.coalesce(func.sum(JudgmentTally.id_sum), 0),
            ).where(JudgmentTally.campaign_id == campaign.id)
        ).one()
        top = newest_judgment_id(session, campaign)
    else:
        n, top, total = session.execute(
            select(
                func.count(table.id),
                func.coalesce(func.max(table.id), 0),
                func.coalesce(func.sum(table.id), 0),
            ).where(table.campaign_id == campaign.id)
        ).one()
    return CampaignCounts(int(n_workers or 0), int(n_items or 0), int(n), int(top), int(total))


def item_ids(session: Session, campaign_id: int) -> list[str]:
    """The external ids of a campaign's items, in the order they were stored. PostgreSQL sends
    them as one JSON array (no row objects: two to three times faster at 200,000)."""
    if session.get_bind().dialect.name == "postgresql":
        names = session.scalar(
            select(func.json_agg(aggregate_order_by(Item.external_id, Item.id)).cast(Text)).where(
                Item.campaign_id == campaign_id
            )
        )
        return [] if names is None else json.loads(names)
    q = select(Item.external_id).where(Item.campaign_id == campaign_id).order_by(Item.id)
    return list(session.scalars(q))


ItemText = tuple[str, str | None, str | None]


def item_texts(
    session: Session, campaign_id: int, ids: Collection[str] | None = None
) -> list[ItemText]:
    """(external id, text, gold) of a campaign's items that have a text or a gold value: all
    of them, or those of ``ids``."""
    q = select(Item.external_id, Item.text, Item.gold).where(
        Item.campaign_id == campaign_id, Item.text.is_not(None) | Item.gold.is_not(None)
    )
    if ids is None:
        return [(e, t, g) for e, t, g in session.execute(q.order_by(Item.id))]
    wanted = sorted(set(ids))
    out: list[ItemText] = []
    for lo in range(0, len(wanted), 500):  # bounded IN lists (SQLite's parameter limit)
        part = q.where(Item.external_id.in_(wanted[lo : lo + 500]))
        out.extend((e, t, g) for e, t, g in session.execute(part))
    return out


def set_platform_if_unknown(session: Session, campaign_id: int, platform: str) -> bool:
    """Record where a campaign's workers come from, unless it is known already (the first
    platform-format ingest decides; ``campaign create --platform`` before it). True if set."""
    row = session.get_one(Campaign, campaign_id)
    if (row.platform or "none") != "none":
        return False
    row.platform = platform
    return True


def add_data_categories(session: Session, campaign_id: int, labels: list[str]) -> list[str]:
    """Append labels found in the data to a label campaign created without ``--categories``.

    Known categories keep their place (and code); the new ones follow in sorted order. The
    campaign is marked ``settings["categories_from_data"]`` so later files may add more.
    Returns the categories now recorded.
    """
    row = session.get_one(Campaign, campaign_id)
    have = list(row.categories or [])
    known = set(have)
    new = sorted({label for label in labels if label not in known})
    categories = have + new
    if new or row.categories is None:
        set_categories(session, campaign_id, categories)
    if not (row.settings or {}).get("categories_from_data"):
        row.settings = {**(row.settings or {}), "categories_from_data": True}
    return categories


STATISTICS_AFTER = 10_000
"""A load of at least this many rows, and a tenth of what the table held, refreshes the
planner's statistics (PostgreSQL)."""


def refresh_statistics(engine: Engine, kind: str, n_new: int) -> None:
    """``ANALYZE`` the judgment tables after a large load on PostgreSQL. The planner's
    estimates otherwise still describe the table before the load (a campaign's first million
    judgments estimated at a few hundred rows), and until autovacuum runs, the queries a
    recompute makes right after the load (count, new judgments) take a bitmap scan over every
    heap page instead of the plan the data calls for."""
    if engine.dialect.name != "postgresql" or n_new < STATISTICS_AFTER:
        return
    tables = [Preference.__tablename__] if kind == Kind.PAIRWISE else [Judgment.__tablename__]
    if kind == Kind.MULTILABEL:
        tables.append(JudgmentAnnotation.__tablename__)
    with engine.connect() as c:
        held = c.execute(
            text("SELECT reltuples FROM pg_class WHERE oid = to_regclass(:t)"), {"t": tables[0]}
        ).scalar()
        if held is not None and float(held) > 0 and n_new < 0.1 * float(held):
            return
        for table in tables:  # names of our own tables, never input
            c.execute(text(f"ANALYZE {table}"))
        c.commit()
