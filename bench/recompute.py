"""Recompute at scale: a full run, then incremental ones after 1% new judgments, in the
scheduler's process (arrays kept in memory) and from a cold CLI (a new process starting from the
array snapshot); the report of the campaign; and a large campaign end to end (ingest + full
recompute) with its peak memory.

    python bench/recompute.py [--n 1000000] [--big 10000000 | --no-big] [--db URL]
    python bench/recompute.py --memory [--quick]     # 4.3 million judgments of 5,000 workers

``--memory`` measures the peak resident memory (``ru_maxrss`` of a child process) of a full
recompute of a rating campaign of 4,300,000 judgments by 5,000 workers (``--quick``: 430,000 by
500) in the embedded default, SQLite (a file in a temporary folder), against the target of
1.5 GB; the ingest's peak is printed too.

Runs against PostgreSQL (a throwaway database on --db's server, default the local one) with the
default settings (the array snapshots in a temporary directory). Each phase runs in a fresh
subprocess so that its peak memory is its own; the scheduler phase runs the full recompute,
then three times an ingest of 1% and the incremental recompute, in one process, as
``monitor schedule`` would (with its memory settings, :func:`monitor.runtime.memory.keep_freed_memory`,
and its collection of garbage after each job, :func:`monitor.runtime.memory.collect_between_runs`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_SERVER = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
SCHEDULED = 3
"""Incremental runs of +1% each in the scheduler's process: the first after the full run, and
two more as a scheduler runs them every few minutes (the figures vary by 10% from run to run
on a shared machine; the median of the three says more than one)."""


def generate(path: Path, n: int, *, seed: int, start: int = 0, n_workers: int = 200) -> None:
    """A 1-5 rating campaign: 5 judgments per item, 10% spammers, written as canonical CSV."""
    rng = np.random.default_rng(seed)
    per_item = 5
    n_items = max(n // per_item, 1)
    truth = rng.integers(1, 6, n_items)
    spam = rng.random(n_workers) < 0.1
    with path.open("w", encoding="utf-8") as f:
        f.write("worker,item,value,judgment_id\n")
        block = 200_000
        for lo in range(0, n, block):
            k = np.arange(lo, min(lo + block, n))
            item = k // per_item
            worker = (item * 7 + (k % per_item) * 13 + start) % n_workers
            noise = np.rint(rng.normal(0, 0.7, k.size)).astype(int)
            value = np.clip(truth[item % n_items] + noise, 1, 5)
            value = np.where(spam[worker], rng.integers(1, 6, k.size), value)
            lines = [
                f"w{w},i{i},{v},j{start + j}\n"
                for w, i, v, j in zip(
                    worker.tolist(), item.tolist(), value.tolist(), k.tolist(), strict=True
                )
            ]
            f.writelines(lines)


def phase(url: str, what: str, arg: str = "", cache: str = "") -> dict:
    """Run one phase in a subprocess; returns its timing and peak memory."""
    out = subprocess.run(
        [sys.executable, __file__, "--phase", what, "--db", url, "--arg", arg],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "MONITOR_CACHE_DIR": cache},
    )
    if out.returncode != 0:
        sys.exit(f"phase {what} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _recompute(engine, full: bool, cache=None) -> dict:  # noqa: ANN001
    from sqlalchemy import text

    from monitor.core.settings import load_settings
    from monitor.pipeline import recompute

    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t = time.perf_counter()
    settings = load_settings(env=os.environ)
    [o] = recompute(engine, settings, campaign="bench", full=full, cache=cache)
    detail = {
        "seconds": time.perf_counter() - t,
        "status": o.status,
        "new": o.n_new,
        "page_faults": resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults,
    }
    with engine.connect() as c:
        it = c.execute(
            text(
                "SELECT v.value FROM metric_values v JOIN metric_runs r ON r.id = v.run_id "
                "WHERE v.metric = 'crowdtruth_iterations' ORDER BY r.id DESC LIMIT 1"
            )
        ).scalar()
    detail["crowdtruth_iterations"] = it
    return detail


def _ingest(engine, path: str) -> dict:  # noqa: ANN001
    from monitor.core.errors import UsageError
    from monitor.ingest.api import create_campaign, ingest_file
    from monitor.store.campaigns import CampaignSpec
    from monitor.store.migrate import upgrade

    t = time.perf_counter()
    upgrade(engine)
    with contextlib.suppress(UsageError):  # exists already at the second ingest
        create_campaign(engine, CampaignSpec("bench", "rating", None, 1, 5))
    s = ingest_file(engine, Path(path), "bench")
    return {"seconds": time.perf_counter() - t, "new": s.n_new}


def run_phase(url: str, what: str, arg: str) -> None:
    import monitor.pipeline  # noqa: F401 - imports are not the phase's time
    from monitor.store.engine import make_engine

    engine = make_engine(url)
    if what == "ingest":
        detail = _ingest(engine, arg)
    elif what == "scheduler":  # one process: full, ingest 1%, incremental (arrays in memory)
        from monitor.core.settings import load_settings
        from monitor.incremental.cache import RunCache
        from monitor.runtime.memory import collect_between_runs, keep_freed_memory

        keep_freed_memory()  # as ``monitor schedule`` does
        cache = RunCache.from_settings(load_settings(env=os.environ))  # kept for its life
        full = _recompute(engine, True, cache)
        runs = []
        for path in arg.split(os.pathsep):
            collect_between_runs()  # as after each of its jobs
            _ingest(engine, path)
            runs.append(_recompute(engine, False, cache))
        detail = {**runs[0], "full": full, "runs": runs}
    elif what == "report":
        from monitor.report.render import write_report

        t = time.perf_counter()
        write_report(engine, "bench", Path(arg), "json" if arg.endswith(".json") else "html")
        detail = {"seconds": time.perf_counter() - t}
    else:
        detail = _recompute(engine, what == "full")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"peak_mb": peak, **detail}))


MEMORY_TARGET_MB = 1536


def memory(tmp: Path, *, quick: bool) -> None:
    """Peak memory of a full recompute of 4.3 million judgments of 5,000 workers (SQLite)."""
    n, workers = (430_000, 500) if quick else (4_300_000, 5_000)
    path = tmp / "memory.csv"
    t = time.perf_counter()
    generate(path, n, seed=4, n_workers=workers)
    print(f"generated {n:,} judgments of {workers:,} workers in {time.perf_counter() - t:.0f} s")
    url = f"sqlite:///{tmp / 'memory.db'}"
    cache = str(tmp / "cache")
    ing = phase(url, "ingest", str(path), cache)
    full = phase(url, "full", "", cache)
    files = (
        sum(f.stat().st_size for f in Path(cache).glob("*")) / 1e6 if Path(cache).is_dir() else 0
    )
    print(f"\n{n:,} judgments of {workers:,} workers (SQLite)")
    print(f"  ingest                 {ing['seconds']:8.1f} s  peak {ing['peak_mb']:7.0f} MB")
    print(
        f"  full recompute         {full['seconds']:8.1f} s  peak {full['peak_mb']:7.0f} MB"
        f"  (target < {MEMORY_TARGET_MB} MB at 4.3M)  cache files {files:,.0f} MB"
    )


def with_database(server: str, fn) -> None:  # noqa: ANN001
    import psycopg

    name = f"monitor_bench_{uuid.uuid4().hex[:8]}"
    admin = server.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    try:
        fn(server.rsplit("/", 1)[0] + "/" + name)
    finally:
        with psycopg.connect(admin, autocommit=True) as c:
            c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--big", type=int, default=10_000_000)
    ap.add_argument("--no-big", action="store_true")
    ap.add_argument("--db", default=os.environ.get("MONITOR_BENCH_PG", DEFAULT_SERVER))
    ap.add_argument("--memory", action="store_true", help="peak memory at 4.3M judgments")
    ap.add_argument("--quick", action="store_true", help="--memory at a tenth of the size")
    ap.add_argument("--phase", help=argparse.SUPPRESS)
    ap.add_argument("--arg", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.phase:
        run_phase(args.db, args.phase, args.arg)
        return

    tmp = Path(tempfile.mkdtemp(prefix="monitor-bench-"))
    if args.memory:
        memory(tmp, quick=args.quick)
        return

    def incremental(url: str) -> None:
        base, more = tmp / "base.csv", tmp / "more.csv"
        extra = [tmp / f"extra{k}.csv" for k in range(SCHEDULED)]
        cache = str(tmp / "cache")
        step = args.n // 100
        generate(base, args.n, seed=1)
        for k, path in enumerate(extra):
            generate(path, step, seed=2 + k, start=args.n + k * step)
        generate(more, step, seed=2 + SCHEDULED, start=args.n + SCHEDULED * step)
        ing = phase(url, "ingest", str(base))
        sched = phase(url, "scheduler", os.pathsep.join(map(str, extra)), cache)
        full = sched["full"]
        seconds = [r["seconds"] for r in sched["runs"]]
        phase(url, "ingest", str(more))
        cold = phase(url, "incremental", "", cache)
        reports = {
            fmt: phase(url, "report", str(tmp / f"report.{fmt}")) for fmt in ("html", "json")
        }
        print(f"\n{args.n:,} judgments (PostgreSQL)")
        print(f"  ingest                 {ing['seconds']:8.1f} s  peak {ing['peak_mb']:7.0f} MB")
        print(
            f"  full recompute         {full['seconds']:8.2f} s"
            f"  CrowdTruth iterations {full['crowdtruth_iterations']:.0f}"
        )
        print(
            f"  incremental (+1%), scheduler process  {sched['seconds']:6.2f} s"
            f"  CrowdTruth iterations {sched['crowdtruth_iterations']:.0f}"
            f"  ratio {sched['seconds'] / full['seconds']:.3f} (target <= 0.10)"
            f"  page faults {sched['page_faults']:,}"
        )
        print(
            f"    then +1% each: {', '.join(f'{x:.2f}' for x in seconds[1:])} s;"
            f" median of the {len(seconds)} {float(np.median(seconds)):.2f} s,"
            f" ratio {float(np.median(seconds)) / full['seconds']:.3f}"
        )
        print(
            f"  incremental (+1%), cold CLI           {cold['seconds']:6.2f} s"
            f"  CrowdTruth iterations {cold['crowdtruth_iterations']:.0f}"
            f"  ratio {cold['seconds'] / full['seconds']:.3f} (target <= 0.30)"
            f"  page faults {cold['page_faults']:,}"
        )
        print(
            f"  peak of the scheduler process {sched['peak_mb']:.0f} MB, cold CLI {cold['peak_mb']:.0f} MB"
        )
        for fmt, r in reports.items():
            print(
                f"  report ({fmt:4})          {r['seconds']:8.2f} s  peak {r['peak_mb']:7.0f} MB"
                "  (target <= 5 s, <= 500 MB)"
            )

    def big(url: str) -> None:
        path = tmp / "big.csv"
        generate(path, args.big, seed=3)
        ing = phase(url, "ingest", str(path))
        full = phase(url, "full")
        total = ing["seconds"] + full["seconds"]
        print(f"\n{args.big:,} judgments end to end (PostgreSQL)")
        print(f"  ingest                 {ing['seconds']:8.1f} s  peak {ing['peak_mb']:7.0f} MB")
        print(f"  full recompute         {full['seconds']:8.1f} s  peak {full['peak_mb']:7.0f} MB")
        print(f"  total                  {total:8.1f} s  (target < 900 s, < 4096 MB)")

    with_database(args.db, incremental)
    if not args.no_big:
        with_database(args.db, big)


if __name__ == "__main__":
    main()
