"""Dynamic overlap of rating and multi-label campaigns through a run and ``monitor export
overlap``: each item gets ``need``, settled items 0 and the others more; the items whose
exported answer rested on a worker the run stops want judgments again in that run (repair);
a gold item wants only ``min_overlap``; the export writes ``item,need`` as CSV, a Toloka task
file and the Label Studio CSV."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from monitor.cli import main
from tests.pipeline.test_live_decisions import _rating_rows, _set_rows, _write
from tests.pipeline.test_pair_overlap import _export

NAME = "c"
LEANED = [f"leaned{k}" for k in range(3)]
"""Items two good workers and the stopped one (w99) judged alike: settled with w99's answer,
below ``min_overlap`` without it."""


def _rating_campaign(tmp_path: Path) -> str:
    """Twelve raters and one at random (w99, stopped), and beside their items: one only w99
    rated, three w99 and two others rated alike (:data:`LEANED`), one five raters read wholly
    differently, one gold item rated three times. Settled at 0.9 within 15 points (the defaults, 0.99
    within 5, settle nothing with five ratings of raters off by 10 points)."""
    rows = _rating_rows(1)
    rows.append(("w99", "lonely", "50"))
    for k, item in enumerate(LEANED):
        rows += [("w99", item, f"{30 + 20 * k}"), ("w0", item, f"{30 + 20 * k}"),
                 ("w1", item, f"{30 + 20 * k}")]  # fmt: skip
    rows += [(f"w{k}", "wide", v) for k, v in enumerate(("5", "95", "5", "95", "50"))]
    rows += [(f"w{w}", "gilded", "70") for w in (2, 3, 4)]
    items = tmp_path / "items.csv"
    items.write_text("item,gold\ngilded,70\n")
    return _campaign(tmp_path, "rating", rows, ("--min", "0", "--max", "100"),
                     ("overlap_confidence=0.9", "overlap_tolerance=0.15"), items)  # fmt: skip


def _set_campaign(tmp_path: Path) -> str:
    """Twelve set workers and one at random (w99, stopped), one item only w99 judged, and three
    that w99 and two others judged alike (:data:`LEANED`: no option)."""
    rows = _set_rows(1)
    rows.append(("w99", "lonely", "a"))
    for item in LEANED:
        rows += [("w99", item, "[]"), ("w0", item, "[]"), ("w1", item, "[]")]
    return _campaign(tmp_path, "multilabel", rows, ("--options", "a,b,c,d"))


def _campaign(
    tmp_path: Path,
    kind: str,
    rows: list[tuple[str, str, str]],
    create: tuple[str, ...],
    settings: tuple[str, ...] = (),
    items: Path | None = None,
) -> str:
    """The database URL of campaign ``c`` of ``kind`` after two ingests and runs (the first is
    the live path's reference, the second scores the judgments and stops w99)."""
    db = f"sqlite:///{tmp_path}/{kind}.db"
    assert main(["campaign", "create", NAME, "--kind", kind, *create, "--db", db]) == 0
    if settings:
        assert main(["campaign", "set", NAME, *settings, "--db", db]) == 0
    # the planted items come last: the second part
    half = len(rows) // 2
    for k, part in enumerate((rows[:half], rows[half:])):
        more = ["--items", str(items)] if items is not None and k else []
        path = _write(tmp_path / f"{kind}{k}.csv", part)
        assert main(["ingest", str(path), "--campaign", NAME, *more, "--db", db]) == 0
        assert main(["recompute", "--campaign", NAME, "--db", db]) == 0
    return db


def _json(db: str, capsys: Any, *words: str) -> list[Any]:
    capsys.readouterr()
    assert main([*words, "--campaign", NAME, "--json", "--db", db]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]


def _needs(db: str, capsys: Any) -> dict[str, int]:
    rows, err = _export(db, capsys, campaign=NAME)
    assert rows[0] == ["item", "need"]
    assert err == ""
    assert [int(r[1]) for r in rows[1:]] == sorted((int(r[1]) for r in rows[1:]), reverse=True)
    return {r[0]: int(r[1]) for r in rows[1:]}


def _repaired(db: str, capsys: Any, need: dict[str, int]) -> None:
    """w99 is stopped in the run: the items that rested on it want judgments again, and the
    report counts them among the items re-opened."""
    decisions = {r["worker"]: r["decision"] for r in _json(db, capsys, "workers")}
    assert decisions["w99"] == "stop"
    assert all(decisions[f"w{w}"] != "stop" for w in range(12))
    assert need["lonely"] >= 3  # no judgment of it counts: at least min_overlap
    assert all(need[item] >= 1 for item in LEANED)  # two of three count: below min_overlap
    capsys.readouterr()
    assert main(["report", "--campaign", NAME, "--json", "--db", db]) == 0
    live = json.loads(capsys.readouterr().out)["live"]
    assert live["stopped"] == 1
    assert live["reopened_items"] >= len(LEANED)


@pytest.fixture
def monitor_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MONITOR_BOOTSTRAP_SAMPLES", "0")


@pytest.mark.usefixtures("monitor_env")
def test_a_rating_campaigns_items_get_need_and_a_stopped_raters_items_want_more(
    tmp_path: Path, capsys: Any
) -> None:
    db = _rating_campaign(tmp_path)
    need = _needs(db, capsys)
    assert len(need) == 200 + 1 + len(LEANED) + 2
    assert all(0 <= k <= 10 for k in need.values())
    # five ratings of raters off by about ten points settle most items at 0.9 within 15
    settled = sum(k == 0 for k in need.values())
    assert 100 < settled < len(need)
    # ratings spread far more than the raters' error: not settled with five
    assert need["wide"] >= 1
    assert need["gilded"] == 0
    _repaired(db, capsys, need)
    # the tolerance is a share of the scale's width, above 0 and at most 1
    for bad in ("0", "1.5"):
        capsys.readouterr()
        assert main(["campaign", "set", NAME, f"overlap_tolerance={bad}", "--db", db]) == 2
        assert capsys.readouterr().err.splitlines()[0] == (
            "monitor: error: campaign setting: setting 'overlap_tolerance' must be a number in "
            f"(0, 1], got {float(bad)}"
        )
    # the defaults (0.99 within 5 points) settle no item of five ratings off by ten points
    assert main(["campaign", "set", NAME, "overlap_confidence=0.99", "overlap_tolerance=0.05",
                 "--db", db]) == 0  # fmt: skip
    assert main(["recompute", "--campaign", NAME, "--full", "--db", db]) == 0
    strict = _needs(db, capsys)
    assert all(strict[i] >= need[i] for i in need)
    # but a gold item wants only min_overlap
    assert {i for i, k in strict.items() if k == 0} == {"gilded"}


@pytest.mark.usefixtures("monitor_env")
def test_a_multilabel_campaigns_items_get_need_and_a_stopped_workers_items_want_more(
    tmp_path: Path, capsys: Any
) -> None:
    db = _set_campaign(tmp_path)
    need = _needs(db, capsys)
    assert len(need) == 200 + 1 + len(LEANED)
    assert all(0 <= k <= 10 for k in need.values())
    # five answers of workers right 90% of the time: most items settled, the split ones not
    settled = sum(k == 0 for k in need.values())
    assert 60 < settled < 190
    _repaired(db, capsys, need)


@pytest.mark.usefixtures("monitor_env")
def test_the_platforms_files_of_a_rating_and_a_multilabel_campaign(
    tmp_path: Path, capsys: Any
) -> None:
    for db in (_rating_campaign(tmp_path), _set_campaign(tmp_path)):
        plain, _ = _export(db, capsys, campaign=NAME)
        wanted = [r for r in plain[1:] if int(r[1]) > 0]
        assert 0 < len(wanted) < len(plain) - 1
        rows, _ = _export(db, capsys, "--platform", "toloka", campaign=NAME)
        assert rows[0] == ["INPUT:item", "INPUT:text", "TASK:overlap"]
        # only the items that want judgments (Toloka takes a positive overlap), no text known
        assert rows[1:] == [[r[0], r[0], r[1]] for r in wanted]
        rows, err = _export(db, capsys, "--platform", "labelstudio", campaign=NAME)
        assert rows[0] == ["item", "need", "task", "overlap"]
        assert [r[:2] for r in rows[1:]] == plain[1:]
        assert all(r[2] == r[3] == "" for r in rows[1:])  # no item came from a task
        assert "is not connected to Label Studio: the file alone is written" in err
        out = tmp_path / "need.csv"
        capsys.readouterr()
        assert main(["export", "overlap", "--campaign", NAME, "--out", str(out),
                     "--db", db]) == 0  # fmt: skip
        assert list(csv.reader(io.StringIO(out.read_text()))) == plain
