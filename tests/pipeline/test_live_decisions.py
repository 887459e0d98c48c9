"""The stop decision through a run: a label campaign's recompute measures the stop line and each
worker's test, decides ``stop`` for a worker at chance within few of their judgments and for
none of the good workers; the incremental runs of a growing campaign end where one full run
does."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from monitor.cli import main
from monitor.store.campaigns import get_campaign
from monitor.store.engine import make_engine, transaction
from monitor.store.live import worker_scores
from tests.documents import check_document

NAME = "c"


def _rows(seed: int) -> list[tuple[str, str, str]]:
    """12 workers right 90% of the time and one at chance (w99) on 200 binary items, 5
    judgments an item, the chance worker on 80 of them."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, 200)
    rows = []
    for i in range(200):
        for w in rng.choice(12, 5, replace=False):
            right = rng.random() < 0.9
            rows.append((f"w{w}", f"i{i}", str(truth[i] if right else 1 - truth[i])))
        if i < 80:
            rows.append(("w99", f"i{i}", str(rng.integers(0, 2))))
    order = rng.permutation(len(rows))
    return [rows[k] for k in order]


def _rating_rows(seed: int) -> list[tuple[str, str, str]]:
    """12 raters off by a bias of sd 3 and a noise sd between 5 and 15 on 200 items whose truth
    lies in 10..90, 5 ratings an item, and one rater (w99) answering uniformly over 0..100 on
    80 of them."""
    rng = np.random.default_rng(seed)
    truth = rng.uniform(10, 90, 200)
    bias, noise = rng.normal(0, 3, 12), np.linspace(5, 15, 12)
    rows = []
    for i in range(200):
        for w in rng.choice(12, 5, replace=False):
            x = np.clip(truth[i] + bias[w] + rng.normal(0, noise[w]), 0, 100)
            rows.append((f"w{w}", f"i{i}", f"{x:.1f}"))
        if i < 80:
            rows.append(("w99", f"i{i}", f"{rng.uniform(0, 100):.1f}"))
    order = rng.permutation(len(rows))
    return [rows[k] for k in order]


def _set_rows(seed: int) -> list[tuple[str, str, str]]:
    """12 workers who select each of four options present in 10-40% of 200 items with
    sensitivity 0.85 and specificity 0.95, 5 judgments an item, and one (w99) who selects each
    option with chance 1/2 on 80 of them."""
    rng = np.random.default_rng(seed)
    options = np.array(["a", "b", "c", "d"])
    present = rng.random((200, 4)) < np.array([0.1, 0.2, 0.3, 0.4])
    rows = []

    def answer(chosen: np.ndarray) -> str:
        return "|".join(options[chosen]) or "[]"

    for i in range(200):
        for w in rng.choice(12, 5, replace=False):
            u = rng.random(4)
            rows.append((f"w{w}", f"i{i}", answer(np.where(present[i], u < 0.85, u > 0.95))))
        if i < 80:
            rows.append(("w99", f"i{i}", answer(rng.random(4) < 0.5)))
    order = rng.permutation(len(rows))
    return [rows[k] for k in order]


def _write(path: Path, rows: list[tuple[str, str, str]]) -> Path:
    path.write_text("worker,item,value\n" + "".join(",".join(r) + "\n" for r in rows))
    return path


def _run(db: str, kind: str, *paths: Path, create: tuple[str, ...] = ()) -> None:
    """Create the campaign (``create``: more of its options), then ingest and recompute each
    file in turn."""
    assert main(["campaign", "create", NAME, "--kind", kind, *create, "--db", db]) == 0
    for path in paths:
        assert main(["ingest", str(path), "--campaign", NAME, "--db", db]) == 0
        assert main(["recompute", "--campaign", NAME, "--db", db]) == 0


