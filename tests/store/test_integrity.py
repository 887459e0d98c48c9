"""Migration 0003 on both backends: dedup keys converted to digests (and back), and the triggers
that replace the foreign keys of judgments and preferences (checks per campaign, cascades)."""

from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import Engine, delete, func, select, text, update
from sqlalchemy.exc import IntegrityError

from monitor.store.engine import make_engine, transaction
from monitor.store.migrate import alembic_config, upgrade
from monitor.store.models import (
    Campaign,
    Item,
    Judgment,
    JudgmentAnnotation,
    Preference,
    Worker,
    dedup_digest,
)


def test_dedup_keys_become_digests_and_back(empty_db_url: str) -> None:
    engine = make_engine(empty_db_url)
    upgrade(engine, "0002")
    with engine.begin() as c:
        c.execute(
            text(
                "INSERT INTO campaigns (id, name, kind, level, open, strict, settings, created_at)"
                " VALUES (1, 'c', 'rating', 'interval', false, false, '{}', CURRENT_TIMESTAMP)"
            )
        )
        c.execute(text("INSERT INTO workers VALUES (1, 1, 'w', 'ok', 1.0, NULL)"))
        c.execute(text("INSERT INTO items VALUES (1, 1, 'i', NULL, NULL), (2, 1, 'k', NULL, NULL)"))
        c.execute(
            text(
                "INSERT INTO judgments (id, campaign_id, worker_id, item_id, value_num,"
                " dedup_key, external_id) VALUES (1, 1, 1, 1, 3, 'id:j1', 'j1'),"
                " (2, 1, 1, 2, 4, 'sha256:ab', NULL)"
            )
        )
        c.execute(
            text(
                "INSERT INTO preferences (id, campaign_id, worker_id, left_item_id,"
                " right_item_id, outcome, dedup_key) VALUES (1, 1, 1, 1, 2, 'tie', 'sha256:cd')"
            )
        )
    upgrade(engine)
    with engine.connect() as c:
        keys = [bytes(k) for k in c.scalars(select(Judgment.dedup_key).order_by(Judgment.id))]
        assert keys == [dedup_digest("id:j1"), dedup_digest("sha256:ab")]
        assert bytes(c.scalar(select(Preference.dedup_key))) == dedup_digest("sha256:cd")
    command.downgrade(alembic_config(engine), "0002")
    with engine.connect() as c:
        keys = c.scalars(text("SELECT dedup_key FROM judgments ORDER BY id")).all()
        assert keys == ["id:j1", "digest:" + dedup_digest("sha256:ab").hex()]
    upgrade(engine)
    with engine.connect() as c:  # an id key survives the round trip exactly
        assert bytes(
            c.scalar(select(Judgment.dedup_key).order_by(Judgment.id).limit(1))
        ) == dedup_digest("id:j1")
    engine.dispose()


def _two_campaigns(engine: Engine) -> dict[str, int]:
    with transaction(engine) as s:
        ids: dict[str, int] = {}
        for name in ("a", "b"):
            c = Campaign(name=name, kind="rating", level="interval", scale_min=1, scale_max=5)
            s.add(c)
            s.flush()
            w = Worker(campaign_id=c.id, external_id="w")
            i = Item(campaign_id=c.id, external_id="i")
            i2 = Item(campaign_id=c.id, external_id="i2")
            s.add_all([w, i, i2])
            s.flush()
            ids |= {name: c.id, f"{name}w": w.id, f"{name}i": i.id, f"{name}i2": i2.id}
    return ids


def test_references_must_be_of_the_row_campaign(engine: Engine) -> None:
    ids = _two_campaigns(engine)
    a, aw, ai, ai2, bw, bi = (ids[k] for k in ("a", "aw", "ai", "ai2", "bw", "bi"))
    bad = [
        Judgment(campaign_id=a, worker_id=bw, item_id=ai, dedup_key="1"),  # b's worker
        Judgment(campaign_id=a, worker_id=aw, item_id=bi, dedup_key="2"),  # b's item
        Judgment(campaign_id=a, worker_id=aw, item_id=ai + 999, dedup_key="3"),  # no item
        Preference(
            campaign_id=a,
            worker_id=aw,
            left_item_id=ai,
            right_item_id=bi,
            outcome="left",
            dedup_key="4",
        ),
    ]
    for row in bad:
        with pytest.raises(IntegrityError), transaction(engine) as s:
            s.add(row)
    with transaction(engine) as s:
        s.add(Judgment(campaign_id=a, worker_id=aw, item_id=ai, dedup_key="ok"))
        s.add(
            Preference(
                campaign_id=a,
                worker_id=aw,
                left_item_id=ai,
                right_item_id=ai2,
                outcome="tie",
                dedup_key="ok",
            )
        )
    with pytest.raises(IntegrityError), transaction(engine) as s:
        s.execute(update(Judgment).values(worker_id=bw))


def _counts(engine: Engine) -> tuple[int, int, int]:
    with engine.connect() as c:
        return tuple(  # type: ignore[return-value]
            int(c.scalar(select(func.count()).select_from(m)) or 0)
            for m in (Judgment, Preference, JudgmentAnnotation)
        )


def test_deletes_cascade_to_judgments_and_preferences(engine: Engine) -> None:
    ids = _two_campaigns(engine)
    with transaction(engine) as s:
        for name in ("a", "b"):
            c, w, i, i2 = (ids[name + k] for k in ("", "w", "i", "i2"))
            j1 = Judgment(campaign_id=c, worker_id=w, item_id=i, dedup_key="1")
            j2 = Judgment(campaign_id=c, worker_id=w, item_id=i2, dedup_key="2")
            s.add_all([j1, j2])
            s.flush()
            s.add(JudgmentAnnotation(judgment_id=j1.id, annotation="x", count=1))
            s.add(
                Preference(
                    campaign_id=c,
                    worker_id=w,
                    left_item_id=i2,
                    right_item_id=i,
                    outcome="left",
                    dedup_key="p",
                )
            )
    assert _counts(engine) == (4, 2, 2)
    with transaction(engine) as s:  # an item: its judgments, and preferences on either side
        s.execute(delete(Item).where(Item.id == ids["ai"]))
    assert _counts(engine) == (3, 1, 1)
    with transaction(engine) as s:  # a worker: all of its rows
        s.execute(delete(Worker).where(Worker.id == ids["aw"]))
    assert _counts(engine) == (2, 1, 1)
    with transaction(engine) as s:  # a campaign: everything of it, nothing of the other
        s.execute(delete(Campaign).where(Campaign.id == ids["b"]))
    assert _counts(engine) == (0, 0, 0)
