"""``monitor ingest FILE --campaign NAME``: store judgments (CSV, JSON Lines, platform exports)."""

from __future__ import annotations

import argparse
from pathlib import Path

from monitor.cli.context import Context
from monitor.errors import UsageError

FORMATS = ("csv", "jsonl", "mturk", "labelstudio", "toloka", "prolific", "figure-eight")


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "ingest",
        parents=[common],
        help="store judgments from a file",
        description="Store the judgments of FILE in a campaign. Re-ingesting a file (or an "
        "overlapping one) stores nothing twice. By default nothing is written when any row is "
        "bad; with --skip-invalid the good rows are stored and the bad ones kept with their "
        "reasons.",
    )
    p.add_argument("file", metavar="FILE", type=Path)
    p.add_argument("--campaign", required=True, metavar="NAME")
    p.add_argument("--items", type=Path, metavar="FILE", help="items file: item, gold, text")
    p.add_argument(
        "--format",
        choices=FORMATS,
        help="default: by extension (.csv, .jsonl, .ndjson), platform exports detected",
    )
    p.add_argument(
        "--skip-invalid", action="store_true", help="store the good rows, keep the bad ones apart"
    )
    p.add_argument(
        "--map",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="which column holds a canonical column (repeatable), e.g. --map worker=PID",
    )
    p.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="platform reader option (repeatable), e.g. --option keep_rejected=true",
    )
    p.set_defaults(func=run)


def pairs(values: list[str], option: str) -> dict[str, str]:
    """``["a=b", "c=d=e"]`` -> ``{"a": "b", "c": "d=e"}``; a bare ``KEY`` means ``KEY=``."""
    out: dict[str, str] = {}
    for text in values:
        key, sep, value = text.partition("=")
        key = key.strip()
        if not key or (option == "--map" and not sep):
            raise UsageError(f"{option} {text}: expected KEY=VALUE")
        out[key] = value
    return out


def run(args: argparse.Namespace, ctx: Context) -> int:
    from monitor.ingest.api import ingest_file

    summary = ingest_file(
        ctx.engine(),
        args.file,
        args.campaign,
        items=args.items,
        format=args.format,
        skip_invalid=args.skip_invalid,
        mapping=pairs(args.map, "--map") or None,
        options=pairs(args.option, "--option") or None,
        progress=True,
    )
    how = summary.format
    if summary.detected_platform:
        how = f"{how}, detected platform {summary.detected_platform}"
    print(
        f"{summary.path} ({how}): {summary.n_rows} rows: {summary.n_new} new, "
        f"{summary.n_duplicate} duplicate, {summary.n_rejected} rejected"
    )
    if summary.n_items:
        print(f"{summary.n_items} items with gold values or texts stored")
    for note in summary.notes:
        print(note)
    if summary.n_rejected:
        print(f"rejected rows are kept with their reasons in ingest batch {summary.batch_id}")
    return 0
