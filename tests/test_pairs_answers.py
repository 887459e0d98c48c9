"""Answers to planned pairs (``monitor pairs plan``, then ``monitor ingest``), on every task
format the plan writes (plain CSV, MTurk, Toloka, Label Studio) and both databases: an answer
reaches a planned pair only when its pair id and its items match (a quote the task file added
for spreadsheets undone), every other row is counted by kind, kept as an ordinary preference or
rejected with ``--skip-invalid``; a planned pair answered twice says so; blank answers are
tasks not answered yet."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from sqlalchemy import func, select

from monitor.store.engine import make_engine, transaction
from monitor.store.models import Item, Judgment, Preference, RejectedRow
from tests.test_cli_pairs import _planned, _run, _setup

PLATFORMS = ["csv", "mturk", "toloka", "labelstudio"]

Answer = tuple[str, str, str, str, str]  # pair_id, worker, left, right, preference


def _answers(path: Path, platform: str, answers: list[Answer]) -> list[str]:
    """``answers`` written as the platform's results file; the ``--format`` arguments."""
    if platform == "csv":
        with path.open("w", newline="") as f:
            out = csv.writer(f)
            out.writerow(["pair_id", "worker", "left", "right", "preference"])
            out.writerows(answers)
        return ["--format", "csv"]
    if platform == "labelstudio":
        docs = [
            {"id": k, "data": {"pair_id": pid, "left": a, "right": b},
             "annotations": [{"id": 100 + k, "completed_by": w, "was_cancelled": False,
                              "result": [{"from_name": "pw", "to_name": "pw", "type": "pairwise",
                                          "value": {"selected": pref}}]}]}
            for k, (pid, w, a, b, pref) in enumerate(answers)
        ]  # fmt: skip
        path.write_text(json.dumps(docs))
        return ["--format", "labelstudio"]
    mturk = platform == "mturk"
    p = "Input." if mturk else "INPUT:"
    head = [
        "WorkerId" if mturk else "ASSIGNMENT:worker_id",
        "AssignmentId" if mturk else "ASSIGNMENT:assignment_id",
        f"{p}pair_id", f"{p}left", f"{p}right",
        "Answer.preference" if mturk else "OUTPUT:preference",
    ]  # fmt: skip
    with path.open("w", newline="") as f:
        out = csv.writer(f, delimiter="," if mturk else "\t")
        out.writerow(head)
        out.writerows(
            [w, f"A{k}", pid, a, b, pref] for k, (pid, w, a, b, pref) in enumerate(answers)
        )
    return ["--format", platform]


def _plan(tmp_path: Path, db_url: str, capsys, budget: int = 30) -> list[dict[str, str]]:  # noqa: ANN001
    tasks = tmp_path / "tasks.csv"
    code, _, err = _run(capsys, "pairs", "plan", "--campaign", "pc", "--budget", str(budget),
                        "--out", str(tasks), "--db", db_url)  # fmt: skip
    assert code == 0, err
    return list(csv.DictReader(tasks.open(newline="")))


def _count(db_url: str, what: type) -> int:
    engine = make_engine(db_url)
    try:
        with transaction(engine) as s:
            return int(s.scalar(select(func.count()).select_from(what)) or 0)
    finally:
        engine.dispose()


def _reasons(db_url: str) -> list[str]:
    engine = make_engine(db_url)
    try:
        with transaction(engine) as s:
            return [r for row in s.scalars(select(RejectedRow.reasons)) for r in row]
    finally:
        engine.dispose()


def _mixed(rows: list[dict[str, str]]) -> tuple[list[Answer], str]:
    """Answers to the first 10 tasks, then one of each mismatch: a pair id naming a planned
    pair but other items, a pair id naming no planned pair, a second answer to a task."""
    good = [
        (r["pair_id"], f"x{k % 2}", r["left"], r["right"], "left") for k, r in enumerate(rows[:10])
    ]
    odd = rows[10]
    other = next(
        i for r in rows for i in (r["left"], r["right"]) if i not in (odd["left"], odd["right"])
    )
    bad = [
        (odd["pair_id"], "x5", odd["left"], other, "right"),  # other items
        ("p-0000000000000000", "x6", rows[11]["left"], rows[11]["right"], "left"),  # unknown
        (rows[0]["pair_id"], "x7", rows[0]["right"], rows[0]["left"], "right"),  # again
    ]
    return good + bad, odd["pair_id"]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_mismatches_are_counted_and_kept(tmp_path, db_url, capsys, platform) -> None:  # noqa: ANN001
    _setup(tmp_path, db_url, capsys)
    rows = _plan(tmp_path, db_url, capsys)
    answers, odd = _mixed(rows)
    before = _count(db_url, Preference)
    path = tmp_path / f"answers.{'json' if platform == 'labelstudio' else 'txt'}"
    fmt = _answers(path, platform, answers)
    code, text, err = _run(capsys, "ingest", str(path), "--campaign", "pc", *fmt, "--db", db_url)
    assert code == 0, err
    said = text + err
    assert "10 planned pairs answered" in said
    assert "1 row carries a pair_id that names a planned pair of other items: kept" in said
    assert "1 row carries a pair_id of a planned pair answered before" in said
    assert "1 row carries a pair_id that names no planned pair" in said
    planned = {p.pair_id: p for p in _planned(db_url)}
    assert {pid for pid, p in planned.items() if p.answered_id is not None} == {
        r["pair_id"] for r in rows[:10]
    }
    assert planned[odd].answered_id is None  # the other items' answer reached no planned pair
    assert _count(db_url, Preference) == before + 13  # every row kept as a preference


