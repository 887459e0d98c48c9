"""``monitor campaign create``, ``list``, and the lifecycle of a campaign: ``delete``,
``rename``, ``archive`` and ``unarchive``; its own settings: ``set`` and ``show``; its live
source: ``connect`` (run by :mod:`monitor.cli.pull`)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

from monitor.cli.context import Context
from monitor.cli.show import echo
from monitor.core.errors import UsageError

if TYPE_CHECKING:
    from monitor.store.campaigns import CampaignInfo, CampaignSpec


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "campaign",
        parents=[common],
        help="define, list, rename, archive or delete campaigns; their own settings",
        description="A campaign is one annotation job with one kind of judgment (rating, "
        "label, multilabel, pairwise): 'campaign create' defines one, 'campaign list' lists "
        "them; 'rename', 'archive', 'unarchive' and 'delete' change or end one; 'set' and "
        "'show' give one settings of its own.",
    )
    p_sub = p.add_subparsers(dest="campaign_command", metavar="SUBCOMMAND", required=True)
    create = campaign_command(
        p_sub,
        common,
        "create",
        run_create,
        "define a campaign",
        "Define a campaign: one annotation job with one kind of judgment.",
    )
    add_scale_options(create)
    create.add_argument(
        "--platform",
        metavar="NAME",
        help="where the workers come from (mturk, prolific, toloka, ...): a worker's history is "
        "their quality in the platform's other campaigns (default: set by the first "
        "platform-format ingest, else none)",
    )
    ls = p_sub.add_parser(
        "list",
        parents=[common],
        help="list the campaigns",
        description="List every campaign, one a line, tab-separated: its name, kind and scale "
        "(or categories, options, ties), its numbers of judgments, workers and items, and its "
        "platform when known.",
    )
    ls.set_defaults(func=run_list)
    register_lifecycle(p_sub, common)


def campaign_command(
    p_sub: argparse._SubParsersAction,
    common: argparse.ArgumentParser,
    word: str,
    func: Callable[[argparse.Namespace, Context], int],
    short: str,
    what: str,
) -> argparse.ArgumentParser:
    """``monitor campaign WORD NAME``: a subcommand about the campaign NAME, run by ``func``
    (``short``: its line in the list of subcommands; ``what``: its description)."""
    p: argparse.ArgumentParser = p_sub.add_parser(
        word, parents=[common], help=short, description=what
    )
    p.add_argument("name", metavar="NAME")
    p.set_defaults(func=func)
    return p


def add_scale_options(p: argparse.ArgumentParser) -> None:
    """``--kind`` and the scale options of CONTRACT.md section 1 (also used by analyze)."""
    p.add_argument("--kind", required=True, choices=("rating", "label", "multilabel", "pairwise"))
    p.add_argument("--min", type=float, dest="scale_min", help="rating: lowest value")
    p.add_argument("--max", type=float, dest="scale_max", help="rating: highest value")
    p.add_argument(
        "--level",
        choices=("nominal", "ordinal", "interval", "ratio"),
        help="rating: ordinal|interval|ratio (default interval); label: ordinal with --categories",
    )
    p.add_argument(
        "--categories", metavar="A,B,C", help="label: the categories (else taken from the data)"
    )
    p.add_argument("--options", metavar="A,B,C", help="multilabel: the options (closed task)")
    p.add_argument("--open", action="store_true", help="multilabel: free tokens")
    p.add_argument("--strict", action="store_true", help="pairwise: ties are not allowed")


def spec_from_args(args: argparse.Namespace, name: str) -> CampaignSpec:
    """The campaign spec the scale options describe (UsageError for options of another kind)."""
    from monitor.api.spec import campaign_spec

    return campaign_spec(
        name,
        args.kind,
        scale_min=args.scale_min,
        scale_max=args.scale_max,
        level=args.level,
        categories=args.categories,
        options=args.options,
        open=args.open,
        strict=args.strict,
        platform=getattr(args, "platform", None),
    )


def run_create(args: argparse.Namespace, ctx: Context) -> int:
    from monitor.ingest.api import create_campaign

    info = create_campaign(ctx.engine(), spec_from_args(args, args.name))
    platform = f", platform {info.platform}" if info.platform != "none" else ""
    echo(f"campaign '{info.name}' created: {describe(info)}{platform}")
    return 0


def describe(info: CampaignInfo) -> str:
    """``rating 1..5 (interval)``, ``label yes, no (nominal)``, ``pairwise (strict)``."""
    from monitor.ingest.validate import fmt_number

    if info.kind == "rating":
        scale = f"{fmt_number(info.scale_min)}..{fmt_number(info.scale_max)}"
        return f"rating {scale} ({info.level})"
    if info.kind == "label":
        cats = ", ".join(info.categories) if info.categories else "categories from the data"
        return f"label {cats} ({info.level})"
    if info.kind == "multilabel":
        return "multilabel, open" if info.open else f"multilabel {', '.join(info.categories or ())}"
    return "pairwise (strict)" if info.strict else "pairwise (ties allowed)"


def run_list(_args: argparse.Namespace, ctx: Context) -> int:
    from monitor.store.campaigns import campaign_counts, list_campaigns
    from monitor.store.engine import transaction

    with transaction(ctx.engine()) as session:
        rows = [(c, campaign_counts(session, c)) for c in list_campaigns(session, archived=True)]
    if not rows:
        echo("no campaigns (create one: monitor campaign create NAME --kind KIND)")
        return 0
    for info, counts in rows:
        echo(
            info.name,
            describe(info),
            f"{counts.n_judgments} judgments, {counts.n_workers} workers, {counts.n_items} items"
            + (f", platform {info.platform}" if info.platform != "none" else "")
            + (", archived" if info.archived else ""),
            sep="\t",
        )
    return 0


# --- lifecycle and own settings ---------------------------------------------------------------


def register_lifecycle(p_sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """``delete``, ``rename``, ``archive``, ``unarchive``, ``set``, ``show`` and ``connect``."""
    from monitor.cli.pull import run_connect, source_options

    delete = campaign_command(
        p_sub,
        common,
        "delete",
        run_delete,
        "delete a campaign and everything it holds",
        "Delete a campaign with its workers, items, judgments, ingest batches, runs, decisions "
        "and planned pairs, and the files the run cache keeps for it. Asks first (on a "
        "terminal); --yes does not ask.",
    )
    delete.add_argument("--yes", action="store_true", help="do not ask")
    rename = campaign_command(
        p_sub,
        common,
        "rename",
        run_rename,
        "give a campaign another name",
        "Give a campaign another name; its data, runs and decisions stay.",
    )
    rename.add_argument("new_name", metavar="NEW_NAME")
    for word, archived, short, what in (
        ("archive", True, "keep a campaign out of the runs over all campaigns and the index",
         "Keep a campaign, its data, runs and reports, but leave it out of the runs over every "
         "campaign (recompute without --campaign, the scheduler) and of the index of reports; "
         "named, it still recomputes and reports. 'unarchive' undoes it."),
        ("unarchive", False, "bring an archived campaign back",
         "Bring an archived campaign back into the runs over every campaign and the index."),
    ):  # fmt: skip
        campaign_command(p_sub, common, word, run_archive, short, what).set_defaults(
            archived=archived
        )
    set_ = campaign_command(
        p_sub,
        common,
        "set",
        run_set,
        "give a campaign settings of its own",
        "Give a campaign its own value of a setting (docs/settings.md), over the one of "
        "monitor.toml, the environment and the flags; 'KEY=' drops it again. Checked as the "
        "file's are: an unknown key or a value out of its range changes nothing.",
    )
    set_.add_argument("pairs", nargs="+", metavar="KEY=VALUE")
    campaign_command(
        p_sub,
        common,
        "show",
        run_show,
        "a campaign's definition and settings",
        "A campaign's definition, its counts, and each setting its runs use that differs from "
        "the default, with where it comes from (this campaign, or the settings file, "
        "environment and flags).",
    )
    connect = campaign_command(
        p_sub,
        common,
        "connect",
        run_connect,
        "record a campaign's live source (Label Studio), pulled by 'monitor schedule'",
        "Record the Label Studio project a campaign is pulled from. The token is not recorded: "
        "only the --token-file path when given, else $MONITOR_LABELSTUDIO_TOKEN is read at each "
        "pull.",
    )
    connect.add_argument("platform", choices=["labelstudio"], metavar="PLATFORM")
    source_options(connect, required=True)


def run_delete(args: argparse.Namespace, ctx: Context) -> int:
    import sys

    from monitor.incremental.cache import remove_campaign_files
    from monitor.store.campaigns import campaign_counts, delete_campaign, get_campaign
    from monitor.store.engine import transaction

    with transaction(ctx.engine()) as s:
        info = get_campaign(s, args.name)
        counts = campaign_counts(s, info)
    what = (
        f"campaign '{info.name}' ({counts.n_judgments:,} judgments, {counts.n_workers:,} "
        f"workers, {counts.n_items:,} items)"
    )
    if not args.yes:
        if not sys.stdin.isatty():
            raise UsageError(
                f"not deleting {what} without --yes (no terminal to ask)",
                hint=f"monitor campaign delete {info.name} --yes",
            )
        answer = input(f"delete {what} and all its runs? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            echo("nothing deleted")
            return 0
    with transaction(ctx.engine()) as s:
        delete_campaign(s, get_campaign(s, info.name))
        remove_campaign_files(ctx.settings.cache_dir, s, info)
    echo(f"deleted {what}")
    return 0


def run_rename(args: argparse.Namespace, ctx: Context) -> int:
    from monitor.store.campaigns import rename_campaign
    from monitor.store.engine import transaction

    with transaction(ctx.engine()) as s:
        info = rename_campaign(s, args.name, args.new_name)
    echo(f"campaign '{args.name}' is now '{info.name}'")
    return 0


def run_archive(args: argparse.Namespace, ctx: Context) -> int:
    from monitor.store.campaigns import set_archived
    from monitor.store.engine import transaction

    with transaction(ctx.engine()) as s:
        changed = set_archived(s, args.name, args.archived)
    state = "archived" if args.archived else "not archived"
    echo(f"campaign '{args.name}' {'is now' if changed else 'was already'} {state}")
    return 0


def run_set(args: argparse.Namespace, ctx: Context) -> int:
    from monitor.core.settings import campaign_value
    from monitor.store.campaigns import get_campaign, set_own_settings
    from monitor.store.engine import transaction

    changes: dict[str, object] = {}
    for text in args.pairs:
        key, sep, raw = text.partition("=")
        key = key.strip()
        if not key or not sep:
            raise UsageError(f"'{text}' is not KEY=VALUE", hint="e.g. min_judgments=20")
        # an empty value drops the campaign's own value (the key is still checked)
        changes[key] = campaign_value(key, raw.strip() or None)
    with transaction(ctx.engine()) as s:
        info = get_campaign(s, args.name)
        own = set_own_settings(s, info.id, changes)
    for key, value in changes.items():
        echo(f"{info.name}: {key} = {value!r}" if value is not None else
             f"{info.name}: {key} dropped (the global value holds)")  # fmt: skip
    if own:
        echo(f"own settings: {', '.join(f'{k}={v!r}' for k, v in own.items())}")
    return 0


def run_show(args: argparse.Namespace, ctx: Context) -> int:
    from monitor.core.settings import differences, run_settings
    from monitor.store.campaigns import campaign_counts, get_campaign
    from monitor.store.engine import transaction

    with transaction(ctx.engine()) as s:
        info = get_campaign(s, args.name)
        counts = campaign_counts(s, info)
    platform = f", platform {info.platform}" if info.platform != "none" else ""
    archived = ", archived" if info.archived else ""
    echo(f"{info.name}: {describe(info)}{platform}{archived}")
    echo(
        f"{counts.n_judgments:,} judgments, {counts.n_workers:,} workers, {counts.n_items:,} items"
    )
    own = info.own_settings
    used = run_settings(ctx.settings.for_campaign(own))
    differ = differences(used)
    if own:
        echo(f"own settings: {', '.join(f'{k}={v!r}' for k, v in own.items())}")
    if not differ:
        echo("settings: every one at its default")
    for key, value, default in differ:
        where = "this campaign" if key in own else "settings file, environment or flags"
        echo(f"  {key} = {value!r} (default {default!r}; from {where})")
    return 0
