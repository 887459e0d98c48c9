"""Label Studio JSON export: annotations, cancelled and ground-truth ones, exact errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from monitor.errors import InputError, UsageError
from monitor.ingest.platforms import READERS
from monitor.ingest.rows import SourceRow

DATA = Path(__file__).resolve().parents[1] / "data" / "platforms"
read = READERS["labelstudio"]


def error_of(path: Path, **kwargs: object) -> str:
    with pytest.raises(InputError) as info:
        list(read(path, **kwargs))  # type: ignore[arg-type]
    return str(info.value)


def write_tasks(path: Path, tasks: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(tasks, indent=1), encoding="utf-8")
    return path


def annotation(ident: int, who: Any, result: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    return {"id": ident, "completed_by": who, "result": result, "was_cancelled": False, **more}


def choice(from_name: str, *choices: str) -> dict[str, Any]:
    return {"from_name": from_name, "to_name": "text", "type": "choices",
            "value": {"choices": list(choices)}}  # fmt: skip


def test_export_maps_annotations() -> None:
    rows = list(read(DATA / "labelstudio_export.json", kind="label", mapping={"item": "data.doc"}))
    assert rows == [
        SourceRow(
            2,
            {
                "item": "d-1", "worker": "3", "value": "positive", "judgment_id": "5001",
                "created_at": "2025-11-03T09:12:45.123456Z", "duration_s": 12.4,
            },
            extra={"task_id": 101},
        ),
        SourceRow(
            2,
            {
                "item": "d-1", "worker": "4", "value": "neutral", "judgment_id": "5002",
                "created_at": "2025-11-03T09:00:00Z", "duration_s": 30,
            },
            extra={"task_id": 101},
        ),
        # Task 102: annotation 5003 was cancelled (skipped), 5004 is the ground truth.
        SourceRow(41, {"item": "d-2", "gold": "negative"}, table="item"),
        SourceRow(
            41,
            {
                "item": "d-2", "worker": "4", "value": "negative", "judgment_id": "5005",
                "created_at": "2025-11-03T10:01:00Z", "duration_s": 5.5,
            },
            extra={"task_id": 102},
        ),
    ]  # fmt: skip


def test_defaults_worker_email_and_text() -> None:
    path = DATA / "labelstudio_export.json"
    rows = list(read(path, kind="label", mapping={"text": "text"}))
    assert [(r.table, r.fields["item"]) for r in rows] == [
        ("item", "101"), ("judgment", "101"), ("judgment", "101"),
        ("item", "102"), ("item", "102"), ("judgment", "102"),
    ]  # fmt: skip
    assert rows[0].fields == {"item": "101", "text": "The battery lasts two days."}
    rows = read(path, kind="label", mapping={"worker": "email"})
    with pytest.raises(InputError) as info:
        list(rows)
    assert str(info.value) == (
        f"{path}:2: column 'completed_by': no annotator email in annotation 5001"
        " (export with annotator details, or use --map worker=id)"
    )
    with pytest.raises(UsageError, match="by id or email"):
        read(path, kind="label", mapping={"worker": "name"})


def test_data_id_is_the_default_item(tmp_path: Path) -> None:
    path = write_tasks(
        tmp_path / "t.json",
        [{"id": 9, "data": {"id": "doc-9"}, "annotations": [annotation(1, 2, [choice("c", "x")])]}],
    )
    assert [r.fields["item"] for r in read(path, kind="label")] == ["doc-9"]


def test_pairwise_tag() -> None:
    rows = list(read(DATA / "labelstudio_pairwise.json", kind="pairwise"))
    # The ground-truth annotation of task 202 is a pair's gold: not read.
    assert [(r.line, r.fields) for r in rows] == [
        (1, {"left": "sys-a/17", "right": "sys-b/17", "worker": "3", "preference": "left",
             "judgment_id": "6001", "created_at": "2025-11-05T14:00:20Z", "duration_s": 20}),
        (1, {"left": "sys-a/17", "right": "sys-b/17", "worker": "4", "preference": "right",
             "judgment_id": "6002", "created_at": "2025-11-05T14:01:00Z", "duration_s": 9}),
    ]  # fmt: skip


def test_task_without_the_from_name() -> None:
    path = DATA / "labelstudio_missing_from_name.json"
    assert error_of(path, kind="label") == (
        f"{path}: several control tags: sentiment, quality"
        " (choose the from_name with --map value=NAME)"
    )
    assert error_of(path, kind="label", mapping={"value": "sentiment"}) == (
        f"{path}:8: column 'sentiment': no result in annotation 7002 of task 302 (from_names in"
        " it: quality; skip empty annotations in Label Studio or choose the from_name with"
        " --map value=NAME)"
    )


def test_rating_number_and_multilabel(tmp_path: Path) -> None:
    rating = {"from_name": "stars", "to_name": "text", "type": "rating", "value": {"rating": 4}}
    number = {"from_name": "stars", "to_name": "text", "type": "number", "value": {"number": 2}}
    path = write_tasks(
        tmp_path / "r.json",
        [{"id": 1, "data": {}, "annotations": [annotation(1, 7, [rating]), annotation(2, 8, [number])]}],
    )  # fmt: skip
    assert [r.fields["value"] for r in read(path, kind="rating")] == [4, 2]
    path = write_tasks(
        tmp_path / "m.json",
        [{"id": 1, "data": {}, "annotations": [annotation(1, 7, [choice("tags", "cat", "dog")])]}],
    )
    assert [r.fields["value"] for r in read(path, kind="multilabel")] == [["cat", "dog"]]
    assert error_of(path, kind="label") == (
        f"{path}:2: column 'tags': several options chosen (cat, dog) where one answer is"
        " expected (a multi-label campaign takes sets of answers)"
    )


def test_structural_errors(tmp_path: Path) -> None:
    text = {"from_name": "c", "to_name": "t", "type": "textarea", "value": {"text": ["hi"]}}
    path = write_tasks(
        tmp_path / "a.json", [{"id": 1, "data": {}, "annotations": [annotation(5, 7, [text])]}]
    )
    assert error_of(path, kind="label") == (
        f"{path}:2: column 'c': cannot read a 'textarea' result in annotation 5 of task 1"
        " (supported: Choices, Rating, Number, Pairwise)"
    )
    path = write_tasks(
        tmp_path / "b.json",
        [{"id": 1, "data": {"x": 1}, "annotations": [annotation(5, None, [choice("c", "x")])]}],
    )
    assert error_of(path, kind="label") == (
        f"{path}:2: column 'completed_by': no annotator id in annotation 5"
        " (export with annotator details, or use --map worker=id)"
    )
    assert error_of(path, kind="label", mapping={"item": "data.doc"}) == (
        f"{path}:2: column 'data.doc': missing in task 1 (task fields: id, data.x;"
        " choose one with --map item=FIELD)"
    )
    path = tmp_path / "c.json"
    path.write_text('[{"id": 1, "data": {}, "annotations": {}}]', encoding="utf-8")
    assert error_of(path, kind="label") == (
        f"{path}:1: expected a task object with an 'annotations' list"
        " (export from Label Studio with the JSON format (not JSON_MIN))"
    )
    path.write_text('[{"id": 1, "data": {}, "annotations": []}]', encoding="utf-8")
    assert error_of(path, kind="label") == (
        f"{path}: no annotation results in the export (is anything annotated yet?)"
    )
