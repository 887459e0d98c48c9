"""Benchmark: ``monitor ingest`` into SQLite and into PostgreSQL side by side, on the same CSV,
with the physical limit of each.

    .venv/bin/python bench/ingest.py                 # 1,000,000 judgments
    .venv/bin/python bench/ingest.py --n 300000
    .venv/bin/python bench/ingest.py --db postgresql://user@host/postgres

The CSV is a rating campaign (1..5; 5 judgments per item, 200 workers) with ``created_at`` and
``duration_s`` and no ``judgment_id`` (so every row is hashed: the costlier dedup path; ``--ids``
adds ids). The PostgreSQL server is ``--db``, else ``MONITOR_DATABASE_URL``, else the local one;
the benchmark creates a throwaway database there and drops it at the end; the SQLite database is
a file in a temporary folder. Each measurement runs in its own subprocess, so its peak resident
memory (``ru_maxrss``) and its CPU time are its own (the client's: a PostgreSQL server's work is
in its own processes, and shows in the wall time only):

- ``sqlite ingest``: ``monitor.ingest.api.ingest_file`` into a fresh campaign of a fresh SQLite
  database (all indexes, integrity triggers, dedup);
- ``sqlite executemany``: one ``executemany`` of the same rows already resolved (integer worker
  and item ids, 16-byte dedup digests, times as SQLite keeps them; prepared before the clock
  starts) into a table with the keys of ``judgments`` (primary key, unique dedup key,
  ``(campaign_id, id)`` index, checks; no triggers), in one transaction, on a connection set up
  as the loader's: the physical limit of SQLite for these rows;
- ``postgres ingest``: ``ingest_file`` into a fresh campaign on PostgreSQL;
- ``postgres bare COPY``: ``COPY ... FROM STDIN (FORMAT csv, HEADER)`` of the same file into a
  plain table of the same columns without keys or indexes;
- ``postgres keyed COPY``: ``COPY`` of the resolved rows into a table ``LIKE judgments
  INCLUDING ALL``: the same keys and checks, without the integrity triggers.

Besides the client's CPU time, the CPU time of the PostgreSQL backends serving it is read from
``/proc`` when the server is local: the work SQLite does in the client, PostgreSQL does there.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PER_ITEM = 5
WORKERS = 200


def generate(path: Path, n: int, *, ids: bool, seed: int = 0) -> None:
    """Write ``n`` rating judgments as CSV."""
    rng = random.Random(seed)
    start = datetime(2025, 11, 3, tzinfo=UTC)
    with open(path, "w", encoding="utf-8", newline="") as out:
        out.write("worker,item,value,created_at,duration_s" + (",judgment_id\n" if ids else "\n"))
        lines = []
        for k in range(n):
            item = k // PER_ITEM
            worker = rng.randrange(WORKERS)
            value = rng.randint(1, 5)
            moment = (start + timedelta(seconds=k)).strftime("%Y-%m-%dT%H:%M:%SZ")
            line = f"w{worker},item{item},{value},{moment},{rng.randint(3, 90)}"
            lines.append(line + (f",j{k}\n" if ids else "\n"))
            if len(lines) == 100_000:
                out.writelines(lines)
                lines.clear()
        out.writelines(lines)


def admin_url(arg: str | None) -> str:
    from monitor.store.engine import normalise_url

    url = (
        arg
        or os.environ.get("MONITOR_DATABASE_URL")
        or "postgresql://postgres@127.0.0.1:5432/postgres"
    )
    url = normalise_url(url)
    if not url.startswith("postgresql"):
        sys.exit("bench/ingest.py needs a PostgreSQL server (--db postgresql://...)")
    return url


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _measure(fn) -> tuple[float, float]:  # noqa: ANN001
    """Wall and CPU seconds of ``fn()``."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def _backend_cpu(pids: list[int]) -> float:
    """CPU seconds of PostgreSQL server processes so far (a local server's ``/proc``; 0 when
    it cannot be read)."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def child_ingest(url: str, csv_path: Path) -> dict[str, float]:
    from sqlalchemy import event

    from monitor.ingest.api import create_campaign, ingest_file
    from monitor.store.campaigns import CampaignSpec
    from monitor.store.engine import make_engine
    from monitor.store.migrate import upgrade

    engine = make_engine(url)
    pids: list[int] = []
    if url.startswith("sqlite"):
        upgrade(engine)
        create_campaign(engine, CampaignSpec("bench", "rating", scale_min=1, scale_max=5))
    else:
        event.listen(
            engine,
            "connect",
            lambda c, _r: pids.append(c.execute("SELECT pg_backend_pid()").fetchone()[0]),
        )
        with engine.connect():  # the pool's connection, before the clock starts
            pass
    out = {}
    server = _backend_cpu(pids)
    seconds, cpu = _measure(lambda: out.update(s=ingest_file(engine, csv_path, "bench")))
    server = _backend_cpu(pids) - server
    engine.dispose()
    return {
        "seconds": seconds,
        "cpu": cpu,
        "server_cpu": server,
        "rows": out["s"].n_new,
        "peak_mb": _peak_mb(),
    }


def child_executemany(url: str, csv_path: Path) -> dict[str, float]:
    """The resolved rows into a keyed SQLite table: one executemany, one transaction."""
    import csv

    from sqlalchemy import MetaData

    from monitor.ingest import load as loader
    from monitor.store.engine import make_engine
    from monitor.store.models import Judgment

    engine = make_engine(url)
    keyed = Judgment.__table__.to_metadata(MetaData(), name="keyed")
    keyed.create(engine)
    rows = []
    with open(csv_path.with_suffix(".resolved.csv"), encoding="utf-8") as handle:
        for c, w, i, v, d, e, t, s in csv.reader(handle):
            moment = t.replace("T", " ").replace("+00:00", ".000000") if t else None
            rows.append(
                (
                    int(c),
                    int(w),
                    int(i),
                    float(v),
                    bytes.fromhex(d[2:]),
                    e or None,
                    moment,
                    float(s) if s else None,
                )
            )
    sql = (
        "INSERT INTO keyed (campaign_id, worker_id, item_id, value_num, dedup_key,"
        " external_id, created_at, duration_s) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    )
    raw = engine.raw_connection()
    cache = getattr(loader, "BULK_CACHE_KIB", 2000)  # as the loader's (SQLite's default before)
    raw.execute(f"PRAGMA cache_size = -{cache}")

    def load() -> None:
        raw.execute("BEGIN")
        raw.executemany(sql, rows)
        raw.commit()

    seconds, cpu = _measure(load)
    n = raw.execute("SELECT count(*) FROM keyed").fetchone()[0]
    raw.close()
    engine.dispose()
    return {"seconds": seconds, "cpu": cpu, "rows": n, "peak_mb": _peak_mb()}


def child_copy(url: str, csv_path: Path) -> dict[str, float]:
    import psycopg

    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as conn:
        conn.execute(
            "CREATE TABLE bare (worker text, item text, value double precision, "
            "created_at timestamptz, duration_s double precision"
            + (", judgment_id text)" if _has_ids(csv_path) else ")")
        )
        conn.commit()
        pid = [conn.info.backend_pid]
        server = _backend_cpu(pid)
        t, cpu = time.perf_counter(), time.process_time()
        with (
            conn.cursor() as cur,
            cur.copy("COPY bare FROM STDIN (FORMAT csv, HEADER true)") as copy,
            open(csv_path, "rb") as handle,
        ):
            while block := handle.read(1 << 20):
                copy.write(block)
        conn.commit()
        seconds, cpu = time.perf_counter() - t, time.process_time() - cpu
        server = _backend_cpu(pid) - server
        rows = conn.execute("SELECT count(*) FROM bare").fetchone()[0]  # type: ignore[index]
    return {
        "seconds": seconds,
        "cpu": cpu,
        "server_cpu": server,
        "rows": rows,
        "peak_mb": _peak_mb(),
    }


def resolve(csv_path: Path, out_path: Path) -> None:
    """Write the rows of ``csv_path`` as ``judgments`` holds them (campaign 1; worker ``wK`` and
    item ``itemK`` as ids K + 1; the dedup digest as monitor computes it), for ``keyed``."""
    from monitor.ingest.readers import read_csv
    from monitor.ingest.rows import JUDGMENT_COLUMNS
    from monitor.ingest.validate import Validator
    from monitor.store.campaigns import CampaignInfo
    from monitor.store.models import dedup_digest

    info = CampaignInfo(1, "bench", "rating", "interval", 1, 5, None, False, False, {})
    check = Validator(info, str(csv_path)).check
    with open(out_path, "w", encoding="utf-8") as out:
        lines = []
        for row in read_csv(csv_path, columns=JUDGMENT_COLUMNS):
            _, r = check(row)  # type: ignore[union-attr]
            lines.append(
                f"1,{int(r[0][1:]) + 1},{int(r[1][4:]) + 1},{r[2]},\\x{dedup_digest(r[4]).hex()},"
                f"{r[5] or ''},{r[6].isoformat() if r[6] else ''},{'' if r[7] is None else r[7]}\n"
            )
            if len(lines) == 100_000:
                out.writelines(lines)
                lines.clear()
        out.writelines(lines)


def child_keyed(url: str, csv_path: Path) -> dict[str, float]:
    import psycopg

    resolved = csv_path.with_suffix(".resolved.csv")
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as conn:
        conn.execute("CREATE TABLE keyed (LIKE judgments INCLUDING ALL)")
        conn.commit()
        pid = [conn.info.backend_pid]
        server = _backend_cpu(pid)
        t, cpu = time.perf_counter(), time.process_time()
        columns = "campaign_id, worker_id, item_id, value_num, dedup_key, external_id, created_at"
        with (
            conn.cursor() as cur,
            cur.copy(f"COPY keyed ({columns}, duration_s) FROM STDIN (FORMAT csv)") as copy,
            open(resolved, "rb") as handle,
        ):
            while block := handle.read(1 << 20):
                copy.write(block)
        conn.commit()
        seconds, cpu = time.perf_counter() - t, time.process_time() - cpu
        server = _backend_cpu(pid) - server
        rows = conn.execute("SELECT count(*) FROM keyed").fetchone()[0]  # type: ignore[index]
    return {
        "seconds": seconds,
        "cpu": cpu,
        "server_cpu": server,
        "rows": rows,
        "peak_mb": _peak_mb(),
    }


def _has_ids(csv_path: Path) -> bool:
    with open(csv_path, encoding="utf-8") as handle:
        return "judgment_id" in handle.readline()


def run_child(mode: str, url: str, csv_path: Path) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", mode, "--url", url, "--csv", str(csv_path)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="judgments (default 1,000,000)")
    parser.add_argument("--db", help="PostgreSQL server URL (any database on it)")
    parser.add_argument("--ids", action="store_true", help="give every row a judgment_id")
    parser.add_argument("--child", choices=tuple(CHILDREN), help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--csv", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(CHILDREN[args.child](args.url, args.csv)))
        return

    from sqlalchemy import text

    from monitor.store.campaigns import CampaignSpec
    from monitor.store.engine import make_engine
    from monitor.store.migrate import upgrade

    admin = make_engine(admin_url(args.db), isolation_level="AUTOCOMMIT")
    name = f"monitor_bench_{uuid.uuid4().hex[:10]}"
    url = admin.url.set(database=name).render_as_string(hide_password=False)
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        csv_path = Path(tmp) / "judgments.csv"
        t = time.perf_counter()
        generate(csv_path, args.n, ids=args.ids)
        size = csv_path.stat().st_size / 1e6
        print(f"generated {args.n:,} judgments ({size:,.0f} MB) in {time.perf_counter() - t:.1f} s")
        resolve(csv_path, csv_path.with_suffix(".resolved.csv"))
        results["sqlite ingest"] = run_child("ingest", f"sqlite:///{tmp}/ingest.db", csv_path)
        results["sqlite executemany"] = run_child(
            "executemany", f"sqlite:///{tmp}/keyed.db", csv_path
        )
        with admin.connect() as c:
            c.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            engine = make_engine(url)
            upgrade(engine)
            from monitor.ingest.api import create_campaign

            create_campaign(engine, CampaignSpec("bench", "rating", scale_min=1, scale_max=5))
            engine.dispose()
            results["postgres ingest"] = run_child("ingest", url, csv_path)
            results["postgres bare COPY"] = run_child("copy", url, csv_path)
            results["postgres keyed COPY"] = run_child("keyed", url, csv_path)
        finally:
            with admin.connect() as c:
                c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()
    rate = {k: r["rows"] / r["seconds"] for k, r in results.items()}
    print(
        f"{'':22}{'rows':>12}{'wall s':>9}{'CPU s':>9}{'server':>9}{'rows/s':>12}"
        f"{'rows/CPU s':>12}{'peak MB':>10}"
    )
    for label, r in results.items():
        cpu = r["cpu"] + r.get("server_cpu", 0.0)
        print(
            f"{label:22}{int(r['rows']):>12,}{r['seconds']:>9.1f}{r['cpu']:>9.1f}"
            f"{r.get('server_cpu', 0.0):>9.1f}{rate[label]:>12,.0f}{r['rows'] / cpu:>12,.0f}"
            f"{r['peak_mb']:>10.0f}"
        )
    print(
        "(CPU s: the client process's; server: the PostgreSQL backends' (a local server);"
        " rows/CPU s: over both. On a shared machine the wall time varies with the load.)"
    )
    sqlite, pg = rate["sqlite ingest"], rate["postgres ingest"]
    print(f"ratio sqlite ingest / postgres ingest: {sqlite / pg:.2f} (target >= 1.0)")
    print(f"ratio sqlite ingest / sqlite executemany: {sqlite / rate['sqlite executemany']:.2f}")
    print(f"ratio postgres ingest / bare COPY: {pg / rate['postgres bare COPY']:.2f}")
    print(f"ratio postgres ingest / keyed COPY: {pg / rate['postgres keyed COPY']:.2f}")


CHILDREN = {
    "ingest": child_ingest,
    "executemany": child_executemany,
    "copy": child_copy,
    "keyed": child_keyed,
}

if __name__ == "__main__":
    main()
