"""``monitor pairs plan``: the next pairs to ask in a preference campaign."""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterator
from contextlib import contextmanager

from monitor.cli.context import Context
from monitor.cli.show import echo


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a share from 0 to 1: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"not a share from 0 to 1: {text!r}")
    return value


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "pairs",
        parents=[common],
        help="plan the next pairs of a preference campaign",
        description="'pairs plan' chooses the next pairs to ask each annotator of a preference "
        "campaign and writes them as a platform's task file; 'pairs cancel' takes a plan's open "
        "pairs back. See docs/planning.md.",
    )
    p_sub = p.add_subparsers(dest="pairs_command", metavar="SUBCOMMAND", required=True)
    plan = p_sub.add_parser(
        "plan",
        parents=[common],
        help="write the next pairs to ask as a task file",
        description="The next pairs for each annotator: a share closing triangles with pairs "
        "they judged (so that their transitivity kappa becomes measurable: 10 triplets for an "
        "annotator with 30+ comparisons), never a pair their own judgments already imply; the "
        "rest the pairs the preference model is least sure of (expected information gain, as "
        "in Crowd-BT). New annotators start on pairs of known order and gold. --retest and "
        "--gold mix in repeated and gold pairs, not told apart in the file. Every task has a "
        "stable pair id that 'monitor ingest' maps back; pairs planned and not yet answered are "
        "not planned again unless --repeat-planned.",
    )
    plan.add_argument("--campaign", required=True, metavar="NAME")
    plan.add_argument("--budget", required=True, type=int, metavar="N", help="pairs in all")
    plan.add_argument(
        "--out",
        metavar="FILE",
        help="task file to write (written atomically, once the plan is stored); a Label Studio "
        "config (FILE.config.xml) or an MTurk/Toloka HTML template (FILE.template.html) beside it",
    )
    plan.add_argument(
        "--dry-run",
        action="store_true",
        help="plan and print what would be written: no file written, nothing stored",
    )
    plan.add_argument(
        "--per-annotator",
        type=int,
        metavar="K",
        help="pairs for each annotator (default: the budget shared evenly)",
    )
    plan.add_argument(
        "--platform",
        choices=("csv", "mturk", "toloka", "labelstudio"),
        default="csv",
        help="csv: pair_id,worker,left,right; mturk: batch input CSV (the layout's variables); "
        "toloka: task TSV (INPUT:* columns); labelstudio: tasks JSON for the Pairwise tag",
    )
    plan.add_argument(
        "--retest", type=_share, default=0.0, metavar="SHARE",
        help="share of each annotator's pairs that repeats a pair they judged (default 0)",
    )  # fmt: skip
    plan.add_argument(
        "--gold", type=_share, default=0.0, metavar="SHARE",
        help="share of each annotator's pairs of two items with gold values (default 0)",
    )  # fmt: skip
    plan.add_argument(
        "--worker", action="append", default=[], metavar="ID",
        help="plan for this annotator only (repeatable; default: every annotator not blocked)",
    )  # fmt: skip
    plan.add_argument(
        "--new-worker", action="append", default=[], metavar="ID",
        help="also plan for an annotator with no judgments yet (repeatable)",
    )  # fmt: skip
    plan.add_argument(
        "--repeat-planned",
        action="store_true",
        help="allow pairs that are planned and not yet answered",
    )
    plan.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    plan.set_defaults(func=run_plan)
    cancel = p_sub.add_parser(
        "cancel",
        parents=[common],
        help="take back a plan's pairs not answered yet",
        description="The pairs of a plan (the newest unless --plan) not answered yet are "
        "removed: the next plan may ask them again, and an answer that still comes for one "
        "answers no planned pair. Answered pairs are kept.",
    )
    cancel.add_argument("--campaign", required=True, metavar="NAME")
    cancel.add_argument(
        "--plan", type=int, metavar="N", help="the plan (its round) to cancel (default: the newest)"
    )
    cancel.set_defaults(func=run_cancel)


