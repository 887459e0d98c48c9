"""Real processes against one PostgreSQL database: the advisory lock keeps two recomputes of a
campaign from running at once, an ingest that commits during recomputes is neither missed nor
counted twice, a recompute killed mid-way leaves the previous run as the latest, a run whose
lock's session was terminated saves nothing and says so, and a recompute waiting on a table
another session holds locked keeps the campaign, then fails after ``lock_timeout`` naming it.

Every command runs as ``python -m monitor ... --db URL`` in its own process. The tests wait on
state the server shows (``pg_locks``, ``pg_stat_activity``; each child is named through
``PGAPPNAME``) or on files, never on a fixed sleep. One database with the first file ingested is
built once through the command line; each test works on a copy of it (``CREATE DATABASE ...
TEMPLATE``).
"""

from __future__ import annotations

import csv
import itertools
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, text

from monitor.store.engine import make_engine
from monitor.store.locks import LOCK_CLASS

CAMPAIGN = "conc"
N_FIRST = 20_000  # a full run of these takes about a second
N_SECOND = 30_000  # rows of the file ingested during recomputes (a few seconds to load) ...
N_OVERLAP = 2_000  # ... of which the first ones repeat judgments of the first file
TIMEOUT = 120.0  # for any one child process or wait: generous, a loaded CI machine is slow
BUSY = "is being recomputed by another process"
RUN_LINE = re.compile(rf"^{CAMPAIGN}: run (\d+), (\d+) new of (\d+) judgments", re.M)
# Keep runs short and deterministic: no Phi, no bootstrap intervals, flags only suggested.
CHILD_SETTINGS = {
    "MONITOR_PHI": "off",
    "MONITOR_BOOTSTRAP_SAMPLES": "0",
    "MONITOR_POLICY": "suggest",
}


# --- data -----------------------------------------------------------------------------------


def write_ratings(path: Path, start: int, stop: int) -> Path:
    """Rating judgments ``j<start>`` .. ``j<stop - 1>``: 8 per item, 150 workers, every field a
    function of the judgment number (so a judgment repeated in another file is the same row)."""
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["worker", "item", "value", "judgment_id"])
        for k in range(start, stop):
            item = k // 8
            value = 1 + (item % 5 + (k % 3 == 0) + (k % 7 == 0)) % 5
            out.writerow([f"w{(k * 37) % 150}", f"i{item}", value, f"j{k}"])
    return path


# --- processes ------------------------------------------------------------------------------


@dataclass
class Result:
    args: tuple[str, ...]
    returncode: int
    out: str
    err: str

    def __str__(self) -> str:
        return (
            f"{' '.join(self.args)} -> exit {self.returncode}\n"
            f"stdout:\n{self.out}\nstderr:\n{self.err}"
        )


class Child:
    """A process started by a test; its output goes to files (no pipe can fill up)."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path, name: str) -> None:
        self.args = tuple(argv)
        self.out_path = cwd / f"{name}.out"
        self.err_path = cwd / f"{name}.err"
        with self.out_path.open("w") as out, self.err_path.open("w") as err:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env, cwd=cwd)

    def poll(self) -> int | None:
        return self.proc.poll()

    def wait(self, timeout: float = TIMEOUT) -> Result:
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail(f"{self.args} did not finish in {timeout} s:\n{self.output()}")
        return Result(self.args, code, *self.output())

    def output(self) -> tuple[str, str]:
        return self.out_path.read_text(), self.err_path.read_text()


class Processes:
    """Starts ``python -m monitor ... --db URL`` (or a Python snippet) in child processes,
    each named ``PGAPPNAME=<app>`` on the server; kills the ones still running at teardown."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.children: list[Child] = []

    def env(self, app: str) -> dict[str, str]:
        return {**os.environ, **CHILD_SETTINGS, "PGAPPNAME": app}

    def start(
        self, url: str, *args: str, app: str = "monitor-child", env: dict[str, str] | None = None
    ) -> Child:
        argv = [sys.executable, "-m", "monitor", *args, "--db", url]
        return self._start(argv, app, env)

    def start_python(self, code: str, *args: str, app: str) -> Child:
        return self._start([sys.executable, "-c", code, *args], app)

    def _start(self, argv: list[str], app: str, env: dict[str, str] | None = None) -> Child:
        name = f"{len(self.children):03d}-{app}"
        child = Child(argv, {**self.env(app), **(env or {})}, self.tmp_path, name)
        self.children.append(child)
        return child

    def run(
        self, url: str, *args: str, app: str = "monitor-child", env: dict[str, str] | None = None
    ) -> Result:
        return self.start(url, *args, app=app, env=env).wait()

    def ok(self, url: str, *args: str) -> Result:
        result = self.run(url, *args)
        assert result.returncode == 0, str(result)
        return result

    def cleanup(self) -> None:
        for child in self.children:
            if child.poll() is None:
                child.proc.kill()
                child.proc.wait()


