"""Co-determination through the pipeline (issue 16, item 7): incremental runs give the weights
of a full run on a case where warm starts used to end elsewhere, and a run that does not
converge says so in the run and the report."""

from __future__ import annotations

import numpy as np
import pytest
from sqlalchemy import Engine

from monitor.core.settings import Settings
from monitor.pipeline import recompute
from monitor.report.render import report_text
from monitor.store.campaigns import get_campaign
from monitor.store.engine import transaction
from monitor.store.runs import latest_run, run_values
from tests.metrics.test_codetermination import noisy_ratings
from tests.pipeline.cases import store_case

SETTINGS = Settings(bootstrap_samples=0, phi="off")


def _case(items, workers, values, top: int) -> dict:  # noqa: ANN001
    return {
        "kind": "rating",
        "scale": {"min": 0, "max": top, "type": "interval"},
        "judgments": [
            {"worker": f"w{w}", "item": f"i{i}", "value": int(v)}
            for i, w, v in zip(items, workers, values, strict=True)
        ],
    }


def _latest(engine: Engine) -> tuple[dict[str, float | None], dict]:
    with transaction(engine) as s:
        run = latest_run(s, get_campaign(s, "golden").id)
        assert run is not None
        values = run_values(s, run.id)
    weights = {v.subject: v.value for v in values if v.metric == "weight"}
    [co] = [v for v in values if v.metric == "codetermination_iterations"]
    return weights, {"iterations": co.value, **(co.detail or {})}


def test_incremental_weights_equal_full_ones(engine: Engine) -> None:
    items, workers, values = noisy_ratings(42)
    case = _case(items, workers, values, 4)
    cut = int(items.size * 0.6)
    store_case(engine, case, upto=cut)
    [first] = recompute(engine, SETTINGS)
    store_case(engine, case, start=cut)
    [incremental] = recompute(engine, SETTINGS)
    assert first.status == incremental.status == "ok"
    inc_weights, inc_detail = _latest(engine)
    [full] = recompute(engine, SETTINGS, full=True)
    assert full.status == "ok"
    full_weights, full_detail = _latest(engine)
    assert inc_detail["converged"] is True
    assert full_detail["converged"] is True
    assert inc_weights.keys() == full_weights.keys()
    assert len(full_weights) == 8
    for worker, x in full_weights.items():
        assert inc_weights[worker] == pytest.approx(x, abs=1e-12), worker


def test_a_run_that_does_not_converge_says_so(engine: Engine) -> None:
    rng = np.random.default_rng(78)  # the cycle of tests/metrics/test_codetermination.py
    n_items, n_w, per = int(rng.integers(5, 200)), int(rng.integers(5, 30)), int(rng.integers(2, 5))
    items = np.repeat(np.arange(n_items), per)
    workers = np.concatenate([rng.choice(n_w, per, replace=False) for _ in range(n_items)])
    for _ in range(2):
        v = int(rng.integers(2, 6))
        truth = rng.integers(0, v, n_items)
        good = rng.random(n_w) < 0.6
        keep = good[workers] & (rng.random(items.size) < 0.7)
        codes = np.where(keep, truth[items], rng.integers(0, v, items.size))
    store_case(engine, _case(items, workers, codes, v - 1))
    [outcome] = recompute(engine, SETTINGS)
    assert outcome.status == "ok"
    _, detail = _latest(engine)
    assert detail["converged"] is False
    assert detail["iterations"] < 500
    assert detail["max_change"] > 0.01
    html = report_text(engine, "golden", "html")
    assert "An iterative measure did not converge" in html
    assert "Co-determination of truths and worker weights stopped after" in html
    doc = report_text(engine, "golden", "json")
    assert '"rule": "not_converged"' in doc
