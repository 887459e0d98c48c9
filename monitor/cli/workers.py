"""``monitor workers``, ``block``, ``down-weight``, ``clear``: see and act on workers.

Every action is appended to the audit trail (who, why, the evidence of the latest run, when)
and puts the worker's status and weight in force.
"""

from __future__ import annotations

import argparse
import getpass
import os
from typing import Any

from monitor.cli.context import Context
from monitor.cli.show import echo, echo_json, echo_table
from monitor.errors import UsageError

EMPTY_REASON = (
    "--reason is empty: a decision needs its reason in words (the audit trail keeps it, and a "
    "block list shows it to the worker)"
)
REASON_HINT = 'for example --reason "random answers on gold questions"'


def _actor(args: argparse.Namespace) -> str:
    if args.by:
        return args.by
    try:
        return os.environ.get("MONITOR_USER") or getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "workers",
        parents=[common],
        help="list a campaign's workers with status, weight, quality and flags",
        description="List the workers of a campaign as its latest run sees them: status (ok, "
        "flagged, down_weighted, blocked), weight, judgments, the reliability model's quality "
        "(accuracy, or noise sd for ratings) with its interval, gold accuracy, CrowdTruth's WQS, "
        "their quality in the platform's other campaigns and the rules that flagged them.",
    )
    p.add_argument("--campaign", required=True, metavar="NAME")
    p.add_argument("--flagged", action="store_true", help="only flagged, blocked or down-weighted")
    p.add_argument("--json", action="store_true", help="print JSON lines instead of a table")
    p.set_defaults(func=run_list)

    for name, helptext, description in (
        (
            "block",
            "block a worker (exported to the platforms' block lists)",
            "Block a worker of a campaign: their status becomes blocked, they count for "
            "nothing in exported labels and weights, and 'monitor export blocklist' lists them "
            "with the reason given (the MTurk and Toloka files show it to the worker). The "
            "decision, who took it and the evidence of the latest run are appended to the "
            "audit trail.",
        ),
        (
            "down-weight",
            "give a worker a weight below 1 in aggregated labels",
            "Give a worker of a campaign a weight in [0, 1]: their status becomes "
            "down_weighted and exported weights and weighted labels use it. The decision is "
            "appended to the audit trail with its reason and the latest run's evidence.",
        ),
        (
            "clear",
            "clear a worker's block or down-weight (status ok, weight 1)",
            "Undo a block or down-weight: status ok, weight 1. The decision is appended to the "
            "audit trail (with a reason if one is given).",
        ),
    ):
        q = sub.add_parser(name, parents=[common], help=helptext, description=description)
        q.add_argument("worker", metavar="WORKER", help="the worker's id on the platform")
        q.add_argument("--campaign", required=True, metavar="NAME")
        q.add_argument(
            "--reason",
            required=name != "clear",
            default=None,
            help="why, in words (kept in the audit trail"
            + ("; shown to the worker by the platforms' block lists)" if name == "block" else ")"),
        )
        q.add_argument("--by", metavar="WHO", help="who decides (default: $MONITOR_USER or login)")
        if name == "down-weight":
            q.add_argument("--weight", type=float, required=True, metavar="W", help="in [0, 1]")
        q.set_defaults(func=run_action, action=name.replace("-", "_"))


def _evidence(session: Any, campaign: Any, worker: str) -> dict[str, Any]:
    from monitor.store.runs import latest_run, run_flags, run_values

    run = latest_run(session, campaign.id)
    if run is None:
        return {"run_id": None}
    flags = [f for f in run_flags(session, run.id, "worker") if f.subject == worker]
    values = {
        v.metric: v.value
        for v in run_values(
            session,
            run.id,
            "worker",
            [
                "wqs",
                "agreement_loo",
                "n_judgments",
                "model_accuracy",
                "model_noise_sd",
                "gold_accuracy",
            ],
        )  # fmt: skip
        if v.subject == worker
    }
    return {
        "run_id": run.id,
        "values": values,
        "flags": [{"rule": f.rule, "value": f.value, "threshold": f.threshold} for f in flags],
    }


def run_action(args: argparse.Namespace, ctx: Context) -> int:
    from monitor.store.campaigns import get_campaign
    from monitor.store.engine import transaction
    from monitor.store.workers import append_decision

    reason = args.reason or ""
    if args.reason is not None and not reason.strip():
        raise UsageError(EMPTY_REASON, hint=REASON_HINT)
    with transaction(ctx.engine()) as s:
        campaign = get_campaign(s, args.campaign)
        d = append_decision(
            s,
            campaign.id,
            args.worker,
            args.action,
            reason=reason,
            actor=_actor(args),
            weight=getattr(args, "weight", None),
            evidence=_evidence(s, campaign, args.worker),
        )
    done = {
        "block": "blocked",
        "down_weight": f"down-weighted to {d.weight:g}"
        if d.weight is not None
        else "down-weighted",
        "clear": "cleared",
    }
    echo(
        f"{args.worker}: {done[args.action]} in {campaign.name} by {d.actor}"
        + (f" ({reason})" if reason else " (no reason given)")
    )
    return 0


def run_list(args: argparse.Namespace, ctx: Context) -> int:
    from monitor.report.document import build_document
    from monitor.store.engine import session_factory

    with session_factory(ctx.engine())() as s:
        doc = build_document(s, args.campaign, items=False)
    rows = doc["workers"]
    if args.flagged:
        rows = [w for w in rows if w["status"] != "ok"]
    if args.json:
        for w in rows:
            echo_json(w)
        return 0

    def f(x: Any) -> str:
        return "-" if x is None else f"{x:.2f}" if isinstance(x, float) else str(x)

    from monitor.report.view import history_text

    def model(w: dict[str, Any]) -> str:
        key = "model_noise_sd" if w.get("model_noise_sd") is not None else "model_accuracy"
        ci = w.get(f"{key}_interval")
        return f(w.get(key)) + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")

    def gold(w: dict[str, Any]) -> str:
        if w.get("gold_accuracy") is None:
            return "-"
        ci = w.get("gold_accuracy_interval")
        return (
            f(w["gold_accuracy"])
            + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")
            + (f" ({w['gold_n']})")
        )

    # the model's quality of a worker is an accuracy, or for ratings a noise sd: say which
    measure = "model noise sd" if doc["campaign"]["kind"] == "rating" else "model accuracy"
    header = ("worker", "status", "weight", "judgments", measure, "gold", "wqs", "history", "flags")
    table = [header] + [
        (
            w["worker"],
            w["status"],
            f(w["weight"]),
            f(w["n_judgments"]),
            model(w),
            gold(w),
            f(w["wqs"]),
            history_text(w.get("history") or []) or "-",
            ",".join(w["flags"]),
        )
        for w in rows
    ]
    echo_table(table)
    echo(f"{len(rows)} of {len(doc['workers'])} workers")
    return 0
