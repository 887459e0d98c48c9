"""``monitor workers``, ``block``, ``down-weight``, ``clear``: see and act on workers.

Every action is appended to the audit trail (who, why, the evidence of the latest run, when)
and puts the worker's status and weight in force.
"""

from __future__ import annotations

import argparse
import getpass
import os
from collections.abc import Mapping
from typing import Any

from monitor.cli.context import Context
from monitor.cli.show import echo, echo_json, echo_table
from monitor.core.errors import UsageError

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
        "flagged, down_weighted, blocked), the run's decision (block, down_weight with its "
        "weight, watch, cannot_tell, ok) and its one-line reason, weight, judgments, the reliability model's quality "
        "(accuracy, or noise sd for ratings) with its interval, gold accuracy, CrowdTruth's WQS, "
        "their quality in the platform's other campaigns and the rules that flagged them.",
    )
    p.add_argument("--campaign", required=True, metavar="NAME")
    p.add_argument(
        "--flagged",
        action="store_true",
        help="only flagged, blocked or down-weighted workers and those decided block, "
        "down_weight or watch",
    )
    p.add_argument("--json", action="store_true", help="print JSON lines instead of a table")
    p.set_defaults(func=run_list)

    for name, helptext, description in (
        (
            "block",
            "block workers (exported to the platforms' block lists)",
            "Block workers of a campaign: their status becomes blocked, they count for nothing "
            "in exported labels and weights, and 'monitor export blocklist' lists them with the "
            "reason (the MTurk and Toloka files show it to the worker). --advised blocks every "
            "worker the latest run decided block. The reason defaults to the decision's. The "
            "decision, who took it and the evidence of the latest run are appended to the "
            "audit trail.",
        ),
        (
            "down-weight",
            "give workers a weight below 1 in aggregated labels",
            "Give workers of a campaign a weight in [0, 1]: their status becomes down_weighted "
            "and exported weights and weighted labels use it. --advised down-weights every "
            "worker the latest run decided down_weight. The weight and the reason default to "
            "the decision's. The decision is appended to the audit trail with its reason and "
            "the latest run's evidence.",
        ),
        (
            "clear",
            "clear workers' block or down-weight (status ok, weight 1)",
            "Undo a block or down-weight: status ok, weight 1. The decision is appended to the "
            "audit trail (with a reason if one is given).",
        ),
    ):
        q = sub.add_parser(name, parents=[common], help=helptext, description=description)
        q.add_argument(
            "workers", nargs="*", metavar="WORKER", help="the workers' ids on the platform"
        )
        q.add_argument("--campaign", required=True, metavar="NAME")
        q.add_argument(
            "--reason",
            default=None,
            help="why, in words (kept in the audit trail"
            + ("; shown to the worker by the platforms' block lists)" if name == "block" else ")")
            + ("; default: the latest run's decision reason" if name != "clear" else ""),
        )
        q.add_argument("--by", metavar="WHO", help="who decides (default: $MONITOR_USER or login)")
        if name == "down-weight":
            q.add_argument(
                "--weight",
                type=float,
                default=None,
                metavar="W",
                help="in [0, 1] (default: the weight of the latest run's decision)",
            )
        if name != "clear":
            q.add_argument(
                "--advised",
                action="store_true",
                help=f"every worker the latest run decided {name.replace('-', '_')}",
            )
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
        )
        if v.subject == worker
    }
    return {
        "run_id": run.id,
        "values": values,
        "flags": [{"rule": f.rule, "value": f.value, "threshold": f.threshold} for f in flags],
    }


def _targets(
    args: argparse.Namespace, campaign: Any, run: Any, advice: dict[str, dict[str, Any]]
) -> list[str]:
    """The workers to act on: those named, and with ``--advised`` those the latest run decided
    the action for (named first, then by id; each once)."""
    advised = getattr(args, "advised", False)
    if not args.workers and not advised:
        hint = "name them, or add --advised" if args.action != "clear" else "name them"
        raise UsageError(f"no worker given to {args.action.replace('_', '-')}", hint=hint)
    targets = list(dict.fromkeys(args.workers))
    if advised:
        if run is None:
            raise UsageError(
                f"campaign {campaign.name!r} has no run yet: no worker is decided anything",
                hint=f"run: monitor recompute --campaign {campaign.name}",
            )
        targets += [
            w for w in sorted(advice) if advice[w].get("decision") == args.action
            and w not in targets
        ]  # fmt: skip
    return targets


