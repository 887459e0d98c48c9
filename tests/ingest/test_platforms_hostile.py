"""Hostile input to every platform reader: a field of the wrong JSON type, a missing nested key.

Each JSON value of a fixture (Label Studio tasks, MTurk ``Answer.taskAnswers``, Toloka JSON
outputs, Prolific JSON Lines answers) is replaced in turn by values of every JSON type, or
deleted; the reader, then the validation, must either accept the file or refuse it with a
``FILE:LINE`` error, never raise anything else (a traceback at the command line).
"""

from __future__ import annotations

import copy
import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from monitor.cli import main
from monitor.core.errors import InputError, UsageError
from monitor.ingest.platforms import READERS
from monitor.ingest.validate import Validator
from monitor.store.campaigns import CampaignInfo

DATA = Path(__file__).resolve().parents[1] / "data" / "platforms"
HOSTILE: list[Any] = [None, True, 0, -1.5, "", "x", [], [None], [1], ["a"], {}, {"a": 1},
                      [[1]], [{}], {"on": "yes"}]  # fmt: skip
DELETE = object()


def info(kind: str) -> CampaignInfo:
    rating = kind == "rating"
    return CampaignInfo(
        1, "c", kind, "interval" if rating else "nominal",  # type: ignore[arg-type]
        1 if rating else None, 5 if rating else None, None, kind == "multilabel", False, {},
    )  # fmt: skip


