"""``monitor export``: block lists, weights and aggregated labels for the platforms."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from monitor.cli.context import Context


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "export",
        parents=[common],
        help="export a block list, worker weights or quality-weighted labels",
        description="blocklist: MTurk Workers CSV (UPDATE-BlockStatus), Prolific list, Toloka "
        "user restrictions TSV, or CSV/JSON. weights: CSV/JSON (MTurk: a qualification score). "
        "labels: CSV/JSON, the reliability model's answer per item (Dawid-Skene label, rating "
        "model mean, multi-label options) with its posterior or sd. See docs/exports.md.",
    )
    p.add_argument("what", choices=("blocklist", "weights", "labels"))
    p.add_argument("--campaign", required=True, metavar="NAME")
    p.add_argument(
        "--platform", choices=("mturk", "prolific", "toloka", "csv", "json"), default="csv"
    )
    p.add_argument("--out", metavar="PATH", help="file to write (default: standard output)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    from monitor.export import export
    from monitor.output import check_target, write_output
    from monitor.store.engine import session_factory

    to_file = bool(args.out and args.out != "-")
    if to_file:
        check_target(Path(args.out), "export", f"{args.what}.{args.platform}")
    with session_factory(ctx.engine())() as s:
        text = export(s, args.what, args.campaign, args.platform)
    if to_file:
        print(write_output(Path(args.out), text, "export", newline=""))
    else:
        sys.stdout.write(text)
    return 0
