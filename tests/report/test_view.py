"""The view model: columns from the catalog, the advice and its one-line reason, why an item is
ambiguous, the ranks a score's interval allows, Phi's MAP and the verdict's reason."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine

from monitor.core import catalog
from monitor.report.items import rank_ranges, uncertain_ranks
from monitor.report.render import render_html
from monitor.report.tables import fmt, measure_columns
from monitor.report.today import (
    advice,
    concern_order,
    flag_line,
    item_reason,
    worker_order,
    worker_todo,
)
from monitor.report.verdict import verdict
from monitor.report.view import build_view
from tests.report.fixtures import pairwise_campaign, rating_campaign
from tests.report.pages import tables
from tests.report.test_items import document


def _flag(rule: str, **evidence: Any) -> dict[str, Any]:
    return {"rule": rule, "value": evidence.pop("value", None),
            "threshold": evidence.pop("threshold", None), "evidence": evidence}  # fmt: skip


def test_advice_follows_what_the_flags_say() -> None:
    model = _flag("low_quality", chance=0.45, metric="model_accuracy", value=0.3, threshold=0.56)
    relative = _flag("low_quality", campaign_median=0.9, metric="wqs", value=0.4, threshold=0.6)
    assert advice([model]) == "block"
    assert advice([_flag("gold_accuracy", chance=0.8)]) == "block"
    assert advice([relative]) == "down_weight"  # below the median, not no better than chance
    assert advice([_flag("speeder")]) == "down_weight"
    assert advice([_flag("biased")]) == "review"
    flags = {"a": [_flag("speeder")], "b": [model, _flag("speeder")], "c": [model], "d": []}
    assert worker_order(flags) == ["b", "c", "a"]


def test_the_todo_list_and_the_order_follow_the_decisions() -> None:
    model = _flag("low_quality", chance=0.45, metric="model_accuracy", value=0.3, threshold=0.56)
    flags = {"b": [model, _flag("speeder")], "c": [model], "e": [_flag("speeder")]}

    def row(w: str, decision: str, acc: float | None, status: str = "ok", **more: Any) -> dict:
        return {"worker": w, "decision": decision, "model_accuracy": acc, "status": status,
                "decision_reason": f"why {w}", **more}  # fmt: skip

    rows = [
        row("a", "ok", 0.5), row("b", "block", 0.3), row("c", "block", 0.2, "blocked"),
        row("d", "down_weight", 0.6, decision_weight=0.25), row("e", "watch", 0.9),
        row("f", "cannot_tell", None), row("g", "down_weight", 0.55),
    ]  # fmt: skip
    ordered = concern_order(rows)
    assert [r["worker"] for r in ordered] == ["c", "b", "g", "d", "e", "f", "a"]
    todo = worker_todo(ordered, flags, {"b": "w-1"})
    assert [t.subject for t in todo["block"]] == ["b"]
    assert todo["block"][0].anchor == "w-1"
    assert todo["block"][0].reason == "why b"
    assert [t.subject for t in todo["down_weight"]] == ["g", "d"]
    assert todo["down_weight"][1].reason == "why d (weight 0.25)"
    assert [t.subject for t in todo["review"]] == ["e"]
    assert todo["block"][0].rules == ["low_quality", "speeder"]


def test_a_flag_in_one_line() -> None:
    f = _flag("low_quality", metric="model_noise_sd", interval=[2.18, 3.23], value=2.606,
              threshold=1.53, message="x" * 200)  # fmt: skip
    assert (
        flag_line(f)
        == f"{catalog.rule_title('low_quality')}: Noise sd 2.61 [2.18, 3.23] above 1.53"
    )
    short = _flag("speeder", message="3.1 s per judgment against a campaign median of 23.4 s")
    assert flag_line(short).endswith(": 3.1 s per judgment against a campaign median of 23.4 s")
    assert flag_line(_flag("speeder", message="y" * 200)) == catalog.rule_title("speeder")


def test_why_an_item_is_ambiguous() -> None:
    tied = {"answers": {"pos": 2, "neu": 2, "neg": 1}, "model_label": "pos"}
    flag = _flag("ambiguous", majority_disputed=True, metric="model_label")
    assert item_reason(tied, flag, "label") == (
        "the plain vote is tied between 'pos' and 'neu'; the reliable workers say 'pos'"
    )
    outvoted = {"answers": {"pos": 3, "neg": 2}, "model_label": "neg"}
    assert item_reason(outvoted, flag, "label") == (
        "the plain vote says 'pos'; the reliable workers say 'neg'"
    )
    unsure = _flag("ambiguous", metric="model_label", posterior={"pos": 0.86, "neg": 0.14})
    assert "lean to 'pos' with probability 0.86 only, then 'neg' 0.14" in item_reason(
        {"answers": {}}, unsure, "label"
    )
    options = _flag("ambiguous", metric="model_label",
                    posterior={"cat": 0.99, "bird": 0.16, "car": 0.001})  # fmt: skip
    assert "whether 'bird' applies (probability 0.16)" in item_reason({}, options, "multilabel")
    spread = _flag("ambiguous", spread=1.34, expected_spread=0.78, p_value=0.0094)
    assert item_reason({}, spread, "rating") == (
        "the ratings spread 1.34 where the workers' noise explains 0.78 (p = 0.0094)"
    )
    # the page never shows "posterior 1.00" beside the word ambiguous
    assert "1.00" not in item_reason({"answers": {"a": 2, "b": 2}, "model_label": "a"},
                                     _flag("ambiguous", majority_disputed=True,
                                           posterior={"a": 0.9999}), "label")  # fmt: skip


def test_small_numbers_keep_their_digits() -> None:
    assert fmt(0.0094) == "0.0094"
    assert fmt(9e-05) == "9e-05"
    assert fmt(0.0) == "0.00"
    assert fmt(0.25) == "0.25"
    assert fmt(1234.5) == "1,234.50"
    assert fmt(None) == "—"


def test_columns_hold_only_measures_with_values() -> None:
    rows = [{"worker": "w", "wqs": 0.5, "model_accuracy": None, "tie_rate": 0.1}]
    keys = [c.key for c in measure_columns("worker", "rating", rows)]
    assert keys == ["wqs"]  # tie_rate is not a rating measure; model_accuracy holds nothing
    rows[0]["model_noise_sd"] = 1.2
    assert [c.key for c in measure_columns("worker", "rating", rows)] == ["model_noise_sd", "wqs"]


def test_a_new_catalog_measure_shows_up_in_the_table(engine: Engine, monkeypatch: Any) -> None:
    """A measure declared in the catalog with a key, and present in the document's rows, gets
    its column with its title; no template changes."""
    rating_campaign(engine)
    doc = document(engine, "quality")
    new = catalog.Measure("model_consistency", catalog.Scope.WORKER, catalog.ALL,
                          "how consistent the worker is", title="Consistency",
                          key="model_consistency", shows_interval=True)  # fmt: skip
    monkeypatch.setattr(catalog, "MEASURES", (*catalog.MEASURES, new))
    for k, w in enumerate(doc["workers"]):
        w["model_consistency"] = 0.5 + k / 100
        w["model_consistency_interval"] = [0.4, 0.6 + k / 100]
    workers = tables(render_html(doc))["workers-table"]
    assert workers.headers[3] == "Consistency"  # an interval: with the quality estimates
    by = {w["worker"]: w for w in doc["workers"]}
    for cell, attrs in zip(workers.column("Consistency"), workers.attrs, strict=True):
        w = by[attrs["data-subject"]]
        lo, hi = w["model_consistency_interval"]
        assert cell == f"{w['model_consistency']:.2f} [{lo:.2f}, {hi:.2f}]"


def _brute(score: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[list[int], list[int]]:
    best, worst = [], []
    for i in range(score.size):
        others = [j for j in range(score.size) if j != i]
        best.append(1 + sum(lo[j] > hi[i] for j in others))
        worst.append(1 + sum(hi[j] >= lo[i] for j in others))
    return best, worst


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.floats(-5, 5), st.floats(0, 3), st.booleans()), min_size=1, max_size=30)
)
def test_rank_ranges_against_a_brute_force(items: list[tuple[float, float, bool]]) -> None:
    score = np.array(sorted((s for s, _, _ in items), reverse=True))
    half = np.array([w for _, w, _ in items])
    known = np.array([k for _, _, k in items])
    lo = np.where(known, score - half, np.nan)
    hi = np.where(known, score + half, np.nan)
    best, worst = rank_ranges(score, lo, hi)
    b, w = _brute(score, np.where(known, lo, score), np.where(known, hi, score))
    assert best.tolist() == b
    assert worst.tolist() == w
    assert all(best <= np.arange(1, score.size + 1))
    assert all(worst >= np.arange(1, score.size + 1))


def test_an_item_on_few_comparisons_has_an_uncertain_rank() -> None:
    """The demo's shape: thirty items, intervals of +-0.7, the top one +-8 (9 comparisons)."""
    score = np.linspace(3.0, -3.0, 30)
    half = np.full(30, 0.7)
    half[0] = 8.0
    best, worst = rank_ranges(score, score - half, score + half)
    assert (best[0], worst[0]) == (1, 30)
    uncertain = uncertain_ranks(score - half, score + half, best, worst)
    assert uncertain.tolist() == [True] + [False] * 29


