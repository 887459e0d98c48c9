"""Prolific: worker rows from the submissions export, answers joined by participant id."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.core.errors import InputError, UsageError
from monitor.ingest.platforms import READERS
from monitor.ingest.rows import SourceRow

DATA = Path(__file__).resolve().parents[1] / "data" / "platforms"
EXPORT = DATA / "prolific_export.csv"
read = READERS["prolific"]
APPROVED = "5f1e2d3c4b5a69788796a5b4"
AWAITING = "60aa11bb22cc33dd44ee55ff"
REJECTED = "6133ffeeddccbbaa99887766"


def error_of(path: Path, **kwargs: object) -> str:
    with pytest.raises(InputError) as info:
        list(read(path, **kwargs))  # type: ignore[arg-type]
    return str(info.value)


def test_export_alone_yields_worker_rows() -> None:
    rows = list(read(EXPORT, kind="rating"))
    assert [r.table for r in rows] == ["worker"] * 5
    assert rows[0] == SourceRow(
        2,
        {
            "worker": APPROVED, "status": "approved",
            "started_at": "2025-11-03T09:00:05.120000Z",
            "completed_at": "2025-11-03T09:14:35.120000Z", "duration_s": 870,
        },
        table="worker",
        extra={"submission_id": "6548a1b2c3d4e5f601234567", "file": str(EXPORT)},
    )  # fmt: skip
    assert [r.fields["status"] for r in rows] == [
        "approved", "awaiting_review", "returned", "timed_out", "rejected",
    ]  # fmt: skip
    assert rows[1].fields["duration_s"] == 190.5
    assert rows[2].fields == {
        "worker": "611122334455667788990011", "status": "returned",
        "started_at": "2025-11-03T09:03:00Z",
    }  # fmt: skip


def test_answers_joined_with_statuses() -> None:
    rows = list(
        read(
            DATA / "prolific_answers.csv",
            kind="rating",
            mapping={"worker": "PROLIFIC_PID"},
            options={"export": str(EXPORT)},
        )
    )
    judgments = [r for r in rows if r.table == "judgment"]
    assert len(rows) - len(judgments) == 5
    # RETURNED (line 5), REJECTED (6) and TIMED-OUT (7) participants' answers are dropped.
    assert judgments == [
        SourceRow(2, {"worker": APPROVED, "item": "q-001", "value": "4", "judgment_id": "r-1",
                      "created_at": "2025-11-03T09:05:00Z", "duration_s": "31"},
                  extra={"session": "s1"}),
        SourceRow(3, {"worker": APPROVED, "item": "q-002", "value": "2", "judgment_id": "r-2",
                      "created_at": "2025-11-03T09:06:00Z", "duration_s": "22"},
                  extra={"session": "s1"}),
        SourceRow(4, {"worker": AWAITING, "item": "q-001", "value": "5", "judgment_id": "r-3",
                      "created_at": "2025-11-03T09:04:00Z", "duration_s": "12"},
                  extra={"session": "s2"}),
    ]  # fmt: skip
    kept = read(
        DATA / "prolific_answers.csv",
        kind="rating",
        mapping={"worker": "PROLIFIC_PID"},
        options={"export": str(EXPORT), "keep_rejected": "yes"},
    )
    assert [r.line for r in kept if r.table == "judgment"] == [2, 3, 4, 6]


def test_jsonl_answers_and_unknown_participants() -> None:
    path = DATA / "prolific_answers.jsonl"
    assert error_of(path, kind="multilabel", options={"export": str(EXPORT)}) == (
        f"{path}:5: column 'worker': participant '7000000000000000000000ff' is not in the"
        f" Prolific export {EXPORT} (check the study, or keep such answers with the option"
        " keep_unknown)"
    )
    rows = read(path, kind="multilabel", options={"export": str(EXPORT), "keep_unknown": ""})
    judgments = [(r.line, r.fields, r.extra) for r in rows if r.table == "judgment"]
    assert judgments == [
        (1, {"worker": APPROVED, "item": "img-1", "value": ["cat", "dog"], "judgment_id": "j-1"}, {}),
        (3, {"worker": AWAITING, "item": "img-1", "value": ["cat"], "judgment_id": "j-2"},
         {"device": "mobile"}),
        (5, {"worker": "7000000000000000000000ff", "item": "img-1", "value": ["bird"],
             "judgment_id": "j-4"}, {}),
    ]  # fmt: skip


def test_csv_multilabel_and_pairwise(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    path.write_text(f"worker,item,value\n{APPROVED},i1,cat|dog\n", encoding="utf-8")
    rows = read(path, kind="multilabel", options={"export": str(EXPORT)})
    assert [r.fields for r in rows if r.table == "judgment"] == [
        {"worker": APPROVED, "item": "i1", "value": ["cat", "dog"]}
    ]
    path.write_text(f"worker,left,right,choice\n{APPROVED},a,b,1\n", encoding="utf-8")
    rows = read(
        path,
        kind="pairwise",
        mapping={"preference": "choice", "pairwise": "left=1,right=2,tie=0"},
        options={"export": str(EXPORT)},
    )
    assert [r.fields for r in rows if r.table == "judgment"] == [
        {"worker": APPROVED, "left": "a", "right": "b", "preference": "left"}
    ]


def test_refusals(tmp_path: Path) -> None:
    answers = DATA / "prolific_answers.csv"
    with pytest.raises(UsageError) as info:
        list(read(answers, kind="rating"))
    assert str(info.value) == (
        f"{answers} is not a Prolific export (no 'Participant id' and 'Status' columns)"
    )
    assert info.value.hint == "to join answers with the export, pass the option export=PATH"
    assert error_of(answers, kind="rating", options={"export": str(EXPORT)}) == (
        f"{answers}:1: column 'worker': not in the header (columns: PROLIFIC_PID, item, value,"
        " judgment_id, created_at, duration_s, session; choose one with --map worker=COLUMN)"
    )
    assert error_of(answers, kind="rating", options={"export": str(answers)}) == (
        f"{answers}:1: column 'Participant id': not in the header (expected Prolific's"
        " submissions export (Participant id, Status, ...))"
    )
    export = tmp_path / "export.csv"
    export.write_text("Participant id,Status,Time taken\np1,PAID,3\n", encoding="utf-8")
    assert error_of(export, kind="rating") == (
        f"{export}:2: column 'Status': unknown status 'PAID' (expected APPROVED, AWAITING"
        " REVIEW, REJECTED, RETURNED, TIMED-OUT, SCREENED OUT or ACTIVE)"
    )
    export.write_text("participant_id,status,time_taken\np1,APPROVED,soon\n", encoding="utf-8")
    assert error_of(export, kind="rating") == (
        f"{export}:2: column 'time_taken': cannot read 'soon' as seconds"
    )
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"worker": "p1"}\n["p1"]\n', encoding="utf-8")
    export.write_text("Participant id,Status\np1,APPROVED\n", encoding="utf-8")
    assert error_of(bad, kind="rating", options={"export": str(export)}) == (
        f"{bad}:2: expected a JSON object"
    )
    with pytest.raises(UsageError, match="option export: empty path"):
        read(bad, kind="rating", options={"export": " "})


def test_duplicate_submissions_keep_the_best(tmp_path: Path) -> None:
    export = tmp_path / "export.csv"
    export.write_text(
        "Participant id,Status\np1,APPROVED\np1,RETURNED\np2,RETURNED\np2,REJECTED\n",
        encoding="utf-8",
    )
    rows = list(read(export, kind="label"))
    assert [(r.line, r.fields["worker"], r.fields["status"]) for r in rows] == [
        (2, "p1", "approved"),
        (5, "p2", "rejected"),
    ]


def test_export_of_2022_column_names() -> None:
    path = DATA / "prolific_export_2022.csv"
    rows = list(read(path, kind="rating"))
    assert rows[0] == SourceRow(
        2,
        {
            "worker": APPROVED, "status": "approved",
            "started_at": "2022-01-27T14:02:11.532000Z",
            "completed_at": "2022-01-27T14:15:40.118000Z", "duration_s": 808.586,
        },
        table="worker",
        extra={"submission_id": "61f2a0b1c2d3e4f5a6b7c8d9", "file": str(path)},
    )  # fmt: skip
    assert [r.fields["status"] for r in rows] == ["approved", "awaiting_review", "timed_out"]
    assert rows[2].fields == {
        "worker": REJECTED,
        "status": "timed_out",
        "started_at": "2022-01-27T14:06:30Z",
    }


def test_map_worker_names_the_export_id_column() -> None:
    path = DATA / "prolific_pid_export.csv"
    rows = list(read(path, kind="rating", mapping={"worker": "PROLIFIC_PID"}))
    assert [(r.fields["worker"], r.fields["status"], r.extra["submission_id"]) for r in rows] == [
        (APPROVED, "approved", "6548a1b2c3d4e5f601234567"),
        (AWAITING, "rejected", "6548a1b2c3d4e5f601234568"),
    ]
    # The same mapping names the answers' column and the export's: the rejected one is dropped.
    joined = list(
        read(
            DATA / "prolific_answers.csv",
            kind="rating",
            mapping={"worker": "PROLIFIC_PID"},
            options={"export": str(path), "keep_unknown": "1"},
        )
    )
    workers = {r.fields["worker"] for r in joined if r.table == "judgment"}
    assert APPROVED in workers
    assert AWAITING not in workers
    with pytest.raises(UsageError, match="is not a Prolific export"):
        list(read(path, kind="rating"))


def test_row_damaged_by_a_spreadsheet_is_a_field_count_error() -> None:
    path = DATA / "prolific_export_resaved.csv"
    assert error_of(path, kind="rating") == (
        f"{path}:3: 1 fields where the header has 14"
        " (the row is damaged (e.g. re-saved by a spreadsheet): export it again)"
    )


def test_participant_id_of_the_wrong_json_type(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text('{"worker": {"id": 5}, "item": "i", "value": 3}\n', encoding="utf-8")
    assert error_of(path, kind="rating", options={"export": str(EXPORT)}) == (
        f"{path}:1: column 'worker': expected a participant id, got {{\"id\": 5}}"
    )