def run_plan(args: argparse.Namespace, ctx: Context) -> int:
    from pathlib import Path

    from monitor.actions.planning import PlanOptions, check_output, plan_campaign
    from monitor.core.errors import OutputError, UsageError
    from monitor.core.output import write_output
    from monitor.store.engine import transaction
    from monitor.store.plans import drop_round, lock_planning, save_plan

    opts = PlanOptions(
        budget=args.budget,
        per_annotator=args.per_annotator,
        # the options by name, as store/campaigns.create_campaign builds its row: nothing shared
        platform=args.platform,
        retest=args.retest,
        gold=args.gold,
        workers=tuple(args.worker),
        new_workers=tuple(args.new_worker),
        repeat_planned=args.repeat_planned,
        seed=args.seed,
    ).checked()
    if args.out is None and not args.dry_run:
        raise UsageError("pairs plan needs --out FILE (or --dry-run to see the plan only)")
    out = Path(args.out) if args.out is not None else None
    if out is not None and not args.dry_run:
        check_output(out)
    engine = ctx.engine()
    with _planning_lock_wait(args.campaign), transaction(engine) as session:
        lock_planning(session, args.campaign)  # one plan of a campaign at a time
        tasks = plan_campaign(session, args.campaign, opts)
        if not args.dry_run:
            save_plan(session, tasks.campaign_id, tasks.round, tasks.watermark, tasks.rows)
    # the files only once the plan is stored: a file always has its plan
    extra = tasks.companion(opts.platform)
    if out is not None and not args.dry_run:
        try:
            write_output(out, tasks.text, "tasks", newline="")
            if extra is not None:
                write_output(out.with_name(out.name + extra[0]), extra[1], "task template")
        except OutputError as exc:
            with transaction(engine) as session:
                drop_round(session, tasks.campaign_id, tasks.round)
            raise UsageError(f"{exc} (the plan was not kept)") from None
    parts = ", ".join(f"{n} {p}" for p, n in tasks.by_purpose.items() if n)
    what = f"{out}: " if out is not None and not args.dry_run else "dry run, nothing stored: "
    echo(
        f"{what}{len(tasks.rows)} pairs for {tasks.n_annotators} annotators "
        f"(round {tasks.round}{': ' + parts if parts else ''})"
    )
    if out is not None and extra is not None and not args.dry_run:
        echo(f"{out.name + extra[0]}: the task's {_TEMPLATE[opts.platform]}")
    if tasks.n_excluded:
        echo(f"{tasks.n_excluded} pairs planned before and not answered yet were left out")
    if tasks.n_target:
        echo(
            f"{tasks.n_target_met} of {tasks.n_target} annotators with 30+ comparisons reach 10 "
            "closed triplets once these pairs are answered"
        )
    return 0


_TEMPLATE = {
    "labelstudio": "labelling config (Settings > Labeling Interface > Code)",
    "mturk": "layout (Create > New Project > Design Layout > Source)",
    "toloka": "HTML template (output field: preference, a string)",
}


@contextmanager
def _planning_lock_wait(campaign: str) -> Iterator[None]:
    """A server's ``lock_timeout`` (SQLite: its busy timeout) met while another plan of the
    campaign holds its lock, or
    a pair id stored meanwhile by a process that did not take the lock (an older version), as
    :class:`~monitor.core.errors.Busy` (one line, nothing stored)."""
    from sqlalchemy.exc import IntegrityError, OperationalError

    from monitor.core.errors import Busy

    try:
        yield
    except IntegrityError:
        raise Busy(
            f"campaign {campaign!r} was planned by another process at the same time: nothing "
            "was stored; plan again"
        ) from None
    except OperationalError as exc:
        locked = getattr(exc.orig, "sqlstate", None) == "55P03"  # lock_not_available
        if not locked and "database is locked" not in str(exc.orig):  # SQLite's busy timeout
            raise
        raise Busy(
            f"campaign {campaign!r} is being planned or changed by another process: try again "
            "when it ends"
        ) from None


def run_cancel(args: argparse.Namespace, ctx: Context) -> int:
    from monitor.store.campaigns import get_campaign
    from monitor.store.engine import transaction
    from monitor.store.plans import cancel_plan, lock_planning

    with _planning_lock_wait(args.campaign), transaction(ctx.engine()) as session:
        lock_planning(session, args.campaign)
        campaign = get_campaign(session, args.campaign)
        round_, removed, kept = cancel_plan(session, campaign.id, campaign.name, args.plan)
    kept_words = f"; {kept} answered kept" if kept else ""
    echo(
        f"campaign {args.campaign!r}: plan {round_} cancelled, {removed} pairs not answered yet "
        f"removed{kept_words}"
    )
    return 0
