"""Benchmark: ``monitor ingest`` into PostgreSQL against a bare ``COPY`` of the same CSV.

    /work/venv/bin/python bench/ingest.py                 # 1,000,000 judgments
    /work/venv/bin/python bench/ingest.py --n 5000000
    /work/venv/bin/python bench/ingest.py --db postgresql://user@host/postgres

The CSV is a rating campaign (1..5; 5 judgments per item, 200 workers) with ``created_at`` and
``duration_s`` and no ``judgment_id`` (so every row is hashed: the costlier dedup path; ``--ids``
adds ids). The server is ``--db``, else ``MONITOR_DATABASE_URL``, else the local one; the
benchmark creates a throwaway database there and drops it at the end. Each measurement runs in
its own subprocess, so its peak resident memory (``ru_maxrss``) is its own:

- ``ingest``: ``monitor.ingest.api.ingest_file`` into a fresh campaign (all indexes, foreign
  keys, dedup);
- ``copy``: ``COPY ... FROM STDIN (FORMAT csv, HEADER)`` of the same file into a plain table of
  the same columns without keys or indexes: the physical limit of getting these bytes into the
  server;
- ``keyed``: ``COPY`` of the same rows already resolved (integer worker and item ids, 16-byte
  dedup digests, as ``judgments`` stores them; prepared before the clock starts) into a table
  ``LIKE judgments INCLUDING ALL``: the same primary key, unique dedup key, ``(campaign_id, id)``
  index and checks, without the integrity triggers. The physical limit for a table that
  guarantees what ``judgments`` guarantees, short of checking the workers and items.
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


def child_ingest(url: str, csv_path: Path) -> dict[str, float]:
    from monitor.ingest.api import ingest_file
    from monitor.store.engine import make_engine

    engine = make_engine(url)
    t = time.perf_counter()
    summary = ingest_file(engine, csv_path, "bench")
    seconds = time.perf_counter() - t
    engine.dispose()
    return {"seconds": seconds, "rows": summary.n_new, "peak_mb": _peak_mb()}


def child_copy(url: str, csv_path: Path) -> dict[str, float]:
    import psycopg

    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as conn:
        conn.execute(
            "CREATE TABLE bare (worker text, item text, value double precision, "
            "created_at timestamptz, duration_s double precision"
            + (", judgment_id text)" if _has_ids(csv_path) else ")")
        )
        conn.commit()
        t = time.perf_counter()
        with (
            conn.cursor() as cur,
            cur.copy("COPY bare FROM STDIN (FORMAT csv, HEADER true)") as copy,
            open(csv_path, "rb") as handle,
        ):
            while block := handle.read(1 << 20):
                copy.write(block)
        conn.commit()
        seconds = time.perf_counter() - t
        rows = conn.execute("SELECT count(*) FROM bare").fetchone()[0]  # type: ignore[index]
    return {"seconds": seconds, "rows": rows, "peak_mb": _peak_mb()}


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
        t = time.perf_counter()
        columns = "campaign_id, worker_id, item_id, value_num, dedup_key, external_id, created_at"
        with (
            conn.cursor() as cur,
            cur.copy(f"COPY keyed ({columns}, duration_s) FROM STDIN (FORMAT csv)") as copy,
            open(resolved, "rb") as handle,
        ):
            while block := handle.read(1 << 20):
                copy.write(block)
        conn.commit()
        seconds = time.perf_counter() - t
        rows = conn.execute("SELECT count(*) FROM keyed").fetchone()[0]  # type: ignore[index]
    return {"seconds": seconds, "rows": rows, "peak_mb": _peak_mb()}


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
    with tempfile.TemporaryDirectory() as tmp:
        csv_path = Path(tmp) / "judgments.csv"
        t = time.perf_counter()
        generate(csv_path, args.n, ids=args.ids)
        size = csv_path.stat().st_size / 1e6
        print(f"generated {args.n:,} judgments ({size:,.0f} MB) in {time.perf_counter() - t:.1f} s")
        resolve(csv_path, csv_path.with_suffix(".resolved.csv"))
        with admin.connect() as c:
            c.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            engine = make_engine(url)
            upgrade(engine)
            from monitor.ingest.api import create_campaign

            create_campaign(engine, CampaignSpec("bench", "rating", scale_min=1, scale_max=5))
            engine.dispose()
            ingest = run_child("ingest", url, csv_path)
            copy = run_child("copy", url, csv_path)
            keyed = run_child("keyed", url, csv_path)
        finally:
            with admin.connect() as c:
                c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()
    rate_i = ingest["rows"] / ingest["seconds"]
    rate_c = copy["rows"] / copy["seconds"]
    rate_k = keyed["rows"] / keyed["seconds"]
    print(f"{'':16}{'rows':>12}{'seconds':>10}{'rows/s':>12}{'peak MB':>10}")
    for label, r, rate in (
        ("monitor ingest", ingest, rate_i),
        ("bare COPY", copy, rate_c),
        ("keyed COPY", keyed, rate_k),
    ):
        print(
            f"{label:16}{int(r['rows']):>12,}{r['seconds']:>10.1f}{rate:>12,.0f}"
            f"{r['peak_mb']:>10.0f}"
        )
    print(f"ratio ingest / bare COPY: {rate_i / rate_c:.2f}")
    print(f"ratio ingest / keyed COPY (resolved rows, judgments' keys): {rate_i / rate_k:.2f}")


CHILDREN = {"ingest": child_ingest, "copy": child_copy, "keyed": child_keyed}

if __name__ == "__main__":
    main()
