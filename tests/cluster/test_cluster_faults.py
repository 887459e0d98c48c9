"""The dispatcher never waits for ever (issue 43), on a real Dask ``LocalCluster``: a job
bound to its warm worker when that worker is killed (its nanny restarts it at another
address) is sent again to any worker; a cluster without a worker is one line and exit 1
after ``cluster_no_worker_seconds``; Dask's own messages go to the ``cluster_log`` file; a
SQLite database is refused with ``--cluster``."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")

from sqlalchemy import Engine  # noqa: E402

from monitor.cli import main  # noqa: E402
from monitor.core.settings import Settings  # noqa: E402
from monitor.runtime.cluster import ClusterUnavailable, JobResult, connect, recompute_on  # noqa: E402
from tests.cluster.test_cluster import LABELS, Faults, _runs  # noqa: E402
from tests.pipeline.cases import store_case  # noqa: E402


@pytest.fixture
def settings(pg_url: str, tmp_path: Path) -> Settings:
    return Settings(database_url=pg_url, bootstrap_samples=0, phi="off", cache_dir="",
                    cluster_no_worker_seconds=30.0)  # fmt: skip


@pytest.mark.postgres
def test_postgres_the_only_worker_killed_mid_job_the_job_runs_on_its_successor(
    engine: Engine, settings: Settings, tmp_path: Path
) -> None:
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=50)  # fmt: skip
    try:
        with connect(cluster.scheduler_address) as client:
            client.register_plugin(Faults(str(tmp_path)))
            name = "crash-labels"
            n = len(LABELS["judgments"])
            store_case(engine, LABELS, name=name, upto=n - 10)
            [first] = recompute_on(client, settings, [name])  # warm on the only worker
            assert first.status == "ok", first.line()
            store_case(engine, LABELS, name=name, start=n - 10)
            (tmp_path / f"{name}.armed").touch()
            results: list[JobResult] = []
            dispatch = threading.Thread(
                target=lambda: results.extend(recompute_on(client, settings, [name]))
            )
            dispatch.start()
            pid_file = tmp_path / f"{name}.pid"
            deadline = time.monotonic() + 60
            while not pid_file.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.2)
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
            dispatch.join(timeout=120)
            assert not dispatch.is_alive(), "the dispatcher still waits"
            [retried] = results
            assert retried.status == "ok", retried.line()
            assert retried.worker != first.worker  # the nanny's new worker
            assert _runs(engine, name) == [(1, "ok", n - 10, None), (2, "ok", n, None)]
    finally:
        cluster.close()


@pytest.fixture
def empty_cluster() -> Iterator[str]:
    cluster = distributed.LocalCluster(n_workers=0, processes=True, dashboard_address=None,
                                       silence_logs=50)  # fmt: skip
    yield cluster.scheduler_address
    cluster.close()


@pytest.mark.postgres
def test_postgres_a_cluster_without_worker_is_one_line_and_exit_1(
    engine: Engine, settings: Settings, empty_cluster: str, pg_url: str, tmp_path: Path,
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    store_case(engine, LABELS, name="labels")
    with connect(empty_cluster) as client, pytest.raises(ClusterUnavailable) as raised:
        recompute_on(client, settings.replace(cluster_no_worker_seconds=2.0), ["labels"])
    assert str(raised.value).startswith(f"no Dask worker at {empty_cluster} for 2 s: 1 job(s)")
    log = tmp_path / "dask.log"
    monkeypatch.setenv("MONITOR_CLUSTER_NO_WORKER_SECONDS", "2")
    monkeypatch.setenv("MONITOR_CLUSTER_LOG", str(log))
    code = main(["recompute", "--db", pg_url, "--cluster", empty_cluster])
    _out, err = capsys.readouterr()
    assert code == 1
    lines = err.splitlines()
    assert lines[0].startswith(f"monitor: error: no Dask worker at {empty_cluster} for 2 s")
    assert len(lines) <= 2
    assert all(x.startswith(("monitor: error: ", "hint: ")) for x in lines)
    assert _runs(engine, "labels") == []  # nothing ran


@pytest.mark.postgres
def test_postgres_a_killed_scheduler_is_one_line_and_dask_says_the_rest_in_the_log(
    engine: Engine, pg_url: str, tmp_path: Path
) -> None:
    """A ``dask scheduler`` process killed (SIGKILL) while a job waits: the dispatcher's lines,
    and Dask's complaints (reconnecting, closing the client) in the log file only."""
    dask = Path(sys.executable).parent / "dask"
    if not dask.exists():
        pytest.skip("the dask command is not installed beside this Python")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    store_case(engine, LABELS, name="labels")
    scheduler = subprocess.Popen(
        [str(dask), "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    log = tmp_path / "dask.log"
    env = {**os.environ, "MONITOR_CLUSTER_LOG": str(log), "MONITOR_CLUSTER_NO_WORKER_SECONDS": "60"}
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)
        threading.Timer(4.0, scheduler.kill).start()
        done = subprocess.run(
            [sys.executable, "-m", "monitor", "recompute", "--db", pg_url, "--cluster",
             f"tcp://127.0.0.1:{port}"],
            capture_output=True, text=True, env=env, timeout=120, check=False,
        )  # fmt: skip
    finally:
        scheduler.kill()
        scheduler.wait()
    assert done.returncode == 1
    assert "Traceback" not in done.stderr, done.stderr
    assert "distributed" not in done.stderr, done.stderr
    assert done.stderr.startswith("monitor: error: ")
    assert len(done.stderr.splitlines()) <= 2
    assert done.stdout.startswith("labels on -: lost: ")
    assert len(done.stdout.splitlines()) == 1
    assert "distributed.client" in log.read_text(encoding="utf-8")
    assert _runs(engine, "labels") == []


@pytest.mark.parametrize("command", [["recompute"], ["schedule"]])
def test_sqlite_with_cluster_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    url = "sqlite:///relative.db"
    code = main([*command, "--db", url, "--cluster", "tcp://127.0.0.1:9"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.splitlines()[0].startswith("monitor: error: --cluster needs a database every")
    assert "PostgreSQL" in err
    assert "Traceback" not in err
    assert not Path("relative.db").exists()
