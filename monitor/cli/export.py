"""``monitor export``: block lists, weights and aggregated labels for the platforms."""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from monitor.cli.context import Context
from monitor.cli.show import echo, write_data


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "export",
        parents=[common],
        help="export a block list, worker weights or quality-weighted labels",
        description="blocklist: the blocked workers and those the latest run decided block "
        "(with --include-flagged, also the other workers it flagged) as MTurk Workers CSV (UPDATE-BlockStatus), Prolific list, Toloka "
        "user restrictions TSV, or CSV/JSON. weights: CSV/JSON (MTurk: a qualification score). "
        "labels: CSV/JSON, the reliability model's answer per item (Dawid-Skene label, rating "
        "model mean, multi-label options) with its posterior or sd. requeue: the items (or "
        "pairs) the latest run says to send back, with their text, as a task file for csv, "
        "toloka, labelstudio or prolific. overlap: how many more judgments each item of a "
        "label, rating or multi-label campaign (item,need) or pair of a preference campaign "
        "(left,right,need) wants "
        "(0: settled), from the latest run, as CSV, a Toloka task file (TASK:overlap) or, for "
        "labelstudio, the CSV with each task's overlap, set in the connected project with "
        "--apply. See docs/exports.md and docs/live.md.",
    )
    p.add_argument("what", choices=("blocklist", "weights", "labels", "requeue", "overlap"))
    p.add_argument("--campaign", required=True, metavar="NAME")
    p.add_argument(
        "--platform",
        default="csv",
        metavar="{mturk,prolific,toloka,labelstudio,csv,json}",
        help="blocklist and weights: mturk, prolific, toloka, csv or json; labels: csv or "
        "json; requeue: csv, toloka, labelstudio or prolific; overlap: csv, toloka or "
        "labelstudio (default: csv)",
    )
    # (--out and --include-flagged have the shape of push labelstudio's --token-file and
    # --apply: other options, nothing to share)
    p.add_argument("--out", metavar="PATH", help="file to write (default: standard output)")
    p.add_argument(
        "--include-flagged",
        action="store_true",
        help="blocklist: also list the other workers the latest run flagged (not decided "
        "block; the reason names the rules that flagged them)",
    )
    p.add_argument(
        "--apply",
        action="store_true",
        help="overlap --platform labelstudio: set each task's overlap in the campaign's "
        "connected Label Studio project (without it, a dry run lists what would be set)",
    )
    p.add_argument(
        "--token-file",
        metavar="FILE",
        help="overlap --platform labelstudio --apply: file holding the Label Studio token "
        "(default: the file recorded by 'monitor campaign connect', else "
        "$MONITOR_LABELSTUDIO_TOKEN)",
    )
    scope = p.add_mutually_exclusive_group()
    scope.add_argument(
        "--project",
        metavar="ID",
        help="toloka blocklist: restrict in this project only (default: all projects)",
    )
    scope.add_argument("--pool", metavar="ID", help="toloka blocklist: restrict in this pool only")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    from monitor.actions.export import export
    from monitor.core.errors import UsageError

    if (args.apply or args.token_file is not None) and (
        args.what != "overlap" or args.platform != "labelstudio"
    ):
        raise UsageError("--apply and --token-file are for export overlap --platform labelstudio")
    if args.what == "requeue":
        return _requeue(args, ctx)
    if args.what == "overlap":
        return _overlap(args, ctx)

    def make(session: Any) -> tuple[str, list[str]]:  # noqa: ANN401
        text = export(
            session,
            args.what,
            args.campaign,
            args.platform,
            include_flagged=args.include_flagged,
            project=args.project,
            pool=args.pool,
        )
        return text, _empty_blocklist(session, args) if args.what == "blocklist" else []

    return _write(args, ctx, make)


def _write(
    args: argparse.Namespace, ctx: Context, make: Callable[[Any], tuple[str, list[str]]]
) -> int:
    """Every export's writing: ``make(session)`` gives the text, written to --out (its place
    checked before the database is opened) or standard output, and the lines for standard
    error."""
    from monitor.core.output import check_target, write_output
    from monitor.store.engine import session_factory

    to_file = bool(args.out and args.out != "-")
    if to_file:
        check_target(Path(args.out), "export", f"{args.what}.{args.platform}")
    with session_factory(ctx.engine())() as s:
        text, notes = make(s)
    if to_file:
        echo(write_output(Path(args.out), text, "export", newline=""))
    else:
        write_data(text)
    for line in notes:
        echo(line, err=True)
    return 0


def _requeue(args: argparse.Namespace, ctx: Context) -> int:
    from monitor.actions.requeue import PLATFORMS, requeue

    def make(session: Any) -> tuple[str, list[str]]:  # noqa: ANN401
        done = requeue(session, args.campaign, args.platform)
        return done.text, [done.note] if done.note else []

    hint = "unknown platform {!r} for a requeue file: use --platform " + ", ".join(PLATFORMS)
    return _task_file(args, ctx, PLATFORMS, hint, make)


