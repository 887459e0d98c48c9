"""Worker decisions end to end, on both databases: the habits a run tests on each worker's own
answers, the decisions in ``monitor workers --json`` after a first, an incremental and a full
run, and a campaign where everyone gave the same answer."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from monitor.cli import main
from tests.report.pages import tables

ITEMS = [f"i{k:02d}" for k in range(24)]  # i00 worst ... i23 best


def _write(path: Path, rows: list[tuple[str, str, str, str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["worker", "left", "right", "preference"])
        w.writerows(rows)
    return path


def _honest(rng: np.random.Generator, workers: list[str], per: int) -> list[tuple]:
    rows = []
    for w in workers:
        for _ in range(per):
            a, b = rng.choice(len(ITEMS), 2, replace=False)
            right = (b > a) != (rng.random() < 0.1)  # 90% along the true order
            rows.append((w, ITEMS[a], ITEMS[b], "right" if right else "left"))
    return rows


def _clicker(rng: np.random.Generator, name: str, n: int, lefts: int) -> list[tuple]:
    left = set(rng.permutation(n)[:lefts].tolist())
    rows = []
    for k in range(n):
        a, b = rng.choice(len(ITEMS), 2, replace=False)
        rows.append((name, ITEMS[a], ITEMS[b], "left" if k in left else "right"))
    return rows


def _workers(db_url: str, campaign: str, capsys: pytest.CaptureFixture[str]) -> dict[str, dict]:
    capsys.readouterr()
    assert main(["--db", db_url, "workers", "--campaign", campaign, "--json"]) == 0
    return {r["worker"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}


def test_left_clickers_in_first_incremental_and_full_runs(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(3)
    honest = [f"a{k}" for k in range(8)]
    first = _honest(rng, honest, 60)
    first += _clicker(rng, "left90", 80, 72) + _clicker(rng, "left100", 80, 80)
    db = ["--db", db_url]
    assert main([*db, "campaign", "create", "prefs", "--kind", "pairwise"]) == 0
    assert main([*db, "ingest", str(_write(tmp_path / "a.csv", first)), "--campaign", "prefs"]) == 0
    later = _write(tmp_path / "b.csv", _honest(rng, honest, 20))
    for step in ("first", "incremental", "full"):
        if step == "incremental":
            assert main([*db, "ingest", str(later), "--campaign", "prefs"]) == 0
        assert (
            main([*db, "recompute", "--campaign", "prefs", *(["--full"] * (step == "full"))]) == 0
        )
        rows = _workers(db_url, "prefs", capsys)
        assert "position_bias" in rows["left90"]["flags"], step
        assert rows["left90"]["decision"] in ("block", "stop", "down_weight"), step
        assert rows["left100"]["decision"] == "block", step
        assert "left" in rows["left100"]["decision_reason"], step
        assert {rows[w]["decision"] for w in honest} <= {"ok", "cannot_tell", "watch"}, step
        assert not any("position_bias" in rows[w]["flags"] for w in honest), step


@pytest.mark.parametrize(
    ("answer", "kind"),
    [("a", ["--kind", "label", "--categories", "a,b"]),
     ("3", ["--kind", "rating", "--min", "1", "--max", "5"])],
)  # fmt: skip
def test_a_unanimous_campaign_flags_nobody_and_cannot_tell(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], answer: str, kind: list[str]
) -> None:
    path = tmp_path / "same.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["worker", "item", "value"])
        w.writerows((f"w{k}", f"i{i}", answer) for k in range(6) for i in range(60))
    db = ["--db", db_url]
    assert main([*db, "campaign", "create", "same", *kind]) == 0
    assert main([*db, "ingest", str(path), "--campaign", "same"]) == 0
    assert main([*db, "recompute", "--campaign", "same"]) == 0
    rows = _workers(db_url, "same", capsys)
    assert {w: r["flags"] for w, r in rows.items()} == {f"w{k}": [] for k in range(6)}
    assert {r["decision"] for r in rows.values()} == {"cannot_tell"}
    assert main([*db, "report", "--campaign", "same", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"]["state"] == "cannot_tell"


def _prefs(db_url: str, tmp_path: Path, *, run: bool = True) -> list[str]:
    rng = np.random.default_rng(5)
    rows = _honest(rng, [f"a{k}" for k in range(8)], 60) + _clicker(rng, "left100", 80, 80)
    db = ["--db", db_url]
    assert main([*db, "campaign", "create", "prefs", "--kind", "pairwise"]) == 0
    assert main([*db, "ingest", str(_write(tmp_path / "a.csv", rows)), "--campaign", "prefs"]) == 0
    if run:
        assert main([*db, "recompute", "--campaign", "prefs"]) == 0
    return db


def _status(db_url: str, capsys: pytest.CaptureFixture[str]) -> dict[str, tuple]:
    """The workers blocked or down-weighted, with their weight."""
    rows = _workers(db_url, "prefs", capsys)
    return {
        w: (r["status"], r["weight"])
        for w, r in rows.items()
        if r["status"] in ("blocked", "down_weighted")
    }


def test_block_advised_blocks_exactly_the_decided_with_their_reason(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _prefs(db_url, tmp_path)
    rows = _workers(db_url, "prefs", capsys)
    decided = sorted(w for w, r in rows.items() if r["decision"] == "block")
    assert decided == ["left100"]
    # the page: every worker not ok, the most severe first, then the worst model score
    page = tmp_path / "prefs.html"
    assert main([*db, "report", "--campaign", "prefs", "--out", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    table = tables(html)["workers-table"]
    shown = [a["data-subject"] for a in table.attrs]
    assert shown[0] == "left100"
    assert set(shown) == set(rows)
    assert "block: " in table.column("Status")[0]
    assert 'id="todo-block"' in html
    assert rows["left100"]["decision_reason"] in html
    # the block list lists the workers decided block before anyone blocks them
    capsys.readouterr()
    assert main([*db, "export", "blocklist", "--campaign", "prefs", "--platform", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)["blocked"]
    assert [(e["worker"], e["status"], e["reason"]) for e in listed] == [
        ("left100", "decided", rows["left100"]["decision_reason"])
    ]
    assert main([*db, "block", "--campaign", "prefs", "--advised", "--by", "ann"]) == 0
    out = capsys.readouterr().out
    assert out == f"left100: blocked in prefs by ann ({rows['left100']['decision_reason']})\n"
    status = _status(db_url, capsys)
    assert {w for w, (s, _) in status.items() if s == "blocked"} == {"left100"}
    assert main([*db, "block", "--campaign", "prefs", "--advised"]) == 0
    assert "already blocked" in capsys.readouterr().out
    assert main([*db, "export", "blocklist", "--campaign", "prefs", "--platform", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)["blocked"]
    assert [(e["worker"], e["status"], e["actor"]) for e in listed] == [
        ("left100", "blocked", "ann")
    ]


def test_several_workers_defaults_and_bad_input(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _prefs(db_url, tmp_path, run=False)
    capsys.readouterr()
    # no run: cannot tell, never an all-clear
    assert main([*db, "report", "--campaign", "prefs", "--format", "json"]) == 0
    verdict = json.loads(capsys.readouterr().out)["verdict"]
    assert verdict["state"] == "cannot_tell"
    assert verdict["to_tell"]
    page = tmp_path / "prefs.html"
    assert main([*db, "report", "--campaign", "prefs", "--out", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    assert "Nothing to do" not in html
    assert 'id="cannot-tell"' in html
    capsys.readouterr()
    assert main([*db, "block", "--campaign", "prefs", "--advised"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "has no run yet" in err[0]
    assert err[1:] == ["hint: run: monitor recompute --campaign prefs"]
    assert main([*db, "recompute", "--campaign", "prefs"]) == 0
    capsys.readouterr()
    # a name that does not exist: one line, exit 2, nothing blocked (left100 neither)
    assert main([*db, "block", "left100", "nobody", "--campaign", "prefs", "--advised"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "no worker 'nobody'" in err[0]
    assert len(err) <= 2  # the problem, then the hint
    assert _status(db_url, capsys) == {}
    # no reason given and no decision to lend one: refused, nothing changed
    assert main([*db, "block", "a0", "left100", "--campaign", "prefs"]) == 2
    assert "--reason" in capsys.readouterr().err
    assert _status(db_url, capsys) == {}
    assert main([*db, "down-weight", "a0", "--campaign", "prefs", "--reason", "x"]) == 2
    assert "--weight" in capsys.readouterr().err
    # several at once, the reason and weight given
    argv = ["down-weight", "a0", "a1", "--campaign", "prefs", "--weight", "0.4", "--reason", "x"]
    assert main([*db, *argv]) == 0
    status = _status(db_url, capsys)
    assert status["a0"] == status["a1"] == ("down_weighted", 0.4)
    # the decision's reason by default
    assert main([*db, "block", "left100", "--campaign", "prefs"]) == 0
    assert "(gave the same answer (left)" in capsys.readouterr().out
    assert main([*db, "clear", "a0", "a1", "left100", "--campaign", "prefs"]) == 0
    assert _status(db_url, capsys) == {}


def test_gold_any_time(db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(2)
    truth = {f"i{k}": "ab"[k % 2] for k in range(40)}
    path = tmp_path / "j.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["worker", "item", "value"])
        for k in range(5):
            for item, t in truth.items():
                w.writerow([f"w{k}", item, t if rng.random() < 0.85 else "ab"[t == "a"]])
    gold = tmp_path / "gold.csv"
    gold.write_text("item,gold\n" + "".join(f"{i},{t}\n" for i, t in list(truth.items())[:20]))
    db = ["--db", db_url]
    assert main([*db, "campaign", "create", "g", "--kind", "label"]) == 0
    assert main([*db, "ingest", str(path), "--campaign", "g"]) == 0
    assert main([*db, "recompute", "--campaign", "g"]) == 0
    capsys.readouterr()
    assert main([*db, "ingest", "--campaign", "g"]) == 2  # neither judgments nor items
    assert "--items" in capsys.readouterr().err
    assert main([*db, "ingest", "--items", str(gold), "--campaign", "g"]) == 0
    assert "20 items with gold values" in capsys.readouterr().out
    assert main([*db, "recompute", "--campaign", "g"]) == 0
    assert "nothing new" not in capsys.readouterr().out
    rows = _workers(db_url, "g", capsys)
    assert all(r["gold_accuracy"] is not None and r["gold_n"] == 20 for r in rows.values())
    assert main([*db, "recompute", "--campaign", "g"]) == 0  # the same gold: nothing new
    assert "nothing new" in capsys.readouterr().out