@pytest.fixture
def procs(tmp_path: Path) -> Iterator[Processes]:
    processes = Processes(tmp_path)
    yield processes
    processes.cleanup()


# --- the database ---------------------------------------------------------------------------


class Db:
    """The test's own view of the database (its connections are named ``monitor-tests``)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine: Engine = make_engine(url, connect_args={"application_name": "monitor-tests"})
        self.campaign_id = int(
            self.scalar("SELECT id FROM campaigns WHERE name = :name", name=CAMPAIGN)
        )

    def rows(self, sql: str, **params: Any) -> list[Any]:
        with self.engine.connect() as c:
            return list(c.execute(text(sql), params).all())

    def scalar(self, sql: str, **params: Any) -> Any:
        with self.engine.connect() as c:
            return c.execute(text(sql), params).scalar()

    def runs(self, status: str | None = None) -> list[Any]:
        sql = (
            "SELECT id, status, started_at, finished_at, n_judgments, n_new, watermark"
            " FROM metric_runs WHERE campaign_id = :cid"
        )
        params: dict[str, Any] = {"cid": self.campaign_id}
        if status is not None:
            sql += " AND status = :status"
            params["status"] = status
        return self.rows(sql + " ORDER BY id", **params)

    def latest_ok(self) -> Any:
        runs = self.runs("ok")
        return runs[-1] if runs else None

    def n_judgments(self) -> int:
        return int(
            self.scalar("SELECT count(*) FROM judgments WHERE campaign_id = :c", c=self.campaign_id)
        )

    def lock_holders(self) -> list[str]:
        """Application names of the sessions holding the campaign's advisory lock."""
        return [r[0] for r in self._lock_sessions()]

    def lock_pid(self) -> int:
        """The server pid of the session holding the campaign's advisory lock."""
        [(_, pid)] = self._lock_sessions()
        return int(pid)

    def _lock_sessions(self) -> list[Any]:
        return self.rows(
            "SELECT coalesce(a.application_name, ''), l.pid FROM pg_locks l"
            " LEFT JOIN pg_stat_activity a ON a.pid = l.pid"
            " WHERE l.locktype = 'advisory' AND l.granted"
            " AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            " AND l.classid::bigint = :k1 AND l.objid::bigint = :k2 AND l.objsubid = 2",
            k1=LOCK_CLASS,
            k2=self.campaign_id,
        )

    def sessions(self, app: str) -> list[Any]:
        """(pid, state) of the sessions of one child on this database."""
        return self.rows(
            "SELECT pid, state FROM pg_stat_activity"
            " WHERE datname = current_database() AND application_name = :app",
            app=app,
        )

    def dispose(self) -> None:
        self.engine.dispose()


