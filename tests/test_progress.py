"""The progress bar: drawn on a terminal only, with its rate, share and time left; on ingest,
recompute and report."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pytest
from sqlalchemy import Engine

from monitor.cli import main
from monitor.core import progress
from monitor.core.progress import Progress
from monitor.core.settings import load_settings
from monitor.ingest.api import create_campaign, ingest_file
from monitor.pipeline import recompute
from monitor.store.campaigns import CampaignSpec


class FakeTty(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


ROWS = "".join(f"w{w},i{i},{1 + (w * i) % 5}\n" for w in range(1, 6) for i in range(1, 8))


def test_nothing_is_written_when_the_stream_is_not_a_terminal() -> None:
    stream = io.StringIO()
    with Progress("f.csv", total=100, stream=stream, delay=0, interval=0, tick=True) as bar:
        assert not bar.enabled
        assert bar._ticker is None
        for k in range(1, 101):
            bar.update(k * 10, k, note="step")
    assert stream.getvalue() == ""


def test_the_bar_is_drawn_on_a_terminal_with_rate_and_time_left() -> None:
    stream = FakeTty()
    with Progress("f.csv", total=200, stream=stream, delay=0, interval=0) as bar:
        bar.update(5_000, 50, note="campaign a: measuring")
        drawn = stream.getvalue()
    assert drawn.startswith("\r")
    assert "\x1b[K" in drawn
    assert "f.csv [#######" in drawn
    assert " 25%" in drawn
    assert "5,000 rows" in drawn
    assert "rows/s" in drawn
    assert " left" in drawn
    assert "campaign a: measuring" in drawn
    assert stream.getvalue().endswith("\r\x1b[K")  # the line is cleared at the end


def test_nothing_is_drawn_before_the_delay() -> None:
    stream = FakeTty()
    with Progress("f.csv", total=10, stream=stream, delay=3600, interval=0) as bar:
        bar.update(5, 5)
    assert stream.getvalue() == ""


def test_a_ticking_bar_redraws_between_updates() -> None:
    stream = FakeTty()
    with Progress("report", stream=stream, delay=0, interval=0.01, tick=True) as bar:
        bar.update(0, note="writing")
        while stream.getvalue().count("\r") < 4:  # the helper thread draws on its own
            pass
    assert "report " in stream.getvalue()
    assert "writing" in stream.getvalue()


def test_clock() -> None:
    assert [progress._clock(s) for s in (3.2, 65, 3725)] == ["3s", "1m05s", "1h02m"]


def _tty(monkeypatch: pytest.MonkeyPatch) -> FakeTty:
    """stderr as a terminal, drawn from the first update (set in the test itself: pytest sets
    its own stderr again after the fixtures)."""
    stream = FakeTty()
    monkeypatch.setattr(sys, "stderr", stream)
    monkeypatch.setattr(progress, "DELAY", 0.0)
    return stream


def _campaign(engine: Engine, tmp_path: Path) -> Path:
    create_campaign(engine, CampaignSpec("r", "rating", scale_min=1, scale_max=5))
    path = tmp_path / "r.csv"
    path.write_text("worker,item,value\n" + ROWS, encoding="utf-8")
    return path


def test_ingest_and_recompute_draw_on_a_terminal(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tty = _tty(monkeypatch)
    path = _campaign(engine, tmp_path)
    assert ingest_file(engine, path, "r", progress=True).n_new == 35
    assert "r.csv [" in tty.getvalue()
    assert "rows/s" in tty.getvalue()
    tty.seek(0)
    tty.truncate()
    monkeypatch.setenv("MONITOR_BOOTSTRAP_SAMPLES", "0")
    monkeypatch.setenv("MONITOR_PHI", "off")
    settings = load_settings(env={**os.environ, "MONITOR_CACHE_DIR": ""})
    [outcome] = recompute(engine, settings, progress=True)
    assert outcome.status == "ok"
    drawn = tty.getvalue()
    for step in ("reading", "measuring", "flagging", "saving"):
        assert f"r: {step}" in drawn
    assert "recompute [" in drawn
    assert "judgments/s" in drawn


def test_quiet_when_stderr_is_not_a_terminal(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    monkeypatch.setattr(progress, "DELAY", 0.0)
    path = _campaign(engine, tmp_path)
    ingest_file(engine, path, "r", progress=True)
    monkeypatch.setenv("MONITOR_BOOTSTRAP_SAMPLES", "0")
    monkeypatch.setenv("MONITOR_PHI", "off")
    settings = load_settings(env={**os.environ, "MONITOR_CACHE_DIR": ""})
    recompute(engine, settings, progress=True)
    assert stream.getvalue() == ""


def test_report_draws_on_a_terminal(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tty = _tty(monkeypatch)
    monkeypatch.setenv("MONITOR_BOOTSTRAP_SAMPLES", "0")
    monkeypatch.setenv("MONITOR_PHI", "off")
    monkeypatch.setenv("MONITOR_CACHE_DIR", "")
    db = ["--db", db_url]
    assert (
        main(["campaign", "create", "r", "--kind", "rating", "--min", "1", "--max", "5", *db]) == 0
    )
    path = tmp_path / "r.csv"
    path.write_text("worker,item,value\n" + ROWS, encoding="utf-8")
    assert main(["ingest", str(path), "--campaign", "r", *db]) == 0
    assert main(["recompute", *db]) == 0
    assert "recompute [" in tty.getvalue()
    assert main(["report", "--campaign", "r", "--out", str(tmp_path / "r.html"), *db]) == 0
    assert "report r" in tty.getvalue()
    assert "writing r.html" in tty.getvalue()
    assert main(["report", "--all", "--out", str(tmp_path / "all"), *db]) == 0
    assert "report --all" in tty.getvalue()
    assert "1 reports" in tty.getvalue()