@pytest.mark.parametrize("platform", PLATFORMS)
def test_skip_invalid_rejects_other_items(tmp_path, db_url, capsys, platform) -> None:  # noqa: ANN001
    _setup(tmp_path, db_url, capsys)
    rows = _plan(tmp_path, db_url, capsys)
    answers, odd = _mixed(rows)
    before = _count(db_url, Preference)
    path = tmp_path / f"answers.{'json' if platform == 'labelstudio' else 'txt'}"
    fmt = _answers(path, platform, answers)
    code, text, err = _run(capsys, "ingest", str(path), "--campaign", "pc", *fmt,
                           "--skip-invalid", "--db", db_url)  # fmt: skip
    assert code == 0, err
    said = text + err
    assert "1 row rejected: a pair_id that names a planned pair of other items" in said
    assert "other items: kept" not in said
    assert _count(db_url, Preference) == before + 12
    reasons = _reasons(db_url)
    assert len(reasons) == 1
    assert f"'{odd}' names the planned pair" in reasons[0]
    assert next(p for p in _planned(db_url) if p.pair_id == odd).answered_id is None


@pytest.mark.parametrize("platform", PLATFORMS)
def test_quoted_item_ids_come_back_as_planned(tmp_path, db_url, capsys, platform) -> None:  # noqa: ANN001
    """Items a spreadsheet reads as formulas are quoted in the task file (``'=item4``); the
    answers carrying the quote back are stored on the planned items, no phantom item."""
    items = [f"=item{k}" if k % 2 else f"-item{k}" for k in range(8)]
    lines = ["worker,left,right,preference"] + [
        f"w{k % 3},{items[k % 8]},{items[(k + 3) % 8]},left" for k in range(24)
    ]
    (tmp_path / "p.csv").write_text("\n".join(lines) + "\n")
    _run(capsys, "campaign", "create", "pc", "--kind", "pairwise", "--db", db_url)
    assert (
        _run(capsys, "ingest", str(tmp_path / "p.csv"), "--campaign", "pc", "--db", db_url)[0] == 0
    )
    n_items = _count(db_url, Item)
    rows = _plan(tmp_path, db_url, capsys, budget=9)
    assert all(r["left"].startswith("'") and r["right"].startswith("'") for r in rows)
    answers = [(r["pair_id"], r["worker"], r["left"], r["right"], "right") for r in rows]
    if platform == "labelstudio":  # JSON tasks are not quoted: the ids come back as they are
        answers = [(p, w, a[1:], b[1:], o) for p, w, a, b, o in answers]
    path = tmp_path / f"answers.{'json' if platform == 'labelstudio' else 'txt'}"
    fmt = _answers(path, platform, answers)
    code, text, err = _run(capsys, "ingest", str(path), "--campaign", "pc", *fmt, "--db", db_url)
    assert code == 0, err
    assert f"{len(rows)} planned pairs answered" in text + err
    assert _count(db_url, Item) == n_items
    assert all(p.answered_id is not None for p in _planned(db_url))


def test_blank_answers_are_not_answered_yet(tmp_path, db_url, capsys) -> None:  # noqa: ANN001
    """A plan file answered by hand, some rows still blank: those are skipped, not errors."""
    _setup(tmp_path, db_url, capsys)
    rows = _plan(tmp_path, db_url, capsys, budget=12)
    lines = ["pair_id,worker,left,right,preference"] + [
        f"{r['pair_id']},{r['worker']},{r['left']},{r['right']},{'left' if k < 5 else ''}"
        for k, r in enumerate(rows)
    ]
    (tmp_path / "a.csv").write_text("\n".join(lines) + "\n")
    code, text, err = _run(capsys, "ingest", str(tmp_path / "a.csv"), "--campaign", "pc",
                           "--db", db_url)  # fmt: skip
    assert code == 0, err
    assert "7 rows not answered yet (blank preference) skipped" in text + err
    assert "5 planned pairs answered" in text + err


