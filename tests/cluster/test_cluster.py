"""Recomputes as jobs on a real Dask ``LocalCluster`` (two worker processes, one thread each)
against PostgreSQL (issue 32): campaigns of every kind, affinity, a worker killed mid-job, a
failing campaign, two dispatchers at once, an unreachable cluster, a worker of another
version. One cluster for the module; the test database is emptied after each test."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

distributed = pytest.importorskip("distributed")

from sqlalchemy import Engine, select  # noqa: E402

from monitor.cli import main  # noqa: E402
from monitor.core.settings import Settings  # noqa: E402
from monitor.runtime.cluster import (  # noqa: E402
    JobResult,
    Versions,
    connect,
    due_campaigns,
    recompute_on,
)
from monitor.store.engine import transaction  # noqa: E402
from monitor.store.models import Campaign, MetricRun  # noqa: E402
from tests.golden import GOLDEN, load  # noqa: E402
from tests.pipeline.cases import store_case  # noqa: E402

pytestmark = pytest.mark.postgres

CASES = GOLDEN / "cases"
LABELS = load(CASES / "label_small_complete_3.json")
PAIRS = load(CASES / "pairwise_small_weak.json")
RATINGS = load(CASES / "rating_small_complete.json")
MULTI = load(CASES / "ct_closed_small.json")


class Faults(distributed.WorkerPlugin):
    """Planted on every worker: a campaign named ``broken-*`` fails in its measures; one
    named ``crash-*`` writes its worker's pid to ``FOLDER/NAME.pid`` and sleeps (to be
    killed) when ``FOLDER/NAME.armed`` exists and the pid file does not; ``slow-*`` takes a
    second more."""

    name = "faults"

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def setup(self, worker: Any) -> None:  # noqa: ANN401
        from monitor.pipeline import run

        folder, real = Path(self.folder), run.measure
        self.real = real

        def measure(coded, params):  # noqa: ANN001, ANN202
            name = coded.info.name
            if name.startswith("broken"):
                raise ValueError("a planted failure")
            pid = folder / f"{name}.pid"
            armed = (folder / f"{name}.armed").exists()
            if name.startswith("crash") and armed and not pid.exists():
                pid.write_text(str(os.getpid()))
                time.sleep(120)
            if name.startswith("slow"):
                time.sleep(1.0)
            return real(coded, params)

        run.measure = measure

    def teardown(self, worker: Any) -> None:  # noqa: ANN401
        from monitor.pipeline import run

        run.measure = self.real


@pytest.fixture(scope="module")
def faults_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("faults")


@pytest.fixture(scope="module")
def address(faults_dir: Path) -> Iterator[str]:
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        silence_logs=40,
    )
    with distributed.Client(cluster) as client:
        client.register_plugin(Faults(str(faults_dir)))
    yield cluster.scheduler_address
    cluster.close()


@pytest.fixture
def client(address: str) -> Iterator[distributed.Client]:
    with connect(address) as c:
        c.wait_for_workers(2, timeout=60)
        yield c


@pytest.fixture
def settings(pg_url: str, tmp_path: Path) -> Settings:
    return Settings(
        database_url=pg_url, bootstrap_samples=0, phi="off", cache_dir=str(tmp_path / "cache")
    )


def _runs(engine: Engine, name: str) -> list[tuple[int, str, int, str | None]]:
    """(number, status, n_judgments, error) of a campaign's runs, oldest first."""
    with transaction(engine) as s:
        rows = s.execute(
            select(MetricRun.number, MetricRun.status, MetricRun.n_judgments, MetricRun.error)
            .join(Campaign, Campaign.id == MetricRun.campaign_id)
            .where(Campaign.name == name)
            .order_by(MetricRun.id)
        ).all()
    return [tuple(r) for r in rows]


def _by_name(results: list[JobResult]) -> dict[str, JobResult]:
    return {r.campaign: r for r in results}


