"""``monitor ingest FILE --campaign NAME``: store judgments (CSV, JSON Lines, platform exports);
``monitor ingest history`` and ``monitor ingest rejected``: what each file brought.

``history`` and ``rejected`` are words where ``ingest`` expects its FILE (see
:class:`monitor.cli.parsing.Parser`): a file of either name is ingested as ``./rejected``, and a
command that reads the word while such a file is in the working folder says so.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from monitor.cli.context import Context
from monitor.cli.parsing import Parser
from monitor.cli.show import echo, echo_json, echo_table
from monitor.core.errors import UsageError

FORMATS = ("csv", "jsonl", "mturk", "labelstudio", "toloka", "prolific", "figure-eight")
WORDS = ("history", "rejected")


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p: Parser = sub.add_parser(
        "ingest",
        parents=[common],
        help="store judgments from a file; list past ingests and rejected rows",
        description="Store the judgments of FILE in a campaign. Re-ingesting a file (or an "
        "overlapping one) stores nothing twice. By default nothing is written when any row is "
        "bad; with --skip-invalid the good rows are stored and the bad ones kept with their "
        "reasons.",
        epilog="Also: 'monitor ingest history --campaign NAME [--json]' lists the ingest "
        "batches (file, checksum, when, rows stored, duplicate and rejected); 'monitor ingest "
        "rejected --campaign NAME [--batch N] [--json]' lists the rejected rows with their "
        "file, line, reasons and raw text; 'monitor ingest undo --campaign NAME --batch N' "
        "takes one batch back out. A file named history, rejected or undo is ingested as "
        "./history, ./rejected or ./undo.",
    )
    p.add_argument(
        "file",
        metavar="FILE",
        type=Path,
        nargs="?",
        help="the judgments (optional with --items: the items file alone, gold at any time)",
    )
    p.add_argument("--campaign", required=True, metavar="NAME")
    p.add_argument("--items", type=Path, metavar="FILE", help="items file: item, gold, text")
    p.add_argument(
        "--format",
        choices=FORMATS,
        help="default: by extension (.csv, .tsv, .jsonl, .ndjson, each also .gz), else by "
        "the first line; platform exports detected",
    )
    p.add_argument(
        "--skip-invalid", action="store_true", help="store the good rows, keep the bad ones apart"
    )
    key_values(
        p, "--map", "which column holds a canonical column (repeatable), e.g. --map worker=PID"
    )
    key_values(
        p, "--option", "platform reader option (repeatable), e.g. --option keep_rejected=true"
    )
    p.add_argument(
        "--delimiter",
        metavar="CHAR",
        help="a CSV file's delimiter: ',', ';', tab, '|' ... (default: the one its header "
        "line holds most of; tab for .tsv)",
    )
    p.set_defaults(func=run)

    # Three words, each its description and options, through one helper (_word): the calls
    # look alike, as campaign.py's campaign_command calls do, and share nothing more.
    history = _word(
        p,
        common,
        "history",
        run_history,
        "List a campaign's ingest batches, oldest first: the batch number, when it started "
        "(UTC), the file, its format, its rows, how many were stored, duplicate (stored before) "
        "and rejected, and the file's sha256 (its first 12 digits; all of it with --json, one "
        "JSON object a line).",
    )
    history.add_argument("--json", action="store_true", help="one JSON object a batch")
    rejected = _word(
        p,
        common,
        "rejected",
        run_rejected,
        "List the rows a campaign's ingests rejected under --skip-invalid, in file order: each "
        "reason (FILE:LINE: column 'NAME': what is wrong) and the row as it was read. Control "
        "characters and escapes in a row are written as escapes.",
    )
    rejected.add_argument(
        "--batch", type=int, metavar="N", help="only this ingest batch (see ingest history)"
    )
    rejected.add_argument("--json", action="store_true", help="one JSON object a rejected row")
    undo = _word(
        p,
        common,
        "undo",
        run_undo,
        "Take one ingest batch (one file) back out of a campaign, in one transaction: the "
        "judgments it stored, its rejected rows, the workers and items only it brought, the "
        "categories it added to a campaign that takes them from the data. The next recompute "
        "counts the rest (a full run). Gold values or texts its items file gave items that "
        "existed before stay.",
    )
    undo.add_argument(
        "--batch", type=int, required=True, metavar="N", help="the batch (see ingest history)"
    )


def _word(
    p: Parser,
    common: argparse.ArgumentParser,
    word: str,
    func: Callable[[argparse.Namespace, Context], int],
    description: str,
) -> Parser:
    """``monitor ingest WORD --campaign NAME``: a word of ``ingest`` about one campaign's
    batches, run by ``func``."""
    parser = p.add_word(word, parents=[common], description=description)
    parser.add_argument("--campaign", required=True, metavar="NAME")
    parser.set_defaults(func=func, word=word)
    return parser


def key_values(p: argparse.ArgumentParser, option: str, what: str) -> None:
    """A repeatable ``KEY=VALUE`` option (``--map``, ``--option``) with its help ``what``,
    read by :func:`pairs`."""
    p.add_argument(option, action="append", default=[], metavar="KEY=VALUE", help=what)


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
    from monitor.ingest.api import ingest_file, ingest_items
    from monitor.store.connect import step

    if args.file is None:
        if args.items is None:
            raise UsageError(
                "ingest needs a judgments FILE, or --items FILE alone",
                hint=f"monitor ingest judgments.csv --campaign {shlex.quote(args.campaign)}",
            )
        n = ingest_items(ctx.engine(), args.items, args.campaign)
        echo(
            f"{args.items}: {n} items with gold values or texts stored; the next "
            f"'monitor recompute --campaign {shlex.quote(args.campaign)}' counts them"
        )
        return 0

    with step(f"loading {args.file} into campaign {args.campaign}"):
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
            delimiter=args.delimiter,
        )
    how = summary.format
    if summary.detected_platform:
        how = f"{how}, detected platform {summary.detected_platform}"
    echo(
        f"{summary.path} ({how}): {summary.n_rows} rows: {summary.n_new} new, "
        f"{summary.n_duplicate} duplicate, {summary.n_rejected} rejected"
    )
    if summary.n_items:
        echo(f"{summary.n_items} items with gold values or texts stored")
    for note in summary.notes:
        echo(note)
    if summary.n_rejected:
        echo(
            f"rejected rows are kept with their reasons in ingest batch {summary.batch_id}: "
            f"monitor ingest rejected --campaign {shlex.quote(args.campaign)} "
            f"--batch {summary.batch_id}"
        )
    return 0


def _word_is_also_a_file(args: argparse.Namespace) -> None:
    if Path(args.word).exists():
        echo(
            f"note: '{args.word}' is read as 'monitor ingest {args.word}'; to ingest the file "
            f"of that name, write ./{args.word}",
            err=True,
        )


def run_history(args: argparse.Namespace, ctx: Context) -> int:
    from monitor.store.batches import ingest_batches
    from monitor.store.campaigns import get_campaign
    from monitor.store.engine import transaction

    _word_is_also_a_file(args)
    with transaction(ctx.engine()) as s:
        campaign = get_campaign(s, args.campaign)
        batches = ingest_batches(s, campaign.id)
    if args.json:
        for b in batches:
            echo_json(
                {
                    "batch": b.id,
                    "file": b.path,
                    "format": b.format,
                    "checksum": b.checksum,
                    "started_at": b.started_at.isoformat(),
                    "finished_at": b.finished_at.isoformat() if b.finished_at else None,
                    "rows": b.n_rows,
                    "stored": b.n_new,
                    "duplicate": b.n_duplicate,
                    "rejected": b.n_rejected,
                }
            )
        return 0
    if not batches:
        echo(f"nothing ingested into campaign {campaign.name} yet")
        return 0
    header = ("batch", "started (UTC)", "file", "format", "rows", "stored", "duplicate")
    table = [(*header, "rejected", "sha256")] + [
        (
            str(b.id),
            b.started_at.strftime("%Y-%m-%d %H:%M:%S"),
            b.path,
            b.format,
            f"{b.n_rows:,}",
            f"{b.n_new:,}",
            f"{b.n_duplicate:,}",
            f"{b.n_rejected:,}",
            b.checksum[:12],
        )
        for b in batches
    ]
    echo_table(table, numeric={0, 4, 5, 6, 7})
    return 0


def run_rejected(args: argparse.Namespace, ctx: Context) -> int:
    from monitor.core.errors import NotFound
    from monitor.store.batches import ingest_batches, rejected_rows
    from monitor.store.campaigns import get_campaign
    from monitor.store.engine import transaction

    _word_is_also_a_file(args)
    with transaction(ctx.engine()) as s:
        campaign = get_campaign(s, args.campaign)
        name = shlex.quote(campaign.name)
        if args.batch is not None and args.batch not in {
            b.id for b in ingest_batches(s, campaign.id)
        }:
            raise NotFound(
                f"campaign {campaign.name} has no ingest batch {args.batch}",
                hint=f"list its batches with: monitor ingest history --campaign {name}",
            )
        n = 0
        for row in rejected_rows(s, campaign.id, args.batch):
            n += 1
            if args.json:
                echo_json(_row(row))
                continue
            for reason in row.reasons:
                echo(reason)
            echo(f"    row: {row.raw}")
    if not args.json:
        where = f"batch {args.batch}" if args.batch is not None else f"campaign {campaign.name}"
        echo(f"{n:,} rejected row{'' if n == 1 else 's'} in {where}")
    return 0


def run_undo(args: argparse.Namespace, ctx: Context) -> int:
    from monitor.store.batches import undo_batch
    from monitor.store.campaigns import get_campaign
    from monitor.store.engine import transaction

    _word_is_also_a_file(args)
    with transaction(ctx.engine()) as s:
        campaign = get_campaign(s, args.campaign)
        done = undo_batch(s, campaign, args.batch)
    counts = ", ".join(
        f"{n:,} {what}{'' if n == 1 else 's'}"
        for n, what in (
            (done.n_judgments, "judgment"),
            (done.n_workers, "worker"),
            (done.n_items, "item"),
        )
    )
    echo(
        f"batch {done.batch_id} ({done.path}) taken out of campaign {campaign.name}: {counts}; "
        "the next recompute is a full run"
    )
    if done.later_duplicates:
        echo(
            f"note: later batches found {done.later_duplicates:,} of their rows already stored; "
            "those that came with this batch went with it (ingest those files again to bring "
            "them back)",
            err=True,
        )
    return 0


def _row(row: Any) -> dict[str, Any]:  # noqa: ANN401
    return {
        "batch": row.batch_id,
        "file": row.path,
        "line": row.line,
        "reasons": row.reasons,
        "raw": row.raw,
    }
