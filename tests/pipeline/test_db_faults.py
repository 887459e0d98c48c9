"""Database faults met by one process, made deterministic by hooks in the run: the campaign
lock lost or taken over mid-run, a table another session holds locked (``lock_timeout``,
``statement_timeout``), a server that closes idle sessions, and the times of a failed run.
Faults between real processes are in ``test_concurrency.py``."""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import Engine, make_url, select, text

from monitor.cli import main
from monitor.core.errors import Busy
from monitor.core.settings import Settings
from monitor.pipeline import recompute
from monitor.pipeline import run as run_module
from monitor.store.engine import make_engine, transaction
from monitor.store.locks import LOCK_CLASS, campaign_lock, holder_name
from monitor.store.migrate import upgrade
from monitor.store.models import Base, Campaign, CampaignLock, MetricRun, utcnow
from tests.golden import GOLDEN, load
from tests.pipeline.cases import store_case

SETTINGS = Settings(bootstrap_samples=0, phi="off", policy="suggest")
LABELS = GOLDEN / "cases" / "label_small_complete_3.json"
NAME = "c"
POSTGRES = pytest.mark.parametrize(
    "backend", [pytest.param("postgres", marks=pytest.mark.postgres)]
)
"""Run a test that takes the ``backend`` fixtures on PostgreSQL only."""


def _campaign(engine: Engine) -> int:
    store_case(engine, load(LABELS), name=NAME)
    with transaction(engine) as s:
        return int(s.scalar(select(Campaign.id).where(Campaign.name == NAME)))


def _runs(engine: Engine) -> list[Any]:
    with transaction(engine) as s:
        return list(
            s.execute(
                select(
                    MetricRun.status, MetricRun.error, MetricRun.started_at, MetricRun.finished_at
                ).order_by(MetricRun.id)
            ).all()
        )


def _during_measure(monkeypatch: pytest.MonkeyPatch, fault: Callable[[], None]) -> None:
    """Run ``fault`` once, after the run has read its judgments and before it computes."""
    real = run_module.measure

    def measure(coded, params):  # noqa: ANN001, ANN202
        fault()
        return real(coded, params)

    monkeypatch.setattr(run_module, "measure", measure)


def _lock_session(engine: Engine, campaign_id: int) -> int:
    """The pid of the PostgreSQL session holding the campaign's advisory lock."""
    with engine.connect() as c:
        return int(
            c.execute(
                text(
                    "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted"
                    " AND classid::bigint = :k1 AND objid::bigint = :k2 AND objsubid = 2"
                    " AND database = (SELECT oid FROM pg_database"
                    " WHERE datname = current_database())"
                ),
                {"k1": LOCK_CLASS, "k2": campaign_id},
            ).scalar_one()
        )


def _terminate(engine: Engine, pid: int) -> None:
    """End a session and wait until the server has (its locks go with it)."""
    with engine.connect() as c:
        assert c.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid}).scalar()
        c.commit()
        while c.execute(text("SELECT 1 FROM pg_stat_activity WHERE pid = :p"), {"p": pid}).all():
            c.rollback()
            time.sleep(0.01)


# --- the campaign lock --------------------------------------------------------------------


