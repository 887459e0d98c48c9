"""Label Studio JSON export: annotations, cancelled and ground-truth ones, exact errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from monitor.core.errors import InputError, UsageError
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
        " (supported: Choices, Rating, Number, Taxonomy, Pairwise)"
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


TAXONOMY = DATA / "labelstudio_taxonomy.json"


def test_taxonomy_paths_are_a_label_set_and_ground_truth_warns() -> None:
    rows = read(TAXONOMY, kind="multilabel")
    listed = list(rows)
    assert [(r.table, r.fields.get("worker"), r.fields.get("value", r.fields.get("gold")))
            for r in listed] == [
        ("item", None, ["Eukarya/Animalia", "Bacteria"]),
        ("judgment", "2", ["Eukarya/Animalia"]),
        ("judgment", "3", ["Eukarya/Animalia", "Bacteria"]),
        ("judgment", "1", ["Archaea"]),
        ("judgment", "2", ["Archaea", "Eukarya/Plantae"]),
    ]  # fmt: skip
    assert listed[0].fields["item"] == "12"
    assert listed[1].fields["judgment_id"] == "32"
    # Annotator 1 marked the gold of task 12 and judged task 13 like the others.
    assert rows.notes == [
        "warning: gold values come from ground-truth annotations of annotators who also have"
        " ordinary judgments (1); --option ground_truth=judgment keeps those annotations as"
        " judgments, ground_truth=both as both"
    ]
    # A single path is a label.
    rows = read(TAXONOMY, kind="label", options={"ground_truth": "judgment"})
    with pytest.raises(InputError, match="several options chosen"):
        list(rows)


@pytest.mark.parametrize(
    ("choice_", "tables"),
    [
        ("judgment", ["judgment"] * 5),
        ("both", ["item", "judgment", "judgment", "judgment", "judgment", "judgment"]),
        ("gold", ["item"] + ["judgment"] * 4),
    ],
)
def test_ground_truth_option(choice_: str, tables: list[str]) -> None:
    rows = read(TAXONOMY, kind="multilabel", options={"ground_truth": choice_})
    listed = list(rows)
    assert [r.table for r in listed] == tables
    workers = [r.fields["worker"] for r in listed if r.table == "judgment"]
    assert workers.count("1") == (1 if choice_ == "gold" else 2)
    assert bool(rows.notes) == (choice_ == "gold")


def test_ground_truth_option_errors_and_gold_without_annotator(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="option ground_truth: expected gold, judgment or both"):
        read(TAXONOMY, kind="multilabel", options={"ground_truth": "yes"})
    path = write_tasks(
        tmp_path / "g.json",
        [{"id": 1, "data": {}, "annotations": [
            annotation(1, None, [choice("c", "x")], ground_truth=True),
            annotation(2, 7, [choice("c", "y")]),
        ]}],
    )  # fmt: skip
    rows = read(path, kind="label")
    assert [r.table for r in rows] == ["item", "judgment"]
    assert rows.notes == []
    with pytest.raises(InputError, match="no annotator id in annotation 1"):
        list(read(path, kind="label", options={"ground_truth": "both"}))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"result": "sentiment"}, "column 'result': expected a list in annotation 5 of task 1,"
         " got a string (export from Label Studio with the JSON format)"),
        ({"result": [["x"]]}, "column 'result': a result in annotation 5 of task 1 is a list,"
         " not a JSON object"),
        ({"ground_truth": "false"}, "column 'ground_truth': expected true or false in annotation"
         " 5 of task 1, got a string"),
        ({"was_cancelled": 0}, "column 'was_cancelled': expected true or false in annotation 5"
         " of task 1, got a number"),
        ({"completed_by": [7]}, "column 'completed_by': no annotator id in annotation 5 (export"
         " with annotator details, or use --map worker=id)"),
        ({"id": {"a": 1}}, "column 'id': an annotation id is an object, not a number or a"
         " string"),
        ({"result": [{"from_name": "c", "type": "taxonomy", "value": {"taxonomy": [[1]]}}]},
         "column 'c': cannot read the taxonomy path [1] in annotation 5 of task 1"
         ' (expected lists of names like [["Animals", "Cat"]])'),
        ({"result": [{"from_name": "c", "value": {"choices": [{"x": 1}]}}]},
         'column \'c\': a JSON object is not a label: {"x": 1} (this answer holds structured'
         " annotations (bounding boxes, spans, ...); map a column of labels, numbers or"
         " choices)"),
    ],
)  # fmt: skip
def test_wrong_json_types_are_file_line_errors(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    one = annotation(5, 7, [choice("c", "x")]) | change
    path = write_tasks(tmp_path / "w.json", [{"id": 1, "data": {}, "annotations": [one]}])
    assert error_of(path, kind="label", mapping={"value": "c"}) == f"{path}:2: {message}"


def test_annotation_that_is_not_an_object(tmp_path: Path) -> None:
    path = write_tasks(tmp_path / "n.json", [{"id": 1, "data": {}, "annotations": [5]}])
    assert error_of(path, kind="label", mapping={"value": "c"}) == (
        f"{path}:2: column 'annotations': an annotation of task 1 is not a JSON object"
    )
    path = write_tasks(tmp_path / "d.json", [{"id": 1, "data": {"doc": {"a": 1}},
                                              "annotations": []}])  # fmt: skip
    assert error_of(path, kind="label", mapping={"value": "c", "item": "data.doc"}) == (
        f"{path}:2: column 'data.doc': an object in task 1, not a name or a number"
        " (choose a field holding an id with --map item=FIELD)"
    )
