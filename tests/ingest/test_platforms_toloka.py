"""Toloka assignments TSV: statuses, golden rows, times, exact error messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.core.errors import InputError
from monitor.ingest.platforms import READERS
from monitor.ingest.rows import SourceRow

DATA = Path(__file__).resolve().parents[1] / "data" / "platforms"
read = READERS["toloka"]
TASK_881 = "00027ed1d4--6368a1f0b2e3c5190b6a7f10"
TASK_882 = "00027ed1d4--6368a1f0b2e3c5190b6a7f11"
W1 = "a1f3c9e2b7d4e8f0a6b5c3d2e1f09a8b"


def error_of(path: Path, **kwargs: object) -> str:
    with pytest.raises(InputError) as info:
        list(read(path, **kwargs))  # type: ignore[arg-type]
    return str(info.value)


def write_tsv(path: Path, rows: list[list[str]]) -> Path:
    path.write_text("".join("\t".join(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_assignments_statuses_and_gold() -> None:
    rows = list(read(DATA / "toloka_assignments.tsv", kind="label"))
    judgments = [r for r in rows if r.table == "judgment"]
    # SKIPPED (line 6), EXPIRED (7) and REJECTED (5) rows are dropped.
    assert [r.line for r in judgments] == [2, 3, 4, 8]
    assert judgments[0] == SourceRow(
        2,
        {
            "worker": W1, "item": TASK_881, "value": "electronics",
            "judgment_id": "00027ed1d4--6368a2c4e0a1b2039e7c4d11/in-8829ab003a6050d8",
            "created_at": "2025-11-03T09:12:45.123000Z", "duration_s": 45.123,
        },
        extra={"task_id": TASK_881, "status": "ACCEPTED"},
    )  # fmt: skip
    assert judgments[1].fields["duration_s"] == 3.5
    assert judgments[2].fields["duration_s"] == 30
    items = [(r.line, r.fields) for r in rows if r.table == "item"]
    assert items == [(4, {"item": TASK_882, "gold": "garden"})]


def test_keep_rejected_item_and_text_mapping() -> None:
    rows = list(
        read(
            DATA / "toloka_assignments.tsv",
            kind="label",
            mapping={"item": "url", "text": "INPUT:text", "value": "label"},
            options={"keep_rejected": "1"},
        )
    )
    assert [(r.line, r.table) for r in rows] == [
        (2, "item"), (2, "judgment"), (3, "judgment"), (4, "item"), (4, "judgment"),
        (5, "judgment"), (8, "item"), (8, "judgment"),
    ]  # fmt: skip
    assert rows[3].fields == {
        "item": "https://shop.example.com/p/882", "gold": "garden", "text": "Garden hose 20 m",
    }  # fmt: skip
    assert rows[5].fields["value"] == "electronics"
    assert rows[5].extra["status"] == "REJECTED"


def test_row_without_worker_id() -> None:
    path = DATA / "toloka_no_worker.tsv"
    assert error_of(path, kind="label") == (
        f"{path}:3: column 'ASSIGNMENT:worker_id': empty worker id (export assignments, not tasks)"
    )


def test_header_errors(tmp_path: Path) -> None:
    path = DATA / "toloka_assignments.tsv"
    assert error_of(path, kind="label", mapping={"value": "category"}) == (
        f"{path}:1: column 'category': not in the header (columns: OUTPUT:label;"
        " choose one with --map value=COLUMN)"
    )
    assert error_of(path, kind="label", mapping={"item": "sku"}) == (
        f"{path}:1: column 'sku': not in the header (columns: INPUT:url, INPUT:text,"
        " ASSIGNMENT:task_id; choose one with --map item=COLUMN)"
    )
    two = write_tsv(
        tmp_path / "two.tsv",
        [["INPUT:id", "OUTPUT:a", "OUTPUT:b", "ASSIGNMENT:worker_id"], ["1", "x", "y", "w"]],
    )
    assert error_of(two, kind="label") == (
        f"{two}:1: several output columns: OUTPUT:a, OUTPUT:b (choose one with --map value=COLUMN)"
    )
    tasks = write_tsv(tmp_path / "tasks.tsv", [["INPUT:id", "OUTPUT:a"], ["1", "x"]])
    assert error_of(tasks, kind="label") == (
        f"{tasks}:1: column 'ASSIGNMENT:worker_id': not in the header (expected a Toloka"
        " assignments TSV (INPUT:..., OUTPUT:..., ASSIGNMENT:worker_id))"
    )


def test_row_errors(tmp_path: Path) -> None:
    head = ["INPUT:id", "OUTPUT:a", "ASSIGNMENT:worker_id", "ASSIGNMENT:status",
            "ASSIGNMENT:started", "ASSIGNMENT:submitted"]  # fmt: skip
    path = write_tsv(tmp_path / "s.tsv", [head, ["1", "x", "w", "PAID", "", ""]])
    assert error_of(path, kind="label") == (
        f"{path}:2: column 'ASSIGNMENT:status': unknown status 'PAID' (expected SUBMITTED,"
        " ACCEPTED, APPROVED, REJECTED, SKIPPED, EXPIRED or ACTIVE)"
    )
    path = write_tsv(tmp_path / "t.tsv", [head, ["1", "x", "w", "SUBMITTED", "", "03.11.2025"]])
    assert error_of(path, kind="label") == (
        f"{path}:2: column 'ASSIGNMENT:submitted': cannot read '03.11.2025' as a time"
        " (expected ISO 8601 like 2025-11-03T09:12:45.123)"
    )
    path = write_tsv(
        tmp_path / "u.tsv",
        [head, ["1", "x", "w", "SUBMITTED", "2025-11-03T09:12:45", "2025-11-03T09:12:40"]],
    )
    assert error_of(path, kind="label") == (
        f"{path}:2: column 'ASSIGNMENT:submitted': submitted before started"
    )


def test_multilabel_outputs(tmp_path: Path) -> None:
    head = ["INPUT:id", "OUTPUT:tags", "GOLDEN:tags", "ASSIGNMENT:worker_id"]
    path = write_tsv(
        tmp_path / "m.tsv",
        [head, ["img-1", '["cat","dog"]', '["cat"]', "w1"], ["img-2", "[]", "", "w1"]],
    )
    rows = list(read(path, kind="multilabel"))
    assert [(r.table, r.fields) for r in rows] == [
        ("item", {"item": "img-1", "gold": ["cat"]}),
        ("judgment", {"worker": "w1", "item": "img-1", "value": ["cat", "dog"]}),
        ("judgment", {"worker": "w1", "item": "img-2", "value": []}),
    ]
    head = ["INPUT:id", "OUTPUT:is_cat", "OUTPUT:is_dog", "GOLDEN:is_cat", "GOLDEN:is_dog",
            "ASSIGNMENT:worker_id"]  # fmt: skip
    path = write_tsv(
        tmp_path / "g.tsv",
        [head, ["img-1", "true", "false", "true", "true", "w1"],
         ["img-1", "false", "false", "", "", "w2"]],
    )  # fmt: skip
    rows = list(read(path, kind="multilabel", mapping={"value": "OUTPUT:is_*"}))
    assert [(r.table, r.fields) for r in rows] == [
        ("item", {"item": "img-1", "gold": ["cat", "dog"]}),
        ("judgment", {"worker": "w1", "item": "img-1", "value": ["cat"]}),
        ("judgment", {"worker": "w2", "item": "img-1", "value": []}),
    ]


def test_pairwise(tmp_path: Path) -> None:
    head = ["INPUT:left", "INPUT:right", "OUTPUT:result", "GOLDEN:result", "ASSIGNMENT:worker_id"]
    path = write_tsv(
        tmp_path / "p.tsv",
        [head, ["a.jpg", "b.jpg", "a", "a", "w1"], ["a.jpg", "b.jpg", "B", "a", "w2"]],
    )
    rows = list(read(path, kind="pairwise", mapping={"pairwise": "left=a,right=b"}))
    # Gold of a pair is not an item's gold: pairwise golden columns are not read.
    assert [r.fields for r in rows] == [
        {"worker": "w1", "left": "a.jpg", "right": "b.jpg", "preference": "left"},
        {"worker": "w2", "left": "a.jpg", "right": "b.jpg", "preference": "right"},
    ]


def test_task_suite_approved_keeps_every_task() -> None:
    """A pool with 3 tasks per suite, exported with Toloka's APPROVED status: 6 judgments, 6 ids."""
    rows = list(read(DATA / "toloka_task_suite.tsv", kind="label", mapping={"item": "image"}))
    judgments = [r for r in rows if r.table == "judgment"]
    assert len(judgments) == 6
    ids = [r.fields["judgment_id"] for r in judgments]
    assert len(set(ids)) == 6
    assert ids[1] == "00022cf796--60b0c5d2e8f1a21d4c9b0a11/in-0231ad799253ddfa"
    assert judgments[1].extra["task_id"] == "00022cf796--60b0c2f1d4e2a51c3b7ef002"
    assert [r.extra["status"] for r in judgments] == ["APPROVED"] * 3 + ["SUBMITTED"] * 3
    assert [r.fields["value"] for r in judgments] == ["dog", "cat", "cat", "dog", "dog", "cat"]
    # The suite's time is every task's time (Toloka times assignments, not tasks).
    assert {r.fields["duration_s"] for r in judgments[:3]} == {36.333}
    items = [r.fields for r in rows if r.table == "item"]
    assert items == [
        {"item": "https://tlk.s3.yandex.net/dataset/cats_vs_dogs/cats/1b9c2d.jpg", "gold": "cat"}
    ]


@pytest.mark.parametrize("name", ["toloka_task_suite.tsv", "toloka_assignments.tsv"])
def test_ids_do_not_change_with_the_task_id_column(tmp_path: Path, name: str) -> None:
    """The same answers exported with and without ASSIGNMENT:task_id (an optional column) have
    the same judgment ids, so that ingesting both stores them once."""
    lines = (DATA / name).read_text(encoding="utf-8").splitlines()
    cells = [line.split("\t") for line in lines]
    at = cells[0].index("ASSIGNMENT:task_id")
    without = write_tsv(tmp_path / "without.tsv", [r[:at] + r[at + 1 :] for r in cells])
    mapping = {"item": "image"} if "suite" in name else {"item": "INPUT:item"}
    if "suite" not in name and "INPUT:item" not in cells[0]:
        mapping = {"item": next(c for c in cells[0] if c.startswith("INPUT:"))}

    def ids(path: Path) -> list[str]:
        rows = read(path, kind="label", mapping=mapping)
        return [r.fields["judgment_id"] for r in rows if r.table == "judgment"]

    assert ids(DATA / name) == ids(without)
    assert len(ids(without)) >= 4
