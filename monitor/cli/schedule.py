"""``monitor schedule``: the scheduler in the foreground until SIGTERM or Ctrl-C."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import TYPE_CHECKING

from monitor.cli.context import Context
from monitor.cli.recompute import cluster_option

if TYPE_CHECKING:
    from distributed import Client

    from monitor.core.settings import Settings


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "schedule",
        parents=[common],
        help="run the scheduler: incremental recomputes and the nightly report, until stopped",
        description="Pull every campaign connected to Label Studio ('monitor campaign "
        "connect'), then recompute every campaign incrementally, every --every minutes (setting "
        "recompute_every_minutes); and at --nightly-at (setting nightly_at, local time) run a "
        "full recompute and write every campaign's report to --report-dir. One log line per "
        "run. Stops cleanly on SIGTERM or Ctrl-C, after the job under way.",
    )
    p.add_argument("--every", type=int, metavar="MINUTES", help="incremental interval")
    p.add_argument("--nightly-at", metavar="HH:MM", help="time of the nightly full run")
    p.add_argument("--report-dir", metavar="DIR", help="where the nightly reports go")
    cluster_option(
        p, "send each due campaign's recompute to", ", one log line per job naming the worker"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    settings = ctx.settings.replace(
        recompute_every_minutes=args.every, nightly_at=args.nightly_at, report_dir=args.report_dir
    )
    from monitor.cli.show import PrintableFormatter

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(PrintableFormatter("%(asctime)s %(name)s %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    for noisy in ("apscheduler", "alembic", "distributed", "httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    cluster = None
    if args.cluster:
        from monitor.cli.recompute import connect_cluster

        _, cluster = connect_cluster(settings, args.cluster)
    try:
        _run(ctx, settings, cluster)
    finally:
        if cluster is not None:
            cluster.close()
    return 0


def _run(ctx: Context, settings: Settings, cluster: Client | None) -> None:
    from monitor.runtime.scheduler import run_forever

    where = f", jobs on the cluster at {cluster.scheduler.address}" if cluster else ""
    engine = ctx.engine()
    run_forever(
        engine,
        settings,
        cluster=cluster,
        on_start=lambda: logging.getLogger("monitor.scheduler").info(
            "scheduler started: incremental every %d min, nightly at %s%s",
            settings.recompute_every_minutes,
            settings.nightly_at,
            where,
        ),
    )