def _decisions(db: str, capsys: Any) -> dict[str, dict[str, Any]]:
    capsys.readouterr()
    assert main(["workers", "--campaign", NAME, "--json", "--db", db]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    return {r["worker"]: r for r in rows}


def test_a_worker_at_chance_is_stopped_and_incremental_runs_end_as_a_full_run(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    monkeypatch.setenv("MONITOR_BOOTSTRAP_SAMPLES", "0")
    rows = _rows(0)
    db = f"sqlite:///{tmp_path}/m.db"
    half = len(rows) // 2
    parts = (rows[:half], rows[half:])
    _run(db, "label", *(_write(tmp_path / f"part{k}.csv", p) for k, p in enumerate(parts)))
    live = _decisions(db, capsys)
    assert live["w99"]["decision"] == "stop"
    assert "shown after" in live["w99"]["decision_reason"]
    assert all(live[f"w{w}"]["decision"] != "stop" for w in range(12))
    assert main(["recompute", "--campaign", NAME, "--full", "--db", db]) == 0
    full = _decisions(db, capsys)
    assert {w: r["decision"] for w, r in full.items()} == {
        w: r["decision"] for w, r in live.items()
    }
    assert full["w99"]["decision_reason"] == live["w99"]["decision_reason"]
    after = int(full["w99"]["decision_reason"].split("shown after ")[1].split()[0])
    assert after <= 40  # of their 80 judgments
    # the document and the page say what the stop saves and what it re-opens
    capsys.readouterr()
    assert main(["report", "--campaign", NAME, "--json", "--db", db]) == 0
    doc = json.loads(capsys.readouterr().out)
    check_document(doc)
    live = doc["live"]
    assert live["stopped"] == 1
    assert live["remaining"] >= 0
    assert live["saved"] is not None
    assert 0.0 <= live["saved"] <= live["remaining"]
    page = tmp_path / "r.html"
    assert main(["report", "--campaign", NAME, "--out", str(page), "--db", db]) == 0
    html = page.read_text()
    assert 'id="stop-savings"' in html
    assert "Stopping them saves about" in html


def test_export_overlap_says_what_each_item_wants_and_the_stopped_workers_count_for_nothing(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    monkeypatch.setenv("MONITOR_BOOTSTRAP_SAMPLES", "0")
    db = f"sqlite:///{tmp_path}/m.db"
    assert main(["campaign", "create", NAME, "--kind", "label", "--db", db]) == 0
    capsys.readouterr()
    # no run yet: one line, exit 2
    assert main(["export", "overlap", "--campaign", NAME, "--db", db]) == 2
    err = capsys.readouterr().err.splitlines()
    assert (
        err[0]
        == f"monitor: error: campaign {NAME} has no run yet: nothing says what its items need"
    )
    rows = _rows(1)
    # an item judged by the chance worker alone, beside the others' items
    rows.append(("w99", "lonely", "1"))
    # the first run is the live path's first reference; the next scores the judgments
    for k, part in enumerate((rows[:400], rows[400:])):
        assert main(["ingest", str(_write(tmp_path / f"r{k}.csv", part)), "--campaign", NAME,
                     "--db", db]) == 0  # fmt: skip
        assert main(["recompute", "--campaign", NAME, "--db", db]) == 0
    out = tmp_path / "need.csv"
    capsys.readouterr()
    assert main(["export", "overlap", "--campaign", NAME, "--out", str(out), "--db", db]) == 0
    lines = out.read_text().splitlines()
    assert lines[0] == "item,need"
    need = {line.split(",")[0]: int(line.split(",")[1]) for line in lines[1:]}
    assert len(need) == 201
    assert all(0 <= k <= 10 for k in need.values())
    # five answers at 90%: most items are settled; the chance worker's item is not
    assert sum(k == 0 for k in need.values()) > 100
    # w99 is stopped: no judgment of the lonely item counts, it wants the most of any
    assert need["lonely"] >= 3
    assert need["lonely"] == max(need.values())
    assert [int(line.split(",")[1]) for line in lines[1:]] == sorted(need.values(), reverse=True)
    assert main(["export", "overlap", "--campaign", NAME, "--platform", "mturk", "--db", db]) == 2


def _left_clicker(
    seed: int = 3,
    n: int = 1500,
    name: Callable[[int], str] = lambda i: f"p{i}",
    items: int = 40,
) -> list[str]:
    """Ten annotators along a hidden order of ``items`` items (``name``: an item's id) 90% of
    the time, and one who picks the left item 90% of the time whatever it is (every fifteenth
    comparison): ``worker,left,right,preference`` lines."""
    rng = np.random.default_rng(seed)
    score = rng.normal(0, 2, items)
    lines = []
    for k in range(n):
        w = f"a{k % 10}" if k % 15 else "lefty"
        i, j = rng.choice(items, 2, replace=False)
        if w == "lefty":
            pick = "left" if rng.random() < 0.9 else "right"
        else:
            along = rng.random() < 0.9
            pick = "left" if (score[i] > score[j]) == along else "right"
        lines.append(f"{w},{name(i)},{name(j)},{pick}")
    return lines


def _pairs_file(path: Path, lines: list[str]) -> Path:
    path.write_text("worker,left,right,preference\n" + "".join(line + "\n" for line in lines))
    return path


def test_a_left_clicker_among_preference_annotators_is_stopped(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    """The left-clicker is stopped, nobody else."""
    monkeypatch.setenv("MONITOR_BOOTSTRAP_SAMPLES", "0")
    db = f"sqlite:///{tmp_path}/m.db"
    _run(db, "pairwise", _pairs_file(tmp_path / "p.csv", _left_clicker()))
    decisions = _decisions(db, capsys)
    assert decisions["lefty"]["decision"] == "stop"
    assert "comparisons" in decisions["lefty"]["decision_reason"]
    assert all(decisions[f"a{k}"]["decision"] != "stop" for k in range(10))


def test_a_left_clicker_on_pairs_judged_once_is_stopped_for_the_side(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    """Over 3,000 items, each pair judged about once, the others' answers say little of the
    left-clicker's: the test of the side stops them, and the reason says so. The annotators who follow the items are neither stopped nor
    blocked: the consensus of a chain of comparisons judged once does not turn against them
    (:func:`~monitor.metrics.preferences.model.consensus_cavity`)."""
    monkeypatch.setenv("MONITOR_BOOTSTRAP_SAMPLES", "0")
    db = f"sqlite:///{tmp_path}/m.db"
    _run(db, "pairwise", _pairs_file(tmp_path / "p.csv", _left_clicker(n=1500, items=3000)))
    decisions = _decisions(db, capsys)
    lefty = decisions["lefty"]
    assert lefty["decision"] == "stop"
    assert lefty["decision_reason"].startswith("picks the left item in ")
    stop = lefty["decision_evidence"]["stop"]
    assert stop["side"]["left_share"] >= 0.8
    assert stop["side"]["margin"] == 0.1
    assert stop["after"] <= 50
    assert all(decisions[f"a{k}"]["decision"] not in ("stop", "block") for k in range(10))


def _frozen(db: str) -> dict[int, tuple[float, float, int]]:
    """The campaign's stop-test scores by judgment: score, null, known as of."""
    with transaction(make_engine(db)) as s:
        got = worker_scores(s, get_campaign(s, NAME).id)
    return {
        int(j): (float(sc), float(m), int(r))
        for j, sc, m, r in zip(got.ids, got.scores, got.nulls, got.ready, strict=True)
    }


def test_preference_scores_are_given_once_by_the_first_run_and_kept(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    """A preference answer is scored by the first run that sees it and never again: a later
    run, a full one, tests the same scores (the error rate holds across runs); an ingest
    undone takes its answers' scores out, and the answers ingested again are scored anew."""
    monkeypatch.setenv("MONITOR_BOOTSTRAP_SAMPLES", "0")
    lines = _left_clicker()
    files = [_pairs_file(tmp_path / f"p{k}.csv", lines[k * 500 : (k + 1) * 500]) for k in range(3)]
    db = f"sqlite:///{tmp_path}/m.db"
    _run(db, "pairwise", *files[:2])
    first = _frozen(db)
    assert len(first) > 900  # the strict answers of both files, each once
    assert len({r for _, _, r in first.values()}) == 2  # known as of one run or the other
    _run_more(db, files[2])
    after = _frozen(db)
    assert {j: after[j] for j in first} == first  # kept as given
    assert len(after) > len(first)
    assert main(["recompute", "--campaign", NAME, "--full", "--db", db]) == 0
    assert _frozen(db) == after
    assert _decisions(db, capsys)["lefty"]["decision"] == "stop"
    # the third file out and in again: its answers' scores go, and come back from a new run
    assert main(["ingest", "undo", "--campaign", NAME, "--batch", "3", "--db", db]) == 0
    assert _frozen(db) == first
    _run_more(db, files[2])
    again = _frozen(db)
    assert len(again) == len(after)
    assert {j: again[j] for j in first} == first


def _run_more(db: str, path: Path) -> None:
    assert main(["ingest", str(path), "--campaign", NAME, "--db", db]) == 0
    assert main(["recompute", "--campaign", NAME, "--db", db]) == 0


def test_a_random_rater_and_a_random_set_worker_are_stopped(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    """A rater answering uniformly over the scale among twelve honest ones, and a worker who
    picks each option with chance 1/2 among twelve good ones: each is decided ``stop`` by
    ``monitor workers --json``, nobody else."""
    monkeypatch.setenv("MONITOR_BOOTSTRAP_SAMPLES", "0")
    for kind, rows, create, why in (
        ("rating", _rating_rows(1), ("--min", "0", "--max", "100"), "ratings off by more than"),
        ("multilabel", _set_rows(1), ("--options", "a,b,c,d"), "right less than"),
    ):
        db = f"sqlite:///{tmp_path}/{kind}.db"
        half = len(rows) // 2
        parts = [
            _write(tmp_path / f"{kind}{k}.csv", p) for k, p in enumerate((rows[:half], rows[half:]))
        ]
        _run(db, kind, *parts, create=create)
        decisions = _decisions(db, capsys)
        assert decisions["w99"]["decision"] == "stop", (kind, decisions["w99"])
        assert decisions["w99"]["decision_reason"].startswith(why)
        assert "shown after" in decisions["w99"]["decision_reason"]
        assert all(decisions[f"w{w}"]["decision"] != "stop" for w in range(12)), kind


def test_a_label_and_a_preference_campaign_keep_their_scores_side_by_side(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    """A preference campaign's answers are numbered apart from the label judgments: in one
    database, both campaigns' scores are kept, each under its own campaign."""
    monkeypatch.setenv("MONITOR_BOOTSTRAP_SAMPLES", "0")
    db = f"sqlite:///{tmp_path}/m.db"
    rows = _rows(1)
    assert main(["campaign", "create", "lab", "--kind", "label", "--db", db]) == 0
    for k, part in enumerate((rows[:400], rows[400:])):
        assert main(["ingest", str(_write(tmp_path / f"r{k}.csv", part)), "--campaign", "lab",
                     "--db", db]) == 0  # fmt: skip
        assert main(["recompute", "--campaign", "lab", "--db", db]) == 0
    _run(db, "pairwise", _pairs_file(tmp_path / "p.csv", _left_clicker()))
    assert _decisions(db, capsys)["lefty"]["decision"] == "stop"
    with transaction(make_engine(db)) as s:
        label = worker_scores(s, get_campaign(s, "lab").id)
        pairs = worker_scores(s, get_campaign(s, NAME).id)
    assert label.ids.size > 500
    assert pairs.ids.size > 1000
    assert set(label.ids.tolist()) & set(pairs.ids.tolist())  # the same numbers, both kept
