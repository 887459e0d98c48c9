"""``monitor pairs plan``: the next pairs to ask in a preference campaign."""

from __future__ import annotations

import argparse
import math

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
        "campaign and writes them as a platform's task file. See docs/planning.md.",
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
        "--out", required=True, metavar="FILE", help="task file to write (written atomically)"
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
        help="csv: pair_id,worker,left,right; mturk: batch input CSV (Input.* columns); "
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


def run_plan(args: argparse.Namespace, ctx: Context) -> int:
    from pathlib import Path

    from monitor.errors import OutputError, UsageError
    from monitor.output import write_output
    from monitor.planning import PlanOptions, check_output, plan_campaign
    from monitor.store.engine import transaction
    from monitor.store.plans import save_plan

    opts = PlanOptions(
        budget=args.budget,
        per_annotator=args.per_annotator,
        platform=args.platform,
        retest=args.retest,
        gold=args.gold,
        workers=tuple(args.worker),
        new_workers=tuple(args.new_worker),
        repeat_planned=args.repeat_planned,
        seed=args.seed,
    ).checked()
    out = Path(args.out)
    check_output(out)
    with transaction(ctx.engine()) as session:
        tasks = plan_campaign(session, args.campaign, opts)
        try:
            write_output(out, tasks.text, "tasks", newline="")
        except OutputError as exc:
            raise UsageError(str(exc)) from None
        # stored only once the file is written; a failed commit leaves a file nobody planned
        save_plan(session, tasks.campaign_id, tasks.round, tasks.watermark, tasks.rows)
    parts = ", ".join(f"{n} {p}" for p, n in tasks.by_purpose.items() if n)
    echo(
        f"{out}: {len(tasks.rows)} pairs for {tasks.n_annotators} annotators "
        f"(round {tasks.round}{': ' + parts if parts else ''})"
    )
    if tasks.n_excluded:
        echo(f"{tasks.n_excluded} pairs planned before and not answered yet were left out")
    if tasks.n_target:
        echo(
            f"{tasks.n_target_met} of {tasks.n_target} annotators with 30+ comparisons reach 10 "
            "closed triplets once these pairs are answered"
        )
    return 0