def test_the_top_rank_resting_on_few_comparisons_says_so(engine: Engine) -> None:
    pairwise_campaign(engine)
    doc = document(engine, "prefs")
    top = max(doc["items"], key=lambda i: i["score"])
    top["score"], top["score_interval"], top["n_judgments"] = 9.0, [-2.0, 20.0], 2
    scores = tables(render_html(doc))["scores-table"]
    note = scores.column("Note")[0]
    assert "rank uncertain: anywhere in 1–4" in note
    assert "only 2 comparisons" in note


def test_phi_map_outside_its_interval_is_explained(engine: Engine) -> None:
    rating_campaign(engine)
    doc = document(engine, "quality")
    inside = build_view(copy.deepcopy(doc))["agreement_rows"]
    [phi] = [r for r in inside if r["name"].startswith("Phi")]
    assert "MAP 0.530." in phi["meaning"]
    assert "outside" not in phi["meaning"]
    doc["agreement"]["phi"] = {**doc["agreement"]["phi"], "map": 0.677, "hpd": [0.527, 0.640]}
    [phi] = [r for r in build_view(doc)["agreement_rows"] if r["name"].startswith("Phi")]
    assert "The MAP 0.677 lies outside the interval" in phi["meaning"]
    assert "overstates agreement when items have few ratings" in phi["meaning"]


