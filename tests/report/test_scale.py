"""The agreement table shows what the scale supports: no coefficient of equal answers on a
wide rating scale, every figure's count, and which of Phi and alpha to believe."""

from __future__ import annotations

import copy

import numpy as np
from sqlalchemy import Engine

from monitor.core.settings import Settings
from monitor.pipeline import recompute
from monitor.report.render import render_html
from monitor.report.scale import phi_alpha_sentence
from monitor.report.view import build_view
from tests.pipeline.cases import store_case
from tests.pipeline.test_quality import rating_case
from tests.report.fixtures import rating_campaign
from tests.report.test_items import document

SETTINGS = Settings(bootstrap_samples=50, phi="map")


def names(doc: dict) -> list[str]:
    return [r["name"] for r in build_view(copy.deepcopy(doc))["agreement_rows"]]


def test_a_0_to_100_scale_hides_the_coefficients_of_equal_ratings(engine: Engine) -> None:
    store_case(engine, rating_case(n_items=40))
    recompute(engine, SETTINGS)
    doc = document(engine, "golden")
    assert doc["run"]["parameters"]["scale_points"] == 101
    rows = build_view(copy.deepcopy(doc))["agreement_rows"]
    shown = [r["name"] for r in rows]
    assert not any("Percent agreement" in n or "Fleiss" in n for n in shown)
    [alpha] = [r for r in rows if r["name"].startswith("Krippendorff")]
    assert "not shown: on a scale of 101 points" in alpha["meaning"]
    assert alpha["n"] == f"{8 * 40:,} pairable values"
    # the JSON document keeps every number; only the page leaves them out
    assert doc["agreement"]["percent_agreement"] is not None
    history = build_view(copy.deepcopy(doc))["history_table"]
    assert [c.title for c in history.columns] == ["Run", "Finished", "Alpha", "95% CI"]
    # a wider setting shows them again
    doc["run"]["parameters"]["max_nominal_points"] = 101
    assert any("Percent agreement" in n for n in names(doc))


def test_a_five_point_scale_shows_them_with_their_counts(engine: Engine) -> None:
    rng = np.random.default_rng(5)
    truth = rng.integers(1, 6, 30)
    rows = [
        {"worker": f"w{w}", "item": f"i{i}", "value": float(np.clip(t + rng.integers(-1, 2), 1, 5))}
        for w in range(5)
        for i, t in enumerate(truth)
    ]
    store_case(engine, {"kind": "rating", "scale": {"min": 1, "max": 5}, "judgments": rows})
    recompute(engine, SETTINGS)
    doc = document(engine, "golden")
    assert doc["run"]["parameters"]["scale_points"] == 5
    shown = {r["name"]: r for r in build_view(copy.deepcopy(doc))["agreement_rows"]}
    assert "Percent agreement" in shown
    assert any("Fleiss" in n for n in shown)
    assert shown["Percent agreement"]["n"] == "30 items"
    assert all(r["n"] for r in shown.values() if r["value"] is not None)
    assert '<th class="num">n</th>' in render_html(doc)
    history = build_view(copy.deepcopy(doc))["history_table"]
    assert history.columns[-1].title == "Percent agreement"


def test_transitivity_shows_its_triplets_and_annotators(engine: Engine) -> None:
    from tests.golden import GOLDEN, load

    store_case(engine, load(GOLDEN / "cases" / "pairwise_small_weak.json"))
    recompute(engine, SETTINGS)
    doc = document(engine, "golden")
    design = doc["agreement"]["measures"]["preference_design"]
    [row] = [r for r in build_view(doc)["agreement_rows"] if r["name"] == "Transitivity kappa"]
    n = doc["agreement"]["measures"]["transitivity_kappa"]["n"]
    annotators = design["annotators_with_triplets"]
    assert row["n"] == f"{n:,} triplets from {annotators:,} annotator" + "s" * (annotators != 1)
    [pa] = [r for r in build_view(doc)["agreement_rows"] if r["name"] == "Percent agreement"]
    assert pa["n"].endswith(" pairs")


def test_which_of_phi_and_alpha_to_believe() -> None:
    # affect: Phi -0.19, alpha 0.33 with its interval above 0
    s = phi_alpha_sentence(-0.19, [-0.25, -0.12], 0.33, [0.28, 0.38], 0.4)
    assert s is not None
    assert "Believe alpha on whether the ratings tell the items apart" in s
    assert "pile up toward the ends" in s
    assert "but weakly" in s
    assert "interval lies above 0" in s
    near = phi_alpha_sentence(-0.19, None, 0.75, [-0.01, 0.9], 0.4)
    assert near is not None
    assert "clearly" in near
    assert "interval reaches 0" in near
    high_phi = phi_alpha_sentence(0.8, [0.7, 0.9], 0.2, [0.1, 0.3], 0.4)
    assert high_phi is not None
    assert "the items differ little" in high_phi
    high_alpha = phi_alpha_sentence(0.1, [0.0, 0.2], 0.7, [0.6, 0.8], 0.4)
    assert high_alpha is not None
    assert "The items differ widely" in high_alpha
    assert phi_alpha_sentence(0.5, None, 0.6, None, 0.4) is None


def test_the_phi_row_says_which_to_believe(engine: Engine) -> None:
    rating_campaign(engine)
    doc = document(engine, "quality")
    doc["agreement"]["phi"] = {**doc["agreement"]["phi"], "mean": -0.19, "hpd": [-0.25, -0.1]}
    doc["agreement"]["krippendorff_alpha"] = 0.33
    doc["agreement"]["krippendorff_alpha_ci"] = [0.28, 0.38]
    [phi] = [r for r in build_view(doc)["agreement_rows"] if r["name"].startswith("Phi")]
    assert "Phi (-0.19) and alpha (0.33) disagree" in phi["meaning"]
