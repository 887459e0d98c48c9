"""``monitor push labelstudio``: the latest run's answers and decisions written back to the
campaign's Label Studio project; annotators removed only with ``--apply``."""

from __future__ import annotations

import argparse

from monitor.cli.context import Context
from monitor.cli.show import echo


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "push",
        parents=[common],
        help="write a campaign's answers and decisions back to its platform",
        description="Write what monitor decided back to the platform a campaign is pulled from.",
    )
    p_sub = p.add_subparsers(dest="platform", metavar="PLATFORM", required=True)
    ls = p_sub.add_parser(
        "labelstudio",
        parents=[common],
        help="predictions, the decision list, and (--apply) annotator removals",
        description="Write the latest run's exported answers to the connected Label Studio "
        "project as predictions (model version monitor-RUN, each task once), and its decision "
        "list into the project's description (below a line of its own; the text above is "
        "kept). The annotators decided 'block' are listed; they are removed from the "
        "organisation only with --apply.",
        epilog="The token: --token-file, else the file recorded by 'monitor campaign connect', "
        "else $MONITOR_LABELSTUDIO_TOKEN.",
    )
    ls.add_argument("--campaign", required=True, metavar="NAME")
    ls.add_argument("--token-file", metavar="FILE", help="file holding the token")
    ls.add_argument(
        "--apply",
        action="store_true",
        help="remove the annotators decided 'block' from the organisation (without it, "
        "they are only listed)",
    )
    ls.set_defaults(func=run_push)


def run_push(args: argparse.Namespace, ctx: Context) -> int:
    from monitor.connectors.labelstudio_api import read_token
    from monitor.connectors.labelstudio_push import push
    from monitor.store import campaigns, sources
    from monitor.store.engine import transaction

    engine = ctx.engine()
    token_file = args.token_file
    if token_file is None:
        with transaction(engine) as session:
            info = campaigns.get_campaign(session, args.campaign)
            source = sources.get_source(session, info.id)
        token_file = source.token_file if source else None
    summary = push(engine, args.campaign, token=read_token(token_file), apply=args.apply)
    for line in summary.lines():
        echo(line)
    return 0
