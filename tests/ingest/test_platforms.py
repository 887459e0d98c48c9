"""Platform readers: the registry, detection, and the shared mapping helpers."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from monitor.core.errors import InputError, NotFound, UsageError
from monitor.ingest.platforms import READERS, detect
from monitor.ingest.platforms.mapping import (
    Where,
    canonical_value,
    json_array_elements,
    pairwise_codes,
    parse_iso,
    parse_mturk_time,
    seconds,
    utc_iso,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "platforms"
HERE = Where("f.csv", 7, "answer")


def test_registry_has_five_readers_with_one_signature() -> None:
    assert sorted(READERS) == ["figure-eight", "labelstudio", "mturk", "prolific", "toloka"]
    signatures = {str(inspect.signature(reader)) for reader in READERS.values()}
    assert len(signatures) == 1
    params = inspect.signature(READERS["mturk"]).parameters
    assert list(params) == ["path", "kind", "mapping", "options"]
    assert params["kind"].kind is inspect.Parameter.KEYWORD_ONLY


@pytest.mark.parametrize(
    ("name", "platform"),
    [
        ("mturk_batch.csv", "mturk"),
        ("mturk_crowd_form.csv", "mturk"),
        ("mturk_pairwise.csv", "mturk"),
        ("toloka_assignments.tsv", "toloka"),
        ("toloka_task_suite.tsv", "toloka"),
        ("mturk_multi_question.csv", "mturk"),
        ("mturk_bounding_boxes.csv", "mturk"),
        ("figure_eight_full.csv", "figure-eight"),
        ("labelstudio_export.json", "labelstudio"),
        ("labelstudio_pairwise.json", "labelstudio"),
        ("prolific_export.csv", "prolific"),
        ("prolific_answers.csv", None),
        ("prolific_answers.jsonl", None),
        ("mturk_no_worker.csv", None),
    ],
)
def test_detect(name: str, platform: str | None) -> None:
    assert detect(DATA / name) == platform


def test_detect_unsure_or_missing(tmp_path: Path) -> None:
    cases = {
        "empty.csv": "",
        "canonical.csv": "worker,item,value\nw1,i1,3\n",
        "plain.tsv": "worker\titem\tvalue\n",
        "empty.json": "[]",
        "objects.json": '[{"worker": "w1", "item": "i1", "value": 3}]',
        "object.json": '{"annotations": []}',
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        assert detect(tmp_path / name) is None, name
    assert detect(tmp_path / "nothing.csv") is None


def test_detect_large_labelstudio_task(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_text('[{"id": 1, "annotations": [], "data": {"text": "' + "x" * 70000 + '"}}]')
    assert detect(path) == "labelstudio"
    path.write_text('[{"id": 1, "data": {"text": "' + "x" * 70000 + '"}, "annotations": []}]')
    assert detect(path) is None  # unsure within the bytes read


def test_missing_file_is_not_found(tmp_path: Path) -> None:
    for platform, name in [("mturk", "a.csv"), ("labelstudio", "a.json"), ("toloka", "a.tsv")]:
        with pytest.raises(NotFound, match="no such file"):
            list(READERS[platform](tmp_path / name, kind="label"))


def test_bad_arguments_are_usage_errors() -> None:
    path = DATA / "mturk_batch.csv"
    cases = [
        ({"kind": "ranking"}, "unknown kind 'ranking'"),
        ({"kind": "rating", "mapping": {"colour": "x"}}, "--map colour: not a mapping key"),
        ({"kind": "rating", "mapping": {"left": "x"}}, "--map left: only for pairwise campaigns"),
        ({"kind": "pairwise", "mapping": {"item": "x"}}, "--map item: not for pairwise campaigns"),
        ({"kind": "rating", "mapping": {"value": " "}}, "--map value: empty value"),
        ({"kind": "rating", "options": {"keep_all": "1"}}, "unknown option 'keep_all'"),
        ({"kind": "rating", "options": {"keep_rejected": "maybe"}}, "expected true or false"),
    ]
    for kwargs, message in cases:
        with pytest.raises(UsageError, match=message.replace("(", r"\(")):
            READERS["mturk"](path, **kwargs)  # type: ignore[arg-type]


def test_pairwise_codes() -> None:
    codes = pairwise_codes("left=A,right=B|second,tie=same")
    assert codes == {
        "a": "left", "b": "right", "second": "right", "same": "tie",
        "left": "left", "right": "right", "tie": "tie",
    }  # fmt: skip
    assert pairwise_codes(None) == {"left": "left", "right": "right", "tie": "tie"}
    # A canonical word used as another outcome's code keeps that meaning.
    assert pairwise_codes("left=right,right=left")["right"] == "left"
    with pytest.raises(UsageError) as info:
        pairwise_codes("first=A")
    assert str(info.value) == "--map pairwise: cannot read 'first=A'"
    assert info.value.hint == "write it like left=A,right=B,tie=same"
    with pytest.raises(UsageError, match="'a' stands for both left and right"):
        pairwise_codes("left=A,right=a")


def test_canonical_value_per_kind() -> None:
    codes = pairwise_codes("left=1,right=2,tie=0")
    assert canonical_value("rating", " 4 ", codes, HERE) == "4"
    assert canonical_value("rating", 4, codes, HERE) == 4
    assert canonical_value("label", ["cat"], codes, HERE) == "cat"
    assert canonical_value("label", {"a": False, "b": True}, codes, HERE) == "b"
    assert canonical_value("label", {"a": {"on": False}}, codes, HERE) == ""
    assert canonical_value("multilabel", "cat| dog||", codes, HERE) == ["cat", "dog"]
    assert canonical_value("multilabel", '["cat", "dog"]', codes, HERE) == ["cat", "dog"]
    assert canonical_value("multilabel", '{"cat": true, "dog": false}', codes, HERE) == ["cat"]
    assert canonical_value("multilabel", {"cat": {"on": True}}, codes, HERE) == ["cat"]
    assert canonical_value("multilabel", "", codes, HERE) == []
    assert canonical_value("pairwise", "2", codes, HERE) == "right"
    assert canonical_value("pairwise", 0, codes, HERE) == "tie"
    assert canonical_value("pairwise", "", codes, HERE) == ""


def test_structured_answers_are_refused() -> None:
    """Bounding boxes and other JSON structures are not labels (they were str()-ed before)."""
    codes: dict[str, str] = {}
    assert canonical_value("label", "[1, 2]", codes, HERE) == "[1, 2]"  # kept as written
    assert canonical_value("multilabel", "[1, 2]", codes, HERE) == ["1", "2"]
    for kind in ("multilabel", "label", "rating"):
        for answer in ('[{"label": "car", "left": 3}]', [{"label": "car"}], [["a"]], "[[1]]"):
            with pytest.raises(InputError) as info:
                canonical_value(kind, answer, codes, HERE)
            assert str(info.value).startswith("f.csv:7: column 'answer': a JSON ")
            assert "is not a label" in str(info.value)


def test_canonical_value_refusals() -> None:
    with pytest.raises(InputError) as info:
        canonical_value("label", {"a": True, "b": True}, {}, HERE)
    assert str(info.value) == (
        "f.csv:7: column 'answer': several options chosen (a, b) where one answer is expected"
        " (a multi-label campaign takes sets of answers)"
    )
    with pytest.raises(InputError) as info:
        canonical_value("label", {"a": "x"}, {}, HERE)
    assert str(info.value) == (
        "f.csv:7: column 'answer': cannot read this JSON object as an answer"
        ' (supported: {"option": true} and {"option": {"on": true}})'
    )
    with pytest.raises(InputError) as info:
        canonical_value("pairwise", "B", pairwise_codes(None), HERE)
    assert str(info.value) == (
        "f.csv:7: column 'answer': cannot read 'B' as a preference (known answers: left, right,"
        " tie; set the encoding with --map pairwise=left=A,right=B,tie=C)"
    )


def test_times() -> None:
    assert utc_iso(parse_mturk_time("Mon Nov 03 09:12:45 PST 2025")) == "2025-11-03T17:12:45Z"
    assert utc_iso(parse_mturk_time("Fri Oct 31 23:59:59 PDT 2025")) == "2025-11-01T06:59:59Z"
    assert utc_iso(parse_mturk_time("Mon Nov 03 09:12:45 UTC 2025")) == "2025-11-03T09:12:45Z"
    assert utc_iso(parse_iso("2025-11-03T09:12:45.123")) == "2025-11-03T09:12:45.123000Z"
    assert utc_iso(parse_iso("2025-11-03 10:12:45+01:00")) == "2025-11-03T09:12:45Z"
    for bad in ("Mon Nov 03 09:12:45 XYZ 2025", "Mon Foo 03 09:12:45 PST 2025", "yesterday"):
        with pytest.raises(ValueError):
            parse_mturk_time(bad)


def test_seconds() -> None:
    assert seconds("93") == 93
    assert isinstance(seconds("93"), int)
    assert seconds("12.5") == 12.5
    assert seconds(30.0) == 30
    for bad in ("-1", "nan", "inf", "soon", True):
        with pytest.raises(ValueError):
            seconds(bad)


def test_json_array_elements_lines() -> None:
    text = '[\n  {"a": 1},\n\n  {"b": [1,\n 2]}, {"c": 3}\n]\n'
    assert json_array_elements("x.json", text) == [(2, {"a": 1}), (4, {"b": [1, 2]}), (5, {"c": 3})]
    with pytest.raises(InputError) as info:
        json_array_elements("x.json", '[\n {"a": 1},\n {"b": }\n]')
    assert str(info.value) == "x.json:3:8: not valid JSON: Expecting value"
    with pytest.raises(InputError) as info:
        json_array_elements("x.json", '{"a": 1}')
    assert str(info.value) == "x.json:1: expected a JSON array (a list of tasks)"
    with pytest.raises(InputError) as info:
        json_array_elements("x.json", '[{"a": 1}\n{"b": 2}]')
    assert str(info.value) == "x.json:2:1: not valid JSON: expected ',' or ']'"