def test_the_verdict_gives_the_real_reason() -> None:
    sets = "not defined for multi-label sets: see the CrowdTruth unit and annotation scores"
    v = verdict(None, None, sets)
    assert v["level"] == "undetermined"
    assert v["text"] == f"Krippendorff's alpha is {sets}."
    assert "Not enough data" in verdict(None, None)["text"]


def test_flagged_workers_are_linked_from_the_todo_list(engine: Engine) -> None:
    rating_campaign(engine)
    html = render_html(document(engine, "quality"))
    assert 'href="#w-1"' in html
    assert 'id="w-1"' in html
    assert 'data-worker="w6"' in html


def test_catalog_titles_replace_nothing_the_rules_read() -> None:
    keyed = [m for m in catalog.MEASURES if m.key and m.scope in ("worker", "item")]
    assert all(m.title for m in keyed)
    assert replace(keyed[0], title="") != keyed[0]


def test_an_ambiguous_label_item_is_not_shown_as_certain(engine: Engine) -> None:
    from monitor.pipeline import recompute
    from tests.pipeline.cases import store_case
    from tests.pipeline.test_quality import SETTINGS, label_case

    case, _ = label_case(n_items=80, seed=12)
    store_case(engine, case)
    recompute(engine, SETTINGS)
    doc = document(engine, "golden")
    ambiguous = {i["item"] for i in doc["items"] if "ambiguous" in i["flags"]}
    assert ambiguous
    items = tables(render_html(doc))["items-table"]
    for cell, attrs in zip(items.column("Model's answer"), items.attrs, strict=True):
        doubtful = attrs["data-subject"] in ambiguous
        assert ("in doubt: see why above" in cell) == doubtful
        assert ("p " in cell) != doubtful


def test_the_workers_table_shows_who_to_act_on_then_fills_up(engine: Engine) -> None:
    """Every worker to act on or look at is on the page, however many cannot be judged; those
    (and the ok ones) fill the table up to its size, and the page says how many more the JSON
    document has."""
    from monitor.report.view import MAX_WORKERS

    rating_campaign(engine)
    doc = document(engine, "quality")
    template = doc["workers"][0]

    def row(w: str, decision: str) -> dict[str, Any]:
        return {**copy.deepcopy(template), "worker": w, "decision": decision,
                "decision_reason": f"why {w}", "flags": []}  # fmt: skip

    acts = [row(f"act{k}", d) for k, d in enumerate(["watch", "block", "down_weight"] * 40)]
    unknown = [row(f"unk{k}", "cannot_tell") for k in range(300)]
    doc["workers"] = unknown + acts + [row("fine", "ok")]
    table = build_view(doc)["workers_table"]
    shown = [r[0].text for r in table.rows]
    assert len(acts) > MAX_WORKERS  # all of them shown, beyond the table's size
    assert sorted(shown) == sorted(r["worker"] for r in acts)
    assert table.total == len(doc["workers"])
    doc["workers"] = unknown[:150] + acts[:30] + [row("fine", "ok")]
    table = build_view(doc)["workers_table"]
    shown = [r[0].text for r in table.rows]
    assert len(shown) == MAX_WORKERS
    assert {w for w in shown if w.startswith("act")} == {r["worker"] for r in acts[:30]}
    assert shown[:10] == [w for w in shown if w.startswith("act")][:10]  # most severe first
    assert table.more == 151 + 30 - MAX_WORKERS