def test_a_lock_taken_over_mid_run_saves_nothing_and_says_so(
    engine: Engine, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    cid = _campaign(engine)
    other = ExitStack()

    def take_over() -> None:
        if backend == "postgres":  # the lock's session dies; another process locks the campaign
            _terminate(engine, _lock_session(engine, cid))
            other.enter_context(campaign_lock(engine, cid))
        else:  # a SQLite lock is taken over when it looks stale
            other.enter_context(campaign_lock(engine, cid, stale_after=timedelta(0)))

    _during_measure(monkeypatch, take_over)
    with other:
        [outcome] = recompute(engine, SETTINGS, campaign=NAME)
        assert outcome.status == "lock_lost"
        assert outcome.line() == (
            f"{NAME}: campaign {cid}: the recompute lock was lost during the run "
            f"({holder_name()} holds it now); this run saved nothing"
        )
        assert _runs(engine) == [], "the run that lost its lock saved something"
        with transaction(engine) as s:  # the other holder's lock is untouched
            assert s.scalar(select(CampaignLock.holder)).startswith(holder_name() + "/")
    monkeypatch.undo()
    [again] = recompute(engine, SETTINGS, campaign=NAME)
    assert again.status == "ok"
    assert [r.status for r in _runs(engine)] == ["ok"]
    with transaction(engine) as s:
        assert s.scalar(select(CampaignLock.holder)) is None


@POSTGRES
def test_a_lock_session_closed_mid_run_without_a_taker_still_saves(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    cid = _campaign(engine)
    _during_measure(monkeypatch, lambda: _terminate(engine, _lock_session(engine, cid)))
    with caplog.at_level(logging.WARNING, logger="monitor.store.locks"):
        [outcome] = recompute(engine, SETTINGS, campaign=NAME)
    assert outcome.status == "ok", outcome.line()
    assert [r.status for r in _runs(engine)] == ["ok"]
    [warning] = [r.getMessage() for r in caplog.records if r.name == "monitor.store.locks"]
    assert warning.startswith(
        f"campaign {cid}: the session holding its recompute lock was closed during the run ("
    )


@pytest.fixture
def idle_db(pg_server: Any) -> Iterator[str]:  # noqa: ANN401
    """A database at head whose server closes every session idle for 1 s (but the test's)."""
    url = pg_server.new_database()
    engine = make_engine(url)
    upgrade(engine)
    name = make_url(url).database
    with engine.connect() as c:
        c.execute(text(f"ALTER DATABASE \"{name}\" SET idle_session_timeout = '1s'"))
        c.commit()
    engine.dispose()
    yield url


@pytest.mark.postgres
def test_idle_sessions_closed_by_the_server_fail_no_run(
    idle_db: str, pg_server: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:  # noqa: ANN401
    """The pooled session that read the judgments is closed while the run computes: the save
    takes a checked connection; the lock's session is exempt and keeps the lock."""
    engine = make_engine(idle_db, connect_args={"application_name": "faults-idle"})
    cid = _campaign(engine)
    admin = pg_server.admin  # another database: its sessions are not closed
    name = make_url(idle_db).database

    def pooled_sessions_closed() -> None:
        lock_pid = _lock_session(engine, cid)
        with admin.connect() as c:
            query = text(
                "SELECT pid FROM pg_stat_activity WHERE datname = :d"
                " AND application_name = 'faults-idle'"
            )
            deadline = time.monotonic() + 60
            while (pids := c.execute(query, {"d": name}).scalars().all()) != [lock_pid]:
                assert time.monotonic() < deadline, f"sessions {pids} never closed"
                time.sleep(0.05)
        with pytest.raises(Busy), campaign_lock(engine, cid):  # the lock still holds
            pass

    _during_measure(monkeypatch, pooled_sessions_closed)
    with caplog.at_level(logging.WARNING, logger="monitor.store.locks"):
        [outcome] = recompute(engine, SETTINGS, campaign=NAME)
    assert outcome.status == "ok", outcome.line()
    assert [r.status for r in _runs(engine)] == ["ok"]
    assert [r for r in caplog.records if r.name == "monitor.store.locks"] == []
    engine.dispose()


@POSTGRES
def test_a_session_the_server_ended_is_named_so(db_url: str) -> None:
    from sqlalchemy.exc import OperationalError

    from monitor.store.connect import statement_error, step

    engine = make_engine(db_url, pool_pre_ping=False)
    with engine.connect() as c:
        c.execute(text("SET idle_session_timeout = '50ms'"))
        c.commit()
        pid = c.execute(text("SELECT pg_backend_pid()")).scalar()
        c.commit()
        with engine.connect() as watcher:
            while watcher.execute(
                text("SELECT 1 FROM pg_stat_activity WHERE pid = :p"), {"p": pid}
            ).all():
                watcher.rollback()
                time.sleep(0.02)
        with pytest.raises(OperationalError) as caught, step("reading the judgments"):
            c.execute(text("SELECT count(*) FROM judgments"))
    error = statement_error(caught.value)
    assert str(error) == (
        "PostgreSQL ended the session while reading the judgments: terminating connection due "
        "to idle-session timeout"
    )
    assert "timed out" not in f"{error} {getattr(error, 'hint', '')}"
    engine.dispose()


# --- bounded waits ------------------------------------------------------------------------


@pytest.fixture
def table_locker(db_url: str, backend: str) -> Iterator[Callable[..., None]]:
    """Lock a table (PostgreSQL; the judgments unless told) or the whole database for writing
    (SQLite) from a third session, until the test ends."""
    held: list[Any] = []

    def lock(table: str = "judgments") -> None:
        if backend == "postgres":
            conn = make_engine(db_url).connect()
            conn.execute(text(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE"))
        else:
            conn = sqlite3.connect(make_url(db_url).database or "", isolation_level=None)
            conn.execute("BEGIN IMMEDIATE")
        held.append(conn)

    yield lock
    for conn in held:
        conn.rollback()
        conn.close()


def test_a_run_waiting_on_a_locked_table_fails_naming_it(
    db_url: str,
    backend: str,
    table_locker: Callable[[], None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    engine = make_engine(db_url, lock_timeout=0.2)
    _campaign(engine)
    if backend == "postgres":  # the run waits for the judgments as it starts
        table_locker()
        [outcome] = recompute(engine, SETTINGS, campaign=NAME)
        assert outcome.status == "failed"
        expected = (
            "DatabaseTimeout: waited more than 0.2 s (lock_timeout) for a lock on table "
            f"judgments that another session holds while reading the judgments of campaign {NAME}"
        )
        assert outcome.message == f"failed: {expected}"
        [run] = _runs(engine)
        assert (run.status, run.error) == ("failed", expected)
    else:  # SQLite readers never wait: the run waits as it saves
        _during_measure(monkeypatch, table_locker)
        with pytest.raises(Exception) as caught:  # noqa: PT011 - the driver's error
            recompute(engine, SETTINGS, campaign=NAME)
        from monitor.store.connect import statement_error

        assert str(statement_error(caught.value, 0.2)) == (
            "waited more than 0.2 s (lock_timeout) for the SQLite database, which another "
            f"connection is writing while saving the run of campaign {NAME}"
        )
    engine.dispose()


@POSTGRES
@pytest.mark.timeout(120)
def test_a_scheduler_tick_never_hangs_on_a_locked_table(
    db_url: str, table_locker: Callable[[], None], caplog: pytest.LogCaptureFixture
) -> None:
    from monitor.runtime.scheduler import incremental_job

    engine = make_engine(db_url, lock_timeout=0.2)
    _campaign(engine)
    table_locker()
    with caplog.at_level(logging.INFO, logger="monitor.scheduler"):
        incremental_job(engine, SETTINGS)  # returns: the wait is bounded
    [line] = [r.getMessage() for r in caplog.records if r.name == "monitor.scheduler"]
    assert line == (
        f"incremental {NAME}: failed: DatabaseTimeout: waited more than 0.2 s (lock_timeout) for "
        "a lock on table judgments that another session holds while reading the judgments of "
        f"campaign {NAME}"
    )
    engine.dispose()


@POSTGRES
@pytest.mark.parametrize("table", ["judgments", "items"])  # SQLAlchemy's; psycopg's own cursor
@pytest.mark.parametrize(
    ("lock_timeout", "statement_timeout", "wait"),
    [("0.3", "0", "0.3 s (lock_timeout) for a lock"), ("0", "0.3", "0.3 s (statement_timeout)")],
)
def test_an_ingest_that_waits_too_long_is_one_line(
    db_url: str,
    table_locker: Callable[..., None],
    table: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    lock_timeout: str,
    statement_timeout: str,
    wait: str,
) -> None:
    monkeypatch.setenv("MONITOR_LOCK_TIMEOUT", lock_timeout)
    monkeypatch.setenv("MONITOR_STATEMENT_TIMEOUT", statement_timeout)
    assert main(["campaign", "create", NAME, "--kind", "rating", "--min", "1", "--max", "5",
                 "--db", db_url]) == 0  # fmt: skip
    path = tmp_path / "r.csv"
    path.write_text("worker,item,value\nw1,i1,3\nw2,i1,4\n", encoding="utf-8")
    capsys.readouterr()
    table_locker(table)
    code = main(["ingest", str(path), "--campaign", NAME, "--db", db_url])
    out, err = capsys.readouterr()
    assert code == 1
    lines = err.splitlines()
    assert len(lines) == 2, err
    assert lines[0].startswith("monitor: error: ")
    assert wait in lines[0]
    assert f"while loading {path} into campaign {NAME}" in lines[0]
    if "lock_timeout" in wait:  # the statement waited on the table (named in the message)
        assert f"for a lock on table {table} that another session holds" in lines[0]
    assert lines[1].startswith("hint: ")
    assert "Traceback" not in out + err


@POSTGRES
def test_an_ingest_waiting_too_long_for_another_ingest_says_so(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from monitor.ingest.load import INGEST_LOCK_CLASS

    monkeypatch.setenv("MONITOR_LOCK_TIMEOUT", "0.3")
    assert main(["campaign", "create", NAME, "--kind", "rating", "--min", "1", "--max", "5",
                 "--db", db_url]) == 0  # fmt: skip
    path = tmp_path / "r.csv"
    path.write_text("worker,item,value\nw1,i1,3\n", encoding="utf-8")
    capsys.readouterr()
    engine = make_engine(db_url)
    with engine.connect() as other:  # another ingest into the campaign, not yet committed
        cid = other.scalar(select(Campaign.id).where(Campaign.name == NAME))
        other.execute(
            text("SELECT pg_advisory_xact_lock(:k1, :k2)"), {"k1": INGEST_LOCK_CLASS, "k2": cid}
        )
        code = main(["ingest", str(path), "--campaign", NAME, "--db", db_url])
        other.rollback()
    engine.dispose()
    _, err = capsys.readouterr()
    assert code == 1
    assert err.splitlines() == [
        "monitor: error: waited more than 0.3 s (lock_timeout) for another ingest into the same "
        f"campaign to commit while loading {path} into campaign {NAME}",
        "hint: ingests into one campaign run one at a time: retry when the other is done, or "
        "raise the setting lock_timeout (MONITOR_LOCK_TIMEOUT; a lock_timeout in the database "
        "URL's options wins)",
    ]


# --- the times of a failed run --------------------------------------------------------------


def test_a_failed_run_started_before_it_finished(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    _campaign(engine)
    failed_at = []

    def fail() -> None:
        failed_at.append(utcnow())
        raise ValueError("no")

    _during_measure(monkeypatch, fail)
    [outcome] = recompute(engine, SETTINGS, campaign=NAME)
    assert outcome.status == "failed"
    [run] = _runs(engine)
    assert run.status == "failed"
    started, finished = run.started_at, run.finished_at
    if started.tzinfo is None:
        started, finished = (t.replace(tzinfo=failed_at[0].tzinfo) for t in (started, finished))
    assert started <= failed_at[0] <= finished


# --- the message of a timeout ---------------------------------------------------------------


class _LockTimeout(Exception):
    sqlstate = "55P03"


TABLES = sorted(Base.metadata.tables)


@given(
    st.lists(st.sampled_from(TABLES), min_size=1, max_size=4, unique=True),
    st.lists(st.sampled_from(["FROM", "JOIN", "INTO", "UPDATE", "from", "join"]), min_size=4),
    st.floats(0.001, 1e6),
)
def test_a_lock_timeout_names_the_tables_of_its_statement(
    tables: list[str], keywords: list[str], seconds: float
) -> None:
    from sqlalchemy.exc import OperationalError

    from monitor.store.connect import statement_error

    statement = "SELECT x " + " ".join(
        f'{k} "{t}" AS a{i} ON true' for i, (k, t) in enumerate(zip(keywords, tables, strict=False))
    )
    error = statement_error(
        OperationalError(statement, {}, _LockTimeout("canceling statement due to lock timeout")),
        seconds,
    )
    named = ", ".join(tables)
    assert str(error) == (
        f"waited more than {seconds:g} s (lock_timeout) for a lock on "
        f"table{'s' if len(tables) > 1 else ''} {named} that another session holds"
    )
