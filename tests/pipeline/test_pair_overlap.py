"""Dynamic overlap of a preference campaign through a run and ``monitor export overlap``: each
judged pair gets ``need``; a pair only a stopped annotator judged wants ``min_overlap`` again
in the same run; the export writes ``left,right,need`` (CSV), a Toloka task file with
``TASK:overlap``, or the Label Studio CSV; bad input is one line and exit 2."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from monitor.cli import main
from tests.pipeline.test_live_decisions import _left_clicker

NAME = "prefs"


def _name(i: int) -> str:
    return "=p0" if i == 0 else f"p{i}"  # a formula-like id: neutralised in every export


def _rows(seed: int = 3) -> list[str]:
    """Ten annotators along a hidden order 90% of the time, a left-clicker (stopped), and
    three pairs only the left-clicker judged."""
    solo = [f"lefty,solo{k},other{k},left" for k in range(3)]
    return ["worker,left,right,preference", *_left_clicker(seed, name=_name), *solo]


@pytest.fixture
def campaign(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The database URL of campaign ``prefs`` after one run."""
    monkeypatch.setenv("MONITOR_BOOTSTRAP_SAMPLES", "0")
    db = f"sqlite:///{tmp_path}/m.db"
    path = tmp_path / "p.csv"
    path.write_text("\n".join(_rows()) + "\n")
    assert main(["campaign", "create", NAME, "--kind", "pairwise", "--db", db]) == 0
    assert main(["export", "overlap", "--campaign", NAME, "--db", db]) == 2
    assert main(["ingest", str(path), "--campaign", NAME, "--db", db]) == 0
    assert main(["recompute", "--campaign", NAME, "--db", db]) == 0
    return db


def _export(db: str, capsys: Any, *more: str, campaign: str = NAME) -> tuple[list[list[str]], str]:
    """``monitor export overlap`` of ``campaign`` to standard output: its rows and its notes."""
    capsys.readouterr()
    assert main(["export", "overlap", "--campaign", campaign, "--db", db, *more]) == 0
    got = capsys.readouterr()
    delimiter = "\t" if "toloka" in more else ","
    return list(csv.reader(io.StringIO(got.out), delimiter=delimiter)), got.err


def test_each_judged_pair_gets_need_and_a_stopped_annotators_pairs_want_judgments_again(
    campaign: str, capsys: Any
) -> None:
    capsys.readouterr()
    assert main(["workers", "--campaign", NAME, "--json", "--db", campaign]) == 0
    decisions = {
        r["worker"]: r["decision"] for r in map(json.loads, capsys.readouterr().out.splitlines())
    }
    assert decisions["lefty"] == "stop"
    rows, err = _export(campaign, capsys)
    assert rows[0] == ["left", "right", "need"]
    need = {(r[0], r[1]): int(r[2]) for r in rows[1:]}
    assert len(need) > 500
    assert all(0 <= k <= 10 for k in need.values())
    assert [int(r[2]) for r in rows[1:]] == sorted(need.values(), reverse=True)
    # the left-clicker's answers count for nothing: their own pairs want what a pair with no
    # answer wants, at least min_overlap
    solo = {need[(f"solo{k}", f"other{k}")] for k in range(3)}
    assert len(solo) == 1
    assert min(solo) >= 3
    # the formula-like id is neutralised
    assert any(r[0] == "'=p0" for r in rows[1:])
    assert not any(r[0] == "=p0" for r in rows[1:])
    # most pairs are judged once or twice here: few are settled at 0.99
    assert sum(k == 0 for k in need.values()) < len(need) / 2
    assert err == ""


