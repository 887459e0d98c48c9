"""``monitor schedule`` as a real process: a log line per run, a clean stop on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from monitor.core.settings import Settings
from monitor.report.render import report_filename
from monitor.runtime.scheduler import build_scheduler
from monitor.store.engine import make_engine
from monitor.store.migrate import upgrade
from tests.golden import GOLDEN, load
from tests.pipeline.cases import store_case


def test_jobs_are_single_instance_and_coalesced(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'm.db'}")
    scheduler = build_scheduler(engine, Settings(recompute_every_minutes=7, nightly_at="03:15"))
    jobs = {job.id: job for job in scheduler.get_jobs()}
    assert set(jobs) == {"incremental", "nightly"}
    for job in jobs.values():
        assert job.max_instances == 1
        assert job.coalesce
    assert jobs["incremental"].trigger.interval.total_seconds() == 7 * 60
    assert "hour='3'" in str(jobs["nightly"].trigger)
    assert "minute='15'" in str(jobs["nightly"].trigger)
    engine.dispose()


def test_schedule_runs_and_stops_on_sigterm(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    engine = make_engine(url)
    upgrade(engine)
    store_case(engine, load(GOLDEN / "cases" / "label_small_complete_3.json"), name="labels")
    engine.dispose()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "monitor",
            "schedule",
            "--db",
            url,
            "--every",
            "60",
            "--report-dir",
            str(tmp_path / "reports"),
        ],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "MONITOR_BOOTSTRAP_SAMPLES": "0"},
    )
    lines: list[str] = []
    deadline = time.monotonic() + 120
    assert proc.stderr is not None
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line)
        if "incremental labels: run" in line:
            break
    assert any("incremental labels: run 1, 100 new of 100 judgments" in s for s in lines), lines
    proc.send_signal(signal.SIGTERM)
    _, rest = proc.communicate(timeout=60)
    assert proc.returncode == 0, rest
    assert "signal SIGTERM: stopping after the job under way" in rest
    assert "scheduler stopped" in rest


def test_nightly_job_recomputes_and_writes_every_report(tmp_path: Path) -> None:
    from monitor.runtime.scheduler import nightly_job
    from monitor.store.engine import transaction
    from monitor.store.models import MetricRun

    engine = make_engine(f"sqlite:///{tmp_path / 'm.db'}")
    upgrade(engine)
    store_case(engine, load(GOLDEN / "cases" / "label_small_complete_3.json"), name="a/b labels")
    store_case(engine, load(GOLDEN / "cases" / "pairwise_small_weak.json"), name="prefs")
    settings = Settings(report_dir=str(tmp_path / "reports"), bootstrap_samples=0)
    nightly_job(engine, settings)
    with transaction(engine) as s:
        assert s.query(MetricRun).filter(MetricRun.status == "ok").count() == 2
    # a second scheduler's nightly job finds tonight's full runs and computes nothing again
    nightly_job(engine, settings)
    with transaction(engine) as s:
        assert s.query(MetricRun).filter(MetricRun.status == "ok").count() == 2
    # a full run of an earlier night does not count: tonight's is computed
    with transaction(engine) as s:
        for run in s.query(MetricRun):
            run.started_at = run.started_at - timedelta(days=1)
    nightly_job(engine, settings)
    with transaction(engine) as s:
        assert s.query(MetricRun).filter(MetricRun.status == "ok").count() == 4
    reports = sorted(p.name for p in (tmp_path / "reports").iterdir())
    names = [report_filename(n, f) for n in ("a/b labels", "prefs") for f in ("html", "json")]
    assert reports == sorted([*names, "index.html", "index.json"])
    assert reports[0].startswith("a_b_labels-")
    assert "<html" in (tmp_path / "reports" / "prefs.html").read_text(encoding="utf-8")
    engine.dispose()


_REUSE = """
import resource, sys
import numpy as np
from monitor.runtime.memory import keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory()
a = np.ones(8 << 20)  # 64 MB, above glibc's largest dynamic mmap threshold
del a
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    b = np.ones(8 << 20)
    del b
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_the_scheduler_reuses_the_memory_it_freed() -> None:
    """After ``keep_freed_memory`` a large array freed and allocated again costs no page
    faults; by default it is mapped afresh every time (a fault per page, or per huge page)."""

    def faults(mode: str) -> int:
        out = subprocess.run(
            [sys.executable, "-c", _REUSE, mode], capture_output=True, text=True, check=True
        )
        return int(out.stdout.strip())

    assert faults("default") > 300
    assert faults("keep") < 30


_COLLECT = """
import gc, weakref
from monitor.runtime.memory import collect_between_runs


class Node:
    pass


kept = [Node() for _ in range(1000)]
collect_between_runs()  # what lives on is set aside
assert gc.get_freeze_count() > 1000
node = kept.pop()
node.self = node  # a cycle made garbage while frozen
ref = weakref.ref(node)
del node
gc.collect()
assert ref() is not None  # a plain collection leaves the frozen objects alone
collect_between_runs()
assert ref() is None  # the next one between runs collects them
print("ok")
"""


def test_garbage_is_collected_between_runs_and_never_kept() -> None:
    """After a job the scheduler collects, then freezes what lives on (no full collection over
    it in the middle of the next run); garbage among the frozen objects is collected after
    the next job, not kept for ever. In a process of its own: freezing is process-wide."""
    out = subprocess.run(
        [sys.executable, "-c", _COLLECT], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "ok"


def test_tonight_starts_at_the_last_nightly_time() -> None:
    from monitor.runtime.scheduler import nightly_since

    tz = timezone(timedelta(hours=2))
    at = datetime(2026, 3, 10, 2, 30, tzinfo=tz)
    assert nightly_since("02:00", at) == datetime(2026, 3, 10, 2, 0, tzinfo=tz)
    assert nightly_since("03:00", at) == datetime(2026, 3, 9, 3, 0, tzinfo=tz)
    assert nightly_since("02:30", at) == at
