"""``monitor pairs plan`` (issue 28): each platform's task file, bad input exits 2 with nothing
written, planning again skips planned and unanswered pairs, ingest maps pair ids back. On
SQLite and PostgreSQL (the ``db_url`` fixture's ``postgres`` parameter)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import select

from monitor.cli import main
from monitor.store.engine import make_engine, transaction
from monitor.store.models import PlannedPair


def _run(capsys, *argv: str) -> tuple[int, str, str]:  # noqa: ANN001
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _setup(tmp_path: Path, db_url: str, capsys, n_workers: int = 6) -> None:  # noqa: ANN001
    rng = np.random.default_rng(3)
    items = [f"i{k}" for k in range(30)]
    truth = {i: k for k, i in enumerate(items)}
    rows = ["worker,left,right,preference"]
    for w in range(n_workers):
        for _ in range(35):
            a, b = rng.choice(items, 2, replace=False)
            rows.append(f"w{w},{a},{b},{'left' if truth[a] > truth[b] else 'right'}")
    (tmp_path / "prefs.csv").write_text("\n".join(rows) + "\n")
    gold = ["item,gold"] + [f"{i},{truth[i]}" for i in items[::3]]
    (tmp_path / "items.csv").write_text("\n".join(gold) + "\n")
    assert _run(capsys, "campaign", "create", "pc", "--kind", "pairwise", "--strict",
                "--db", db_url)[0] == 0  # fmt: skip
    code, _, err = _run(capsys, "ingest", str(tmp_path / "prefs.csv"), "--campaign", "pc",
                        "--items", str(tmp_path / "items.csv"), "--db", db_url)  # fmt: skip
    assert code == 0, err


def _planned(db_url: str) -> list[PlannedPair]:
    engine = make_engine(db_url)
    try:
        with transaction(engine) as s:
            rows = s.scalars(select(PlannedPair).order_by(PlannedPair.id)).all()
            s.expunge_all()
            return list(rows)
    finally:
        engine.dispose()


PLAIN = ("pair_id", "worker", "left", "right")


@pytest.mark.parametrize(
    ("platform", "header", "delimiter"),
    [
        ("csv", PLAIN, ","),
        ("mturk", PLAIN, ","),
        ("toloka", tuple("INPUT:" + c for c in PLAIN), "\t"),
        ("labelstudio", None, None),
    ],
)
def test_each_platform_file(tmp_path, db_url, capsys, platform, header, delimiter) -> None:  # noqa: ANN001
    _setup(tmp_path, db_url, capsys)
    out = tmp_path / f"tasks.{platform}"
    code, text, err = _run(capsys, "pairs", "plan", "--campaign", "pc", "--budget", "60",
                           "--out", str(out), "--platform", platform, "--retest", "0.2",
                           "--gold", "0.2", "--db", db_url)  # fmt: skip
    assert code == 0, err
    assert "60 pairs for 6 annotators (round 1" in text
    if platform == "labelstudio":
        tasks = json.loads(out.read_text())
        rows = [tuple(t["data"][c] for c in PLAIN) for t in tasks]
        assert all(set(t) == {"data"} for t in tasks)
    else:
        raw = out.read_text(encoding="utf-8")
        got = list(csv.reader(io.StringIO(raw), delimiter=delimiter))
        assert tuple(got[0]) == header
        rows = [tuple(r) for r in got[1:]]
        assert all(len(r) == 4 for r in rows)
    assert len(rows) == 60
    planned = _planned(db_url)
    assert sorted((p.pair_id, p.worker, p.left_item, p.right_item) for p in planned) == sorted(rows)
    assert len({r[0] for r in rows}) == 60
    assert all(r[0].startswith("p-") for r in rows)
    purposes = {p.purpose for p in planned}
    assert {"retest", "gold"} <= purposes
    # the file does not tell them apart: the same columns for every purpose
    assert all(p.answered_id is None for p in planned)


def test_formulas_are_neutralised(tmp_path, db_url, capsys) -> None:  # noqa: ANN001
    rows = ["worker,left,right,preference"] + [
        f"=w{k % 3},=cmd|{k},+{k + 1},left" for k in range(12)
    ]
    (tmp_path / "p.csv").write_text("\n".join(rows) + "\n")
    _run(capsys, "campaign", "create", "fx", "--kind", "pairwise", "--db", db_url)
    assert (
        _run(capsys, "ingest", str(tmp_path / "p.csv"), "--campaign", "fx", "--db", db_url)[0] == 0
    )
    out = tmp_path / "t.csv"
    code, _, err = _run(capsys, "pairs", "plan", "--campaign", "fx", "--budget", "9",
                        "--out", str(out), "--db", db_url)  # fmt: skip
    assert code == 0, err
    body = list(csv.reader(io.StringIO(out.read_text())))[1:]
    assert body
    assert all(c.startswith("'=") or c.startswith("'+") for r in body for c in r[1:])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--budget", "0"], "monitor: error: --budget 0 is out of range: give 1 to 10,000,000"),
        (["--budget", "10", "--retest", "1.5"],
         "monitor: error: --retest 1.5 is out of range: give a share from 0 to 1"),
        (["--budget", "10", "--gold", "-0.1"],
         "monitor: error: --gold -0.1 is out of range: give a share from 0 to 1"),
        (["--budget", "10", "--retest", "0.6", "--gold", "0.6"],
         "monitor: error: --retest 0.6 and --gold 0.6 add up to more than 1"),
        (["--budget", "10", "--per-annotator", "11"],
         "monitor: error: --per-annotator 11 is out of range: give 1 to the budget (10)"),
        (["--budget", "10", "--worker", "nobody"],
         "monitor: error: unknown annotator 'nobody' in campaign 'pc' (a new one: --new-worker "
         "nobody)"),
        (["--budget", "10", "--campaign", "ratings"],
         "monitor: error: campaign 'ratings' is a rating campaign: pairs are planned for "
         "preference (pairwise) campaigns only"),
    ],
)  # fmt: skip
def test_bad_input_exits_2_and_writes_nothing(tmp_path, db_url, capsys, args, message) -> None:  # noqa: ANN001
    _setup(tmp_path, db_url, capsys)
    _run(capsys, "campaign", "create", "ratings", "--kind", "rating", "--min", "1", "--max", "5",
         "--db", db_url)  # fmt: skip
    out = tmp_path / "tasks.csv"
    argv = ["pairs", "plan", "--campaign", "pc", "--out", str(out), "--db", db_url, *args]
    code, text, err = _run(capsys, *argv)
    assert code == 2
    assert err.strip().splitlines() == [message]
    assert not out.exists()
    assert text == ""
    assert _planned(db_url) == []


def test_an_unwritable_output_exits_2(tmp_path, db_url, capsys) -> None:  # noqa: ANN001
    _setup(tmp_path, db_url, capsys)
    for out, message in [
        (tmp_path / "no" / "t.csv", f"--out {tmp_path / 'no' / 't.csv'}: the folder "
                                     f"{tmp_path / 'no'} does not exist"),
        (tmp_path, f"--out {tmp_path} is a folder, not a file to write the tasks to"),
    ]:  # fmt: skip
        code, _, err = _run(capsys, "pairs", "plan", "--campaign", "pc", "--budget", "10",
                            "--out", str(out), "--db", db_url)  # fmt: skip
        assert code == 2
        assert err.strip().splitlines() == [f"monitor: error: {message}"]
    assert _planned(db_url) == []
    assert not (tmp_path / "no").exists()
    assert not list(tmp_path.rglob("*.tmp"))
    assert not list(tmp_path.rglob("t.csv"))


def test_planning_again_skips_planned_unanswered_pairs(tmp_path, db_url, capsys) -> None:  # noqa: ANN001
    _setup(tmp_path, db_url, capsys)
    first, second, third = (tmp_path / f"t{k}.csv" for k in range(3))
    base = ["pairs", "plan", "--campaign", "pc", "--budget", "60", "--db", db_url]
    assert _run(capsys, *base, "--out", str(first))[0] == 0
    code, text, _ = _run(capsys, *base, "--out", str(second))
    assert code == 0
    assert "60 pairs planned before and not answered yet were left out" in text

    def pairs(path):
        return {(r["worker"], *sorted((r["left"], r["right"])))
                for r in csv.DictReader(path.open())}  # fmt: skip

    one, two = pairs(first), pairs(second)
    assert len(one) == 60
    assert len(two) == 60
    assert one.isdisjoint(two)
    # asked to, it may plan them again; the rounds differ, so do the ids
    assert _run(capsys, *base, "--out", str(third), "--repeat-planned", "--seed", "0")[0] == 0
    rounds = sorted({p.round for p in _planned(db_url)})
    assert rounds == [1, 2, 3]


@pytest.mark.parametrize("platform", ["csv", "mturk", "toloka", "labelstudio"])
def test_ingest_maps_pair_ids_back(tmp_path, db_url, capsys, platform) -> None:  # noqa: ANN001
    _setup(tmp_path, db_url, capsys)
    tasks = tmp_path / "tasks"
    code, _, err = _run(capsys, "pairs", "plan", "--campaign", "pc", "--budget", "30",
                        "--out", str(tasks), "--db", db_url)  # fmt: skip
    assert code == 0, err
    rows = list(csv.DictReader(tasks.open()))
    # answers to the first 20 tasks, given by another annotator than planned (the platform
    # chose who took the task): only the pair id says which task it was
    answered = rows[:20]
    answers = tmp_path / f"answers.{'json' if platform == 'labelstudio' else 'csv'}"
    fmt = []
    if platform == "csv":
        lines = ["pair_id,worker,left,right,preference"] + [
            f"{r['pair_id']},x{k % 2},{r['left']},{r['right']},left" for k, r in enumerate(answered)
        ]
        lines.append(f"p-0000000000000000,x9,{rows[0]['left']},{rows[0]['right']},right")
        answers.write_text("\n".join(lines) + "\n")
    elif platform in ("mturk", "toloka"):
        p = "Input." if platform == "mturk" else "INPUT:"
        out = "Answer.preference" if platform == "mturk" else "OUTPUT:preference"
        wid = "WorkerId" if platform == "mturk" else "ASSIGNMENT:worker_id"
        aid = "AssignmentId" if platform == "mturk" else "ASSIGNMENT:assignment_id"
        sep = "," if platform == "mturk" else "\t"
        head = [wid, aid, f"{p}pair_id", f"{p}left", f"{p}right", out]
        lines = [sep.join(head)] + [
            sep.join([f"x{k % 2}", f"A{k}", r["pair_id"], r["left"], r["right"], "left"])
            for k, r in enumerate(answered)
        ]
        answers.write_text("\n".join(lines) + "\n")
        fmt = ["--format", platform]
    else:
        docs = [
            {"id": k, "data": {"pair_id": r["pair_id"], "left": r["left"], "right": r["right"]},
             "annotations": [{"id": 100 + k, "completed_by": k % 2, "was_cancelled": False,
                              "result": [{"from_name": "pw", "to_name": "pw", "type": "pairwise",
                                          "value": {"selected": "left"}}]}]}
            for k, r in enumerate(answered)
        ]  # fmt: skip
        answers.write_text(json.dumps(docs))
        fmt = ["--format", "labelstudio"]
    code, text, err = _run(capsys, "ingest", str(answers), "--campaign", "pc", *fmt,
                           "--db", db_url)  # fmt: skip
    assert code == 0, err
    assert "20 planned pairs answered" in text + err
    if platform == "csv":
        assert "1 row carries a pair_id that names no planned pair" in text + err
    planned = {p.pair_id: p for p in _planned(db_url)}
    done = {pid for pid, p in planned.items() if p.answered_id is not None}
    assert done == {r["pair_id"] for r in answered}
    # planning again leaves out only the 10 still open
    code, text, _ = _run(capsys, "pairs", "plan", "--campaign", "pc", "--budget", "30",
                         "--out", str(tmp_path / "again.csv"), "--db", db_url)  # fmt: skip
    assert code == 0
    assert "10 pairs planned before and not answered yet were left out" in text


def test_an_answer_without_pair_id_matches_by_annotator_and_pair(tmp_path, db_url, capsys) -> None:  # noqa: ANN001
    _setup(tmp_path, db_url, capsys)
    tasks = tmp_path / "tasks.csv"
    assert _run(capsys, "pairs", "plan", "--campaign", "pc", "--budget", "12",
                "--out", str(tasks), "--db", db_url)[0] == 0  # fmt: skip
    rows = list(csv.DictReader(tasks.open()))[:5]
    # the planned annotator answered, sides swapped, no pair_id column
    lines = ["worker,left,right,preference"] + [
        f"{r['worker']},{r['right']},{r['left']},right" for r in rows
    ]
    (tmp_path / "a.csv").write_text("\n".join(lines) + "\n")
    code, text, _ = _run(capsys, "ingest", str(tmp_path / "a.csv"), "--campaign", "pc",
                         "--db", db_url)  # fmt: skip
    assert code == 0
    assert "5 planned pairs answered" in text
    done = {p.pair_id for p in _planned(db_url) if p.answered_id is not None}
    assert done == {r["pair_id"] for r in rows}


def test_new_annotators_and_help(tmp_path, db_url, capsys) -> None:  # noqa: ANN001
    _setup(tmp_path, db_url, capsys)
    out = tmp_path / "t.csv"
    code, _text, err = _run(capsys, "pairs", "plan", "--campaign", "pc", "--budget", "20",
                           "--new-worker", "fresh", "--out", str(out), "--db", db_url)  # fmt: skip
    assert code == 0, err
    rows = list(csv.DictReader(out.open()))
    assert {r["worker"] for r in rows} == {"fresh"}
    assert len(rows) == 20
    assert {p.purpose for p in _planned(db_url)} <= {"known", "gold", "information"}
    with pytest.raises(SystemExit) as exc:
        main(["pairs", "plan", "--help"])
    assert exc.value.code == 0
    assert "--per-annotator" in capsys.readouterr().out
