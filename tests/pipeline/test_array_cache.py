"""Arrays kept between runs: extended with what arrived they equal a fresh load; anything that
changed below the watermark makes the next load start afresh."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import Engine, delete, func, insert, select, update

from monitor.incremental.arrays import ArrayCache
from monitor.store.arrays import CampaignArrays, load_arrays
from monitor.store.campaigns import get_campaign
from monitor.store.engine import transaction
from monitor.store.models import Campaign, Judgment
from tests.golden import GOLDEN, load
from tests.pipeline.cases import store_case


def assert_same(got: CampaignArrays, want: CampaignArrays) -> None:
    for f in dataclasses.fields(CampaignArrays):
        if f.name == "pairs":  # a memo, compared through ``latest`` below
            continue
        a, b = getattr(got, f.name), getattr(want, f.name)
        if isinstance(b, np.ndarray) and b.dtype != object:
            np.testing.assert_array_equal(a, b, err_msg=f.name)
            assert a.dtype == b.dtype, f.name
        elif isinstance(b, np.ndarray):
            assert a.tolist() == b.tolist(), f.name
        else:
            assert a == b, f.name
    if want.kind in ("rating", "label"):
        np.testing.assert_array_equal(got.latest, want.latest)


def _load(engine: Engine, cache: ArrayCache, *, full: bool = False) -> CampaignArrays:
    with transaction(engine) as s:
        info = get_campaign(s, "golden")
        top = s.scalar(select(func.max(Judgment.id)).where(Judgment.campaign_id == info.id))
        return cache.load(s, info, int(top or 0), full=full)


def _fresh(engine: Engine) -> CampaignArrays:
    with transaction(engine) as s:
        return load_arrays(s, get_campaign(s, "golden"))


@pytest.mark.parametrize(
    "case",
    [
        "rating_medium.json",
        "label_small_complete_3.json",
        "ct_closed_small.json",
        "ct_open_small.json",
    ],
)
def test_kept_arrays_extended_equal_a_fresh_load(engine: Engine, tmp_path: Path, case: str) -> None:
    data = load(GOLDEN / "cases" / case)
    n = len(data["judgments"])
    cuts = [n // 2, 3 * n // 4, n]
    store_case(engine, data, upto=cuts[0])
    cache = ArrayCache(tmp_path)
    assert_same(_load(engine, cache), _fresh(engine))
    assert cache.source == "database"
    store_case(engine, data, upto=cuts[1], start=cuts[0])
    assert_same(_load(engine, cache), _fresh(engine))
    # Open multi-label sets: a new annotation name has no code yet, so the load starts afresh.
    open_set = case.startswith("ct_open")
    assert cache.source == ("database" if open_set else "memory")
    store_case(engine, data, upto=cuts[2], start=cuts[1])
    cold = ArrayCache(tmp_path, memory=False)  # a new process: the snapshot of the first load
    arrays = _load(engine, cold)
    if data["kind"] in ("rating", "label"):  # brought up to date from the snapshot's pairs
        assert arrays.pairs.rising is not None
    assert_same(arrays, _fresh(engine))
    assert cold.source == ("database" if open_set else "snapshot")
    assert_same(_load(engine, ArrayCache(None, memory=False)), _fresh(engine))
    assert_same(_load(engine, cache, full=True), _fresh(engine))


def _cid(engine: Engine) -> int:
    with transaction(engine) as s:
        return int(s.scalar(select(Campaign.id).where(Campaign.name == "golden")))


def _copy(engine: Engine, judgment_id: int, new_id: int | None = None) -> None:
    """A copy of one judgment (with an explicit id: one committed late, below the newest)."""
    with transaction(engine) as s:
        j = s.get_one(Judgment, judgment_id)
        row = {
            "campaign_id": j.campaign_id,
            "worker_id": j.worker_id,
            "item_id": j.item_id,
            "value_num": j.value_num,
            "dedup_key": f"late{judgment_id}",
        }
        if new_id is not None:
            row["id"] = new_id
        s.execute(insert(Judgment), [row])


@pytest.mark.parametrize("change", ["delete", "late", "delete_and_late", "edit_gold"])
def test_a_change_below_the_watermark_loads_afresh(
    engine: Engine, tmp_path: Path, change: str
) -> None:
    data = load(GOLDEN / "cases" / "rating_medium.json")
    store_case(engine, data, upto=2000)
    cid = _cid(engine)
    with transaction(engine) as s:  # leave a gap for a late commit
        gap = int(s.scalar(select(func.min(Judgment.id)).where(Judgment.campaign_id == cid))) + 7
        s.execute(delete(Judgment).where(Judgment.id == gap))
    cache = ArrayCache(tmp_path)
    _load(engine, cache)
    store_case(engine, data, upto=2100, start=2000)
    if change in ("delete", "delete_and_late"):
        with transaction(engine) as s:
            s.execute(delete(Judgment).where(Judgment.id == gap + 20))
    if change in ("late", "delete_and_late"):
        _copy(engine, gap + 1, new_id=gap)
    if change == "edit_gold":
        from monitor.store.models import Item

        with transaction(engine) as s:
            first = s.scalar(select(func.min(Item.id)).where(Item.campaign_id == cid))
            s.execute(update(Item).where(Item.id == first).values(gold="3"))
    got = _load(engine, cache)
    assert_same(got, _fresh(engine))
    assert cache.source == ("memory" if change == "edit_gold" else "database")


def test_a_snapshot_of_another_schema_or_format_is_not_used(engine: Engine, tmp_path: Path) -> None:
    from monitor.incremental import arrays as array_cache

    data = load(GOLDEN / "cases" / "rating_small_complete.json")
    store_case(engine, data)
    _load(engine, ArrayCache(tmp_path))
    cold = ArrayCache(tmp_path, memory=False)
    _load(engine, cold)
    assert cold.source == "snapshot"
    old = array_cache.FORMAT
    array_cache.FORMAT = old + 1
    try:
        _load(engine, cold)
        assert cold.source == "database"
    finally:
        array_cache.FORMAT = old
    [snap] = tmp_path.glob("*.npz")
    snap.write_bytes(b"not a snapshot")
    assert_same(_load(engine, cold), _fresh(engine))
    assert cold.source == "database"


def test_a_campaign_that_took_the_id_of_another_is_loaded_afresh(
    engine: Engine, tmp_path: Path
) -> None:
    """Emptied and filled again (or restored): same campaign id, same judgment ids and count,
    other data. The kept copy must not be used."""
    from tests.conftest import _truncate

    cache = ArrayCache(tmp_path)
    store_case(engine, load(GOLDEN / "cases" / "rating_small_complete.json"))
    first = _load(engine, cache)
    with transaction(engine) as s:
        cid = _cid(engine)
        s.execute(delete(Campaign).where(Campaign.id == cid))
    if engine.dialect.name == "postgresql":
        _truncate(engine)  # ids start again at 1, as after a restore
    other = load(GOLDEN / "cases" / "rating_small_complete.json")
    other["judgments"] = [{**j, "value": (j["value"] % 5) + 1} for j in other["judgments"]]
    store_case(engine, other)
    got = _load(engine, cache)
    assert cache.source == "database"
    assert_same(got, _fresh(engine))
    assert not np.array_equal(got.values, first.values)


def test_a_snapshot_extended_by_a_few_is_not_written_again(engine: Engine, tmp_path: Path) -> None:
    from monitor.incremental.arrays import REWRITE_SHARE

    data = load(GOLDEN / "cases" / "rating_medium.json")
    first = 2000
    few = int(first * REWRITE_SHARE) // 2
    store_case(engine, data, upto=first)
    _load(engine, ArrayCache(tmp_path, memory=False))
    [snap] = tmp_path.glob("*.npz")
    written = snap.read_bytes()
    store_case(engine, data, upto=first + few, start=first)
    cold = ArrayCache(tmp_path, memory=False)
    assert_same(_load(engine, cold), _fresh(engine))
    assert cold.source == "snapshot"
    assert snap.read_bytes() == written  # the next run reads those few again
    store_case(engine, data, upto=first + 3 * few, start=first + few)
    cold = ArrayCache(tmp_path, memory=False)
    assert_same(_load(engine, cold), _fresh(engine))
    assert cold.source == "snapshot"
    assert snap.read_bytes() != written  # more than the share: written again
    store_case(engine, data, upto=first + 4 * few, start=first + 3 * few)
    cold = ArrayCache(tmp_path, memory=False)
    assert_same(_load(engine, cold), _fresh(engine))
    assert cold.source == "snapshot"
