"""``monitor campaign create`` and ``monitor campaign list``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from monitor.cli.context import Context
from monitor.cli.show import echo
from monitor.errors import UsageError

if TYPE_CHECKING:
    from monitor.store.campaigns import CampaignInfo, CampaignSpec


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "campaign",
        parents=[common],
        help="define or list campaigns",
        description="A campaign is one annotation job with one kind of judgment (rating, "
        "label, multilabel, pairwise): 'campaign create' defines one, 'campaign list' lists "
        "them.",
    )
    p_sub = p.add_subparsers(dest="campaign_command", metavar="SUBCOMMAND", required=True)
    create = p_sub.add_parser(
        "create",
        parents=[common],
        help="define a campaign",
        description="Define a campaign: one annotation job with one kind of judgment.",
    )
    create.add_argument("name", metavar="NAME")
    add_scale_options(create)
    create.add_argument(
        "--platform",
        metavar="NAME",
        help="where the workers come from (mturk, prolific, toloka, ...): a worker's history is "
        "their quality in the platform's other campaigns (default: set by the first "
        "platform-format ingest, else none)",
    )
    create.set_defaults(func=run_create)
    ls = p_sub.add_parser(
        "list",
        parents=[common],
        help="list the campaigns",
        description="List every campaign, one a line, tab-separated: its name, kind and scale "
        "(or categories, options, ties), its numbers of judgments, workers and items, and its "
        "platform when known.",
    )
    ls.set_defaults(func=run_list)


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


def _split(text: str | None, option: str) -> tuple[str, ...] | None:
    if text is None:
        return None
    parts = tuple(p.strip() for p in text.split(","))
    if not all(parts):
        raise UsageError(f"{option}: an empty name in '{text}'", hint=f"write {option} a,b,c")
    return parts


def spec_from_args(args: argparse.Namespace, name: str) -> CampaignSpec:
    """The campaign spec the scale options describe (UsageError for options of another kind)."""
    from monitor.store.campaigns import CampaignSpec

    kind = args.kind
    if kind != "rating" and (args.scale_min is not None or args.scale_max is not None):
        raise UsageError("--min and --max are for rating campaigns")
    if args.categories is not None and kind != "label":
        hint = "a multilabel campaign takes --options" if kind == "multilabel" else None
        raise UsageError("--categories is for label campaigns", hint=hint)
    if (args.options is not None or args.open) and kind != "multilabel":
        raise UsageError("--options and --open are for multilabel campaigns")
    if args.strict and kind != "pairwise":
        raise UsageError("--strict is for pairwise campaigns")
    categories = _split(args.categories, "--categories") or _split(args.options, "--options")
    return CampaignSpec(
        name=name,
        kind=kind,
        level=args.level,
        scale_min=args.scale_min,
        scale_max=args.scale_max,
        categories=categories,
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
        rows = [(c, campaign_counts(session, c)) for c in list_campaigns(session)]
    if not rows:
        echo("no campaigns (create one: monitor campaign create NAME --kind KIND)")
        return 0
    for info, counts in rows:
        echo(
            info.name,
            describe(info),
            f"{counts.n_judgments} judgments, {counts.n_workers} workers, {counts.n_items} items"
            + (f", platform {info.platform}" if info.platform != "none" else ""),
            sep="\t",
        )
    return 0
