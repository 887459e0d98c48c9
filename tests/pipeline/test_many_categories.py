"""A label campaign with more categories than ``model_max_categories`` gets the one-coin
Dawid-Skene model (cost linear in the judgments), and the run says so."""

from __future__ import annotations

import numpy as np
import pytest
from sqlalchemy import Engine

from monitor.pipeline import recompute
from monitor.pipeline.reliability import majority_disputed
from monitor.store.campaigns import get_campaign
from monitor.store.engine import transaction
from monitor.store.runs import latest_run
from tests.pipeline.cases import store_case
from tests.pipeline.test_quality import CATS, SETTINGS, flagged, label_case, latest


def test_more_categories_than_the_setting_take_the_one_coin_model(engine: Engine) -> None:
    case, truth = label_case()
    store_case(engine, case)
    [outcome] = recompute(engine, SETTINGS.replace(model_max_categories=2))
    assert outcome.status == "ok"
    values, flags = latest(engine)
    it = values[("campaign", "golden", "model_iterations")]
    assert it.detail["model"] == "one_coin_dawid_skene"
    assert it.detail["converged"] is True
    chance = values[("campaign", "golden", "model_chance")]
    assert "3 categories, more than model_max_categories (2)" in chance.detail["reason"]
    with transaction(engine) as s:
        run = latest_run(s, get_campaign(s, "golden").id)
    assert run is not None
    assert run.parameters["model"]["name"] == "one_coin_dawid_skene"
    assert "one-coin" in run.parameters["model"]["reason"]
    acc = values[("worker", "h0", "model_accuracy")]
    assert acc.n == 150
    assert acc.low < acc.value < acc.high
    assert acc.value > 0.7
    labels = [values[("item", f"i{i}", "model_label")] for i in range(150)]
    assert all(set(v.detail["posterior"]) <= set(CATS) for v in labels)
    best = [max(v.detail["posterior"], key=v.detail["posterior"].get) for v in labels]
    assert np.mean([b == t for b, t in zip(best, truth, strict=True)]) > 0.9
    assert flagged(flags, "low_quality") == {"rnd", "const"}
    # at the default (200) the same campaign keeps the full model
    recompute(engine, SETTINGS, full=True)
    values, _ = latest(engine)
    assert values[("campaign", "golden", "model_iterations")].detail["model"] == "dawid_skene"


def test_majority_disputed_counts_only_the_answered_cells() -> None:
    rng = np.random.default_rng(0)
    n, k = 40, 6
    items = rng.integers(0, n, 200)
    codes = rng.integers(0, k, 200)
    labels = np.where(rng.random(n) < 0.8, rng.integers(0, k, n), -1)
    dense = np.bincount(items * k + codes, minlength=n * k).reshape(n, k)
    top = dense.max(axis=1)
    tied = (dense == top[:, None]).sum(axis=1) > 1
    overruled = (labels >= 0) & (dense[np.arange(n), np.maximum(labels, 0)] < top)
    expected = (tied | overruled).astype(float)
    assert np.array_equal(majority_disputed(items, codes, labels, n, k), expected)


def test_export_labels_of_many_categories_use_the_one_coin_model(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    import csv
    import io

    from monitor.actions.export import export
    from monitor.store.engine import session_factory

    rng = np.random.default_rng(4)
    cats = [f"c{k}" for k in range(250)]  # more than model_max_categories' default, 200
    truth = rng.integers(0, len(cats), 80)
    rows = [{"worker": w, "item": f"i{i}", "value": cats[t]} for i, t in enumerate(truth)
            for w in ("h1", "h2")]  # fmt: skip
    rows += [{"worker": "rnd", "item": f"i{i}", "value": cats[rng.integers(0, len(cats))]}
             for i in range(80)]  # fmt: skip
    store_case(engine, {"kind": "label", "scale": {"categories": cats}, "judgments": rows})
    recompute(engine, SETTINGS)
    values, _ = latest(engine)
    assert values[("campaign", "golden", "model_iterations")].detail["model"] == (
        "one_coin_dawid_skene"
    )

    def full_model(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("the K x K model was fitted")

    monkeypatch.setattr("monitor.metrics.labels.label_model.dawid_skene", full_model)
    with session_factory(engine)() as s:
        text = export(s, "labels", "golden", "csv")
    exported = list(csv.DictReader(io.StringIO(text, newline="")))
    got = {r["item"]: r["value"] for r in exported}
    assert got == {f"i{i}": cats[t] for i, t in enumerate(truth)}
    assert all(0.5 < float(r["confidence"]) <= 1.0 for r in exported)


def test_bootstrap_intervals_of_many_categories_incremental_as_full(engine: Engine) -> None:
    rng = np.random.default_rng(6)
    cats = [f"c{k}" for k in range(400)]  # more than poisson.WIDE: sparse features
    truth = rng.integers(0, len(cats), 300)
    rows = [{"worker": f"w{w}", "item": f"i{i}",
             "value": cats[t] if rng.random() < 0.7 else cats[rng.integers(0, len(cats))]}
            for i, t in enumerate(truth) for w in rng.choice(8, 3, replace=False)]  # fmt: skip
    case = {"kind": "label", "scale": {"categories": cats}, "judgments": rows}
    settings = SETTINGS.replace(bootstrap_samples=60)
    store_case(engine, case, upto=600)
    recompute(engine, settings)
    store_case(engine, case, start=600)
    recompute(engine, settings)  # the replicate sums updated over the touched items
    incremental, _ = latest(engine)
    recompute(engine, settings, full=True)
    full, _ = latest(engine)
    for metric in ("krippendorff_alpha", "fleiss_kappa"):
        a, b = incremental[("campaign", "golden", metric)], full[("campaign", "golden", metric)]
        assert a.low is not None
        assert a.high is not None
        assert a.low < a.value < a.high
        assert (a.value, a.low, a.high) == pytest.approx((b.value, b.low, b.high), abs=1e-9)
