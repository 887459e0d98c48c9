"""Each flagged worker's picture: their answers against the model's, counted from the stored
judgments (the latest of each worker and item), checked against a count made here by hand."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Engine

from monitor.pipeline import recompute
from monitor.report import evidence
from monitor.report.data import load
from monitor.report.document import build_document
from monitor.report.render import pictures_of
from monitor.store.answers import window_start, worker_answers
from monitor.store.campaigns import get_campaign
from monitor.store.engine import session_factory, transaction
from monitor.store.models import Judgment
from tests.pipeline.cases import store_case
from tests.pipeline.test_quality import SETTINGS, label_case, rating_case
from tests.report.test_items import document

CELL = re.compile(r"<title>the model (\S+), they (\S+): (\d+)</title>")


def _pictures(engine: Engine, name: str = "golden") -> tuple[dict[str, Any], dict[str, str]]:
    doc = document(engine, name)
    with session_factory(engine)() as s:
        data = load(s, name)
    return doc, pictures_of(doc, data.items, evidence.fetch(engine, name))


def test_a_labellers_confusion_matrix_counts_their_latest_answers(engine: Engine) -> None:
    case, _ = label_case(n_items=80, seed=3)
    # rnd answers i0 again, later: only the later answer counts
    case["judgments"].append({"worker": "rnd", "item": "i0", "value": "c"})
    store_case(engine, case)
    recompute(engine, SETTINGS)
    doc, pictures = _pictures(engine)
    flagged = {f["subject"] for f in doc["flags"] if f["scope"] == "worker"}
    assert {"rnd", "const"} <= flagged
    assert set(pictures) == flagged
    model = {i["item"]: i["model_label"] for i in doc["items"]}
    latest = {(r["worker"], r["item"]): r["value"] for r in case["judgments"]}
    for worker in ("rnd", "const"):
        expected = Counter(
            (model[i], v) for (w, i), v in latest.items() if w == worker and model.get(i)
        )
        drawn = {(m, t): int(n) for m, t, n in CELL.findall(pictures[worker]) if n != "0"}
        assert drawn == dict(expected)
        agree = sum(n for (m, t), n in expected.items() if m == t)
        assert f"agree on {agree} of {sum(expected.values())}" in pictures[worker]
    assert "of 80 (" in pictures["const"]  # 81 judgments, 80 items


def test_a_raters_scatter_has_their_ratings_against_the_consensus(engine: Engine) -> None:
    store_case(engine, rating_case(n_items=60))
    recompute(engine, SETTINGS)
    doc, pictures = _pictures(engine)
    assert "const" in pictures
    points = re.findall(r'<circle cx="([\d.]+)" cy="([\d.]+)"', pictures["const"])
    assert len(points) == 60
    assert len({cy for _, cy in points}) == 1  # a constant rater: one height
    means = [i["model_mean"] for i in doc["items"]]
    off = np.mean([abs(50.0 - m) for m in means])
    assert f"off by {off:.2f} on average" in pictures["const"]


def test_answers_are_read_within_the_window(engine: Engine) -> None:
    case, _ = label_case(n_items=40, seed=4)
    store_case(engine, case)
    recompute(engine, SETTINGS)
    with session_factory(engine)() as s:
        c = get_campaign(s, "golden")
        ids = sorted(s.scalars(Judgment.__table__.select().with_only_columns(Judgment.id)))
        top = ids[-1]
        assert window_start(s, c, top, 10) == ids[-11]
        assert window_start(s, c, top, len(ids)) == 0
        recent = worker_answers(s, c, ["rnd", "h0"], top, window=10)
        every = worker_answers(s, c, ["rnd", "h0"], top)
    with transaction(engine) as s:
        last = {
            (r.worker_id, r.item_id) for r in s.query(Judgment).filter(Judgment.id > ids[-11]).all()
        }
    assert len(recent) <= 10
    assert len(recent) <= len(last)
    assert len(every) == 80
    assert set(every.worker) == {"rnd", "h0"}
    assert set(zip(recent.worker, recent.item, strict=True)) <= set(
        zip(every.worker, every.item, strict=True)
    )
    with pytest.raises(ValueError, match="preference"):
        worker_answers(s, type(c)(**{**c.__dict__, "kind": "pairwise"}), ["x"], top)


@pytest.mark.parametrize("kind", ["label", "multilabel"])
def test_model_answers_from_the_arrays_match_the_rows(engine: Engine, kind: str) -> None:
    if kind == "label":
        store_case(engine, label_case(n_items=50, seed=6)[0])
    else:
        from tests.golden import GOLDEN
        from tests.golden import load as golden

        store_case(engine, golden(GOLDEN / "cases" / "ct_closed_10opt.json"))
    recompute(engine, SETTINGS)
    with session_factory(engine)() as s:
        doc = build_document(s, "golden")
        data = load(s, "golden")
    table = data.items
    assert table.columnar
    positions = np.arange(len(table))
    fast = table.model_answers(positions)
    plain = [table._model_answer(p) for p in positions.tolist()]
    assert fast == plain
    rows = {i["item"]: i.get("model_label") for i in doc["items"]}
    for item, answer in zip(table.ids, fast, strict=True):
        expected = rows[item]
        if kind == "multilabel" and answer is not None:
            answer = "|".join(answer)
        assert answer == expected