def paths(doc: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if prefix:
        yield prefix
    items = (
        doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    )
    for key, value in items:
        yield from paths(value, (*prefix, key))


def first_only(path: tuple[Any, ...]) -> bool:
    """Paths through the first element of every list (the others are read the same way)."""
    return all(key == 0 for key in path[:-1] if isinstance(key, int))


def variants(doc: Any) -> Iterator[tuple[tuple[Any, ...], Any, Any]]:
    """``(path, replacement, document)`` for the values of ``doc`` on the paths through first
    elements (see :func:`first_only`) and every hostile value."""
    for path in [p for p in paths(doc) if first_only(p)]:
        for value in [*HOSTILE, DELETE]:
            changed = copy.deepcopy(doc)
            node = changed
            for key in path[:-1]:
                node = node[key]
            if value is DELETE:
                del node[path[-1]]
            else:
                node[path[-1]] = value
            yield path, value, changed


def survives(path: Path, platform: str, kind: str, **kwargs: Any) -> None:
    """Read and validate every row: fine, or an InputError/UsageError naming the file."""
    try:
        validator = Validator(info(kind), str(path))
        for row in READERS[platform](path, kind=kind, **kwargs):  # type: ignore[arg-type]
            validator.check(row)
    except InputError as exc:
        assert str(path) in str(exc)
    except UsageError:
        pass


LABELSTUDIO = [
    ("labelstudio_export.json", "label", {"item": "data.doc"}),
    ("labelstudio_export.json", "multilabel", {"value": "sentiment"}),
    ("labelstudio_pairwise.json", "pairwise", {}),
    ("labelstudio_taxonomy.json", "multilabel", {}),
]


@pytest.mark.parametrize(("name", "kind", "mapping"), LABELSTUDIO)
def test_labelstudio_wrong_types_and_missing_keys(
    tmp_path: Path, name: str, kind: str, mapping: dict[str, str]
) -> None:
    doc = json.loads((DATA / name).read_text(encoding="utf-8"))
    target = tmp_path / "export.json"
    for where, value, changed in variants(doc):
        target.write_text(json.dumps(changed), encoding="utf-8")
        try:
            survives(target, "labelstudio", kind, mapping=mapping)
        except Exception as exc:  # pragma: no cover - the report of a failure
            raise AssertionError(f"{where} = {value!r}: {exc!r}") from exc


def _csv_with_json_cell(
    source: Path, column: str, delimiter: str
) -> tuple[list[str], list[dict[str, str]]]:
    with open(source, encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle, delimiter=delimiter)
        return list(reader.fieldnames or []), list(reader)


def _write(path: Path, header: list[str], rows: list[dict[str, str]], delimiter: str) -> None:
    out = io.StringIO()
    writer = csv.DictWriter(out, header, delimiter=delimiter, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(out.getvalue(), encoding="utf-8")


@pytest.mark.parametrize(
    ("kind", "mapping"),
    [("label", {"value": "sentiment"}), ("multilabel", {"value": "topic_*"}), ("label", {})],
)
def test_mturk_task_answers_wrong_types(tmp_path: Path, kind: str, mapping: dict[str, str]) -> None:
    header, rows = _csv_with_json_cell(DATA / "mturk_crowd_form.csv", "Answer.taskAnswers", ",")
    target = tmp_path / "batch.csv"
    doc = json.loads(rows[0]["Answer.taskAnswers"])
    for where, value, changed in [((), v, v) for v in HOSTILE] + list(variants(doc)):
        first = dict(rows[0], **{"Answer.taskAnswers": json.dumps(changed)})
        _write(target, header, [first, *rows[1:]], ",")
        try:
            survives(target, "mturk", kind, mapping=mapping)
        except Exception as exc:  # pragma: no cover
            raise AssertionError(f"{where} = {value!r}: {exc!r}") from exc


@pytest.mark.parametrize("kind", ["multilabel", "label", "rating"])
def test_json_cells_of_every_type(tmp_path: Path, kind: str) -> None:
    """A Toloka output, an MTurk or Figure Eight answer holding any JSON value."""
    toloka_head, toloka = _csv_with_json_cell(DATA / "toloka_assignments.tsv", "", "\t")
    f8_head, f8 = _csv_with_json_cell(DATA / "figure_eight_full.csv", "", ",")
    for value in [*HOSTILE, [{"label": "car", "left": 3}], {"x": [1]}]:
        cell = json.dumps(value)
        cases = [
            ("toloka", toloka_head, [dict(toloka[0], **{"OUTPUT:label": cell}), *toloka[1:]],
             "\t", {"value": "label"}),
            ("figure-eight", f8_head, [dict(f8[0], sentiment=cell, sentiment_gold=cell), *f8[1:]],
             ",", {}),
        ]  # fmt: skip
        for platform, head, rows, delimiter, mapping in cases:
            target = tmp_path / f"{platform}.txt"
            _write(target, head, rows, delimiter)
            try:
                survives(target, platform, kind, mapping=mapping)
            except Exception as exc:  # pragma: no cover
                raise AssertionError(f"{platform} {cell}: {exc!r}") from exc


@pytest.mark.parametrize("kind", ["multilabel", "label"])
def test_prolific_json_lines_wrong_types(tmp_path: Path, kind: str) -> None:
    lines = (DATA / "prolific_answers.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    target = tmp_path / "answers.jsonl"
    export = str(DATA / "prolific_export.csv")
    for where, value, changed in variants(records[0]):
        body = [json.dumps(changed), *(json.dumps(r) for r in records[1:])]
        target.write_text("\n".join(body) + "\n", encoding="utf-8")
        try:
            survives(target, "prolific", kind, options={"export": export, "keep_unknown": "1"})
        except Exception as exc:  # pragma: no cover
            raise AssertionError(f"{where} = {value!r}: {exc!r}") from exc


def test_labelstudio_result_not_a_list_at_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 16: a result that is not a list was a TypeError traceback."""
    doc = json.loads((DATA / "labelstudio_export.json").read_text(encoding="utf-8"))
    doc[1]["annotations"][1]["result"] = {"choices": ["negative"]}
    path = tmp_path / "export.json"
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    db = tmp_path / "m.db"
    assert main(["analyze", str(path), "--kind", "label", "--map", "item=data.doc",
                 "--keep-db", str(db)]) == 2  # fmt: skip
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (
        f"{path}:69: column 'result': expected a list in annotation 5004 of"
        " task 102, got an object (export from Label Studio with the JSON format)"
    )
    assert "Traceback" not in "\n".join(err)
