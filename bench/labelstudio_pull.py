"""Benchmark: ``monitor pull labelstudio`` of 100,000 annotations from a local Label Studio.

    MONITOR_LABELSTUDIO_BIN=.../bin/label-studio .venv/bin/python bench/labelstudio_pull.py
    ... bench/labelstudio_pull.py --annotations 20000          # a quicker run
    ... bench/labelstudio_pull.py --db postgresql+psycopg://postgres@127.0.0.1:5432/bench

A Label Studio Community server is started as the tests start it (tests/connectors/
labelstudio_server.py: a copy of the cached migrated data folder, a free port). One project
with a Choices control gets the tasks, each with its annotations by 10 annotators, through
the bulk import (``/api/projects/ID/import``, in parts of 2,000 tasks). Then, timed: the first
pull (every annotation read through ``/api/tasks/?fields=all`` in pages of 1,000 tasks and
stored), a second pull with nothing changed (one page, nothing stored), and a pull after 100
annotations were changed. Target: the first pull under a minute.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import text  # noqa: E402

from monitor.connectors import labelstudio as ls  # noqa: E402
from monitor.ingest.api import create_campaign  # noqa: E402
from monitor.store.campaigns import CampaignSpec  # noqa: E402
from monitor.store.connect import open_database  # noqa: E402
from tests.connectors.labelstudio_server import (  # noqa: E402
    BIN_ENV,
    LEGACY_TOKEN,
    LabelStudio,
    binary,
    choices,
)

CONFIG = (
    '<View><Text name="text" value="$text"/><Choices name="label" toName="text">'
    '<Choice value="a"/><Choice value="b"/><Choice value="c"/></Choices></View>'
)
ANNOTATORS = 10
PART = 2000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--annotations", type=int, default=100_000)
    parser.add_argument("--per-task", type=int, default=5, help="annotations per task")
    parser.add_argument("--db", help="database URL (default: a SQLite file in a temporary folder)")
    args = parser.parse_args()
    path = binary()
    if path is None:
        print(f"set {BIN_ENV} to a label-studio binary (1.23.2)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="monitor-bench-ls-") as tmp:
        t0 = time.perf_counter()
        server = LabelStudio(path, Path(tmp))
        print(f"server up in {time.perf_counter() - t0:.1f} s at {server.url}")
        try:
            return _run(server, args, Path(tmp))
        finally:
            server.stop()


def _run(server: LabelStudio, args: argparse.Namespace, tmp: Path) -> int:
    rng = random.Random(0)
    users = [server.user(f"bench{i}@example.com") for i in range(ANNOTATORS)]
    project = server.project(CONFIG, title="bench pull")
    n_tasks = args.annotations // args.per_task
    t0 = time.perf_counter()
    for lo in range(0, n_tasks, PART):
        part = []
        for i in range(lo, min(lo + PART, n_tasks)):
            who = rng.sample(users, args.per_task)
            part.append(
                {
                    "data": {"text": f"text {i}"},
                    "annotations": [
                        {
                            "result": choices("label", rng.choice("abc")),
                            "completed_by": u,
                            "ground_truth": False,
                            "lead_time": round(rng.uniform(2, 30), 1),
                        }
                        for u in who
                    ],
                }
            )
        server.import_tasks(project, part)
    own = server.counts(project)["annotations"]
    print(f"imported {n_tasks:,} tasks, {own:,} annotations in {time.perf_counter() - t0:.1f} s")
    url = args.db or f"sqlite:///{tmp / 'bench.db'}"
    engine = open_database(url, lock_timeout=30, statement_timeout=0)
    name = f"bench_ls_{os.getpid()}"
    create_campaign(engine, CampaignSpec(name=name, kind="label", categories=("a", "b", "c")))

    def pull(label: str) -> ls.PullSummary:
        t = time.perf_counter()
        summary = ls.pull(engine, name, url=server.url, project=project, token=LEGACY_TOKEN)
        took = time.perf_counter() - t
        print(
            f"{label:<28} {took:7.2f} s  {summary.n_pages:4d} pages  {summary.n_tasks:7,} tasks  "
            f"{summary.n_annotations:7,} read  {summary.n_judgments:7,} stored  "
            f"{summary.n_removed:5,} taken out  ({summary.n_annotations / took:,.0f} annotations/s)"
        )
        return summary

    first = pull("first pull")
    pull("second pull, nothing new")
    tasks = server.task_ids(project)
    for task in rng.sample(tasks, 100):
        found = server.call("GET", f"/api/tasks/{task}/")
        server.update(found["annotations"][0]["id"], choices("label", rng.choice("abc")))
    pull("after 100 changed")
    with engine.connect() as c:
        stored = c.execute(
            text(
                "SELECT count(*) FROM judgments WHERE campaign_id = "
                "(SELECT id FROM campaigns WHERE name = :n)"
            ),
            {"n": name},
        ).scalar_one()
    print(f"stored {stored:,} judgments; Label Studio counts {own:,}")
    engine.dispose()
    return 0 if stored == own and first.n_judgments == own else 1


if __name__ == "__main__":
    sys.exit(main())