def test_postgres_campaigns_of_every_kind_run_on_the_workers_and_stay_on_them(
    client: distributed.Client, engine: Engine, settings: Settings
) -> None:
    cases = {"labels": LABELS, "pairs": PAIRS, "ratings": RATINGS, "multi": MULTI}
    for name, case in cases.items():
        store_case(engine, case, name=name, upto=len(case["judgments"]) - 6)
    workers = set(client.scheduler_info()["workers"])
    first = _by_name(recompute_on(client, settings, due_campaigns(engine)))
    assert set(first) == set(cases)
    for name, r in first.items():
        assert r.status == "ok", r.line()
        assert r.worker in workers
        assert r.line().startswith(f"{name} on {r.worker}: run 1, ")
    assert len({r.worker for r in first.values()}) == 2  # the work was spread
    assert due_campaigns(engine) == []  # nothing new: no job to send

    for name, case in cases.items():
        store_case(engine, case, name=name, start=len(case["judgments"]) - 6)
    second = _by_name(recompute_on(client, settings, due_campaigns(engine)))
    for name, case in cases.items():
        r = second[name]
        assert r.status == "ok", r.line()
        assert r.outcome is not None, r.line()
        assert r.outcome.n_new == 6, r.line()
        assert r.worker == first[name].worker  # where its arrays and warm starts are
        assert [x[:3] for x in _runs(engine, name)] == [
            (1, "ok", len(case["judgments"]) - 6),
            (2, "ok", len(case["judgments"])),
        ]


def test_postgres_a_worker_killed_mid_job_leaves_the_last_run_and_the_job_is_retried(
    client: distributed.Client, engine: Engine, settings: Settings, faults_dir: Path
) -> None:
    name = "crash-labels"
    n = len(LABELS["judgments"])
    store_case(engine, LABELS, name=name, upto=n - 10)
    [r] = recompute_on(client, settings, [name])
    assert r.status == "ok"
    store_case(engine, LABELS, name=name, start=n - 10)
    (faults_dir / f"{name}.armed").touch()
    results: list[JobResult] = []
    dispatch = threading.Thread(
        target=lambda: results.extend(recompute_on(client, settings, [name]))
    )
    dispatch.start()
    pid_file = faults_dir / f"{name}.pid"
    deadline = time.monotonic() + 30
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    pid = int(pid_file.read_text())
    assert pid != os.getpid()
    assert _runs(engine, name) == [(1, "ok", n - 10, None)]  # mid-job: run 1 is the latest
    os.kill(pid, signal.SIGKILL)
    dispatch.join(timeout=60)
    assert not dispatch.is_alive()
    [retried] = results
    assert retried.status == "ok", retried.line()
    assert retried.worker != r.worker or retried.worker not in client.scheduler_info()["workers"]
    assert _runs(engine, name) == [(1, "ok", n - 10, None), (2, "ok", n, None)]


