"""``monitor demo``: the whole loop on generated campaigns, ending with the reports' paths."""

from __future__ import annotations

import argparse
from pathlib import Path

from monitor.cli.context import Context
from monitor.cli.show import echo


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "demo",
        parents=[common],
        help="generate four campaigns with planted problems, ingest, recompute, write reports",
        description="Generates ratings, labels, multi-label and pairwise campaigns with planted "
        "spammers, careless and adversarial workers and ambiguous items, writes them as CSV, "
        "ingests them into the database, recomputes and writes one HTML report each "
        "(in report_dir). Re-running reuses the campaigns. They go to the default database "
        "(--db URL for another, e.g. --db sqlite:///monitor-demo.db to keep them apart from "
        "real work) and 'monitor campaign delete demo-ratings --yes' (and the others) removes "
        "them.",
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
    from monitor.actions.demo import run_demo
    from monitor.core.errors import UsageError

    if args.workers < 8 or args.items < 10 or not 2 <= args.per_item <= args.workers:
        raise UsageError(
            "the demo needs --workers >= 8, --items >= 10 and 2 <= --per-item <= --workers"
        )
    from monitor.store.engine import redact

    if getattr(args, "db", None) is None:  # the default database: say which it is
        echo(
            f"demo database: {redact(ctx.settings.database_url)} (--db URL for another; "
            "'monitor campaign delete demo-ratings --yes' and the like remove its campaigns)",
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
