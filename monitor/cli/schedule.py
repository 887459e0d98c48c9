"""``monitor schedule``: the scheduler in the foreground until SIGTERM or Ctrl-C."""

from __future__ import annotations

import argparse
import logging
import sys

from monitor.cli.context import Context


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "schedule",
        parents=[common],
        help="run the scheduler: incremental recomputes and the nightly report, until stopped",
        description="Recompute every campaign incrementally every --every minutes (setting "
        "recompute_every_minutes), and at --nightly-at (setting nightly_at, local time) run a "
        "full recompute and write every campaign's report to --report-dir. One log line per "
        "run. Stops cleanly on SIGTERM or Ctrl-C, after the job under way.",
    )
    p.add_argument("--every", type=int, metavar="MINUTES", help="incremental interval")
    p.add_argument("--nightly-at", metavar="HH:MM", help="time of the nightly full run")
    p.add_argument("--report-dir", metavar="DIR", help="where the nightly reports go")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    from monitor.scheduler import run_forever

    settings = ctx.settings.replace(
        recompute_every_minutes=args.every, nightly_at=args.nightly_at, report_dir=args.report_dir
    )
    from monitor.cli.show import PrintableFormatter

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(PrintableFormatter("%(asctime)s %(name)s %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    for noisy in ("apscheduler", "alembic"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    engine = ctx.engine()
    run_forever(
        engine,
        settings,
        on_start=lambda: logging.getLogger("monitor.scheduler").info(
            "scheduler started: incremental every %d min, nightly at %s",
            settings.recompute_every_minutes,
            settings.nightly_at,
        ),
    )
    return 0
