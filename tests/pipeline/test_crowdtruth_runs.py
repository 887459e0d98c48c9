"""CrowdTruth in incremental runs: updated on the items with new judgments only while the
drift budget (``crowdtruth_drift``) lasts, from a scheduler or a cold process; the other items
keep what readers saw; a run that would spend the budget iterates over every item."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from sqlalchemy import Engine

from monitor.core.settings import Settings
from monitor.incremental.cache import RunCache
from monitor.incremental.crowdtruth import STATE
from monitor.pipeline import recompute
from monitor.pipeline import run as run_module
from monitor.store.campaigns import get_campaign
from monitor.store.engine import transaction
from monitor.store.runs import latest_run, run_columns, run_states, run_values
from tests.pipeline.cases import store_case

SETTINGS = Settings(bootstrap_samples=0, phi="off", cache_dir="", crowdtruth_drift=1.0)
CT = ("wqs", "wwa", "wua")


def _case(kind: str, n_items: int = 300, n_workers: int = 24, seed: int = 0) -> dict[str, Any]:
    """Five judgments per item; the last 60 judgments add three to each of items 0-19."""
    rng = np.random.default_rng(seed)
    cats = ["a", "b", "c", "d"]
    rows = []
    for k in range(n_items * 5 + 60):
        item = k // 5 if k < n_items * 5 else (k - n_items * 5) % 20
        worker = (item * 7 + k * 13) % n_workers
        truth = item % 4
        pick = truth if rng.random() < 0.7 else int(rng.integers(0, 4))
        if kind == "multilabel":
            value: Any = sorted({cats[pick], cats[int(rng.integers(0, 4))]})
        elif kind == "rating":
            value = pick + 1
        else:
            value = cats[pick]
        rows.append({"worker": f"w{worker}", "item": f"i{item}", "value": value})
    scale: dict[str, Any] = {"categories": cats}
    if kind == "rating":
        scale = {"min": 1, "max": 4}
    elif kind == "multilabel":
        scale = {"options": cats, "closed": True}
    return {"kind": kind, "scale": scale, "judgments": rows}


def _latest(engine: Engine) -> tuple[int, dict, dict, dict]:
    with transaction(engine) as s:
        run = latest_run(s, get_campaign(s, "golden").id)
        assert run is not None
        values = {(v.scope, v.subject, v.metric): v for v in run_values(s, run.id)}
        columns = {(c.scope, c.metric): c for c in run_columns(s, run.id)}
        return run.id, values, columns, run_states(s, run.id)


def _increments(engine: Engine, case: dict, settings: Settings, cuts: list[int]) -> list:
    """Store the case up to each cut, recompute, and return each run's (values, columns,
    states); before the third run this process forgets what it kept (a cold CLI)."""
    out, lo = [], 0
    cache = RunCache.from_settings(settings)
    for k, hi in enumerate(cuts):
        store_case(engine, case, upto=hi, start=lo)
        lo = hi
        if k == 2:
            cache = RunCache.from_settings(settings)
        [o] = recompute(engine, settings, cache=cache)
        assert o.status == "ok"
        out.append(_latest(engine)[1:])
    return out


@pytest.mark.parametrize("kind", ["label", "rating", "multilabel"])
def test_incremental_runs_update_the_judged_items_only(engine: Engine, kind: str) -> None:
    case = _case(kind)
    n = len(case["judgments"])
    runs = _increments(engine, case, SETTINGS, [n - 60, n - 40, n - 20, n])
    for before, after, lo in zip(runs[:-1], runs[1:], (n - 60, n - 40, n - 20), strict=True):
        values, columns, states = after
        detail = values[("campaign", "golden", "crowdtruth_iterations")].detail
        touched = {case["judgments"][k]["item"] for k in range(lo, lo + 20)}
        assert detail["local_units"] == len(touched)
        assert states[STATE].meta["drift"] == pytest.approx(detail["drift"])
        old, new = before[1][("item", "uas")], columns[("item", "uas")]
        assert old.subjects == new.subjects
        rows = {s: i for i, s in enumerate(new.subjects)}
        for name in set(new.subjects) - touched:  # untouched: what readers saw before
            i = rows[name]
            lo_o, hi_o = old.indptr[i], old.indptr[i + 1]
            lo_n, hi_n = new.indptr[i], new.indptr[i + 1]
            assert old.indices[lo_o:hi_o].tolist() == new.indices[lo_n:hi_n].tolist()
            assert old.data[lo_o:hi_o].tolist() == new.data[lo_n:hi_n].tolist()
        uqs_o, uqs_n = before[1][("item", "uqs")], columns[("item", "uqs")]
        moved = [rows[s] for s in touched]
        assert not np.allclose(uqs_o.values[moved], uqs_n.values[moved], atol=1e-6)
    # within half the drift (plus the tolerances of both runs) of a run over everything
    _, inc, inc_columns, states = _latest(engine)
    drift = states[STATE].meta["drift"]
    recompute(engine, SETTINGS, full=True)
    _, full, full_columns, _ = _latest(engine)
    bound = 0.5 * drift + 0.01
    for key, want in full.items():
        if key[2] in CT and want.value is not None:
            assert abs(inc[key].value - want.value) <= bound, key
    a, b = inc_columns[("item", "uqs")], full_columns[("item", "uqs")]
    np.testing.assert_allclose(a.values, b.values, atol=bound + SETTINGS.value_tolerance)


def test_the_drift_budget_sends_a_run_over_every_item(engine: Engine) -> None:
    case = _case("label")
    n = len(case["judgments"])
    first = _increments(engine, case, SETTINGS, [n - 60, n - 40])
    drift = first[1][2][STATE].meta["drift"]
    assert drift > 0

    def run(upto: int, start: int, budget: float) -> tuple[dict, float]:
        store_case(engine, case, upto=upto, start=start)
        recompute(engine, SETTINGS.replace(crowdtruth_drift=budget))
        _, values, _, states = _latest(engine)
        detail = values[("campaign", "golden", "crowdtruth_iterations")].detail
        return detail, states[STATE].meta["drift"]

    # the drift so far is the whole budget: any move spends it, so the run iterates over
    # every item, from the local update's scores, and starts a new budget
    detail, after = run(n - 20, n - 40, drift)
    assert "local_units" not in detail
    assert detail["warm_start"]
    assert after == 0.0
    detail, after = run(n, n - 20, 1.0)
    assert detail["local_units"] > 0
    assert after == pytest.approx(detail["drift"])
    assert after > 0


@pytest.mark.parametrize("drift", [0.0])  # a negative budget is refused by the settings
def test_no_budget_no_local_update(engine: Engine, drift: float) -> None:
    case = _case("label")
    n = len(case["judgments"])
    runs = _increments(engine, case, SETTINGS.replace(crowdtruth_drift=drift), [n - 60, n - 40])
    detail = runs[1][0][("campaign", "golden", "crowdtruth_iterations")].detail
    assert detail["warm_start"]
    assert "local_units" not in detail


def test_a_new_state_is_needed(engine: Engine) -> None:
    """A last run without the state (or with another task's) gives a full iteration."""
    case = _case("label")
    n = len(case["judgments"])
    store_case(engine, case, upto=n - 60)
    recompute(engine, SETTINGS)
    store_case(engine, case, upto=n - 40, start=n - 60)
    real = run_module.measure

    def without_state(coded: Any, params: Any) -> Any:
        if params.warm is not None:
            params.warm.states.pop(STATE, None)
        return real(coded, params)

    run_module.measure = without_state  # type: ignore[assignment]
    try:
        recompute(engine, SETTINGS)
    finally:
        run_module.measure = real  # type: ignore[assignment]
    _, values, _, states = _latest(engine)
    assert "local_units" not in values[("campaign", "golden", "crowdtruth_iterations")].detail
    assert states[STATE].meta["drift"] == 0.0
