"""Item flags stored as changes from a base run: readers see the flags of a full run (within
the tolerance), pruning keeps what a kept run builds on, the chain is bounded."""

from __future__ import annotations

import math

import pytest
from sqlalchemy import Engine, func, select

from monitor.core.results import FlagRecord
from monitor.core.settings import Settings
from monitor.pipeline import recompute
from monitor.store import runs as runs_module
from monitor.store.campaigns import get_campaign
from monitor.store.engine import transaction
from monitor.store.models import Flag, MetricRun
from monitor.store.runs import MAX_FLAG_CHAIN, latest_run, run_flags
from monitor.store.save import flag_delta
from tests.golden import GOLDEN, load
from tests.pipeline.cases import incremental_runs, store_case

SETTINGS = Settings(bootstrap_samples=0, phi="off", cache_dir="")


def test_flag_delta_keeps_what_moved_within_the_tolerance() -> None:
    base = [
        FlagRecord("item", "a", "ambiguous", 0.30, 0.4, {"n": 5, "answers": {"1": 2}}),
        FlagRecord("item", "b", "ambiguous", 0.30, 0.4, {"n": 5}),
        FlagRecord("item", "c", "ambiguous", 0.30, 0.4, {"n": 5}),
        FlagRecord("item", "d", "ambiguous", 0.30, 0.4, {"n": 5}),
    ]
    now = [
        FlagRecord("worker", "w", "low_quality", 0.1, 0.2, {}),
        FlagRecord("item", "a", "ambiguous", 0.3005, 0.4, {"n": 5, "answers": {"1": 2}}),
        FlagRecord("item", "b", "ambiguous", 0.3020, 0.4, {"n": 5}),
        FlagRecord("item", "c", "ambiguous", 0.30, 0.4, {"n": 6}),
        FlagRecord("item", "e", "ambiguous", 0.20, 0.4, {"n": 5}),
    ]
    stored, cleared = flag_delta(base, now, 0.001)
    assert [(f.scope, f.subject) for f in stored] == [
        ("worker", "w"),
        ("item", "b"),
        ("item", "c"),
        ("item", "e"),
    ]
    assert cleared == [("item", "d", "ambiguous")]
    stored, cleared = flag_delta(base, now, 0.0)
    assert len(stored) == 5
    # a message that says numbers within the tolerance in other words is not a change
    said = [FlagRecord("item", "a", "ambiguous", 0.3, 0.4, {"n": 5, "message": "spread 1.59"})]
    again = [FlagRecord("item", "a", "ambiguous", 0.3, 0.4, {"n": 5, "message": "spread 1.6"})]
    assert flag_delta(said, again, 0.05) == ([], [])
    moved = [FlagRecord("item", "a", "ambiguous", 0.3, 0.4, {"n": 6, "message": "spread 1.6"})]
    assert flag_delta(said, moved, 0.05)[0] == moved


def _flags(engine: Engine, run_id: int | None = None) -> dict[tuple, FlagRecord]:
    with transaction(engine) as s:
        if run_id is None:
            last = latest_run(s, get_campaign(s, "golden").id)
            assert last is not None
            run_id = last.id
        return {(f.scope, f.subject, f.rule): f for f in run_flags(s, run_id)}


def _rows(engine: Engine, run_id: int) -> int:
    with transaction(engine) as s:
        return int(s.scalar(select(func.count(Flag.id)).where(Flag.run_id == run_id)))


def _assert_close(got: dict[tuple, FlagRecord], want: dict[tuple, FlagRecord], tol: float) -> None:
    assert got.keys() == want.keys()
    for k, f in want.items():
        g = got[k]
        assert math.isclose(g.value or 0, f.value or 0, abs_tol=tol), k
        assert g.threshold == pytest.approx(f.threshold, abs=tol), k


@pytest.mark.parametrize("keep", [20, 1])
def test_incremental_flags_read_as_a_full_runs(engine: Engine, keep: int) -> None:
    case = load(GOLDEN / "cases" / "rating_medium.json")
    # The model's ambiguous flags carry spread statistics that every refit moves a little:
    # a tolerance of 0.05 lets the unmoved ones be read from the base run.
    settings = SETTINGS.replace(keep_item_runs=keep, flag_tolerance=0.05)
    # the second increment in a cold process: the base's flags come from the store
    runs = incremental_runs(engine, case, settings)
    incremental = _flags(engine)
    with transaction(engine) as s:
        bases = [s.get_one(MetricRun, r).base_run_id for r in runs]
    assert bases == [None, *runs[:-1]]
    assert any(f.scope == "item" for f in incremental.values())
    assert _rows(engine, runs[-1]) < len(incremental)  # only what changed was written
    [full] = recompute(engine, settings, full=True)
    _assert_close(incremental, _flags(engine, full.run_id), settings.flag_tolerance * 3)
    with transaction(engine) as s:
        assert s.get_one(MetricRun, full.run_id).base_run_id is None
        if keep > 1:  # kept runs still read whole (with keep 1, pruning kept the chain above)
            assert len(run_flags(s, runs[-1])) == len(incremental)


def test_the_chain_is_bounded(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runs_module, "MAX_FLAG_CHAIN", 2)
    case = load(GOLDEN / "cases" / "rating_medium.json")
    n = len(case["judgments"])
    store_case(engine, case, upto=n - 40)
    recompute(engine, SETTINGS)
    for k in range(4):
        store_case(engine, case, upto=n - 30 + 10 * k, start=n - 40 + 10 * k)
        recompute(engine, SETTINGS)
    with transaction(engine) as s:
        bases = [b for (b,) in s.execute(select(MetricRun.base_run_id).order_by(MetricRun.id))]
    assert [b is None for b in bases] == [True, False, True, False, True]
    assert MAX_FLAG_CHAIN >= 2
