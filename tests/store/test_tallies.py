"""A campaign's counts: on PostgreSQL the judgments' number and id sum, and the numbers of
workers and items, come from the tallies the triggers keep, and they must be what a scan gives
after anything a statement can do to them (bulk ingest, a late commit below the newest id,
updates, deletes, a cascade from a deleted item or worker, another campaign's changes, a
deleted campaign, TRUNCATE)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy import Engine, delete, func, insert, select, text, update

from monitor.store.campaigns import CampaignCounts, campaign_counts, get_campaign
from monitor.store.engine import transaction
from monitor.store.models import Campaign, Item, Judgment, JudgmentTally, MemberTally, Worker
from tests.golden import GOLDEN, load
from tests.pipeline.cases import store_case


def _scanned(engine: Engine, campaign_id: int) -> tuple[int, ...]:
    with transaction(engine) as s:
        n, top, total = s.execute(
            select(
                func.count(Judgment.id),
                func.coalesce(func.max(Judgment.id), 0),
                func.coalesce(func.sum(Judgment.id), 0),
            ).where(Judgment.campaign_id == campaign_id)
        ).one()
        workers, items = (
            s.scalar(select(func.count(t.id)).where(t.campaign_id == campaign_id))
            for t in (Worker, Item)
        )
    return int(n), int(top), int(total), int(workers), int(items)


def _counted(engine: Engine, name: str) -> CampaignCounts:
    with transaction(engine) as s:
        return campaign_counts(s, get_campaign(s, name))


def _agree(engine: Engine, name: str = "golden") -> None:
    with transaction(engine) as s:
        cid = get_campaign(s, name).id
    got = _counted(engine, name)
    counted = (got.n_judgments, got.max_id, got.id_sum, got.n_workers, got.n_items)
    assert counted == _scanned(engine, cid)
    assert got.n_workers > 0
    assert got.n_items > 0


def _late(engine: Engine, cid: int) -> None:
    """A judgment committed after one with a larger id (a commit that came late)."""
    with transaction(engine) as s:
        top = int(s.scalar(select(func.max(Judgment.id))))
        j = s.get_one(Judgment, s.scalar(select(func.min(Judgment.id))))
        for k, new_id in enumerate((top + 10, top + 5)):
            row = {"id": new_id, "campaign_id": cid, "worker_id": j.worker_id,
                   "item_id": j.item_id, "value_num": j.value_num,
                   "dedup_key": f"late-commit-{k}...".encode()}  # fmt: skip
            s.execute(insert(Judgment), [row])


def _delete_some(engine: Engine, cid: int) -> None:
    with transaction(engine) as s:
        ids = s.scalars(select(Judgment.id).where(Judgment.campaign_id == cid)).all()
        s.execute(delete(Judgment).where(Judgment.id.in_(ids[3:40:3])))


def _update(engine: Engine, cid: int) -> None:
    with transaction(engine) as s:
        s.execute(update(Judgment).where(Judgment.campaign_id == cid).values(value_num=3.0))


def _delete_item(engine: Engine, cid: int) -> None:
    with transaction(engine) as s:
        first = s.scalar(select(func.min(Item.id)).where(Item.campaign_id == cid))
        s.execute(delete(Item).where(Item.id == first))


def _delete_worker(engine: Engine, cid: int) -> None:
    with transaction(engine) as s:
        last = s.scalar(select(func.max(Worker.id)).where(Worker.campaign_id == cid))
        s.execute(delete(Worker).where(Worker.id == last))


@pytest.mark.parametrize(
    "change",
    [_late, _delete_some, _update, _delete_item, _delete_worker],
    ids=["late", "delete", "update", "item_deleted", "worker_deleted"],
)
def test_counts_are_those_of_a_scan(engine: Engine, change: Callable[[Engine, int], None]) -> None:
    data = load(GOLDEN / "cases" / "rating_medium.json")
    store_case(engine, data, upto=1500)
    _agree(engine)
    store_case(engine, data, "other", upto=700)  # another campaign's judgments do not count
    store_case(engine, data, upto=2500, start=1500)
    _agree(engine)
    with transaction(engine) as s:
        cid = get_campaign(s, "golden").id
    change(engine, cid)
    _agree(engine)
    _agree(engine, "other")


def test_a_deleted_campaign_leaves_no_tallies(engine: Engine) -> None:
    data = load(GOLDEN / "cases" / "rating_medium.json")
    store_case(engine, data, upto=500)
    with transaction(engine) as s:
        s.execute(delete(Campaign).where(Campaign.name == "golden"))
    with transaction(engine) as s:
        assert s.scalar(select(func.count()).select_from(JudgmentTally)) == 0
        assert s.scalar(select(func.count()).select_from(MemberTally)) == 0


def test_truncate_clears_the_tallies(engine: Engine) -> None:
    if engine.dialect.name != "postgresql":
        pytest.skip("the tallies are kept on PostgreSQL")
    data = load(GOLDEN / "cases" / "rating_medium.json")
    store_case(engine, data, upto=500)
    with transaction(engine) as s:
        assert s.scalar(select(func.count()).select_from(JudgmentTally)) > 0
        s.execute(text("TRUNCATE judgments CASCADE"))
    _agree(engine)
    store_case(engine, data, upto=800, start=500)
    _agree(engine)
    with transaction(engine) as s:
        s.execute(text("TRUNCATE judgments, workers, items CASCADE"))
        got = campaign_counts(s, get_campaign(s, "golden"))
        assert (got.n_workers, got.n_items, got.n_judgments) == (0, 0, 0)
    store_case(engine, data, upto=300)
    _agree(engine)
