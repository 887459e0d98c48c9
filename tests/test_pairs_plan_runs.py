"""``monitor pairs plan`` as a run: two at once are serialised (PostgreSQL: made deterministic
by a third session holding the campaign's row until both wait), the task file is written only
once its plan is stored, ``--dry-run`` stores and writes nothing, ``pairs cancel`` takes a plan
back, ``--gold`` needs gold values; the task files carry the items' texts and come with the
platform's config or template. On SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import io
import json
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import select, text

from monitor.cli import main
from monitor.core.errors import OutputError
from monitor.store.engine import make_engine
from monitor.store.models import Campaign
from tests.test_cli_pairs import _planned, _run, _setup

PLAN = ("pairs", "plan", "--campaign", "pc", "--budget", "60")


def _pairs(path: Path) -> set[tuple[str, str, str]]:
    return {(r["worker"], *sorted((r["left"], r["right"])))
            for r in csv.DictReader(path.open(newline=""))}  # fmt: skip


def _ids(path: Path) -> set[str]:
    return {r["pair_id"] for r in csv.DictReader(path.open(newline=""))}


def test_two_plans_at_once_are_serialised(tmp_path, db_url, capsys, backend) -> None:  # noqa: ANN001
    _setup(tmp_path, db_url, capsys)
    engine = make_engine(db_url)
    holder = engine.connect()
    outs = [tmp_path / "a.csv", tmp_path / "b.csv"]
    codes: list[int] = []
    try:
        if backend == "postgres":  # a third session holds the campaign's row
            holder.execute(
                select(Campaign.id).where(Campaign.name == "pc").with_for_update(key_share=True)
            )
        threads = [
            threading.Thread(
                target=lambda o=o: codes.append(main([*PLAN, "--out", str(o), "--db", db_url]))
            )
            for o in outs
        ]
        for t in threads:
            t.start()
        if backend == "postgres":
            waiting = 0
            for _ in range(600):  # until both planners wait on the lock (at most a minute)
                with engine.connect() as probe:  # a fresh view of the activity each time
                    waiting = probe.execute(
                        text(
                            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = "
                            "'Lock' AND datname = current_database()"
                        )
                    ).scalar_one()
                if waiting >= 2:
                    break
                time.sleep(0.1)
            assert waiting == 2
            assert not any(o.exists() for o in outs)  # nothing written while waiting
    finally:
        holder.rollback()
        holder.close()
    for t in threads:
        t.join()
    engine.dispose()
    capsys.readouterr()
    assert codes == [0, 0]
    planned = _planned(db_url)
    assert sorted({p.round for p in planned}) == [1, 2]
    a, b = (_pairs(o) for o in outs)
    assert len(a) == len(b) == 60
    assert a.isdisjoint(b)  # the second plan saw the first
    by_round = {r: {p.pair_id for p in planned if p.round == r} for r in (1, 2)}
    assert sorted([_ids(outs[0]), _ids(outs[1])], key=sorted) == sorted(
        by_round.values(), key=sorted
    )  # each file is a stored plan


def test_a_file_that_cannot_be_written_keeps_no_plan(tmp_path, db_url, capsys, monkeypatch) -> None:  # noqa: ANN001
    _setup(tmp_path, db_url, capsys)

    def refuse(out: Path, *_a: object, **_k: object) -> Path:
        raise OutputError(f"cannot write the tasks to {out}: No space left on device")

    monkeypatch.setattr("monitor.core.output.write_output", refuse)
    code, _, err = _run(capsys, *PLAN, "--out", str(tmp_path / "t.csv"), "--db", db_url)
    assert code == 2
    assert err.splitlines() == [
        f"monitor: error: cannot write the tasks to {tmp_path / 't.csv'}: No space left on "
        "device (the plan was not kept)"
    ]
    assert _planned(db_url) == []


def test_dry_run_stores_and_writes_nothing(tmp_path, db_url, capsys) -> None:  # noqa: ANN001
    _setup(tmp_path, db_url, capsys)
    out = tmp_path / "t.csv"
    code, text_, err = _run(capsys, *PLAN, "--dry-run", "--out", str(out), "--db", db_url)
    assert code == 0, err
    assert text_.startswith("dry run, nothing stored: 60 pairs for 6 annotators (round 1")
    assert not out.exists()
    assert _planned(db_url) == []
    code, _, err = _run(capsys, *PLAN, "--db", db_url)
    assert code == 2
    assert "pairs plan needs --out FILE (or --dry-run to see the plan only)" in err


def test_cancel(tmp_path, db_url, capsys) -> None:  # noqa: ANN001
    _setup(tmp_path, db_url, capsys)
    for k in (1, 2):
        assert _run(capsys, *PLAN, "--out", str(tmp_path / f"t{k}.csv"), "--db", db_url)[0] == 0
    base = ("pairs", "cancel", "--campaign", "pc", "--db", db_url)
    code, out, err = _run(capsys, *base)
    assert code == 0, err
    assert out.strip() == "campaign 'pc': plan 2 cancelled, 60 pairs not answered yet removed"
    assert {p.round for p in _planned(db_url)} == {1}
    code, _, err = _run(capsys, *base, "--plan", "7")
    assert code == 2
    assert err.strip() == "monitor: error: campaign 'pc' has no plan 7 (its plans: 1)"
    # plan 1 with 5 pairs answered: those stay
    rows = list(csv.DictReader((tmp_path / "t1.csv").open(newline="")))[:5]
    lines = ["pair_id,worker,left,right,preference"] + [
        f"{r['pair_id']},{r['worker']},{r['left']},{r['right']},left" for r in rows
    ]
    (tmp_path / "a.csv").write_text("\n".join(lines) + "\n")
    assert (
        _run(capsys, "ingest", str(tmp_path / "a.csv"), "--campaign", "pc", "--db", db_url)[0] == 0
    )
    code, out, _ = _run(capsys, *base, "--plan", "1")
    assert out.strip() == (
        "campaign 'pc': plan 1 cancelled, 55 pairs not answered yet removed; 5 answered kept"
    )
    assert len(_planned(db_url)) == 5
    code, _, err = _run(capsys, *base)
    assert code == 2
    assert "all its 5 pairs answered: nothing to cancel" in err
    # planning again does not leave the cancelled pairs out
    code, out, _ = _run(capsys, *PLAN, "--out", str(tmp_path / "t3.csv"), "--db", db_url)
    assert code == 0
    assert "left out" not in out


def test_gold_without_gold_values_is_an_error(tmp_path, db_url, capsys) -> None:  # noqa: ANN001
    rows = ["worker,left,right,preference"] + [
        f"w{k % 3},i{k % 7},i{(k + 2) % 7},left" for k in range(30)
    ]
    (tmp_path / "p.csv").write_text("\n".join(rows) + "\n")
    _run(capsys, "campaign", "create", "pc", "--kind", "pairwise", "--db", db_url)
    assert (
        _run(capsys, "ingest", str(tmp_path / "p.csv"), "--campaign", "pc", "--db", db_url)[0] == 0
    )
    out = tmp_path / "t.csv"
    code, _, err = _run(capsys, "pairs", "plan", "--campaign", "pc", "--budget", "10", "--gold",
                        "0.1", "--out", str(out), "--db", db_url)  # fmt: skip
    assert code == 2
    assert err.splitlines()[0] == (
        "monitor: error: --gold 0.1: campaign 'pc' has no item with a gold value, and a gold "
        "pair needs two"
    )
    assert not out.exists()
    assert _planned(db_url) == []


def _with_texts(tmp_path: Path, db_url: str, capsys, urls: bool = False) -> None:  # noqa: ANN001
    _setup(tmp_path, db_url, capsys)
    shown = "https://img.example.org/{}.jpg" if urls else "the text of {}"
    items = ["item,text"] + [f"i{k},{shown.format(f'i{k}')}" for k in range(30)]
    (tmp_path / "texts.csv").write_text("\n".join(items) + "\n")
    # the judgments again (nothing new) with the items file of texts
    assert _run(capsys, "ingest", str(tmp_path / "prefs.csv"), "--campaign", "pc",
                "--items", str(tmp_path / "texts.csv"), "--db", db_url)[0] == 0  # fmt: skip


@pytest.mark.parametrize("platform", ["csv", "mturk", "toloka", "labelstudio"])
def test_task_files_carry_texts_and_a_template(tmp_path, db_url, capsys, platform) -> None:  # noqa: ANN001
    _with_texts(tmp_path, db_url, capsys)
    out = tmp_path / "tasks"
    code, said, err = _run(capsys, *PLAN, "--platform", platform, "--out", str(out), "--db", db_url)
    assert code == 0, err
    if platform == "labelstudio":
        data = [t["data"] for t in json.loads(out.read_text())]
    else:
        sep = "\t" if platform == "toloka" else ","
        table = list(csv.reader(io.StringIO(out.read_text()), delimiter=sep))
        prefix = "INPUT:" if platform == "toloka" else ""  # MTurk's upload takes bare names
        names = ("pair_id", "worker", "left", "right", "left_text", "right_text")
        assert tuple(table[0]) == tuple(prefix + c for c in names)
        data = [dict(zip(names, r, strict=True)) for r in table[1:]]
    assert all(d["left_text"] == f"the text of {d['left']}" for d in data)
    extra = {p.name for p in tmp_path.iterdir()} - {"tasks", "prefs.csv", "items.csv",
                                                    "texts.csv", "monitor.db"}  # fmt: skip
    extra = {e for e in extra if not e.startswith("monitor.db")}
    if platform == "csv":
        assert extra == set()
        return
    name = "tasks.config.xml" if platform == "labelstudio" else "tasks.template.html"
    assert extra == {name}
    assert f"{name}: the task's" in said
    body = (tmp_path / name).read_text()
    if platform == "labelstudio":
        assert '<Pairwise name="preference" toName="left,right"/>' in body
        assert '<Text name="left" value="$left_text"/>' in body
    elif platform == "mturk":
        assert "${left_text}" in body
        assert 'name="preference" value="left"' in body
        assert 'value="tie"' not in body  # the campaign is strict
    else:
        assert "{{input.left_text}}" in body
        assert 'name="preference" value="right"' in body


def test_label_studio_config_shows_image_urls(tmp_path, db_url, capsys) -> None:  # noqa: ANN001
    _with_texts(tmp_path, db_url, capsys, urls=True)
    out = tmp_path / "tasks.json"
    assert (
        _run(capsys, *PLAN, "--platform", "labelstudio", "--out", str(out), "--db", db_url)[0] == 0
    )
    body = (tmp_path / "tasks.json.config.xml").read_text()
    assert '<Image name="left" value="$left_text"/>' in body


def test_a_pair_id_stored_meanwhile_is_one_line(tmp_path, db_url, capsys, monkeypatch) -> None:  # noqa: ANN001
    """A unique violation on save (a planner that took no lock stored the same pairs) is one
    line, exit 1, and neither the plan nor its file is kept."""
    from monitor.store import plans

    _setup(tmp_path, db_url, capsys)
    real = plans.save_plan

    def twice(*args: object) -> None:
        real(*args)  # type: ignore[arg-type]
        real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(plans, "save_plan", twice)
    out = tmp_path / "t.csv"
    code, _, err = _run(capsys, *PLAN, "--out", str(out), "--db", db_url)
    assert code == 1
    assert err.splitlines() == [
        "monitor: error: campaign 'pc' was planned by another process at the same time: "
        "nothing was stored; plan again"
    ]
    assert not out.exists()
    assert _planned(db_url) == []


def test_a_plan_held_up_past_the_lock_timeout_is_one_line(
    tmp_path, db_url, capsys, backend, monkeypatch
) -> None:  # noqa: ANN001
    """Another session holds the campaign (PostgreSQL: its row; SQLite: the write lock): past
    the ``lock_timeout`` setting (SQLite: the busy timeout it sets), here made short, the plan
    ends with one line (exit 1), nothing stored or written."""
    _setup(tmp_path, db_url, capsys)
    monkeypatch.setenv("MONITOR_LOCK_TIMEOUT", "0.3")
    engine = make_engine(db_url)
    out = tmp_path / "t.csv"
    try:
        with engine.connect() as holder:
            if backend == "postgres":
                holder.execute(
                    select(Campaign.id).where(Campaign.name == "pc").with_for_update(key_share=True)
                )
            else:
                holder.execute(text("UPDATE campaigns SET name = name WHERE name = 'pc'"))
            code, _, err = _run(capsys, *PLAN, "--out", str(out), "--db", db_url)
            holder.rollback()
    finally:
        engine.dispose()
    assert code == 1
    assert err.splitlines() == [
        "monitor: error: campaign 'pc' is being planned or changed by another process: try "
        "again when it ends"
    ]
    assert not out.exists()
    assert _planned(db_url) == []
