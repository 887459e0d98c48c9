"""Loading a campaign's judgments as arrays: the same numbers on both backends."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import Engine, select, update

from monitor.store import arrays as arrays_module
from monitor.store.arrays import (
    CampaignArrays,
    _judgment_numbers,
    carry_latest,
    latest_per_pair,
    load_arrays,
)
from monitor.store.campaigns import get_campaign
from monitor.store.engine import transaction
from monitor.store.models import Judgment
from tests.golden import GOLDEN, load
from tests.pipeline.cases import store_case


@pytest.mark.parametrize("batch", [100_000, 7])
def test_numbers_match_the_rows(
    engine: Engine, batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On SQLite also when the rows come a few at a time (``SQLITE_BATCH``)."""
    monkeypatch.setattr(arrays_module, "SQLITE_BATCH", batch)
    store_case(engine, load(GOLDEN / "cases" / "rating_small_complete.json"))
    with transaction(engine) as s:
        s.execute(update(Judgment).where(Judgment.id % 3 == 0).values(duration_s=2.5))
        s.execute(update(Judgment).where(Judgment.id % 4 == 0).values(created_at=None))
        s.execute(update(Judgment).where(Judgment.id % 5 == 0).values(value_num=None))
    with transaction(engine) as s:
        cid = get_campaign(s, "golden").id
        rows = s.execute(
            select(
                Judgment.id,
                Judgment.worker_id,
                Judgment.item_id,
                Judgment.value_num,
                Judgment.duration_s,
                Judgment.created_at,
            ).order_by(Judgment.id)
        ).all()
        watermark = rows[-3][0]
        got = _judgment_numbers(s, cid, watermark)
        everything = _judgment_numbers(s, cid, None)
    rows = rows[:-2]
    assert everything["id"].size == got["id"].size + 2
    assert got["id"].tolist() == [r[0] for r in rows]
    assert got["worker"].tolist() == [r[1] for r in rows]
    assert got["item"].tolist() == [r[2] for r in rows]
    nan = float("nan")
    expect = {
        "value": [nan if r[3] is None else r[3] for r in rows],
        "duration": [nan if r[4] is None else r[4] for r in rows],
        "epoch": [nan if r[5] is None else r[5].timestamp() for r in rows],
    }
    for name, want in expect.items():
        np.testing.assert_allclose(got[name], np.array(want), rtol=0, atol=1e-6)
    assert np.isnan(got["epoch"]).any()
    assert np.isnan(got["value"]).any()


def test_empty_campaign_loads_empty_arrays(engine: Engine) -> None:
    case = load(GOLDEN / "cases" / "rating_small_complete.json")
    store_case(engine, case, upto=0)
    with transaction(engine) as s:
        arrays = load_arrays(s, get_campaign(s, "golden"))
    assert arrays.n == 0
    assert arrays.values.size == 0


def _arrays(workers: list[int], items: list[int], order: list[int] | None = None) -> CampaignArrays:
    n = len(workers)
    names = np.array([f"x{k}" for k in range(10)], dtype=object)
    return CampaignArrays(
        kind="rating",
        ids=np.arange(1, n + 1),
        workers=np.array(workers, dtype=np.int64),
        items=np.array(items, dtype=np.int64),
        values=np.ones(n),
        duration_s=np.full(n, np.nan),
        order=np.array(order if order is not None else range(n), dtype=np.int64),
        worker_ids=names,
        worker_db_ids=np.arange(10),
        item_ids=names,
        item_db_ids=np.arange(10),
        item_gold=np.full(10, None, dtype=object),
    )


@given(
    st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=1, max_size=30),
    st.integers(0, 30),
    st.randoms(use_true_random=False),
)
def test_latest_brought_up_to_date_equals_a_fresh_sort(pairs, cut, rnd) -> None:  # noqa: ANN001
    """An extension brings the base's latest judgment per pair up to date instead of sorting
    every judgment again (new judgments may repeat known pairs, and be earlier or later in
    time): the latest judgments are those of a fresh sort."""
    order = list(range(len(pairs)))
    rnd.shuffle(order)
    w, i = [p[0] for p in pairs], [p[1] for p in pairs]
    cut = min(cut, len(pairs))
    base = _arrays(w[:cut], i[:cut], order[:cut])
    _ = base.latest
    out = _arrays(w, i, order)
    carry_latest(base, out)
    assert out.pairs.rising is not None
    want = latest_per_pair(out.workers, out.items, out.order)
    np.testing.assert_array_equal(out.latest, want)
    assert not out.latest.flags.writeable
