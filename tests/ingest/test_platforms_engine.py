"""The engine of the tabular exports and what the readers share: keys of task suites,
numbered questions on every platform, records that break a rule, JSON places."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select

from monitor.core.errors import InputError
from monitor.ingest.api import create_campaign, ingest_file
from monitor.ingest.jsondoc import json_array_elements, place
from monitor.ingest.platforms import READERS
from monitor.ingest.platforms.table import numbered
from monitor.ingest.rows import BadRecord
from monitor.store.campaigns import CampaignSpec
from monitor.store.models import Judgment, RejectedRow

DATA = Path(__file__).resolve().parents[1] / "data" / "platforms"
EXPORT = DATA / "prolific_export.csv"


def write(path: Path, rows: list[list[str]], delimiter: str = "\t") -> Path:
    path.write_text("".join(delimiter.join(r) + "\n" for r in rows), encoding="utf-8")
    return path


def error_of(platform: str, path: Path, **kwargs: object) -> str:
    with pytest.raises(InputError) as info:
        list(READERS[platform](path, **kwargs))  # type: ignore[arg-type]
    return str(info.value)


def test_suite_keys_without_task_ids_are_per_task_and_stable(tmp_path: Path) -> None:
    head = ["INPUT:id_left", "INPUT:id_right", "OUTPUT:result", "ASSIGNMENT:assignment_id",
            "ASSIGNMENT:worker_id"]  # fmt: skip
    path = write(
        tmp_path / "s.tsv",
        [head, ["a", "b", "left", "S1", "w"], ["c", "d", "right", "S1", "w"],
         ["a", "b", "right", "S1", "w"], ["a", "b", "left", "S2", "w"]],
    )  # fmt: skip
    mapping = {"left": "id_left", "right": "id_right"}
    ids = [
        r.fields["judgment_id"] for r in READERS["toloka"](path, kind="pairwise", mapping=mapping)
    ]
    assert len(set(ids)) == 4
    assert [i.split("/")[0] for i in ids] == ["S1", "S1", "S1", "S2"]
    # The same inputs in one suite: the second is told apart by its place (#2); in another
    # assignment the same inputs give the same task key.
    assert ids[2] == ids[0] + "#2"
    assert ids[3].split("/")[1] == ids[0].split("/")[1]
    again = [
        r.fields["judgment_id"] for r in READERS["toloka"](path, kind="pairwise", mapping=mapping)
    ]
    assert again == ids


def test_numbered_families() -> None:
    families = numbered(["Answer.q1", "Answer.q2", "Answer.q4", "Answer.x", "Answer.q1_note", "n7"])
    assert [(f.template, dict(f)) for f in families] == [
        ("Answer.q{n}", {"1": "Answer.q1", "2": "Answer.q2", "4": "Answer.q4"})
    ]
    assert families[0].shown() == "Answer.q{n} (n = 1..4, 3 numbers)"


def test_numbered_questions_on_toloka_and_figure_eight(tmp_path: Path) -> None:
    """The proposal and the {n} mapping are the engine's: every tabular platform has them."""
    head = ["INPUT:doc1", "INPUT:doc2", "OUTPUT:q1", "OUTPUT:q2", "ASSIGNMENT:worker_id",
            "ASSIGNMENT:assignment_id"]  # fmt: skip
    path = write(tmp_path / "n.tsv", [head, ["d1", "d2", "3", "4", "w", "S1"]])
    assert error_of("toloka", path, kind="rating") == (
        f"{path}:1: several output columns: OUTPUT:q{{n}} (n = 1..2) (numbered questions: read"
        " one judgment per question with --map item=INPUT:doc{n} --map value=OUTPUT:q{n})"
    )
    rows = list(READERS["toloka"](path, kind="rating", mapping={"item": "doc{n}", "value": "q{n}"}))
    assert [(r.fields["item"], r.fields["value"], r.extra["question"]) for r in rows] == [
        ("d1", "3", "1"), ("d2", "4", "2"),
    ]  # fmt: skip
    f8 = write(
        tmp_path / "f.csv",
        [["_unit_id", "_id", "_worker_id", "a1", "a1_gold", "a2", "a2_gold", "item_id1", "item_id2"],
         ["7", "1", "w", "x", "", "y", "", "i1", "i2"]],
        ",",
    )  # fmt: skip
    assert error_of("figure-eight", f8, kind="label").endswith(
        "(numbered questions: read one judgment per question with --map item=item_id{n}"
        " --map value=a{n})"
    )


def test_two_columns_of_one_number_are_refused(tmp_path: Path) -> None:
    path = write(
        tmp_path / "b.csv",
        [["HITId", "AssignmentId", "WorkerId", "Input.i1", "Input.i01", "Answer.q1"],
         ["H", "A", "W", "a", "b", "3"]],
        ",",
    )  # fmt: skip
    assert error_of("mturk", path, kind="rating", mapping={"item": "i{n}", "value": "q{n}"}) == (
        f"{path}:1: column 'Input.i01': 'Input.i1' and 'Input.i01' are both number 1 of i{{n}}"
        " (rename one of the columns)"
    )


