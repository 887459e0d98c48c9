"""Item columns of incremental runs stored as changes from the base run: readers see the full
run's numbers within ``value_tolerance``, fewer rows are written, and pruning keeps the bases
that a kept run's columns build on."""

from __future__ import annotations

import numpy as np
import pytest
from sqlalchemy import Engine, delete, func, select

from monitor.core.results import Column
from monitor.core.settings import Settings
from monitor.incremental import cache as cache_module
from monitor.incremental.cache import RunCache
from monitor.pipeline import recompute
from monitor.store.campaigns import get_campaign
from monitor.store.column_deltas import DELTA_KEY, decode_positions
from monitor.store.engine import transaction
from monitor.store.models import MetricColumn, MetricRun
from monitor.store.runs import latest_run, run_columns, run_values
from tests.golden import GOLDEN, load
from tests.pipeline.cases import incremental_runs, store_case

SETTINGS = Settings(bootstrap_samples=0, phi="map", cache_dir="")


def _columns(engine: Engine, run_id: int) -> dict[tuple[str, str], Column]:
    with transaction(engine) as s:
        return {(c.scope, c.metric): c for c in run_columns(s, run_id)}


def _stored_rows(engine: Engine, run_id: int) -> tuple[int, int]:
    """(delta columns, rows stored in them) of a run."""
    with transaction(engine) as s:
        rows = s.scalars(select(MetricColumn).where(MetricColumn.run_id == run_id)).all()
        deltas = [r for r in rows if (r.meta or {}).get(DELTA_KEY)]
        return len(deltas), sum(decode_positions(r.meta, r.data).size for r in deltas)


def _close(a: Column, b: Column, tol: float) -> None:
    assert a.subjects == b.subjects, a.metric
    assert (a.n is None) == (b.n is None)
    if a.n is not None:
        np.testing.assert_array_equal(a.n, b.n, err_msg=a.metric)
    for f in ("values", "low", "high"):
        x, y = getattr(a, f), getattr(b, f)
        if x is not None:
            np.testing.assert_allclose(x, y, atol=tol, rtol=0, err_msg=f"{a.metric}.{f}")
    if a.indptr is not None:
        np.testing.assert_array_equal(a.indptr, b.indptr, err_msg=a.metric)
        np.testing.assert_array_equal(a.indices, b.indices, err_msg=a.metric)
        np.testing.assert_allclose(a.data, b.data, atol=tol, rtol=0, err_msg=a.metric)


def _no_read(*args: object, **kwargs: object) -> None:
    raise AssertionError("read from the store what the process kept")


@pytest.mark.parametrize("keep", [20, 1])
def test_incremental_columns_read_as_a_full_runs(engine: Engine, keep: int) -> None:
    case = load(GOLDEN / "cases" / "rating_medium.json")
    settings = SETTINGS.replace(keep_item_runs=keep, value_tolerance=0.01)
    # the second increment in a cold process: the base's columns come from the store
    runs = incremental_runs(engine, case, settings)
    with transaction(engine) as s:
        bases = [s.get_one(MetricRun, r).base_run_id for r in runs]
    assert bases == [None, *runs[:-1]]
    n_delta, n_rows = _stored_rows(engine, runs[-1])
    incremental = _columns(engine, runs[-1])
    assert n_delta == len(incremental)  # every item column extends its base's
    total = sum(len(c) for c in incremental.values())
    assert n_rows < total  # only what moved was written
    [full] = recompute(engine, settings, full=True)
    whole = _columns(engine, full.run_id)
    assert _stored_rows(engine, full.run_id)[0] == 0
    assert incremental.keys() == whole.keys()
    # the tolerance on what is stored, plus what separates a warm refit from a cold one
    for key, col in whole.items():
        _close(incremental[key], col, settings.value_tolerance + 0.01)


def test_a_negative_tolerance_stores_every_value(engine: Engine) -> None:
    case = load(GOLDEN / "cases" / "rating_medium.json")
    settings = SETTINGS.replace(value_tolerance=-1)
    n = len(case["judgments"])
    store_case(engine, case, upto=n - 50)
    recompute(engine, settings)
    store_case(engine, case, upto=n, start=n - 50)
    [o] = recompute(engine, settings)
    assert _stored_rows(engine, o.run_id) == (0, 0)
    with transaction(engine) as s:
        assert s.scalar(select(func.count()).where(MetricColumn.run_id == o.run_id)) > 0


def test_the_warm_start_kept_in_memory_is_the_stored_one(engine: Engine) -> None:
    """A scheduler starts its next run from the values and states it kept of the last one;
    a new process reads them from the store: the same run either way."""
    case = load(GOLDEN / "cases" / "rating_medium.json")
    n = len(case["judgments"])
    store_case(engine, case, upto=n - 60)
    scheduler = RunCache.from_settings(SETTINGS)
    [first] = recompute(engine, SETTINGS, cache=scheduler)
    store_case(engine, case, upto=n, start=n - 60)
    with transaction(engine) as s:  # what the scheduler starts from is its own, not the store's
        info = get_campaign(s, "golden")
        last = latest_run(s, info.id)
        monkey = pytest.MonkeyPatch()
        monkey.setattr(cache_module, "run_values", _no_read)
        monkey.setattr(cache_module, "run_states", _no_read)
        warm = scheduler.warm(s, info, last, scheduler.base(s, info, last, full=False), full=False)
        monkey.undo()
    assert warm is not None
    assert warm.watermark == last.watermark
    assert last.id == first.run_id
    [kept] = recompute(engine, SETTINGS, cache=scheduler)
    with transaction(engine) as s:
        warm = [v for v in run_values(s, kept.run_id) if v.scope != "item"]
        s.execute(delete(MetricRun).where(MetricRun.id == kept.run_id))
    [read] = recompute(engine, SETTINGS)
    with transaction(engine) as s:
        cold = [v for v in run_values(s, read.run_id) if v.scope != "item"]
    assert len(warm) > 100
    assert warm == cold