def _overlap(args: argparse.Namespace, ctx: Context) -> int:
    from monitor.actions.overlap import PLATFORMS, overlap_file

    tasks: dict[int, int] = {}
    apart = _unconnected(args, ctx) if args.platform == "labelstudio" else None
    connected = args.platform == "labelstudio" and apart is None

    def make(session: Any) -> tuple[str, list[str]]:  # noqa: ANN401
        done = overlap_file(session, args.campaign, args.platform)
        tasks.update(done.tasks)
        return done.text, done.notes

    hint = "overlap is not written for {!r}: use --platform " + ", ".join(PLATFORMS)
    token = _token(args, ctx) if connected and args.apply else None
    status = _task_file(args, ctx, PLATFORMS, hint, make)
    if apart is not None:
        echo(apart, err=True)
    if connected and tasks:
        from monitor.connectors.labelstudio_overlap import sync_overlap

        done = sync_overlap(ctx.engine(), args.campaign, tasks, token=token, apply=args.apply)
        for line in done.lines():
            echo(line, err=True)
    return status


def _unconnected(args: argparse.Namespace, ctx: Context) -> str | None:
    """None when the campaign is connected to a Label Studio project, else what to say beside
    the file; --apply without one is a usage error, found before anything is written."""
    from monitor.connectors.labelstudio import PLATFORM
    from monitor.core.errors import UsageError
    from monitor.store import campaigns, sources
    from monitor.store.engine import transaction

    with transaction(ctx.engine()) as session:
        info = campaigns.get_campaign(session, args.campaign)
        source = sources.get_source(session, info.id)
    if source is not None and source.platform == PLATFORM:
        return None
    if args.apply:
        raise UsageError(
            f"campaign {info.name} is not connected to Label Studio: --apply has no project "
            "to set the overlaps in",
            hint=f"connect it: monitor campaign connect {shlex.quote(info.name)} labelstudio "
            "--url URL --project ID",
        )
    return (
        f"campaign {info.name} is not connected to Label Studio: the file alone is written "
        "(monitor campaign connect, then --apply, sets the overlaps)"
    )


def _token(args: argparse.Namespace, ctx: Context) -> str:
    """The Label Studio token: --token-file, else the campaign's recorded file, else the
    environment (as monitor push labelstudio reads it)."""
    from monitor.connectors.labelstudio_api import read_token
    from monitor.store import campaigns, sources
    from monitor.store.engine import transaction

    token_file = args.token_file
    if token_file is None:
        with transaction(ctx.engine()) as session:
            info = campaigns.get_campaign(session, args.campaign)
            source = sources.get_source(session, info.id)
        token_file = source.token_file if source else None
    return read_token(token_file)


def _task_file(
    args: argparse.Namespace,
    ctx: Context,
    platforms: tuple[str, ...],
    unknown: str,
    make: Callable[[Any], tuple[str, list[str]]],
) -> int:
    """An export that is no worker list (requeue, overlap): checked before the database is
    opened (``unknown`` says an unknown platform), then written by :func:`_write`."""
    from monitor.core.errors import UsageError

    if args.include_flagged or args.project is not None or args.pool is not None:
        raise UsageError("--include-flagged, --project and --pool are for the blocklist")
    if args.platform not in platforms:
        raise UsageError(unknown.format(args.platform))
    return _write(args, ctx, make)


def _empty_blocklist(session: Any, args: argparse.Namespace) -> list[str]:  # noqa: ANN401
    """What to say on standard error when the block list names nobody: that flagged workers
    are not blocked, and how to list or block them."""
    from monitor.actions.worker_lists import blocklist_entries, flagged_workers, shown_status
    from monitor.store.campaigns import get_campaign
    from monitor.store.workers import worker_states

    campaign = get_campaign(session, args.campaign)
    if blocklist_entries(session, campaign, include_flagged=args.include_flagged):
        return []
    name = shlex.quote(campaign.name)
    if args.include_flagged:
        return [f"the block list is empty: nobody is blocked or flagged in campaign {name}"]
    states = worker_states(session, campaign.id)
    flagged = [
        w
        for w, rules in flagged_workers(session, campaign).items()
        if w in states and shown_status(states[w].status, rules) == "flagged"
    ]
    lines = [f"the block list is empty: nobody is blocked or decided block in campaign {name}"]
    if flagged:
        n = len(flagged)
        lines.append(
            f"{n} worker{'s are' if n > 1 else ' is'} flagged but not decided block (see "
            f"monitor workers --campaign {name}): add --include-flagged to list "
            f"{'them' if n > 1 else 'it'} too"
        )
    else:
        lines.append("no worker is flagged either")
    return lines
