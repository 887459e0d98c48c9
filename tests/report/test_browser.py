"""A real headless Chromium renders the report with no console error; a screenshot is kept."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from monitor.report.render import report_text
from monitor.store.engine import make_engine
from monitor.store.migrate import upgrade
from tests.report.fixtures import pairwise_campaign, rating_campaign

CHROMIUM = next(
    (
        p
        for p in (
            os.environ.get("CHROMIUM"),
            "/usr/bin/chromium",
            shutil.which("chromium"),
            shutil.which("chromium-browser"),
            shutil.which("google-chrome"),
        )
        if p and Path(p).is_file()
    ),
    None,
)
SHOTS = Path(
    os.environ.get("MONITOR_SCREENSHOT_DIR", Path(__file__).resolve().parents[2] / ".screenshots")
)


def _screenshot(html: Path, png: Path, profile: Path) -> str:
    run = subprocess.run(
        [
            CHROMIUM or "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--enable-logging=stderr",
            "--v=0",
            f"--screenshot={png}",
            "--window-size=1280,2000",
            html.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stderr


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary")
@pytest.mark.parametrize("kind", ["rating", "pairwise"])
def test_report_renders_in_chromium_without_console_errors(tmp_path: Path, kind: str) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'b.db'}")
    upgrade(engine)
    if kind == "rating":
        rating_campaign(engine, "quality", evil=True)
        name = "quality"
    else:
        pairwise_campaign(engine)
        name = "prefs"
    html = tmp_path / f"{name}.html"
    html.write_text(report_text(engine, name), encoding="utf-8")
    SHOTS.mkdir(parents=True, exist_ok=True)
    png = SHOTS / f"report-{kind}.png"
    png.unlink(missing_ok=True)
    stderr = _screenshot(html, png, tmp_path / "profile")
    console = [
        line
        for line in stderr.splitlines()
        if "Uncaught" in line or ("CONSOLE" in line and ("Error" in line or "error" in line))
    ]
    assert console == []
    assert png.is_file() and png.stat().st_size > 10_000
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