def test_the_toloka_task_file_and_the_label_studio_csv(campaign: str, capsys: Any) -> None:
    plain, _ = _export(campaign, capsys)
    wanted = [r for r in plain[1:] if int(r[2]) > 0]
    rows, _ = _export(campaign, capsys, "--platform", "toloka")
    assert rows[0] == ["INPUT:pair_id", "INPUT:left", "INPUT:right", "INPUT:left_text",
                       "INPUT:right_text", "TASK:overlap"]  # fmt: skip
    assert len(rows) - 1 == len(wanted)  # Toloka takes a positive overlap: the settled left out
    assert [(r[1], r[2], r[5]) for r in rows[1:]] == [(r[0], r[1], r[2]) for r in wanted]
    assert all(r[0].startswith("p-") and r[3] == r[1] and r[4] == r[2] for r in rows[1:])
    rows, err = _export(campaign, capsys, "--platform", "labelstudio")
    assert rows[0] == ["left", "right", "need", "task", "overlap"]
    assert [r[:3] for r in rows[1:]] == plain[1:]
    assert all(r[3] == r[4] == "" for r in rows[1:])  # no pair came from a Label Studio task
    assert "is not connected to Label Studio: the file alone is written" in err


def _error(db: str, capsys: Any, *words: str) -> list[str]:
    capsys.readouterr()
    assert main([*words, "--db", db]) == 2
    return capsys.readouterr().err.splitlines()


def test_bad_input_is_one_line_and_exit_2(campaign: str, capsys: Any, tmp_path: Path) -> None:
    out = tmp_path / "never.csv"
    base = ("export", "overlap", "--campaign", NAME, "--out", str(out))
    err = _error(campaign, capsys, *base, "--platform", "mturk")
    assert err[0] == (
        "monitor: error: overlap is not written for 'mturk': use --platform csv, toloka, "
        "labelstudio"
    )
    err = _error(campaign, capsys, *base, "--platform", "labelstudio", "--apply")
    assert err[0] == (
        f"monitor: error: campaign {NAME} is not connected to Label Studio: --apply has no "
        "project to set the overlaps in"
    )
    err = _error(campaign, capsys, *base, "--apply")
    assert err[0] == (
        "monitor: error: --apply and --token-file are for export overlap --platform labelstudio"
    )
    assert main(["campaign", "create", "fresh", "--kind", "pairwise", "--db", campaign]) == 0
    err = _error(campaign, capsys, "export", "overlap", "--campaign", "fresh")
    assert err[0] == (
        "monitor: error: campaign fresh has no run yet: nothing says what its pairs need"
    )
    assert main(["campaign", "create", "scores", "--kind", "rating", "--min", "1", "--max", "5",
                 "--db", campaign]) == 0  # fmt: skip
    err = _error(campaign, capsys, "export", "overlap", "--campaign", "scores")
    assert err[0] == (
        "monitor: error: campaign scores has no run yet: nothing says what its items need"
    )
    assert not out.exists()


def test_a_label_campaigns_toloka_file_has_its_items_text_and_overlap(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MONITOR_BOOTSTRAP_SAMPLES", "0")
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 2, 60)
    lines = ["worker,item,value"]
    for i in range(60):
        for w in rng.choice(6, 5 if i % 3 else 2, replace=False):
            right = rng.random() < 0.85
            lines.append(f"w{w},i{i},{truth[i] if right else 1 - truth[i]}")
    data, items = tmp_path / "j.csv", tmp_path / "items.csv"
    data.write_text("\n".join(lines) + "\n")
    items.write_text("item,text\n" + "".join(f"i{i},=text {i}\n" for i in range(60)))
    db = f"sqlite:///{tmp_path}/l.db"
    assert main(["campaign", "create", "lab", "--kind", "label", "--db", db]) == 0
    assert main(["ingest", str(data), "--campaign", "lab", "--items", str(items), "--db", db]) == 0
    assert main(["recompute", "--campaign", "lab", "--db", db]) == 0
    capsys.readouterr()
    assert main(["export", "overlap", "--campaign", "lab", "--db", db]) == 0
    plain = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert plain[0] == ["item", "need"]
    wanted = [r for r in plain[1:] if int(r[1]) > 0]
    assert 0 < len(wanted) < 60
    assert main(["export", "overlap", "--campaign", "lab", "--platform", "toloka", "--db", db]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out), delimiter="\t"))
    assert rows[0] == ["INPUT:item", "INPUT:text", "TASK:overlap"]
    assert rows[1:] == [[r[0], f"'=text {r[0][1:]}", r[1]] for r in wanted]
