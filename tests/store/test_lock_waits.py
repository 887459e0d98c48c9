"""Waits that end when the settings say: a recompute or an ingest meeting a table another
session holds (ACCESS EXCLUSIVE) ends within its ``lock_timeout`` (or ``statement_timeout``)
plus a few seconds, in one error line, exit 1, having written nothing half; the timeouts of the
database URL's ``options`` win over monitor's settings."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select, text

from monitor.cli import main
from monitor.store.engine import engine_timeouts, make_engine, session_timeouts
from monitor.store.models import IngestBatch, Judgment, MetricRun

pytestmark = pytest.mark.parametrize(
    "backend", [pytest.param("postgres", marks=pytest.mark.postgres)]
)

NAME = "c"
GRACE = 5.0
"""Seconds past its timeout a command may take to fail and stop."""
#: The tables each command reads or writes (a lock on any other leaves it alone).
RECOMPUTE_TABLES = [
    "campaign_locks",
    "campaigns",
    "flags",
    "items",
    "judgment_tallies",
    "judgments",
    "member_tallies",
    "metric_columns",
    "metric_runs",
    "metric_values",
    "run_states",
    "worker_decisions",
    "workers",
]
INGEST_TABLES = [
    "campaigns",
    "ingest_batches",
    "items",
    "judgment_tallies",
    "judgments",
    "member_tallies",
    "workers",
]


@pytest.fixture
def campaign(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> Iterator[Path]:
    """A campaign with a run, and a file of new judgments for it."""
    monkeypatch.setenv("MONITOR_CACHE_DIR", "")
    monkeypatch.setenv("MONITOR_BOOTSTRAP_SAMPLES", "0")
    path = tmp_path / "r.csv"
    rows = "".join(f"w{w},i{i},{(w * i) % 5 + 1}\n" for w in range(3) for i in range(10))
    path.write_text("worker,item,value\n" + rows, encoding="utf-8")
    assert main(["campaign", "create", NAME, "--kind", "rating", "--min", "1", "--max", "5",
                 "--db", db_url]) == 0  # fmt: skip
    assert main(["ingest", str(path), "--campaign", NAME, "--db", db_url]) == 0
    assert main(["recompute", "--db", db_url]) == 0
    path.write_text("worker,item,value\nw9,i1,3\nw9,i20,4\n", encoding="utf-8")
    capsys.readouterr()
    yield path


def _counts(db_url: str) -> tuple[int, int, int]:
    engine = make_engine(db_url)
    with engine.connect() as c:
        counts = (
            c.scalar(select(func.count()).where(MetricRun.status == "ok")),
            c.scalar(select(func.count()).select_from(Judgment)),
            c.scalar(select(func.count()).select_from(IngestBatch)),
        )
    engine.dispose()
    return counts  # type: ignore[return-value]


def _fails_in_time(
    db_url: str,
    command: list[str],
    table: str,
    timeout: float,
    wait: str,
    capsys: Any,
) -> None:
    """Run ``command`` while a third session holds ``table``: exit 1 within ``timeout`` plus
    :data:`GRACE`, the wait said once, in one error line, nothing half-written."""
    before = _counts(db_url)
    holder = make_engine(db_url)
    with holder.connect() as other:
        other.execute(text(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE"))
        started = time.monotonic()
        code = main(command)
        elapsed = time.monotonic() - started
        other.rollback()
    holder.dispose()
    out, err = capsys.readouterr()
    assert code == 1
    assert elapsed < timeout + GRACE, elapsed
    assert [line for line in (out + err).splitlines() if wait in line] != [], out + err
    assert len([line for line in err.splitlines() if line.startswith("monitor: error: ")]) == 1
    assert "Traceback" not in out + err
    assert _counts(db_url) == before


@pytest.mark.parametrize("table", RECOMPUTE_TABLES)
def test_a_postgres_recompute_ends_within_its_lock_timeout(
    db_url: str, campaign: Path, table: str, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MONITOR_LOCK_TIMEOUT", "1")
    _fails_in_time(db_url, ["recompute", "--full", "--db", db_url], table, 1.0,
                   "waited more than 1 s (lock_timeout)", capsys)  # fmt: skip


@pytest.mark.parametrize("table", INGEST_TABLES)
def test_a_postgres_ingest_ends_within_its_lock_timeout(
    db_url: str, campaign: Path, table: str, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MONITOR_LOCK_TIMEOUT", "1")
    command = ["ingest", str(campaign), "--campaign", NAME, "--db", db_url]
    _fails_in_time(db_url, command, table, 1.0, "waited more than 1 s (lock_timeout)", capsys)


LOCK_1S = "waited more than 1 s (lock_timeout)"
STATEMENT_1S = "more than 1 s (statement_timeout)"


@pytest.mark.parametrize(
    ("command", "table", "options", "wait"),
    [
        ("recompute", "metric_runs", "-c%20lock_timeout%3D1000", LOCK_1S),
        ("recompute", "judgments", "--lock_timeout%3D1s%20-c%20statement_timeout%3D0", LOCK_1S),
        ("recompute", "campaign_locks", "-clock_timeout%3D0%20-c%20statement_timeout%3D1s",
         STATEMENT_1S),
        ("recompute", "metric_runs", "-c%20lock_timeout%3D0%20-c%20statement_timeout%3D1s",
         STATEMENT_1S),
        ("ingest", "judgments", "-c%20lock_timeout%3D1000", LOCK_1S),
        ("ingest", "ingest_batches", "-c%20lock_timeout%3D0%20--statement-timeout%3D1000",
         STATEMENT_1S),
    ],
)  # fmt: skip
def test_the_postgres_url_options_win_over_the_settings(
    db_url: str,
    campaign: Path,
    command: str,
    table: str,
    options: str,
    wait: str,
    capsys: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MONITOR_LOCK_TIMEOUT", "60")
    monkeypatch.setenv("MONITOR_STATEMENT_TIMEOUT", "60")
    url = f"{db_url}?options={options}"
    args = (
        ["recompute", "--full"]
        if command == "recompute"
        else ["ingest", str(campaign), "--campaign", NAME]
    )
    _fails_in_time(db_url, [*args, "--db", url], table, 1.0, wait, capsys)


def test_postgres_timeouts_come_from_the_url_where_it_gives_them(db_url: str) -> None:
    url = f"{db_url}?options=-c%20statement_timeout%3D2min"
    assert session_timeouts(url, 5, 7) == (5, 120)
    engine = make_engine(url, lock_timeout=5, statement_timeout=7)
    assert engine_timeouts(engine) == (5, 120)
    with engine.connect() as c:
        shown = c.execute(text("SELECT current_setting('lock_timeout'), "
                               "current_setting('statement_timeout')")).one()  # fmt: skip
    assert tuple(shown) == ("5s", "2min")
    engine.dispose()
    assert session_timeouts("sqlite:///x.db", 5, 7) == (5, 7)


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ("-x%20lock_timeout%3D1", "options whose word 1 is not -c NAME=VALUE"),
        ("-c%20lock_timeout", "options whose word 2 is not NAME=VALUE"),
        ("-c", "options whose word 1 is not -c NAME=VALUE"),
        ("-c%20lock_timeout%3Dsoon", "options whose lock_timeout is not a time"),
        ("--statement_timeout%3D5parsecs", "options whose statement_timeout is not a time"),
    ],
)
def test_postgres_url_options_that_cannot_be_read_are_one_line(
    db_url: str, options: str, said: str, capsys: Any
) -> None:
    secret = db_url.replace("postgres@", "postgres:hunter2@", 1)
    code = main(["recompute", "--db", f"{secret}?options={options}"])
    out, err = capsys.readouterr()
    assert code == 2
    lines = err.splitlines()
    assert lines[0].startswith("monitor: error: ")
    assert lines[0].endswith(f"the database URL has an option {said}")
    assert len(lines) == 2
    assert lines[1].startswith("hint: ")
    assert "hunter2" not in out + err
