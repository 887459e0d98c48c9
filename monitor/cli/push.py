"""``monitor push PLATFORM``: what monitor decided written back to a platform. ``labelstudio``:
the latest run's answers and decisions into the campaign's Label Studio project (annotators
removed only with ``--apply``); ``prolific``: the workers' decisions sent to Prolific (a dry run
unless ``--apply``)."""

from __future__ import annotations

import argparse
from decimal import Decimal, InvalidOperation

from monitor.cli.context import Context
from monitor.cli.show import echo
from monitor.core.errors import UsageError


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "push",
        parents=[common],
        help="write a campaign's answers and decisions back to its platform (Label Studio, "
        "Prolific)",
        description="Write what monitor decided back to a platform: 'monitor push labelstudio "
        "--help', 'monitor push prolific --help'.",
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
        "organisation only with --apply. Those decided 'stop' are paused in the project with "
        "--apply, where the server offers pauses (Label Studio Enterprise).",
        epilog="The token: --token-file, else the file recorded by 'monitor campaign connect', "
        "else $MONITOR_LABELSTUDIO_TOKEN.",
    )
    ls.add_argument("--campaign", required=True, metavar="NAME")
    ls.add_argument("--token-file", metavar="FILE", help="file holding the token")
    ls.add_argument(
        "--apply",
        action="store_true",
        help="remove the annotators decided 'block' from the organisation and pause those "
        "decided 'stop' (without it, they are only listed)",
    )
    ls.set_defaults(func=run_push)
    p = p_sub.add_parser(
        "prolific",
        parents=[common],
        help="the workers' decisions sent to Prolific, a dry run unless --apply",
        description="Append the workers decided block (and those blocked) to the "
        "participant group --group (a block list; appended, never replaced), and those decided "
        "stop to the campaign's exclusion group --exclude-group; with --study, "
        "--reject their submissions awaiting review (category and message from the decision's "
        "reason), --approve the others', --bonus AMOUNT x each worker's effective weight (a "
        "bulk bonus payment created, then paid). Prints what it would do unless --apply. "
        "Every action sent is recorded with an idempotency key: pushing again never sends it "
        "twice. The token is read from MONITOR_PROLIFIC_TOKEN. See docs/platforms/prolific.md.",
    )
    p.add_argument("--campaign", required=True, metavar="NAME")
    p.add_argument("--group", metavar="ID", help="the participant group used as a block list")
    p.add_argument("--exclude-group", metavar="ID", help="the campaign's exclusion group (the "
                   "participant group its studies exclude): the workers decided stop are "
                   "appended, so they get no more of its tasks")  # fmt: skip
    p.add_argument("--study", metavar="ID", help="the study whose submissions to act on")
    p.add_argument("--approve", action="store_true", help="approve the submissions awaiting "
                   "review of the workers not decided block")  # fmt: skip
    p.add_argument("--reject", action="store_true", help="reject the submissions awaiting "
                   "review of the workers decided block")  # fmt: skip
    p.add_argument("--bonus", metavar="AMOUNT", help="bonus at full weight, in the study's "
                   "currency (e.g. 0.50): each worker gets AMOUNT x their effective weight")  # fmt: skip
    p.add_argument("--apply", action="store_true", help="send (default: a dry run)")
    p.add_argument("--api-url", metavar="URL", help="Prolific's API (setting prolific_api_url)")
    p.add_argument(
        "--settle-pay",
        action="append",
        default=[],
        metavar="ID=paid|unpaid",
        help="a bonus payment whose pay was sent and never confirmed, as checked in Prolific: "
        "paid (record it) or unpaid (pay it now)",
    )
    p.set_defaults(func=run_prolific)


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


def _amount(raw: str | None) -> Decimal | None:
    if raw is None:
        return None
    try:
        amount = Decimal(raw)
    except InvalidOperation:
        amount = Decimal(-1)
    if (
        not amount.is_finite()
        or amount <= 0
        or amount > 1000
        or amount != amount.quantize(Decimal("0.01"))
    ):
        raise UsageError(f"--bonus {raw!r}: not an amount", hint="e.g. --bonus 0.50 (at most "
                         "1000, in cents)")  # fmt: skip
    return amount


def _settle(raw: list[str]) -> dict[str, str]:
    out = {}
    for item in raw:
        bulk, _, verdict = item.partition("=")
        if not bulk or verdict not in ("paid", "unpaid"):
            raise UsageError(f"--settle-pay {item!r}: give ID=paid or ID=unpaid")
        out[bulk] = verdict
    return out


def _say(line: str) -> None:
    """What was done on standard output; what failed or was refused on standard error."""
    echo(line, err=line.startswith(("failed:", "refused:")))


def run_prolific(args: argparse.Namespace, ctx: Context) -> int:
    import os

    from monitor.connectors import prolific, prolific_api

    settings = ctx.settings.replace(prolific_api_url=args.api_url)
    options = prolific.Options(
        group=args.group,
        exclude=args.exclude_group,
        study=args.study,
        approve=args.approve,
        reject=args.reject,
        bonus=_amount(args.bonus),
        apply=args.apply,
        settle_pay=_settle(args.settle_pay),
    )
    if (
        not options.group
        and not options.exclude
        and not (options.study and (options.approve or options.reject or options.bonus is not None))
    ):
        raise UsageError(
            "nothing to push: give --group ID, --exclude-group ID and/or --study ID with "
            "--approve, --reject or --bonus"
        )
    needs_token = options.apply or options.study is not None
    client = None
    if needs_token or os.environ.get(prolific_api.TOKEN_ENV):
        client = prolific_api.Client(settings.prolific_api_url, prolific_api.token_from_env())
    try:
        out = prolific.push(ctx.engine(), args.campaign, options, client, say=_say)
    finally:
        if client is not None:
            client.close()
    if options.apply:
        echo(f"sent {out.sent} requests; {out.already} actions were done before")
    if out.refused:
        echo(f"monitor: error: {len(out.refused)} bonus payments left unconfirmed: settle them "
             "with --settle-pay", err=True)  # fmt: skip
        return 1
    return 1 if out.failed else 0