def wait_for(
    condition: Callable[[], Any], what: str, child: Child | None = None, timeout: float = TIMEOUT
) -> Any:
    """Poll ``condition`` until it is true; fail if ``child`` exits first or time runs out."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if child is not None and child.poll() is not None:
            pytest.fail(f"{what}: the child exited first\n{child.wait()}")
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout} s")
        time.sleep(0.02)


@pytest.fixture(scope="module")
def base_db(pg_server, tmp_path_factory: pytest.TempPathFactory) -> str:  # noqa: ANN001
    """A database with the campaign and the first file, built through the command line once
    (no run yet); returns its name."""
    work = tmp_path_factory.mktemp("concurrency-base")
    processes = Processes(work)
    url = pg_server.new_database()
    try:
        processes.ok(url, "db", "upgrade")
        processes.ok(
            url, "campaign", "create", CAMPAIGN, "--kind", "rating", "--min", "1", "--max", "5"
        )
        first = write_ratings(work / "first.csv", 0, N_FIRST)
        result = processes.ok(url, "ingest", str(first), "--campaign", CAMPAIGN)
        assert f"{N_FIRST} new, 0 duplicate, 0 rejected" in result.out, str(result)
    finally:
        processes.cleanup()
    return url.rsplit("/", 1)[1]


@pytest.fixture
def db(pg_server, base_db: str) -> Iterator[Db]:  # noqa: ANN001
    """A copy of the base database for one test."""
    name = f"monitor_test_{uuid.uuid4().hex[:12]}"
    with pg_server.admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}" TEMPLATE "{base_db}"'))
    pg_server.created.append(name)  # dropped with the others at the end of the session
    database = Db(url_of(pg_server, name))
    yield database
    database.dispose()


def url_of(pg_server, name: str) -> str:  # noqa: ANN001
    return pg_server.admin.url.set(database=name).render_as_string(hide_password=False)


def run_lines(result: Result) -> list[tuple[int, int, int]]:
    """(run id, new, judgments) of the run lines a recompute printed."""
    return [(int(a), int(b), int(c)) for a, b, c in RUN_LINE.findall(result.out)]


# --- the tests ------------------------------------------------------------------------------

HOLD_LOCK = """
import sys, time
from pathlib import Path
from monitor.store.engine import make_engine
from monitor.store.locks import campaign_lock

url, campaign_id, release = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
engine = make_engine(url)
with campaign_lock(engine, campaign_id):
    deadline = time.monotonic() + float(sys.argv[4])
    while not release.exists():
        if time.monotonic() > deadline:
            sys.exit("never released")
        time.sleep(0.02)
engine.dispose()
"""


@pytest.mark.postgres
@pytest.mark.timeout(300)
def test_recompute_is_busy_while_another_process_holds_the_lock(
    db: Db, procs: Processes, tmp_path: Path
) -> None:
    release = tmp_path / "release"
    holder = procs.start_python(
        HOLD_LOCK, db.url, str(db.campaign_id), str(release), str(TIMEOUT), app="lock-holder"
    )
    wait_for(lambda: db.lock_holders() == ["lock-holder"], "the holder takes the lock", holder)

    for args in (("--campaign", CAMPAIGN), ("--full",)):  # one campaign; all, from scratch
        busy = procs.run(db.url, "recompute", *args)
        assert busy.returncode == 0, str(busy)
        assert busy.out.strip() == f"{CAMPAIGN}: campaign {db.campaign_id} {BUSY}", str(busy)
    assert db.runs() == [], "a busy recompute wrote a run"
    assert db.lock_holders() == ["lock-holder"]

    release.touch()
    assert holder.wait().returncode == 0
    wait_for(lambda: db.lock_holders() == [], "the lock is released")

    done = procs.ok(db.url, "recompute", "--campaign", CAMPAIGN)
    [(run_id, n_new, n)] = run_lines(done)
    assert (n_new, n) == (N_FIRST, N_FIRST), str(done)
    [run] = db.runs()
    assert (run.id, run.status, run.n_judgments) == (run_id, "ok", N_FIRST)
    assert db.lock_holders() == []


@pytest.mark.postgres
@pytest.mark.timeout(300)
def test_two_full_recomputes_never_compute_at_once(db: Db, procs: Processes) -> None:
    min_rounds, max_rounds = 3, 8
    busy_line = f"{CAMPAIGN}: campaign {db.campaign_id} {BUSY}"
    printed: set[int] = set()
    n_busy = 0
    rounds = 0
    while rounds < min_rounds or (n_busy == 0 and rounds < max_rounds):
        rounds += 1
        pair = [
            procs.start(db.url, "recompute", "--full", "--campaign", CAMPAIGN, app=f"r{rounds}{i}")
            for i in range(2)
        ]
        results = [child.wait() for child in pair]
        n_ok_round = 0
        for result in results:
            assert result.returncode == 0, str(result)
            lines = run_lines(result)
            if lines:
                [(run_id, _n_new, n)] = lines
                assert n == N_FIRST, str(result)
                assert result.out.count("\n") == 1, str(result)
                printed.add(run_id)
                n_ok_round += 1
            else:
                assert result.out.strip() == busy_line, str(result)
                n_busy += 1
        assert n_ok_round >= 1, f"round {rounds}: nobody computed\n{results[0]}\n{results[1]}"

    runs = db.runs()
    assert [r.status for r in runs] == ["ok"] * len(runs)
    assert {r.id for r in runs} == printed
    assert len(runs) == 2 * rounds - n_busy
    assert {r.n_judgments for r in runs} == {N_FIRST}
    spans = sorted((r.started_at, r.finished_at, r.id) for r in runs)
    for (s1, f1, id1), (s2, f2, id2) in itertools.pairwise(spans):
        assert s1 < f1
        assert s2 < f2
        assert f1 < s2, f"runs {id1} [{s1}, {f1}] and {id2} [{s2}, {f2}] overlap"
    # Without a collision the test proved nothing (two runs one after the other never overlap).
    assert n_busy >= 1, f"{rounds} rounds of two processes started together: nobody was busy"
    assert db.lock_holders() == []


# ``monitor ingest`` with smaller chunks, so that the file is loaded in several chunks: the
# recomputes must still see all of it or none of it (one file, one transaction).
INGEST_IN_CHUNKS = """
import sys

