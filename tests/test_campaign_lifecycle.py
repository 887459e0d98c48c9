"""A campaign's lifecycle (issue 40): an ingest batch undone leaves the campaign as if the
file had never been ingested (the runs compared), rename, archive and unarchive, delete with
the run cache's files, and the demo's own database; bad input changes nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from monitor.cli import main
from monitor.store.campaigns import get_campaign
from monitor.store.engine import make_engine, transaction
from monitor.store.runs import latest_run, run_flags, run_values

LABELS = ("yes", "no", "maybe")
ROWS = [
    (f"w{w}", f"i{i}", LABELS[(w + i * (i % 3)) % 2]) for w in range(1, 7) for i in range(1, 13)
]
MISTAKE = [("w1", "i1", "later"), ("wX", "iX", "other"), ("wX", "i2", "yes"), ("w2", "iY", "no")]
AGAIN = [("w3", "iZ", "yes"), ("w4", "iZ", "no"), ("w5", "iZ", "yes"), ("w6", "iZ", "yes")]


def _csv(path: Path, rows: list[tuple[str, str, str]]) -> str:
    path.write_text("worker,item,value\n" + "".join(f"{w},{i},{v}\n" for w, i, v in rows))
    return str(path)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Small runs that keep a run cache on disk (the state an undo must not let survive)."""
    monkeypatch.setenv("MONITOR_BOOTSTRAP_SAMPLES", "30")
    monkeypatch.setenv("MONITOR_PHI", "off")
    cache = tmp_path / "cache"
    monkeypatch.setenv("MONITOR_CACHE_DIR", str(cache))
    return cache


def _run_of(engine: Engine, name: str) -> tuple[Any, ...]:
    """What a campaign's latest run says, the campaign's own name left out: every value (with
    its interval and count) and every flag (with its value and threshold)."""
    with transaction(engine) as s:
        info = get_campaign(s, name)
        run = latest_run(s, info.id)
        assert run is not None
        values = sorted(
            (v.scope, "" if v.scope == "campaign" else v.subject, v.metric,
             *(None if x is None else round(x, 12) for x in (v.value, v.low, v.high)), v.n)
            for v in run_values(s, run.id)
        )  # fmt: skip
        flags = sorted(
            (f.scope, "" if f.scope == "campaign" else f.subject, f.rule, f.value, f.threshold)
            for f in run_flags(s, run.id)
        )
        return run.n_judgments, info.categories, values, flags


def _create(capsys: pytest.CaptureFixture[str], name: str, db: list[str]) -> None:
    assert _cli(capsys, "campaign", "create", name, "--kind", "label", *db)[0] == 0


