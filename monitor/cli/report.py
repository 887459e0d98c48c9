"""``monitor report``: write the campaign report (HTML or the JSON document)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from monitor.cli.context import Context
from monitor.cli.show import JsonStream, TerminalStream, echo
from monitor.core.errors import UsageError
from monitor.core.progress import Progress


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "report",
        parents=[common],
        help="write the campaign report (self-contained HTML, or the JSON document)",
        description="Write the report of a campaign's latest run. HTML goes to --out, else to "
        "<report_dir>/<campaign>.html; JSON (--json, or --format json) goes to --out, else to "
        "standard output. With --all, every campaign's HTML report and JSON document go to the "
        "folder --out (else report_dir), with index.html linking to each.",
    )
    p.add_argument("--campaign", metavar="NAME")
    p.add_argument(
        "--all",
        action="store_true",
        help="every campaign, and the index of campaigns (index.html) in the folder --out",
    )
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

    if args.all:
        return _all(args, ctx)
    if args.campaign is None:
        raise UsageError(
            "name a campaign with --campaign NAME", hint="or write them all with --all"
        )
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
    # the default file is in the folder of reports, perhaps shared: never through a link
    with Progress(f"report {args.campaign}", unit="reports", tick=True, interval=1) as bar:
        bar.update(0, note=f"writing {out.name}")
        path = write_report(engine, args.campaign, out, args.format, follow=args.out is not None)
    echo(path)
    return 0


def _all(args: argparse.Namespace, ctx: Context) -> int:
    """Every campaign's report and the index; exit 1 when a campaign's report failed."""
    from monitor.report.index import write_all

    if args.campaign is not None or args.out == "-":
        raise UsageError(
            "--all writes every campaign's report to a folder",
            hint="give --out DIR (no --campaign, not '-')",
        )
    folder = Path(args.out) if args.out else Path(ctx.settings.report_dir)
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{folder} is a file, not a folder for the reports", hint="name a folder")
    with Progress("report --all", unit="reports", tick=True, interval=1) as bar:
        done: list[Path] = []

        def on_report(path: Path) -> None:
            done.append(path)
            bar.update(len(done), note=path.name)

        written = write_all(ctx.engine(), folder, on_report=on_report)
    for warning in written.warnings:
        echo(f"monitor: warning: {warning}", err=True)
    for name, error in written.failed.items():
        echo(f"monitor: report of campaign {name!r} failed: {error}", err=True)
    echo(written.index)
    return 1 if written.failed else 0