import monitor.ingest.api
from monitor.cli import main

monitor.ingest.api.CHUNK_SIZE = int(sys.argv.pop(1))
raise SystemExit(main())
"""
CHUNK = 4_000


@pytest.mark.postgres
@pytest.mark.timeout(300)
def test_ingest_during_recomputes_is_neither_missed_nor_counted_twice(
    db: Db, procs: Processes, tmp_path: Path
) -> None:
    start = N_FIRST - N_OVERLAP
    second = write_ratings(tmp_path / "second.csv", start, start + N_SECOND)
    total = N_FIRST + N_SECOND - N_OVERLAP

    ingest = procs.start_python(
        INGEST_IN_CHUNKS,
        str(CHUNK),
        *("ingest", str(second), "--campaign", CAMPAIGN, "--db", db.url),
        app="ingest",
    )
    # Start recomputing once the ingest has written rows it has not committed yet.
    wait_for(
        lambda: (
            ingest.poll() is not None
            or db.rows(
                "SELECT 1 FROM pg_stat_activity WHERE datname = current_database()"
                " AND application_name = 'ingest' AND backend_xid IS NOT NULL"
            )
        ),
        "the ingest writes",
    )
    during: list[Result] = []
    deadline = time.monotonic() + TIMEOUT
    while ingest.poll() is None:
        assert time.monotonic() < deadline, "the ingest never ended"
        during.append(procs.run(db.url, "recompute", "--campaign", CAMPAIGN, app="loop"))
    loaded = ingest.wait()
    assert loaded.returncode == 0, str(loaded)
    assert f"{N_SECOND} rows: {N_SECOND - N_OVERLAP} new, {N_OVERLAP} duplicate" in loaded.out
    final = procs.run(db.url, "recompute", "--campaign", CAMPAIGN, app="final")

    for result in [*during, final]:
        assert result.returncode == 0, str(result)
        assert run_lines(result) or "nothing new since run" in result.out, str(result)
    assert during, "no recompute ran during the ingest"

    assert db.n_judgments() == total
    distinct = "SELECT count(DISTINCT dedup_key) FROM judgments WHERE campaign_id = :c"
    assert db.scalar(distinct, c=db.campaign_id) == total
    top = db.scalar("SELECT max(id) FROM judgments WHERE campaign_id = :c", c=db.campaign_id)

    runs = db.runs()
    assert runs
    assert [r.status for r in runs] == ["ok"] * len(runs)
    latest = runs[-1]
    assert latest.n_judgments == total
    assert latest.watermark == top
    history = [r.n_judgments for r in runs]
    assert set(history) <= {N_FIRST, total}, f"a run saw part of the ingest: {history}"
    assert history == sorted(history)
    # Each run counts what arrived since the previous one: together, every judgment once.
    assert sum(r.n_new for r in runs) == total
    printed = {run_id: n for r in [*during, final] for run_id, _, n in run_lines(r)}
    assert printed == {r.id: r.n_judgments for r in runs}

    stored = dict(
        db.rows(
            "SELECT r.id, v.value FROM metric_runs r JOIN metric_values v ON v.run_id = r.id"
            " WHERE r.campaign_id = :c AND v.scope = 'campaign' AND v.metric = 'n_judgments'",
            c=db.campaign_id,
        )
    )
    assert stored == {r.id: float(r.n_judgments) for r in runs}

    again = procs.ok(db.url, "recompute", "--campaign", CAMPAIGN)
    assert again.out.strip() == f"{CAMPAIGN}: nothing new since run {latest.id}: nothing to do"
    assert db.runs() == runs


@pytest.mark.postgres
@pytest.mark.timeout(300)
def test_recompute_killed_mid_way_keeps_the_previous_run(db: Db, procs: Processes) -> None:
    first = procs.ok(db.url, "recompute", "--campaign", CAMPAIGN)
    [(previous_id, _, _)] = run_lines(first)
    runs_before = db.runs()
    assert [r.id for r in runs_before] == [previous_id]
    count_values = "SELECT count(*) FROM metric_values"
    values_before = db.scalar(count_values)
    flags_before = db.scalar("SELECT count(*) FROM flags")

    victim = procs.start(db.url, "recompute", "--full", "--campaign", CAMPAIGN, app="victim")

    def computing() -> bool:
        """The victim holds the lock on one session and its other session (which read the
        judgments and will save the run) is idle: the metrics are being computed."""
        sessions = db.sessions("victim")
        holders = db.lock_holders()
        return (
            holders == ["victim"] and len(sessions) == 2 and {s.state for s in sessions} == {"idle"}
        )

    wait_for(computing, "the victim computes", victim)
    victim.proc.send_signal(signal.SIGKILL)
    killed = victim.wait()
    assert killed.returncode == -signal.SIGKILL, str(killed)

    # The server ends the dead process's sessions, and with them its advisory lock.
    wait_for(lambda: db.lock_holders() == [] and not db.sessions("victim"), "the lock goes")
    assert db.runs() == runs_before, "the killed run left something behind"
    assert db.latest_ok().id == previous_id
    assert db.scalar(count_values) == values_before
    assert db.scalar("SELECT count(*) FROM flags") == flags_before

    after = procs.ok(db.url, "recompute", "--full", "--campaign", CAMPAIGN)
    [(new_id, _, n)] = run_lines(after)
    assert new_id > previous_id
    assert n == N_FIRST
    latest = db.latest_ok()
    assert (latest.id, latest.n_judgments) == (new_id, N_FIRST)
    assert [r.status for r in db.runs()] == ["ok", "ok"]
    assert db.lock_holders() == []


# ``monitor recompute`` that stops before computing until told: it touches the first file when
# it has read the judgments (holding the lock), and computes once the second file exists.
PAUSED_RECOMPUTE = """
import sys, time
from pathlib import Path

