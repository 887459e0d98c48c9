"""Phi in incremental runs: the run starts from the last run's grid on log p (its state) and
reads as a full run's Phi within the quadrature's accuracy."""

from __future__ import annotations

import numpy as np
from sqlalchemy import Engine

from monitor.core.settings import Settings
from monitor.incremental.phi import STATE as PHI_STATE
from monitor.metrics.ratings.phi_grid import PhiGrid
from monitor.pipeline import recompute
from monitor.store.engine import transaction
from monitor.store.runs import run_states, run_values
from tests.golden import GOLDEN, load
from tests.pipeline.cases import store_case

SETTINGS = Settings(bootstrap_samples=0, phi="full", cache_dir="")


def _phi(engine: Engine, run_id: int) -> tuple[dict, PhiGrid]:
    with transaction(engine) as s:
        values = {
            (v.subject, v.metric): v for v in run_values(s, run_id) if v.metric in ("phi", "phi_mu")
        }
        grid = PhiGrid.from_array(run_states(s, run_id)[PHI_STATE].array)
    assert grid is not None
    return values, grid


def test_an_incremental_phi_reuses_the_grid_and_reads_as_a_full_one(engine: Engine) -> None:
    case = load(GOLDEN / "cases" / "rating_medium.json")
    n = len(case["judgments"])
    store_case(engine, case, upto=n - 100)
    [first] = recompute(engine, SETTINGS)
    store_case(engine, case, upto=n, start=n - 100)
    [inc] = recompute(engine, SETTINGS)
    [full] = recompute(engine, SETTINGS, full=True)
    _, first_grid = _phi(engine, first.run_id)
    inc_values, inc_grid = _phi(engine, inc.run_id)
    full_values, full_grid = _phi(engine, full.run_id)
    np.testing.assert_array_equal(inc_grid.u, first_grid.u)  # reused
    assert not np.array_equal(full_grid.u, first_grid.u)  # searched again
    assert inc_values.keys() == full_values.keys()
    assert len(inc_values) > 100
    for key, v in full_values.items():
        w = inc_values[key]
        for f in ("value", "low", "high"):
            a, b = getattr(v, f), getattr(w, f)
            # item values are stored as deltas: within value_tolerance of what was computed;
            # an HPD end is found by interpolation on either grid (about 4e-4 of its width)
            tol = SETTINGS.value_tolerance + 1e-6 if key[1] == "phi_mu" else 1e-6
            if f != "value":
                tol = max(tol, 1e-3 * (v.high - v.low))
            assert abs(a - b) <= tol, (key, f, a, b)
