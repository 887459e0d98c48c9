"""``verdict.export``: what ``monitor export labels`` gives and how good it is expected to be,
in the JSON document (validated against its schema by the tests' document builder) and first
in the page's verdict."""

from __future__ import annotations

import numpy as np
import pytest
from sqlalchemy import Engine

from monitor.actions.labels import aggregate_labels
from monitor.pipeline import recompute
from monitor.report.render import render_html
from monitor.report.verdict import export_verdict
from monitor.store.campaigns import get_campaign
from monitor.store.engine import session_factory
from tests.pipeline.cases import store_case
from tests.pipeline.test_quality import SETTINGS, label_case, rating_case
from tests.report.test_html import parse
from tests.report.test_model_report import document


def pairwise_case(n_items: int = 30, seed: int = 3) -> tuple[dict, np.ndarray]:
    """Items of spread strengths, eight annotators judging random pairs along Bradley-Terry."""
    rng = np.random.default_rng(seed)
    strength = np.linspace(-3, 3, n_items)
    rows = []
    for w in range(8):
        for _ in range(60):
            i, j = rng.choice(n_items, 2, replace=False)
            p = 1 / (1 + np.exp(-(strength[i] - strength[j])))
            rows.append({"worker": f"a{w}", "left": f"p{i}", "right": f"p{j}",
                         "preference": "left" if rng.random() < p else "right"})  # fmt: skip
    return {"kind": "pairwise", "scale": {"ties_allowed": False}, "judgments": rows}, strength


def test_labels_verdict_speaks_of_the_exported_labels(engine: Engine) -> None:
    case, truth = label_case(n_items=150, seed=1)
    store_case(engine, case)
    recompute(engine, SETTINGS)
    export = document(engine, "golden")["verdict"]["export"]
    assert export["measure"] == "accuracy"
    assert export["n"] == 150
    lo, hi = export["interval"]
    assert 0 <= lo <= export["value"] <= hi <= 1
    with session_factory(engine)() as s:
        rows = aggregate_labels(s, get_campaign(s, "golden"))
    right = np.mean([r["value"] == truth[int(r["item"][1:])] for r in rows])
    # six honest workers of accuracy 0.85 (and two useless ones): the export is nearly all right
    assert right > 0.95
    assert lo - 0.03 <= right <= hi + 0.03
    assert export["text"].startswith(
        "The exported labels are expected to match what an unlimited crowd of these workers "
        "would answer on "
    )
    assert "an upper bound" in export["text"]
    assert "of 150 items" in export["text"]


def test_ratings_verdict_is_an_expected_error(engine: Engine) -> None:
    store_case(engine, rating_case())
    recompute(engine, SETTINGS)
    export = document(engine, "golden")["verdict"]["export"]
    assert export["measure"] == "mae"
    lo, hi = export["interval"]
    assert 0 <= lo <= export["value"] <= hi
    # six raters of noise sd 6 on 0..100: their mean is off by about 6 / sqrt(6) x 0.8
    assert 1.0 < export["value"] < 4.0
    assert "mean absolute error" in export["text"]


def test_pairwise_verdict_is_a_pair_accuracy(engine: Engine) -> None:
    case, strength = pairwise_case()
    store_case(engine, case)
    recompute(engine, SETTINGS)
    doc = document(engine, "golden")
    export = doc["verdict"]["export"]
    assert export["measure"] == "pair_accuracy"
    assert 0.5 < export["value"] < 1
    lo, hi = export["interval"]
    assert lo <= export["value"] <= hi
    with session_factory(engine)() as s:
        ranking = aggregate_labels(s, get_campaign(s, "golden"))
    true = [strength[int(r["item"][1:])] for r in ranking]  # best first
    pairs = [(a, b) for k, a in enumerate(true) for b in true[k + 1 :]]
    right = np.mean([a > b for a, b in pairs])
    assert lo - 0.05 <= right <= hi + 0.05
    assert "ranking" in export["exports"]


def test_multilabel_verdict(engine: Engine) -> None:
    rng = np.random.default_rng(4)
    truth = [sorted(rng.choice(list("ABCD"), size=rng.integers(1, 3), replace=False))
             for _ in range(40)]  # fmt: skip
    rows = [{"worker": f"w{w}", "item": f"i{i}", "value": t}
            for w in range(5) for i, t in enumerate(truth)]  # fmt: skip
    store_case(engine, {"kind": "multilabel", "scale": {"options": list("ABCD")},
                        "judgments": rows})  # fmt: skip
    recompute(engine, SETTINGS)
    export = document(engine, "golden")["verdict"]["export"]
    assert export["measure"] == "accuracy"
    assert export["value"] > 0.95  # five unanimous workers
    assert export["text"].startswith("The exported sets are expected")


def test_no_run_no_export_verdict(engine: Engine) -> None:
    case, _ = label_case(n_items=20)
    store_case(engine, case)
    assert document(engine, "golden")["verdict"]["export"] is None
    assert export_verdict("label", None) is None


def test_page_says_the_export_first_and_agreement_as_what_it_is(engine: Engine) -> None:
    case, _ = label_case(n_items=150, seed=1)
    store_case(engine, case)
    recompute(engine, SETTINGS)
    doc = document(engine, "golden")
    html = render_html(doc)
    page = parse(html)
    [said] = [a for t, a in page.tags if a.get("id") == "verdict-export"]
    assert said["data-measure"] == "accuracy"
    sentence = doc["verdict"]["export"]["text"]
    text = " ".join(" ".join(page.text).split())
    assert sentence in text
    assert html.index('id="verdict"') < html.index('id="verdict-export"')
    assert text.index(sentence) < text.index("Does the crowd agree?")
    assert text.index("Does the crowd agree?") < text.index("Krippendorff's alpha")
    assert "not how good the export is" in text


@pytest.mark.parametrize("fallback", [False, True])
def test_a_rating_fallback_says_the_export_is_the_plain_mean(fallback: bool) -> None:
    from monitor.store.runs import Value

    v = Value("campaign", "c", "export_quality", 2.5, 2.0, 3.0, 10, {"measure": "mae"})
    out = export_verdict("rating", v, fallback=fallback)
    assert out is not None
    assert out["interval"] == [2.0, 3.0]
    assert ("plain mean" in out["exports"]) is fallback


def test_the_verdict_box_is_coloured_by_the_state(engine: Engine) -> None:
    """The verdict's colour and headline are the campaign's state (the deliverable first);
    the crowd's agreement level is a tag beside alpha."""
    case, _ = label_case(n_items=150, seed=1)
    store_case(engine, case)
    recompute(engine, SETTINGS)
    doc = document(engine, "golden")
    page = parse(render_html(doc))
    [box] = [a for t, a in page.tags if a.get("id") == "verdict"]
    assert f"v-{doc['verdict']['state']}" in box["class"].split()
    [level] = [a for t, a in page.tags if a.get("id") == "verdict-level"]
    assert level["data-level"] == doc["verdict"]["level"]
    text = " ".join(" ".join(page.text).split())
    headline = doc["verdict"]["state"].replace("_", " ").capitalize()
    assert text.index(headline) < text.index(doc["verdict"]["export"]["text"])