def _reason_and_weight(
    args: argparse.Namespace, worker: str, advice: dict[str, Any]
) -> tuple[str, float | None]:
    """The reason and weight given, or else those of the worker's decision in the latest run
    (a decision for another action lends neither)."""
    reason = args.reason
    if reason is not None and not reason.strip():
        raise UsageError(EMPTY_REASON, hint=REASON_HINT)
    weight = getattr(args, "weight", None)
    if args.action == "clear":
        return reason or "", None
    same = advice.get("decision") == args.action
    if reason is None:
        reason = str(advice.get("reason") or "") if same else ""
        if not reason:
            raise UsageError(
                f"no --reason given and the latest run did not decide "
                f"{args.action} for {worker!r}: there is no reason to reuse",
                hint=REASON_HINT,
            )
    if args.action == "down_weight" and weight is None:
        weight = advice.get("weight") if same else None
        if weight is None:
            raise UsageError(
                f"no --weight given and the latest run gives {worker!r} no down-weight",
                hint="for example --weight 0.5",
            )
    return reason, weight


def run_action(args: argparse.Namespace, ctx: Context) -> int:
    from monitor.actions.worker_lists import worker_decisions
    from monitor.store.campaigns import get_campaign
    from monitor.store.engine import transaction
    from monitor.store.runs import latest_run
    from monitor.store.workers import append_decision, get_worker

    lines = []
    with transaction(ctx.engine()) as s:
        campaign = get_campaign(s, args.campaign)
        run = latest_run(s, campaign.id)
        advice = worker_decisions(s, campaign)
        targets = _targets(args, campaign, run, advice)
        for w in args.workers:
            get_worker(s, campaign.id, w)  # every named worker exists, before any action
        for w in targets:
            if getattr(args, "advised", False) and w not in args.workers:
                state = get_worker(s, campaign.id, w)
                held = {"block": "blocked", "down_weight": "down_weighted"}[args.action]
                weight = advice[w].get("weight")
                if state.status == held and (held == "blocked" or state.weight == weight):
                    lines.append(f"{w}: already {held.replace('_', '-')} in {campaign.name}")
                    continue
            reason, weight = _reason_and_weight(args, w, advice.get(w, {}))
            d = append_decision(
                s,
                campaign.id,
                w,
                args.action,
                reason=reason,
                actor=_actor(args),
                weight=weight,
                evidence=_evidence(s, campaign, w),
            )
            done = {
                "block": "blocked",
                "down_weight": f"down-weighted to {d.weight:g}"
                if d.weight is not None
                else "down-weighted",
                "clear": "cleared",
            }
            lines.append(
                f"{w}: {done[args.action]} in {campaign.name} by {d.actor}"
                + (f" ({reason})" if reason else " (no reason given)")
            )
    if not targets:
        lines.append(f"no worker is decided {args.action} in {campaign.name}: nothing to do")
    for line in lines:
        echo(line)
    return 0


def run_list(args: argparse.Namespace, ctx: Context) -> int:
    from monitor.report.document import build_worker_rows
    from monitor.store.campaigns import get_campaign
    from monitor.store.engine import session_factory

    with session_factory(ctx.engine())() as s:
        everyone = build_worker_rows(s, args.campaign)
        kind = get_campaign(s, args.campaign).kind
    rows = everyone
    if args.flagged:
        rows = [
            w for w in rows
            if w["status"] != "ok"
            or w.get("decision") in ("block", "stop", "down_weight", "watch")
        ]  # fmt: skip
    if args.json:
        for w in rows:
            echo_json(w)
        return 0

    def f(x: Any) -> str:
        return "-" if x is None else f"{x:.2f}" if isinstance(x, float) else str(x)

    from monitor.report.view import history_text

    def model(w: Mapping[str, Any]) -> str:
        key = "model_noise_sd" if w.get("model_noise_sd") is not None else "model_accuracy"
        ci = w.get(f"{key}_interval")
        return f(w.get(key)) + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")

    def gold(w: Mapping[str, Any]) -> str:
        if w.get("gold_accuracy") is None:
            return "-"
        ci = w.get("gold_accuracy_interval")
        return (
            f(w["gold_accuracy"])
            + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")
            + (f" ({w['gold_n']})")
        )

    # the model's quality of a worker is an accuracy, or for ratings a noise sd: say which
    measure = "model noise sd" if kind == "rating" else "model accuracy"

    def decision(w: Mapping[str, Any]) -> str:
        d = str(w.get("decision") or "-")
        if d in ("stop", "down_weight") and w.get("decision_weight") is not None:
            d += f" {w['decision_weight']:.2f}"
        return d

    header = ("worker", "status", "decision", "weight", "judgments", measure, "gold", "wqs",
              "history", "flags", "reason")  # fmt: skip
    table = [header] + [
        (
            w["worker"],
            w["status"],
            decision(w),
            f(w["weight"]),
            f(w["n_judgments"]),
            model(w),
            gold(w),
            f(w["wqs"]),
            history_text(w.get("history") or []) or "-",
            ",".join(w["flags"]),
            w.get("decision_reason") or "",
        )
        for w in rows
    ]
    echo_table(table)
    echo(f"{len(rows)} of {len(everyone)} workers")
    return 0