def test_a_record_that_breaks_a_rule_is_a_bad_record(tmp_path: Path) -> None:
    """Iterated plainly a reader raises at such a record; the ingest reads on."""
    path = tmp_path / "b.csv"
    path.write_text(
        "HITId,AssignmentId,WorkerId,SubmitTime,Answer.x\n"
        "H,A1,W1,Mon Nov 03 09:12:45 PST 2025,3\n"
        "H,A2,W2,yesterday,4\n"
        "H,A3,,Mon Nov 03 09:14:45 PST 2025,5\n"
        "H,A4,W4,Mon Nov 03 09:15:45 PST 2025,2\n",
        encoding="utf-8",
    )
    rows = READERS["mturk"](path, kind="rating")
    rows.strict = False
    got = [
        (r.line, str(r.problem) if isinstance(r, BadRecord) else r.fields["value"]) for r in rows
    ]
    assert got == [
        (2, "3"),
        (3, f"{path}:3: column 'SubmitTime': cannot read 'yesterday' as a time (expected"
            " MTurk's format like 'Mon Nov 03 09:12:45 PST 2025')"),
        (4, f"{path}:4: column 'WorkerId': empty worker id"),
        (5, "2"),
    ]  # fmt: skip


def test_skip_invalid_keeps_the_good_records_of_every_platform(
    engine: Engine, tmp_path: Path
) -> None:
    create_campaign(engine, CampaignSpec("r", "rating", scale_min=1, scale_max=5))
    toloka = write(
        tmp_path / "t.tsv",
        [["INPUT:id", "OUTPUT:x", "ASSIGNMENT:worker_id", "ASSIGNMENT:status"],
         ["i1", "3", "w1", "APPROVED"], ["i2", "4", "w1", "PAID"], ["i3", "5", "", "APPROVED"]],
    )  # fmt: skip
    summary = ingest_file(engine, toloka, "r", skip_invalid=True)
    assert (summary.n_rows, summary.n_new, summary.n_rejected) == (3, 1, 2)
    answers = tmp_path / "a.jsonl"
    answers.write_text(
        '{"worker": "5f1e2d3c4b5a69788796a5b4", "item": "i1", "value": 2}\n'
        '{"worker": "nobody", "item": "i1", "value": 2}\n'
        '{"worker": "5f1e2d3c4b5a69788796a5b4", "item": "i2" "value": 2}\n',
        encoding="utf-8",
    )
    summary = ingest_file(engine, answers, "r", skip_invalid=True, options={"export": str(EXPORT)})
    assert (summary.n_rows, summary.n_new, summary.n_rejected) == (3, 1, 2)
    with engine.connect() as c:
        reasons = c.scalars(select(RejectedRow.reasons).order_by(RejectedRow.id)).all()
        assert c.scalar(select(func.count()).select_from(Judgment)) == 2
    assert [r[0].split(": ", 1)[0] for r in reasons] == [
        f"{toloka}:3", f"{toloka}:4", f"{answers}:2", f"{answers}:3:53",
    ]  # fmt: skip


def test_json_places() -> None:
    assert place("ab\ncd\n\nxyz", 9) == (4, 3)
    with pytest.raises(InputError) as info:
        json_array_elements("e.json", '[{"a": 1}]\n\n  [{"b": 2}]')
    assert str(info.value) == (
        "e.json:3:3: not valid JSON: text after the end of the array (an export is one JSON"
        " array: was something added to the file after it?)"
    )
    assert json_array_elements("e.json", "[]\n") == []


def test_labelstudio_text_that_is_not_utf8_is_named_where_it_is(tmp_path: Path) -> None:
    path = tmp_path / "l.json"
    task = {"id": 1, "data": {"text": "caf"}, "annotations": []}
    path.write_bytes(json.dumps([task], indent=1).encode().replace(b"caf", b"caf\xe9"))
    assert error_of("labelstudio", path, kind="label") == (
        f"{path}:5:16: not UTF-8 text (export the file as UTF-8)"
    )


def test_prolific_answers_not_json_at_their_character(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    pid = b"5f1e2d3c4b5a69788796a5b4"
    path.write_bytes(
        b'{"worker": "%s", "item": "i"}\n{"worker": "%s", "item": }\n\xff\n' % (pid, pid)
    )
    rows = READERS["prolific"](path, kind="label", options={"export": str(EXPORT)})
    rows.strict = False
    problems = [str(r.problem) for r in rows if isinstance(r, BadRecord)]
    assert problems == [
        f"{path}:2:48: not valid JSON: Expecting value",
        f"{path}:3: not UTF-8 text (save the file as UTF-8)",
    ]