def test_postgres_a_failing_campaign_is_recorded_and_the_others_run(
    address: str,
    engine: Engine,
    settings: Settings,
    pg_url: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, case in (("labels", LABELS), ("broken-labels", LABELS), ("pairs", PAIRS)):
        store_case(engine, case, name=name)
    monkeypatch.setenv("MONITOR_BOOTSTRAP_SAMPLES", "0")
    monkeypatch.setenv("MONITOR_PHI", "off")
    code = main(["recompute", "--db", pg_url, "--cluster", address])
    out, err = capsys.readouterr()
    assert code == 1
    lines = sorted(out.splitlines())
    assert len(lines) == 3, out
    assert lines[0].startswith("broken-labels on tcp://")
    assert "failed: ValueError: a planted failure" in lines[0]
    assert lines[1].startswith("labels on tcp://")
    assert ": run 1, 100 new of 100" in lines[1]
    assert lines[2].startswith("pairs on tcp://")
    assert ": run 1, " in lines[2]
    assert "1 of 3 campaigns failed: broken-labels" in err
    assert pg_url not in out + err
    [(_number, status, _, error)] = _runs(engine, "broken-labels")
    assert status == "failed"
    assert error == "ValueError: a planted failure"
    assert _runs(engine, "labels")[-1][1] == "ok"
    assert _runs(engine, "pairs")[-1][1] == "ok"


def test_postgres_two_dispatchers_at_once_run_a_campaign_once(
    address: str, client: distributed.Client, engine: Engine, settings: Settings
) -> None:
    store_case(engine, RATINGS, name="slow-ratings")
    results: list[JobResult] = []
    start = threading.Barrier(2)

    def dispatcher() -> None:
        with connect(address) as c:
            start.wait()
            results.extend(recompute_on(c, settings, ["slow-ratings"]))

    threads = [threading.Thread(target=dispatcher) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(r.status for r in results) == ["ok", "up_to_date"], [r.line() for r in results]
    assert len({r.worker for r in results}) == 2  # both ran at once, one waited for the lock
    assert [x[:2] for x in _runs(engine, "slow-ratings")] == [(1, "ok")]


def test_postgres_a_worker_of_another_version_refuses_the_job(
    client: distributed.Client, engine: Engine, settings: Settings
) -> None:
    store_case(engine, LABELS, name="labels")
    here = Versions.here()
    [r] = recompute_on(client, settings, ["labels"], versions=Versions("0.0.1", here.schema))
    assert r.status == "refused"
    assert r.failed
    assert f"this worker runs monitor {here.monitor} at schema {here.schema}" in r.message
    assert f"the scheduler monitor 0.0.1 at schema {here.schema}" in r.message
    [r] = recompute_on(client, settings, ["labels"], versions=Versions(here.monitor, "abc123"))
    assert r.status == "refused"
    assert "schema abc123" in r.message
    assert _runs(engine, "labels") == []


def test_postgres_an_unreachable_cluster_is_one_line_and_nothing_is_done(
    engine: Engine,
    pg_url: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import monitor.runtime.cluster

    monkeypatch.setattr(monitor.runtime.cluster, "CONNECT_TIMEOUT", 1.5)
    store_case(engine, LABELS, name="labels")
    started = time.monotonic()
    code = main(["recompute", "--db", pg_url, "--cluster", "tcp://127.0.0.1:9"])
    out, err = capsys.readouterr()
    assert code == 1
    assert out == ""
    assert err.splitlines() == [
        "monitor: error: no Dask scheduler answers at tcp://127.0.0.1:9 within 1.5 s: "
        "nothing was done"
    ]
    assert time.monotonic() - started < 15
    assert _runs(engine, "labels") == []


def test_postgres_a_cluster_address_that_is_none_is_bad_usage(
    pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["recompute", "--db", pg_url, "--cluster", "localhost"])
    assert code == 2
    assert capsys.readouterr().err.startswith(
        "monitor: error: cluster address 'localhost' is not a scheduler address"
    )


def test_postgres_the_nightly_job_on_the_cluster_recomputes_and_writes_every_report(
    client: distributed.Client,
    engine: Engine,
    settings: Settings,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from monitor.report.render import report_filename
    from monitor.runtime.scheduler import nightly_job

    for name, case in (("labels", LABELS), ("pairs", PAIRS), ("broken-labels", LABELS)):
        store_case(engine, case, name=name)
    folder = tmp_path / "reports"
    with caplog.at_level("INFO", logger="monitor.scheduler"):
        nightly_job(engine, settings.replace(report_dir=str(folder)), None, client)
    lines = [r.getMessage() for r in caplog.records if r.name == "monitor.scheduler"]
    workers = tuple(client.scheduler_info()["workers"])
    for name in ("labels", "pairs"):
        [line] = [x for x in lines if x.startswith(f"nightly {name} on ") and ": run 1, " in x]
        assert line.split(" on ", 1)[1].startswith(workers)
        assert (folder / report_filename(name, "html")).stat().st_size > 0
        assert (folder / report_filename(name, "json")).stat().st_size > 0
        [_report] = [x for x in lines if x.startswith(f"nightly {name} on ") and ": report " in x]
    [failed] = [x for x in lines if x.startswith("nightly broken-labels on ") and "failed" in x]
    assert failed.endswith(": failed: ValueError: a planted failure")
    assert (folder / "index.html").is_file()
    index = (folder / "index.html").read_text(encoding="utf-8")
    assert report_filename("labels", "html") in index
    assert report_filename("pairs", "html") in index


def test_postgres_schedule_with_an_unreachable_cluster_is_one_line_and_exit_1(
    pg_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import monitor.runtime.cluster

    monkeypatch.setattr(monitor.runtime.cluster, "CONNECT_TIMEOUT", 1.0)
    code = main(["schedule", "--db", pg_url, "--cluster", "tcp://127.0.0.1:9"])
    assert code == 1
    assert capsys.readouterr().err.splitlines() == [
        "monitor: error: no Dask scheduler answers at tcp://127.0.0.1:9 within 1 s: "
        "nothing was done"
    ]


def _latest_values(engine: Engine, name: str) -> dict[tuple[str, str, str], Any]:
    from monitor.store.campaigns import get_campaign
    from monitor.store.runs import latest_run, run_values

    with transaction(engine) as s:
        run = latest_run(s, get_campaign(s, name).id)
        assert run is not None
        return {(v.scope, v.subject, v.metric): v for v in run_values(s, run.id)}


def test_postgres_a_campaign_moved_to_another_worker_gives_the_same_results(
    client: distributed.Client, engine: Engine, settings: Settings
) -> None:
    """The warm worker's arrays and warm starts are not on the other worker: it starts from
    the shared snapshot files or the database, and its run agrees with a full one in one
    process within the tolerances of operations.md."""
    from monitor.incremental.cache import RunCache
    from monitor.pipeline import recompute
    from monitor.runtime.cluster import Job, run_job
    from tests.pipeline.test_incremental_scale import CD_TOL, CODETERMINATION, CROWDTRUTH, CT_TOL

    n = len(RATINGS["judgments"])
    store_case(engine, RATINGS, name="ratings", upto=n - 8)
    [first] = recompute_on(client, settings, ["ratings"])
    assert first.status == "ok"
    store_case(engine, RATINGS, name="ratings", start=n - 8)
    [other] = [w for w in client.scheduler_info()["workers"] if w != first.worker]
    moved = client.submit(
        run_job, Job("ratings", Versions.here(), settings), workers=[other], pure=False
    ).result()
    assert moved.worker == other, moved.line()
    assert moved.status == "ok", moved.line()
    assert moved.outcome is not None
    assert moved.outcome.n_new == 8
    there = _latest_values(engine, "ratings")
    recompute(engine, settings, campaign="ratings", full=True, cache=RunCache.plain())
    full = _latest_values(engine, "ratings")
    assert there.keys() == full.keys()
    for key, want in full.items():
        if key[2].endswith("_iterations"):
            continue
        tol = CT_TOL if key[2] in CROWDTRUTH else CD_TOL if key[2] in CODETERMINATION else 1e-3
        if key[0] == "item":
            tol += settings.value_tolerance
        got = there[key]
        for a, b in ((got.value, want.value), (got.low, want.low), (got.high, want.high)):
            assert (a is None) == (b is None), key
            if a is not None:
                assert abs(a - b) <= tol, (key, a, b)


def test_postgres_schedule_sends_the_jobs_to_the_cluster_and_logs_each(
    address: str, engine: Engine, pg_url: str, tmp_path: Path
) -> None:
    import subprocess
    import sys

    store_case(engine, LABELS, name="labels")
    store_case(engine, PAIRS, name="pairs")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "monitor",
            "schedule",
            "--db",
            pg_url,
            "--cluster",
            address,
            "--every",
            "60",
            "--report-dir",
            str(tmp_path / "reports"),
        ],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "MONITOR_BOOTSTRAP_SAMPLES": "0", "MONITOR_PHI": "off"},
    )
    lines: list[str] = []
    deadline = time.monotonic() + 60
    assert proc.stderr is not None
    while time.monotonic() < deadline and sum(" on tcp://" in x for x in lines) < 2:
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line)
    proc.send_signal(signal.SIGTERM)
    _, rest = proc.communicate(timeout=60)
    assert proc.returncode == 0, rest
    assert f"jobs on the cluster at {address}" in "".join(lines)
    for name in ("labels", "pairs"):
        assert any(f"incremental {name} on tcp://" in x and ": run 1, " in x for x in lines), lines
    assert pg_url not in "".join(lines) + rest


def test_postgres_cluster_without_dask_installed_says_how_to_install_it(
    pg_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.delitem(sys.modules, "monitor.runtime.cluster")
    monkeypatch.setitem(sys.modules, "distributed", None)
    code = main(["recompute", "--db", pg_url, "--cluster", "tcp://127.0.0.1:9"])
    assert code == 1
    assert capsys.readouterr().err.splitlines() == [
        "monitor: error: --cluster needs Dask distributed, which is not installed",
        'hint: pip install "monitor[cluster]"',
    ]
