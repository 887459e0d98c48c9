"""``monitor pull labelstudio`` and ``monitor campaign connect``: a campaign's judgments pulled
from a Label Studio project over its API (the token from the environment or a file, never an
argument)."""

from __future__ import annotations

import argparse

from monitor.cli.context import Context
from monitor.cli.ingest import key_values, pairs
from monitor.cli.show import echo

TOKEN_HELP = (
    "file holding the token (default: $MONITOR_LABELSTUDIO_TOKEN); a legacy token or a "
    "personal access token, never given as an argument"
)


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "pull",
        parents=[common],
        help="pull a campaign's judgments from a platform's API (Label Studio)",
        description="Pull the annotations of a platform project into a campaign.",
    )
    p_sub = p.add_subparsers(dest="platform", metavar="PLATFORM", required=True)
    ls = p_sub.add_parser(
        "labelstudio",
        parents=[common],
        help="pull a Label Studio project's annotations",
        description="Read the project's annotations changed since the campaign's last pull "
        "(all at the first), map them as a Label Studio export is mapped, and store them by "
        "annotation id: a changed annotation replaces its judgment, a deleted one is taken "
        "out. The project is recorded as the campaign's source (not the token), so "
        "'monitor pull labelstudio --campaign C' and 'monitor schedule' pull it again. "
        "Nothing is stored on an error.",
        epilog="Exit status: 0 pulled, 2 bad input (a refused token, no such project, a "
        "control that does not fit the campaign), 1 the server unreachable or failing.",
    )
    ls.add_argument("--campaign", required=True, metavar="NAME")
    source_options(ls, required=False)
    ls.add_argument(
        "--full",
        action="store_true",
        help="read every task, not only those changed since the last pull (also takes out "
        "the annotations of tasks deleted there)",
    )
    ls.set_defaults(func=run_pull)


def source_options(p: argparse.ArgumentParser, *, required: bool) -> None:
    """The Label Studio project's options of ``pull labelstudio`` and ``campaign connect``."""
    p.add_argument("--url", required=required, metavar="URL", help="the server, http://HOST:PORT")
    p.add_argument("--project", required=required, metavar="ID", help="the project's number")
    p.add_argument("--token-file", metavar="FILE", help=TOKEN_HELP)
    key_values(
        p,
        "--map",
        "as for a Label Studio export: value=CONTROL, item=data.FIELD (default: the task id), "
        "text=data.FIELD, worker=id|email, left=/right= for pairs (repeatable)",
    )
    key_values(
        p,
        "--option",
        "ground_truth=gold|judgment|both (default gold: a ground-truth annotation gives its "
        "item's gold value)",
    )


def run_pull(args: argparse.Namespace, ctx: Context) -> int:
    from monitor.connectors import labelstudio
    from monitor.connectors.labelstudio_api import read_token
    from monitor.core.errors import UsageError
    from monitor.incremental.live import update_live

    engine = ctx.engine()
    if args.url is None and args.project is None:
        if args.map or args.option or args.token_file:
            raise UsageError(
                "--map, --option and --token-file come with --url and --project",
                hint="or record them with: monitor campaign connect",
            )
        if args.full:
            raise UsageError("--full comes with --url and --project")
        summary = labelstudio.pull_campaign(engine, ctx.settings, args.campaign)
    else:
        if args.url is None or args.project is None:
            raise UsageError("--url and --project come together")
        summary = labelstudio.pull(
            engine,
            args.campaign,
            url=args.url,
            project=args.project,
            token=read_token(args.token_file),
            token_file=args.token_file,
            mapping=pairs(args.map, "--map"),
            options=pairs(args.option, "--option"),
            full=args.full,
        )
    echo(summary.line())
    for note in summary.notes:
        echo(note, err=True)
    echo(update_live(engine, args.campaign).line())
    return 0


def run_connect(args: argparse.Namespace, ctx: Context) -> int:
    from monitor.connectors import labelstudio

    source = labelstudio.connect(
        ctx.engine(),
        args.name,
        url=args.url,
        project=args.project,
        token_file=args.token_file,
        mapping=pairs(args.map, "--map"),
        options=pairs(args.option, "--option"),
    )
    echo(
        f"{args.name}: connected to Label Studio project {source.project} at {source.url} "
        f"(token from {source.token_file or '$MONITOR_LABELSTUDIO_TOKEN'})"
    )
    return 0
