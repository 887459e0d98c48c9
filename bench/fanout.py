"""Many campaigns: the full recompute of every campaign in one process against the same work
as jobs on a Dask ``LocalCluster`` of single-threaded worker processes, with the database's
load during each (connections, rows written per second) and a projection for N machines.

    python bench/fanout.py [--campaigns 40] [--n 100000] [--workers 2] [--db URL]

Runs against a throwaway PostgreSQL database on --db's server (default the local one). Each
campaign is a 1-5 rating campaign from ``bench/recompute.py``'s generator (5 judgments an item,
10% spammers), ingested as ``monitor ingest`` does. Both phases make a full run of every
campaign (no snapshot files, ``cache_dir`` ''), default settings otherwise. The database shares
the machine's cores with the workers, as on a laptop; on a cluster it has a machine of its own.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from recompute import DEFAULT_SERVER, generate, with_database  # noqa: E402


class DatabaseLoad:
    """Samples the database's connections (``pg_stat_activity``) every ``every`` seconds and
    its inserted rows (``pg_stat_database.tup_inserted``) at the start and end of a phase."""

    def __init__(self, url: str, every: float = 0.25) -> None:
        import psycopg

        self.conn = psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"))
        self.conn.autocommit = True
        self.every = every
        self.connections: list[int] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _query(self, sql: str) -> int:
        with self.conn.cursor() as cur:
            cur.execute(sql)
            return int(cur.fetchone()[0])

    def inserted(self) -> int:
        self.conn.execute("SELECT pg_stat_clear_snapshot()")
        return self._query(
            "SELECT tup_inserted FROM pg_stat_database WHERE datname = current_database()"
        )

    def _sample(self) -> None:
        while not self._stop.wait(self.every):
            self.connections.append(
                self._query(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND pid <> pg_backend_pid()"
                )
            )

    def __enter__(self) -> DatabaseLoad:
        self.connections = []
        self.rows_before = self.inserted()
        self.started = time.perf_counter()
        self._stop.clear()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.seconds = time.perf_counter() - self.started
        self._stop.set()
        assert self._thread is not None
        self._thread.join()
        time.sleep(1.2)  # the statistics are flushed at most once a second
        self.rows = self.inserted() - self.rows_before

    def summary(self) -> dict[str, float]:
        c = self.connections or [0]
        return {
            "connections_peak": max(c),
            "connections_mean": statistics.fmean(c),
            "rows": self.rows,
            "rows_per_s": self.rows / self.seconds,
        }


def setup(url: str, campaigns: int, n: int, tmp: Path) -> float:
    """The campaigns, ingested; returns the rows the database took per second meanwhile."""
    from monitor.ingest.api import create_campaign, ingest_file
    from monitor.store.campaigns import CampaignSpec
    from monitor.store.engine import make_engine
    from monitor.store.migrate import upgrade

    engine = make_engine(url)
    upgrade(engine)
    paths = [tmp / f"c{k}.csv" for k in range(campaigns)]
    for k, path in enumerate(paths):
        generate(path, n, seed=100 + k)
    load = DatabaseLoad(url)
    with load:
        for k, path in enumerate(paths):
            create_campaign(engine, CampaignSpec(f"c{k:03d}", "rating", None, 1, 5))
            ingest_file(engine, path, f"c{k:03d}")
    for path in paths:
        path.unlink()
    engine.dispose()
    load.conn.close()
    return load.rows / load.seconds


def in_process(url: str, settings) -> tuple[float, list[float], dict]:  # noqa: ANN001
    from monitor.incremental.cache import RunCache
    from monitor.pipeline import recompute
    from monitor.store.engine import make_engine

    engine = make_engine(url)
    settings = settings.replace(database_url=url)
    with DatabaseLoad(url) as load:
        t = time.perf_counter()
        outcomes = recompute(engine, settings, full=True, cache=RunCache.from_settings(settings))
        wall = time.perf_counter() - t
    assert all(o.status == "ok" for o in outcomes), [o.line() for o in outcomes]
    engine.dispose()
    load.conn.close()
    return wall, [o.seconds for o in outcomes], load.summary()


def on_cluster(url: str, settings, address: str) -> tuple[float, list[float], dict, dict]:  # noqa: ANN001
    from monitor.runtime.cluster import connect, due_campaigns, recompute_on
    from monitor.store.engine import make_engine

    engine = make_engine(url)
    settings = settings.replace(database_url=url)
    names = due_campaigns(engine, full=True)
    with connect(address) as client, DatabaseLoad(url) as load:
        t = time.perf_counter()
        results = recompute_on(client, settings, names, full=True)
        wall = time.perf_counter() - t
    assert all(r.status == "ok" for r in results), [r.line() for r in results]
    per_worker: dict[str, int] = {}
    for r in results:
        per_worker[r.worker] = per_worker.get(r.worker, 0) + 1
    engine.dispose()
    load.conn.close()
    seconds = [r.outcome.seconds for r in results if r.outcome is not None]
    return wall, seconds, load.summary(), per_worker


def clone(server: str, template_url: str, fn) -> object:  # noqa: ANN001
    """``fn(url)`` on a copy of the database at ``template_url`` (every phase makes the first
    runs of the same campaigns), dropped afterwards."""
    import psycopg

    name = f"monitor_bench_{uuid.uuid4().hex[:8]}"
    admin = server.replace("postgresql+psycopg://", "postgresql://")
    template = template_url.rsplit("/", 1)[1]
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    try:
        return fn(server.rsplit("/", 1)[0] + "/" + name)
    finally:
        with psycopg.connect(admin, autocommit=True) as c:
            c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--campaigns", type=int, default=40)
    ap.add_argument("--n", type=int, default=100_000, help="judgments per campaign")
    ap.add_argument("--workers", type=int, default=2, help="LocalCluster worker processes")
    ap.add_argument(
        "--rounds", type=int, default=2, help="phases alternated this many times (best kept)"
    )
    ap.add_argument("--db", default=os.environ.get("MONITOR_BENCH_PG", DEFAULT_SERVER))
    args = ap.parse_args()

    from distributed import Client, LocalCluster

    from monitor.core.settings import load_settings

    tmp = Path(tempfile.mkdtemp(prefix="monitor-fanout-"))

    def bench(url: str) -> None:
        import monitor.pipeline  # noqa: F401 - imports are not the phase's time

        settings = load_settings(env=os.environ).replace(database_url=url, cache_dir="")
        t = time.perf_counter()
        ingest_rate = setup(url, args.campaigns, args.n, tmp)
        print(
            f"{args.campaigns} campaigns of {args.n:,} judgments ingested in "
            f"{time.perf_counter() - t:.0f} s ({ingest_rate:,.0f} rows/s into the database)"
        )
        cluster = LocalCluster(
            n_workers=args.workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=40,
        )
        with Client(cluster) as warmup:  # imports are not the phase's time
            warmup.run(lambda: __import__("monitor.pipeline"))
        ones, manys = [], []
        for r in range(args.rounds):
            load_before = os.getloadavg()[0]
            ones.append(clone(args.db, url, lambda u: in_process(u, settings)))
            manys.append(
                clone(args.db, url, lambda u: on_cluster(u, settings, cluster.scheduler_address))
            )
            print(
                f"  round {r + 1}: one process {ones[-1][0]:.1f} s, cluster {manys[-1][0]:.1f} s"
                f" (load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after,"
                f" {os.cpu_count()} cores)"
            )
        cluster.close()
        one = min(ones, key=lambda x: x[0])
        many = min(manys, key=lambda x: x[0])
        _print(args, *one, *many, ingest_rate)

    with_database(args.db, bench)


def _print(args, one, one_jobs, one_load, many, many_jobs, many_load, per_worker, ingest_rate):  # noqa: ANN001, ANN202, PLR0913
    w = args.workers
    print(f"\nfull recompute of {args.campaigns} campaigns x {args.n:,} judgments (PostgreSQL)")
    for label, wall, jobs, load in (
        ("one process", one, one_jobs, one_load),
        (f"LocalCluster {w} x 1 thread", many, many_jobs, many_load),
    ):
        print(
            f"  {label:26} wall {wall:7.1f} s   per job median {statistics.median(jobs):5.2f} s"
            f" (max {max(jobs):5.2f})   connections peak {load['connections_peak']:3.0f}"
            f" mean {load['connections_mean']:5.1f}   rows written {load['rows_per_s']:9,.0f}/s"
        )
    print(
        f"  speed-up {one / many:.2f}x (target >= 1.6x); jobs per worker {sorted(per_worker.values())}"
    )
    # Projection: machines of `w` single-threaded workers each, the database on its own machine.
    # Compute-bound time is the sum of the per-job times (as measured on the cluster, with the
    # database on the same cores) over the workers; the database must take the rows the jobs
    # write at the rate they write them, and per-worker connections add up.
    job_total = sum(many_jobs)
    rows = many_load["rows"]
    rows_per_job_s = rows / job_total
    conns_per_worker = max(many_load["connections_peak"] - 1, 1) / w
    print(
        f"\nprojection, {w} single-threaded workers a machine, the database on its own machine"
        f" (it took {ingest_rate:,.0f} rows/s at ingest here: the write ceiling used below)"
    )
    print("  machines   wall (s)   rows written/s   connections   bound by")
    for machines in (1, 2, 4, 8, 16, 32, 64):
        k = machines * w
        compute = job_total / k
        db = rows / ingest_rate
        wall = max(compute, db)
        print(
            f"  {machines:8d}   {wall:8.1f}   {min(k * rows_per_job_s, ingest_rate):14,.0f}"
            f"   {k * conns_per_worker + 1:11.0f}   {'workers' if compute >= db else 'PostgreSQL'}"
        )


if __name__ == "__main__":
    main()