@pytest.mark.parametrize("platform", ["mturk", "toloka"])
def test_blank_platform_answers_are_skipped(tmp_path, db_url, capsys, platform) -> None:  # noqa: ANN001
    _setup(tmp_path, db_url, capsys)
    rows = _plan(tmp_path, db_url, capsys, budget=6)
    answers = [(r["pair_id"], r["worker"], r["left"], r["right"], "" if k % 2 else "left")
               for k, r in enumerate(rows)]  # fmt: skip
    fmt = _answers(tmp_path / "a.txt", platform, answers)
    code, text, err = _run(capsys, "ingest", str(tmp_path / "a.txt"), "--campaign", "pc", *fmt,
                           "--db", db_url)  # fmt: skip
    assert code == 0, err
    assert "3 planned pairs answered" in text + err
    assert "3 unanswered questions skipped (blank answer cells)" in text + err


def test_toloka_exports_with_and_without_task_ids_store_once(tmp_path, db_url, capsys) -> None:  # noqa: ANN001
    """The same Toloka answers exported with ASSIGNMENT:task_id and without: stored once."""
    _run(capsys, "campaign", "create", "tl", "--kind", "label", "--db", db_url)
    head = ["INPUT:item", "OUTPUT:label", "ASSIGNMENT:task_id", "ASSIGNMENT:assignment_id",
            "ASSIGNMENT:worker_id", "ASSIGNMENT:status"]  # fmt: skip
    body = [[f"it{k % 5}", "ab"[k % 2], f"T{k}", f"A{k // 3}", f"w{k // 3}", "ACCEPTED"]
            for k in range(12)]  # fmt: skip
    with_ids = tmp_path / "with.tsv"
    with_ids.write_text("\n".join("\t".join(r) for r in [head, *body]) + "\n")
    without = tmp_path / "without.tsv"
    cut = [r[:2] + r[3:] for r in [head, *body]]
    without.write_text("\n".join("\t".join(r) for r in cut) + "\n")
    for path in (with_ids, without):
        code, _, err = _run(capsys, "ingest", str(path), "--campaign", "tl",
                            "--format", "toloka", "--db", db_url)  # fmt: skip
        assert code == 0, err
        assert _count(db_url, Judgment) == 12


def test_mturk_layout_answers_in_task_answers(tmp_path, db_url, capsys) -> None:  # noqa: ANN001
    """The MTurk layout's answer comes back in Answer.taskAnswers: read as the preference."""
    _setup(tmp_path, db_url, capsys)
    rows = _plan(tmp_path, db_url, capsys, budget=4)
    path = tmp_path / "batch.csv"
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["HITId", "AssignmentId", "WorkerId", "Input.pair_id", "Input.left",
                      "Input.right", "Answer.taskAnswers"])  # fmt: skip
        out.writerows([f"H{k}", f"A{k}", r["worker"], r["pair_id"], r["left"], r["right"],
                       json.dumps([{"preference": "right"}])] for k, r in enumerate(rows))  # fmt: skip
    code, text, err = _run(capsys, "ingest", str(path), "--campaign", "pc", "--format", "mturk",
                           "--db", db_url)  # fmt: skip
    assert code == 0, err
    assert "4 planned pairs answered" in text + err


ids = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)


@given(a=ids, b=ids, c=ids, swap=st.booleans())
def test_a_quoted_pair_is_the_planned_pair(a: str, b: str, c: str, swap: bool) -> None:
    """Whatever the ids, the cells a task file writes for them come back as the planned pair
    (either side), and a cell of another id does not (ids that a task file cannot tell apart,
    ``=x`` and ``'=x``, aside)."""
    from monitor.core.cells import neutralise
    from monitor.store.plans import as_planned, undo_quote

    assume(a != b and neutralise(a) != b and neutralise(b) != a)
    left, right = (neutralise(b), neutralise(a)) if swap else (neutralise(a), neutralise(b))
    assert as_planned((a, b), left, right) == ((b, a) if swap else (a, b))
    assume(undo_quote(neutralise(c)) not in (a, b) and neutralise(c) not in (a, b))
    assert as_planned((a, b), neutralise(a), neutralise(c)) is None
    assert as_planned((a, b), neutralise(c), neutralise(a)) is None
