"""``monitor cache clear``: remove the run cache's files (array and column snapshots)."""

from __future__ import annotations

import argparse

from monitor.cli.context import Context
from monitor.cli.show import echo
from monitor.core.errors import OutputError


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "cache",
        parents=[common],
        help="manage the run cache (snapshot files that speed up the next recompute)",
        description="The run cache keeps each campaign's arrays and last columns as files "
        "under the cache_dir setting, so that the next recompute reads only what arrived. "
        "They can always be removed: the next run reads the database instead.",
    )
    p_sub = p.add_subparsers(dest="cache_command", metavar="SUBCOMMAND", required=True)
    clear = p_sub.add_parser(
        "clear",
        parents=[common],
        help="remove the run cache's files (all, or one campaign's)",
        description="Remove the run cache's files under cache_dir: those of every campaign of "
        "every database, or with --campaign only those of that campaign of this database. "
        "Other files in the folder are left alone.",
    )
    # (the shape of recompute's parser and --campaign: another command, whose option chooses
    # what is run, not what is removed, each with its own help)
    clear.add_argument("--campaign", metavar="NAME", help="only this campaign's files")
    clear.set_defaults(func=run_clear)


def run_clear(args: argparse.Namespace, ctx: Context) -> int:
    from monitor.incremental.cache import clear_cache

    directory = ctx.settings.cache_dir
    if not directory:
        echo("no cache folder is set (cache_dir is empty): nothing to remove")
        return 0
    engine = ctx.engine() if args.campaign is not None else None
    cleared = clear_cache(directory, engine, args.campaign)
    whose = f"of campaign {args.campaign} " if args.campaign is not None else ""
    if cleared.n_files:
        size = cleared.n_bytes / 1e6
        echo(f"removed {cleared.n_files} cache files {whose}({size:,.1f} MB) from {directory}")
    else:
        echo(f"no cache files {whose}in {directory}")
    if cleared.failed:
        for line in cleared.failed:
            echo(f"could not remove {line}", err=True)
        raise OutputError(
            f"{len(cleared.failed)} cache files could not be removed",
            hint="check the folder's permissions, or remove them by hand",
        )
    return 0