def test_an_undone_batch_leaves_the_campaign_as_if_never_ingested(
    db_url: str, tmp_path: Path, quick: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ["--db", db_url]
    first = _csv(tmp_path / "first.csv", ROWS)
    mistake = _csv(tmp_path / "mistake.csv", MISTAKE)
    for name in ("undone", "reference"):
        _create(capsys, name, db)
        assert _cli(capsys, "ingest", first, "--campaign", name, *db)[0] == 0
    assert _cli(capsys, "recompute", *db)[0] == 0
    code, out, _ = _cli(capsys, "ingest", mistake, "--campaign", "undone", *db)
    assert code == 0
    assert "categories taken from the data" in out
    assert _cli(capsys, "recompute", "--campaign", "undone", *db)[0] == 0
    engine = make_engine(db_url)
    try:
        with transaction(engine) as s:
            assert set(get_campaign(s, "undone").categories or ()) >= {"later", "other"}
        code, out, _ = _cli(capsys, "ingest", "history", "--campaign", "undone", "--json", *db)
        batch = [json.loads(line) for line in out.splitlines()][-1]["batch"]
        code, out, _ = _cli(
            capsys, "ingest", "undo", "--campaign", "undone", "--batch", str(batch), *db
        )
        assert code == 0
        assert "4 judgments, 1 worker, 2 items" in out  # wX, iX and iY came with it alone
        code, out, _ = _cli(capsys, "recompute", "--campaign", "undone", *db)
        assert code == 0
        assert f"of {len(ROWS)} judgments" in out  # the next run sees the change
        assert _run_of(engine, "undone") == _run_of(engine, "reference")
        code, out, _ = _cli(capsys, "campaign", "list", *db)
        assert out.count(f"{len(ROWS)} judgments, 6 workers, 12 items") == 2

        # SQLite gives the ids of the rows taken out to the next ones: a file of as many rows
        # must still be counted (not "nothing new"), and from fresh arrays
        again = _csv(tmp_path / "again.csv", AGAIN)
        for name in ("undone", "reference"):
            assert _cli(capsys, "ingest", again, "--campaign", name, *db)[0] == 0
        code, out, _ = _cli(capsys, "recompute", *db)
        assert code == 0
        assert "nothing new" not in out
        assert _run_of(engine, "undone") == _run_of(engine, "reference")
    finally:
        engine.dispose()


def test_undoing_a_middle_batch_and_the_last_one(
    db_url: str, tmp_path: Path, quick: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A batch between others takes only its own rows (an item the later batch also used
    stays); undoing every batch gives back a campaign without data or data categories."""
    db = ["--db", db_url]
    _create(capsys, "c", db)
    files = [
        _csv(tmp_path / "a.csv", ROWS[:30]),
        _csv(tmp_path / "b.csv", MISTAKE),
        _csv(tmp_path / "c.csv", [("wX", "iX", "yes"), *ROWS[30:]]),
    ]
    for path in files:
        assert _cli(capsys, "ingest", path, "--campaign", "c", *db)[0] == 0
    code, out, _ = _cli(capsys, "ingest", "history", "--campaign", "c", "--json", *db)
    batches = [json.loads(line)["batch"] for line in out.splitlines()]
    code, out, _ = _cli(capsys, "ingest", "undo", "--campaign", "c", "--batch", str(batches[1]),
                        *db)  # fmt: skip
    assert code == 0
    assert "4 judgments, 0 workers, 1 item" in out  # iY only: wX, iX used later
    engine = make_engine(db_url)
    try:
        with transaction(engine) as s:
            cats = get_campaign(s, "c").categories
        assert cats == ("no", "yes")  # "later" and "other" came with the batch
        for b in (batches[0], batches[2]):
            assert _cli(capsys, "ingest", "undo", "--campaign", "c", "--batch", str(b), *db)[0] == 0
        with transaction(engine) as s:
            info = get_campaign(s, "c")
        assert info.categories is None
        assert "categories_from_data" not in info.settings
        code, out, _ = _cli(capsys, "campaign", "list", *db)
        assert "0 judgments, 0 workers, 0 items" in out
    finally:
        engine.dispose()


def test_undoing_what_does_not_exist_is_one_line_and_changes_nothing(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ["--db", db_url]
    _create(capsys, "c", db)
    _create(capsys, "other", db)
    assert _cli(capsys, "ingest", _csv(tmp_path / "a.csv", ROWS), "--campaign", "c", *db)[0] == 0
    code, out, _ = _cli(capsys, "ingest", "history", "--campaign", "c", "--json", *db)
    batch = json.loads(out.splitlines()[0])["batch"]
    for argv, message in (
        (["--campaign", "c", "--batch", str(batch + 1)], "campaign 'c' has no ingest batch"),
        (["--campaign", "other", "--batch", str(batch)], "campaign 'other' has no ingest batch"),
        (["--campaign", "nope", "--batch", str(batch)], "no campaign named 'nope'"),
    ):
        code, out, err = _cli(capsys, "ingest", "undo", *argv, *db)
        assert code == 2
        assert err.startswith(f"monitor: error: {message}")
        assert len(err.splitlines()) == 2
        assert err.splitlines()[1].startswith("hint: ")
    code, out, _ = _cli(capsys, "campaign", "list", *db)
    assert f"{len(ROWS)} judgments, 6 workers, 12 items" in out


def test_rename_archive_unarchive_and_delete(
    db_url: str, tmp_path: Path, quick: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    db = ["--db", db_url]
    for name in ("a", "b"):
        _create(capsys, name, db)
        assert _cli(capsys, "ingest", _csv(tmp_path / f"{name}.csv", ROWS), "--campaign", name,
                    *db)[0] == 0  # fmt: skip
    assert _cli(capsys, "recompute", *db)[0] == 0
    kept = sorted(p.name for p in quick.iterdir())
    assert len(kept) >= 2  # each campaign's arrays at least

    assert _cli(capsys, "campaign", "rename", "a", "b", *db)[:2] == (2, "")
    for argv in (["rename", "nope", "x"], ["archive", "nope"], ["unarchive", "nope"],
                 ["show", "nope"], ["delete", "nope", "--yes"]):  # fmt: skip
        code, out, err = _cli(capsys, "campaign", *argv, *db)
        assert (code, out) == (2, "")
        assert err.startswith("monitor: error: no campaign named")
    code, out, _ = _cli(capsys, "campaign", "rename", "a", "first", *db)
    assert code == 0
    assert out == "campaign 'a' is now 'first'\n"
    assert _cli(capsys, "campaign", "archive", "first", *db)[0] == 0
    code, out, _ = _cli(capsys, "campaign", "list", *db)
    assert "first\t" in out
    assert out.splitlines()[1].endswith(", archived")
    _cli(capsys, "ingest", _csv(tmp_path / "more.csv", AGAIN), "--campaign", "first", *db)
    _cli(capsys, "ingest", _csv(tmp_path / "more.csv", AGAIN), "--campaign", "b", *db)
    code, out, _ = _cli(capsys, "recompute", *db)  # the archived campaign is left out
    assert code == 0
    assert [line.split(":")[0] for line in out.splitlines()] == ["b"]
    code, out, _ = _cli(capsys, "report", "--all", "--out", str(tmp_path / "reports"), *db)
    assert code == 0
    index = (tmp_path / "reports" / "index.html").read_text()
    assert "first.html" not in index
    assert "b.html" in index
    code, out, _ = _cli(capsys, "recompute", "--campaign", "first", *db)  # by name it runs
    assert code == 0
    assert out.startswith("first: run 2")
    assert _cli(capsys, "campaign", "unarchive", "first", *db)[0] == 0
    code, out, _ = _cli(capsys, "campaign", "list", *db)
    assert "archived" not in out

    # delete: refused without a terminal and --yes, then everything goes, cache files too
    code, _, err = _cli(capsys, "campaign", "delete", "first", *db)
    assert code == 2
    assert "without --yes" in err
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda _prompt: "n")
    assert _cli(capsys, "campaign", "delete", "first", *db)[1] == "nothing deleted\n"
    code, out, _ = _cli(capsys, "campaign", "list", *db)
    assert out.startswith("b\t")
    assert "first\t" in out
    engine = make_engine(db_url)
    try:
        with transaction(engine) as s:
            gone = get_campaign(s, "first").id
    finally:
        engine.dispose()
    assert any(f"-{gone}." in p.name for p in quick.iterdir())
    monkeypatch.setattr("builtins.input", lambda _prompt: "y")
    code, out, _ = _cli(capsys, "campaign", "delete", "first", *db)
    assert code == 0
    assert out.startswith("deleted campaign 'first' (")
    assert not any(f"-{gone}." in p.name for p in quick.iterdir())
    assert any(p for p in quick.iterdir())  # the other campaign's files stay
    code, out, _ = _cli(capsys, "campaign", "list", *db)
    assert out.startswith("b\t")
    assert len(out.splitlines()) == 1
    code, out, err = _cli(capsys, "campaign", "delete", "first", "--yes", *db)
    assert code == 2
    assert err.startswith("monitor: error: no campaign named 'first'")
    assert _cli(capsys, "campaign", "delete", "b", "--yes", *db)[0] == 0
    code, out, _ = _cli(capsys, "campaign", "list", *db)
    assert out.startswith("no campaigns")


def test_the_demo_says_its_database_and_its_campaigns_can_be_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """CONTRACT: the demo runs in the default database; it names it, and its campaigns go."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MONITOR_DATABASE_URL", f"sqlite:///{tmp_path / 'work.db'}")
    monkeypatch.setenv("MONITOR_BOOTSTRAP_SAMPLES", "0")
    monkeypatch.setenv("MONITOR_PHI", "off")
    monkeypatch.setenv("MONITOR_CACHE_DIR", "")
    small = ["--workers", "8", "--items", "10", "--per-item", "2", "--report-dir", "r"]
    code, _, err = _cli(capsys, "demo", *small)
    assert code == 0
    assert err.splitlines()[0].startswith(f"demo database: sqlite:///{tmp_path / 'work.db'}")
    code, out, _ = _cli(capsys, "campaign", "list")
    names = [line.split("\t")[0] for line in out.splitlines()]
    assert code == 0
    assert names
    assert all(n.startswith("demo-") for n in names)
    for name in names:
        assert _cli(capsys, "campaign", "delete", name, "--yes")[0] == 0
    code, out, _ = _cli(capsys, "campaign", "list")
    assert out.startswith("no campaigns")


@pytest.mark.parametrize("kind", ["pairwise", "multilabel"])
def test_undo_in_pairwise_and_multilabel_campaigns(
    db_url: str, kind: str, tmp_path: Path, quick: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Preferences (and the items on either side) and multi-label sets (with their
    annotations) go as judgments do; the next run counts the rest."""
    from sqlalchemy import func, select

    from monitor.store.models import JudgmentAnnotation

    db = ["--db", db_url]
    if kind == "pairwise":
        head = "worker,left,right,preference\n"
        first = [f"w{w},a{i},a{i + 1},{('left', 'right', 'tie')[(w + i) % 3]}"
                 for w in range(1, 5) for i in range(1, 8)]  # fmt: skip
        later = ["w1,a1,new,left", "w9,a2,a3,right"]
        spec = ["--kind", "pairwise"]
    else:
        head = "worker,item,value\n"
        first = [f"w{w},i{i},{('a', 'a|b', '[]', 'b')[(w * i) % 4]}"
                 for w in range(1, 5) for i in range(1, 8)]  # fmt: skip
        later = ["w1,new,a|b", "w9,i2,b"]
        spec = ["--kind", "multilabel", "--options", "a,b"]
    files = []
    for name, rows in (("first", first), ("later", later)):
        path = tmp_path / f"{name}.csv"
        path.write_text(head + "\n".join(rows) + "\n")
        files.append(str(path))
    for name in ("undone", "reference"):
        assert _cli(capsys, "campaign", "create", name, *spec, *db)[0] == 0
        assert _cli(capsys, "ingest", files[0], "--campaign", name, *db)[0] == 0
    assert _cli(capsys, "ingest", files[1], "--campaign", "undone", *db)[0] == 0
    assert _cli(capsys, "recompute", *db)[0] == 0
    code, out, _ = _cli(capsys, "ingest", "history", "--campaign", "undone", "--json", *db)
    batch = json.loads(out.splitlines()[-1])["batch"]
    code, out, _ = _cli(capsys, "ingest", "undo", "--campaign", "undone", "--batch", str(batch),
                        *db)  # fmt: skip
    assert code == 0
    assert "2 judgments, 1 worker, 1 item" in out
    code, out, _ = _cli(capsys, "recompute", *db)
    assert code == 0
    assert out.splitlines()[1].startswith("undone: run 2, ")
    code, out, _ = _cli(capsys, "campaign", "list", *db)
    counts = [line.split("\t")[2] for line in out.splitlines()]
    assert counts[0] == counts[1]
    assert counts[0].startswith(f"{len(first)} judgments")
    engine = make_engine(db_url)
    try:
        if kind == "multilabel":
            with transaction(engine) as s:
                n = s.scalar(select(func.count()).select_from(JudgmentAnnotation))
            each = sum(
                0 if v == "[]" else v.count("|") + 1 for v in (r.split(",")[2] for r in first)
            )
            assert n == 2 * each  # the undone sets' annotations are gone
        assert _run_of(engine, "undone")[0] == _run_of(engine, "reference")[0] == len(first)
    finally:
        engine.dispose()
