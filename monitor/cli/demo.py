"""``monitor demo``: the whole loop on generated campaigns, ending with the reports' paths."""

from __future__ import annotations

import argparse
from pathlib import Path

from monitor.cli.context import Context
from monitor.cli.show import echo

DEMO_DB = "monitor-demo.db"
"""The demo's own database (SQLite, in the working directory) unless ``--db`` is given."""


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "demo",
        parents=[common],
        help="generate four campaigns with planted problems, ingest, recompute, write reports",
        description="Generates ratings, labels, multi-label and pairwise campaigns with planted "
        "spammers, careless and adversarial workers and ambiguous items, writes them as CSV, "
        "ingests them into the database, recomputes and writes one HTML report each "
        "(in report_dir). Re-running reuses the campaigns. Its database is its own, "
        f"{DEMO_DB} in the working directory (never the one of the settings or "
        "$MONITOR_DATABASE_URL), unless --db is given.",
    )
    p.add_argument("--seed", type=int, default=None, help="random seed (default: settings.seed)")
    p.add_argument(
        "--data-dir",
        metavar="DIR",
        help="keep the generated CSV files there (default: a temporary folder, removed at the end)",
    )
    p.add_argument("--report-dir", metavar="DIR", help="where the reports go (default: report_dir)")
    p.add_argument("--workers", type=int, default=20, help="workers per campaign (default 20)")
    p.add_argument("--items", type=int, default=200, help="items per campaign (default 200)")
    p.add_argument("--per-item", type=int, default=5, help="judgments per item (default 5)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    from monitor.demo import run_demo
    from monitor.errors import UsageError

    if args.workers < 8 or args.items < 10 or not 2 <= args.per_item <= args.workers:
        raise UsageError(
            "the demo needs --workers >= 8, --items >= 10 and 2 <= --per-item <= --workers"
        )
    if getattr(args, "db", None) is None:
        # never the database real work uses: the demo's campaigns stay out of it
        ctx.settings = ctx.settings.replace(database_url=f"sqlite:///{DEMO_DB}")
        echo(
            f"demo database: {Path(DEMO_DB).resolve()} (delete it when done; --db URL for another)",
            err=True,
        )
    paths = run_demo(
        ctx.engine(),
        ctx.settings,
        data_dir=Path(args.data_dir) if args.data_dir else None,
        report_dir=Path(args.report_dir) if args.report_dir else None,
        seed=args.seed,
        n_workers=args.workers,
        n_items=args.items,
        per_item=args.per_item,
        log=lambda line: echo(line, err=True),
    )
    echo("reports:")
    for path in paths:
        echo(path.resolve())
    return 0
