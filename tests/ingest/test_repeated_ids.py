"""Every reader, on both backends: two rows of one file with one judgment id and different
judgments are refused naming both lines, or both set aside with --skip-invalid; never one
kept silently (issue 30, item 1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select

from monitor.core.errors import InputError
from monitor.ingest import api
from monitor.ingest.api import create_campaign, ingest_file
from monitor.store.campaigns import CampaignSpec
from monitor.store.models import Judgment, Preference, RejectedRow

HINT = (
    "one id names one judgment: which one is meant? Correct the file; with --skip-invalid all"
    " of these rows are set aside"
)
PLATFORMS = Path(__file__).resolve().parents[1] / "data" / "platforms"
EXPORT = PLATFORMS / "prolific_export.csv"
PID = "5f1e2d3c4b5a69788796a5b4"


def _labelstudio(tasks: list[tuple[int, int, str]]) -> str:
    """Tasks (task id, annotation id, choice) as Label Studio writes its export (one line)."""
    return json.dumps(
        [
            {"id": task, "data": {"text": f"t{task}"}, "annotations": [
                {"id": ident, "completed_by": 3, "was_cancelled": False, "ground_truth": False,
                 "result": [{"from_name": "s", "to_name": "text", "type": "choices",
                             "value": {"choices": [choice]}}]}]}
            for task, ident, choice in tasks
        ],
        separators=(",", ":"),
    )  # fmt: skip


TOLOKA_HEAD = (
    "INPUT:id\tOUTPUT:label\tASSIGNMENT:task_id\tASSIGNMENT:assignment_id\tASSIGNMENT:worker_id\n"
)
# name: (file name, text, format, options, the id, the lines sharing it, rows, stored)
CASES = {
    "csv": ("a.csv", "worker,item,value,judgment_id\nw1,i1,yes,j1\nw2,i1,no,j2\nw1,i1,no,j1\n",
            None, None, "j1", (2, 4), 3, 1),
    "jsonl": ("a.jsonl", '{"worker":"w1","item":"i1","value":"yes","judgment_id":"j1"}\n'
              '{"worker":"w1","item":"i2","value":"yes","judgment_id":"j1"}\n'
              '{"worker":"w2","item":"i1","value":"no","judgment_id":"j2"}\n',
              None, None, "j1", (1, 2), 3, 1),
    "mturk": ("b.csv", "HITId,AssignmentId,WorkerId,Input.id,Answer.x\n"
              "H1,A1,W1,i1,yes\nH1,A2,W2,i1,no\nH1,A1,W1,i1,no\n",
              "mturk", None, "A1", (2, 4), 3, 1),
    "toloka": ("t.tsv", TOLOKA_HEAD + "i1\tyes\tT1\tS1\tw1\ni2\tno\tT2\tS1\tw1\ni1\tno\tT1\tS1\tw1\n",
               "toloka", None, "S1/in-4cd9b7672d7fbee8", (2, 4), 3, 1),
    "figure-eight": ("f.csv", "_unit_id,_id,_worker_id,x,x_gold\n7,1,w1,yes,\n7,2,w2,no,\n8,1,w1,no,\n",
                     "figure-eight", None, "1", (2, 4), 3, 1),
    "labelstudio": ("l.json", _labelstudio([(1, 50, "yes"), (2, 51, "no"), (3, 50, "no")]),
                    "labelstudio", None, "50", (1, 1), 3, 1),
    "prolific": ("p.csv", f"worker,item,value,judgment_id\n{PID},i1,yes,r1\n{PID},i2,no,r1\n",
                 "prolific", {"export": str(EXPORT)}, "r1", (2, 3), 2, 0),
}  # fmt: skip


def _count(engine: Engine, model: type) -> int:
    with engine.connect() as c:
        return int(c.scalar(select(func.count()).select_from(model)) or 0)


def _file(tmp_path: Path, name: str) -> tuple[Path, str | None, dict[str, str] | None]:
    file_name, text, fmt, options = CASES[name][:4]
    path = tmp_path / file_name
    path.write_text(text, encoding="utf-8")
    return path, fmt, options


@pytest.mark.parametrize("name", list(CASES))
def test_every_reader_refuses_one_id_for_two_judgments(
    engine: Engine, tmp_path: Path, name: str
) -> None:
    create_campaign(engine, CampaignSpec("c", "label"))
    path, fmt, options = _file(tmp_path, name)
    ident, (first, second) = CASES[name][4:6]
    with pytest.raises(InputError) as info:
        ingest_file(engine, path, "c", format=fmt, options=options)
    shown = f"'{ident}'"
    assert [str(p) for p in info.value.problems] == [
        f"{path}:{first}: column 'judgment_id': the judgment id {shown} is also on line"
        f" {second}, and these rows do not give the same judgment (worker, item, answer) ({HINT})"
        if first != second
        else f"{path}:{first}: column 'judgment_id': the judgment id {shown} is given twice on"
        f" this line, and these rows do not give the same judgment (worker, item, answer) ({HINT})",
        f"{path}:{second}: column 'judgment_id': the judgment id {shown} is also on line"
        f" {first}, and these rows do not give the same judgment (worker, item, answer) ({HINT})"
        if first != second
        else f"{path}:{second}: column 'judgment_id': the judgment id {shown} is given twice on"
        f" this line, and these rows do not give the same judgment (worker, item, answer) ({HINT})",
    ]
    assert _count(engine, Judgment) == 0


@pytest.mark.parametrize("name", list(CASES))
def test_skip_invalid_sets_both_rows_aside(engine: Engine, tmp_path: Path, name: str) -> None:
    create_campaign(engine, CampaignSpec("c", "label"))
    path, fmt, options = _file(tmp_path, name)
    lines, n_rows, stored = CASES[name][5:8]
    summary = ingest_file(engine, path, "c", format=fmt, options=options, skip_invalid=True)
    assert (summary.n_rows, summary.n_new, summary.n_duplicate, summary.n_rejected) == (
        n_rows, stored, 0, 2,
    )  # fmt: skip
    assert _count(engine, Judgment) == stored
    with engine.connect() as c:
        rejected = c.execute(select(RejectedRow.line, RejectedRow.reasons)).all()
    assert sorted(line for line, _ in rejected) == list(lines)
    assert all("these rows do not give the same judgment" in r[0] for _, r in rejected)
    again = ingest_file(engine, path, "c", format=fmt, options=options, skip_invalid=True)
    assert (again.n_new, again.n_rejected) == (0, 2)


def test_a_repeat_in_a_later_chunk_takes_the_stored_row_back(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first row was stored with its chunk; the clash two chunks later takes it back (and
    the later duplicate of another id is still a duplicate)."""
    monkeypatch.setattr(api, "CHUNK_SIZE", 2)
    create_campaign(engine, CampaignSpec("p", "pairwise"))
    path = tmp_path / "p.csv"
    path.write_text(
        "worker,left,right,preference,judgment_id\n"
        "w1,a,b,left,1\nw1,b,c,left,2\nw1,c,d,tie,3\nw1,b,c,left,2\nw1,a,b,right,1\nw1,d,e,left,4\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError) as info:
        ingest_file(engine, path, "p")
    assert [(p.line, p.column) for p in info.value.problems] == [
        (2, "judgment_id"),
        (6, "judgment_id"),
    ]
    summary = ingest_file(engine, path, "p", skip_invalid=True)
    assert (summary.n_rows, summary.n_new, summary.n_duplicate, summary.n_rejected) == (6, 3, 1, 2)
    with engine.connect() as c:
        kept = c.scalars(select(Preference.external_id).order_by(Preference.id)).all()
        rejected = c.execute(
            select(RejectedRow.line, RejectedRow.raw).order_by(RejectedRow.line)
        ).all()
    assert kept == ["2", "3", "4"]
    assert [tuple(r) for r in rejected] == [
        (2, '{"judgment_id": "1"}'),
        (
            6,
            '{"worker": "w1", "left": "a", "right": "b", "preference": "right", "judgment_id": "1"}',
        ),
    ]
    assert ingest_file(engine, path, "p", skip_invalid=True).n_new == 0


def test_the_same_judgment_twice_is_a_duplicate(engine: Engine, tmp_path: Path) -> None:
    create_campaign(engine, CampaignSpec("c", "label"))
    path = tmp_path / "d.csv"
    path.write_text(
        "worker,item,value,judgment_id,duration_s\nw1,i1,yes,j1,3\nw1,i1,yes,j1,4\n",
        encoding="utf-8",
    )
    summary = ingest_file(engine, path, "c")
    assert (summary.n_new, summary.n_duplicate, summary.n_rejected) == (1, 1, 0)