from monitor.cli import main
from monitor.pipeline import run

computing, release = Path(sys.argv.pop(1)), Path(sys.argv.pop(1))
real = run.measure


def measure(coded, params):
    computing.touch()
    deadline = time.monotonic() + 120
    while not release.exists():
        if time.monotonic() > deadline:
            sys.exit("never released")
        time.sleep(0.02)
    return real(coded, params)


run.measure = measure
raise SystemExit(main())
"""


@pytest.mark.postgres
@pytest.mark.timeout(300)
def test_a_run_whose_lock_was_lost_saves_nothing_and_says_so(
    db: Db, procs: Processes, tmp_path: Path
) -> None:
    computing, release = tmp_path / "computing", tmp_path / "release"
    victim = procs.start_python(
        PAUSED_RECOMPUTE,
        *(str(computing), str(release)),
        *("recompute", "--full", "--campaign", CAMPAIGN, "--db", db.url),
        app="victim",
    )
    wait_for(computing.exists, "the victim computes", victim)
    assert db.lock_holders() == ["victim"]
    # The session holding the lock ends (an administrator, a pooler, a firewall); the victim
    # goes on computing, unaware.
    assert db.scalar("SELECT pg_terminate_backend(:p)", p=db.lock_pid())
    wait_for(lambda: db.lock_holders() == [], "the server drops the lock")

    other = procs.ok(db.url, "recompute", "--full", "--campaign", CAMPAIGN)
    [(other_id, _, n)] = run_lines(other)
    assert n == N_FIRST

    release.touch()
    lost = victim.wait()
    assert lost.returncode == 0, str(lost)
    assert lost.out == (
        f"{CAMPAIGN}: campaign {db.campaign_id}: the recompute lock was lost during the run "
        "(nobody holds it now); this run saved nothing\n"
    ), str(lost)
    assert "Traceback" not in lost.err
    assert [(r.id, r.status) for r in db.runs()] == [(other_id, "ok")]
    assert db.lock_holders() == []
    assert db.scalar("SELECT count(*) FROM campaign_locks") == 0


@pytest.mark.postgres
@pytest.mark.timeout(300)
def test_a_recompute_waiting_on_a_locked_table_holds_the_campaign(db: Db, procs: Processes) -> None:
    """A third session holds the judgments locked until the first recompute waits on them: a
    second recompute is busy (never computing alongside); once the table is free, the first
    completes."""
    with db.engine.connect() as third:
        third.execute(text("LOCK TABLE judgments IN ACCESS EXCLUSIVE MODE"))
        first = procs.start(db.url, "recompute", "--full", "--campaign", CAMPAIGN, app="first")
        wait_for(
            lambda: db.rows(
                "SELECT 1 FROM pg_stat_activity WHERE datname = current_database()"
                " AND application_name = 'first' AND wait_event_type = 'Lock'"
            ),
            "the first recompute waits for the judgments",
            first,
        )
        assert db.lock_holders() == ["first"]
        busy = procs.run(db.url, "recompute", "--full", "--campaign", CAMPAIGN, app="second")
        assert busy.returncode == 0, str(busy)
        assert busy.out == f"{CAMPAIGN}: campaign {db.campaign_id} {BUSY}\n", str(busy)
        third.rollback()
    done = first.wait()
    assert done.returncode == 0, str(done)
    [(run_id, _, n)] = run_lines(done)
    assert n == N_FIRST
    assert [(r.id, r.status) for r in db.runs()] == [(run_id, "ok")]


@pytest.mark.postgres
@pytest.mark.timeout(300)
def test_a_recompute_waiting_too_long_says_on_what(db: Db, procs: Processes) -> None:
    with db.engine.connect() as third:
        third.execute(text("LOCK TABLE judgments IN ACCESS EXCLUSIVE MODE"))
        result = procs.run(
            db.url, "recompute", "--campaign", CAMPAIGN, env={"MONITOR_LOCK_TIMEOUT": "0.5"}
        )
        third.rollback()
    error = (
        "DatabaseTimeout: waited more than 0.5 s (lock_timeout) for a lock on table judgments "
        f"that another session holds while reading the judgments of campaign {CAMPAIGN}"
    )
    assert result.returncode == 1, str(result)
    assert result.out == f"{CAMPAIGN}: failed: {error}\n", str(result)
    assert result.err.splitlines()[0] == (
        f"monitor: error: 1 of 1 campaigns failed: {CAMPAIGN} (the other campaigns were recomputed)"
    ), str(result)
    assert "timed out" not in result.out + result.err
    [run] = db.runs()
    assert run.status == "failed"
    assert run.started_at <= run.finished_at
    assert db.scalar("SELECT error FROM metric_runs WHERE id = :i", i=run.id) == error
