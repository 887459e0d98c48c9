"""The platform files of issue 30, as the platforms write them, through the command line on
SQLite and PostgreSQL: nothing lost, every rejected record with its reason, JSON problems at
their line and character, the mapping of numbered questions proposed and working."""

from __future__ import annotations

import csv
import re
import shlex
from pathlib import Path

import pytest
from sqlalchemy import create_engine, select

from monitor.cli import main
from monitor.store.models import Item, Judgment, Preference, RejectedRow

DATA = Path(__file__).resolve().parents[1] / "data" / "platforms"


def run(capsys: pytest.CaptureFixture[str], db_url: str, *words: str) -> tuple[int, list[str]]:
    code = main([*words, "--db", db_url])
    out, err = capsys.readouterr()
    return code, out.splitlines() + err.splitlines()


def rows(db_url: str, *columns: object) -> list[tuple[object, ...]]:
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            return [tuple(r) for r in conn.execute(select(*columns)).all()]  # type: ignore[call-overload]
    finally:
        engine.dispose()


def test_toloka_task_suites_without_task_ids_keep_every_answer(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two side-by-side tasks a suite, one assignment id for both, no task id column (Toloka's
    default export): 24 answers, 24 judgments; the same file again stores nothing."""
    path = str(DATA / "toloka_sbs_suites.tsv")
    words = ["--map", "left=id_left", "--map", "right=id_right"]
    run(capsys, db_url, "campaign", "create", "older", "--kind", "pairwise")
    assert run(capsys, db_url, "ingest", path, "--campaign", "older", *words) == (
        0,
        [
            f"{path} (toloka, detected platform toloka): 24 rows: 24 new, 0 duplicate, 0 rejected",
            "campaign platform set to toloka (workers' history is per platform)",
        ],
    )
    assert run(capsys, db_url, "ingest", path, "--campaign", "older", *words)[1][0].endswith(
        "24 rows: 0 new, 24 duplicate, 0 rejected"
    )
    with open(path, encoding="utf-8", newline="") as handle:
        table = list(csv.DictReader(handle, delimiter="\t"))
    stored = rows(db_url, Preference.external_id, Preference.outcome)
    assert len({ident for ident, _ in stored}) == 24
    # Each assignment (a suite of two tasks) gives two judgments, in the file's order.
    assert [ident.split("/")[0] for ident, _ in stored] == [
        r["ASSIGNMENT:assignment_id"] for r in table
    ]
    assert [outcome for _, outcome in stored] == [r["OUTPUT:result"] for r in table]


def test_labelstudio_annotations_without_the_from_name(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two of 25 annotations have no result for 'sentiment' (one holds only a 'quality'
    rating, one was submitted empty): refused, then rejected alone with --skip-invalid."""
    path = str(DATA / "labelstudio_empty_results.json")
    words = ["--campaign", "reviews", "--map", "value=sentiment", "--map", "item=data.review_id"]
    run(capsys, db_url, "campaign", "create", "reviews", "--kind", "label")
    hint = "skip empty annotations in Label Studio or choose the from_name with --map value=NAME"
    problems = [
        f"{path}:1: column 'sentiment': no result in annotation 9105 of task 412 (from_names in"
        f" it: quality; {hint})",
        f"{path}:1: column 'sentiment': no result in annotation 9117 of task 417 (from_names in"
        f" it: none; {hint})",
    ]
    assert run(capsys, db_url, "ingest", path, *words) == (2, [*problems, "nothing was written"])
    assert rows(db_url, Judgment.id) == []
    code, out = run(capsys, db_url, "ingest", path, *words, "--skip-invalid")
    assert (code, out[0]) == (
        0,
        f"{path} (labelstudio, detected platform labelstudio): 25 rows: 23 new, 0 duplicate,"
        " 2 rejected",
    )
    assert out[-1].startswith("rejected rows are kept with their reasons in ingest batch ")
    rejected = rows(db_url, RejectedRow.line, RejectedRow.reasons, RejectedRow.raw)
    assert [(line, reasons) for line, reasons, _ in rejected] == [
        (1, [problems[0]]),
        (1, [problems[1]]),
    ]
    assert all('"completed_by"' in raw for _, _, raw in rejected)  # the annotation, as evidence
    assert len(rows(db_url, Judgment.id)) == 23
    code, out = run(capsys, db_url, "ingest", path, *words, "--skip-invalid")
    assert out[0].endswith("25 rows: 0 new, 23 duplicate, 2 rejected")


def test_labelstudio_text_after_the_array_is_named_where_it_is(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two one-line exports in one file: the second begins at line 2, character 1."""
    path = str(DATA / "labelstudio_concatenated.json")
    run(capsys, db_url, "campaign", "create", "reviews", "--kind", "label")
    assert run(capsys, db_url, "ingest", path, "--campaign", "reviews") == (
        2,
        [
            f"{path}:2:1: not valid JSON: text after the end of the array (an export is one JSON"
            " array: was something added to the file after it?)",
            "nothing was written",
        ],
    )


def test_mturk_numbered_questions_get_the_mapping_that_reads_them(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """100 questions a HIT (Input.Nucle_ID1..100, Answer.mistakeRate1..100): the error
    proposes the {n} mapping, and that very mapping stores one judgment per question."""
    path = str(DATA / "mturk_numbered_questions.csv")
    run(capsys, db_url, "campaign", "create", "gec", "--kind", "rating", "--min", "0",
        "--max", "100")  # fmt: skip
    code, out = run(capsys, db_url, "ingest", path, "--campaign", "gec")
    assert (code, out) == (
        2,
        [
            f"{path}:1: several answer columns: Answer.mistakeRate{{n}} (n = 1..100) (numbered"
            " questions: read one judgment per question with --map item=Input.Nucle_ID{n}"
            " --map value=Answer.mistakeRate{n})",
            "nothing was written",
        ],
    )
    proposed = re.search(r"with (--map .*)\)$", out[0])
    assert proposed is not None
    words = shlex.split(proposed.group(1))
    code, out = run(capsys, db_url, "ingest", path, "--campaign", "gec", *words)
    assert (code, out[0]) == (
        0,
        f"{path} (mturk, detected platform mturk): 400 rows: 400 new, 0 duplicate, 0 rejected",
    )
    with open(path, encoding="utf-8", newline="") as handle:
        first = next(csv.DictReader(handle))
    stored = _judgments(db_url)
    assert len(stored) == 400
    assert {
        (f"{first['AssignmentId']}/{n}", first[f"Input.Nucle_ID{n}"],
         float(first[f"Answer.mistakeRate{n}"]))
        for n in range(1, 101)
    } <= set(stored)  # fmt: skip
    again = run(capsys, db_url, "ingest", path, "--campaign", "gec", *words)[1][0]
    assert again.endswith("400 rows: 0 new, 400 duplicate, 0 rejected")


def _judgments(db_url: str) -> list[tuple[object, ...]]:
    """(judgment id, item, value) of every judgment."""
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            query = select(Judgment.external_id, Item.external_id, Judgment.value_num).join(
                Item, Item.id == Judgment.item_id
            )
            return [tuple(r) for r in conn.execute(query).all()]
    finally:
        engine.dispose()
