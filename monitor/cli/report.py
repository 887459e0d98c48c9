"""``monitor report``: write the campaign report (HTML or the JSON document)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from monitor.cli.context import Context
from monitor.cli.show import JsonStream, TerminalStream, echo
from monitor.errors import UsageError


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "report",
        parents=[common],
        help="write the campaign report (self-contained HTML, or the JSON document)",
        description="Write the report of a campaign's latest run. HTML goes to --out, else to "
        "<report_dir>/<campaign>.html; JSON (--json, or --format json) goes to --out, else to "
        "standard output.",
    )
    p.add_argument("--campaign", required=True, metavar="NAME")
    p.add_argument("--out", metavar="PATH", help="file to write ('-' for standard output)")
    p.add_argument("--format", choices=("html", "json"), help="html (default) or json")
    p.add_argument(
        "--json",
        action="store_true",
        help="the JSON document (as --format json; as analyze --json and workers --json)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    from monitor.report.render import report_filename, write_report, write_report_to

    if args.json and args.format == "html":
        raise UsageError("--json and --format html ask for two formats", hint="give one")
    args.format = "json" if args.json else args.format or "html"
    engine = ctx.engine()
    if args.out == "-" or (args.out is None and args.format == "json"):
        stream = JsonStream(sys.stdout) if args.format == "json" else TerminalStream(sys.stdout)
        write_report_to(engine, args.campaign, stream, args.format)  # type: ignore[arg-type]
        return 0
    out = (
        Path(args.out)
        if args.out
        else Path(ctx.settings.report_dir) / report_filename(args.campaign, args.format)
    )
    path = write_report(engine, args.campaign, out, args.format)
    echo(path)
    return 0
