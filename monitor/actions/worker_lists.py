"""The worker lists the platforms take: block lists (MTurk, Prolific, Toloka, CSV, JSON) and
worker weights, made of the workers' status, decisions and the latest run's flags and values.

See ``docs/exports.md`` for each file's format; every cell is written by
:mod:`monitor.core.cells` (a spreadsheet runs none of them).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy.orm import Session

from monitor.core.catalog import Kind
from monitor.core.cells import csv_table, json_text, neutralise
from monitor.core.errors import UsageError
from monitor.core.thresholds import DOWN_WEIGHT
from monitor.rules.stop import Stop, live_stop
from monitor.store.campaigns import CampaignInfo, get_campaign
from monitor.store.live import live_stops
from monitor.store.runs import latest_run, run_flags, run_values
from monitor.store.workers import DecisionRecord, decisions, list_workers

Platform = Literal["mturk", "prolific", "toloka", "csv", "json"]
PLATFORMS = ("mturk", "prolific", "toloka", "csv", "json")

MTURK_HEADER = (
    "Worker ID",
    "Lifetime Approval Rate",
    "Last 30 Days",
    "Last 7 Days",
    "CURRENT-BlockStatus",
    "UPDATE-BlockStatus",
    "BLOCK_REASON",
)
TOLOKA_HEADER = ("user_id", "scope", "project_id", "pool_id", "private_comment", "will_expire")
TOLOKA_ID = re.compile(r"[0-9A-Za-z_-]{1,64}")
"""What a Toloka project or pool id looks like (numbers, in practice)."""
MTURK_QUALIFICATION = "monitor quality"


def flagged_workers(session: Session, campaign: CampaignInfo) -> dict[str, list[str]]:
    """The rules that flagged each worker in the latest run (none without a run)."""
    run = latest_run(session, campaign.id)
    out: dict[str, list[str]] = defaultdict(list)
    if run is not None:
        for f in run_flags(session, run.id, "worker"):
            if f.rule not in out[f.subject]:
                out[f.subject].append(f.rule)
    return {w: sorted(rules) for w, rules in out.items()}


def worker_decisions(session: Session, campaign: CampaignInfo) -> dict[str, dict[str, Any]]:
    """Each worker's decision in the latest run (``monitor.rules.decision``: ``decision``,
    ``reason``, ``weight``, ``evidence``), or ``stop`` where the live path stopped them since
    (:func:`monitor.rules.stop.live_stop`); empty without a run or a stop."""
    run = latest_run(session, campaign.id)
    decided = {} if run is None else {
        v.subject: dict(v.detail)
        for v in run_values(session, run.id, "worker", ["decision"])
        if v.detail and v.detail.get("decision")
    }  # fmt: skip
    stops = live_stops(session, campaign.id)
    if stops:  # the live path stopped them since: its stop, unless the run's decision stands
        used = (run.parameters.get("settings") or {}) if run is not None else {}
        down = float(used.get("down_weight", DOWN_WEIGHT[0]))
        measure = "mse" if campaign.kind == Kind.RATING else "accuracy"
        for w, r in stops.items():
            stop = Stop(r.after, r.evidence, r.line, r.typical, r.alpha, measure)
            made = live_stop(decided.get(w), stop, down)
            if made is not None:
                decided[w] = made
    return decided


def shown_status(status: str, flags: Sequence[str]) -> str:
    """The status ``monitor workers`` and the report show: ``flagged`` for a worker whose
    stored status is ``ok`` and whom the latest run flagged."""
    return "flagged" if status == "ok" and flags else status


@dataclass(frozen=True)
class WorkerWeight:
    """A worker's weight in aggregation: decision weight x the reliability model's weight in
    the latest run (x WQS where the run has no model; 0 when blocked). ``status`` as
    ``monitor workers`` shows it (:func:`shown_status`)."""

    worker: str
    status: str
    weight: float
    wqs: float | None
    effective: float
    n_judgments: int
    model_weight: float | None = None
    decision: str = "cannot_tell"
    decision_weight: float | None = None


def finite(x: float | None) -> float | None:
    """``x`` when it is a finite number, else None. Not :func:`monitor.rules.values.finite`,
    which makes every number a float: an export writes a stored weight as it was stored."""
    return x if x is not None and math.isfinite(x) else None


def worker_weights(session: Session, campaign: CampaignInfo) -> list[WorkerWeight]:
    """Every worker's effective weight; without a run the decision weight alone."""
    run = latest_run(session, campaign.id)
    by: dict[str, dict[str, float | None]] = defaultdict(dict)
    if run is not None:
        for v in run_values(session, run.id, "worker", ["wqs", "model_weight"]):
            by[v.metric][v.subject] = v.value
    flagged = flagged_workers(session, campaign)
    decided = worker_decisions(session, campaign)
    out = []
    for w in list_workers(session, campaign.id, campaign.kind):
        q = finite(by["wqs"].get(w.external_id))
        m = finite(by["model_weight"].get(w.external_id))
        quality = m if m is not None else q if q is not None else 1.0
        eff = 0.0 if w.status == "blocked" else w.weight * quality
        status = shown_status(w.status, flagged.get(w.external_id, []))
        d = decided.get(w.external_id, {})
        out.append(
            WorkerWeight(
                w.external_id, status, w.weight, q, eff, w.n_judgments, m,
                str(d.get("decision") or "cannot_tell"), finite(d.get("weight")),
            )
        )  # fmt: skip
    return out


@dataclass(frozen=True)
class BlockEntry:
    """A worker of a block list: ``status`` blocked (``decision``: the latest block), decided
    (the latest run decided ``block``: ``advice`` is the decision's one-line reason) or, with
    ``include_flagged``, flagged (``rules``: what flagged them in the latest run)."""

    worker: str
    status: str
    decision: DecisionRecord | None = None
    rules: tuple[str, ...] = ()
    advice: str = ""

    @property
    def reason(self) -> str:
        """The block decision's reason, the run's decision reason, or the rules that flagged
        the worker; never made up (empty for a worker blocked without a decision, e.g. by a
        platform's status)."""
        if self.decision is not None:
            return self.decision.reason
        if self.advice:
            return self.advice
        return f"flagged by monitor: {', '.join(self.rules)}" if self.rules else ""


def blocklist_entries(
    session: Session, campaign: CampaignInfo, *, include_flagged: bool = False
) -> list[BlockEntry]:
    """The blocked workers of a campaign and those its latest run decided ``block`` (and the
    other flagged ones, with ``include_flagged``), by worker id."""
    last_block: dict[str, DecisionRecord] = {}
    for d in decisions(session, campaign.id):
        if d.action == "block":
            last_block.setdefault(d.worker, d)
    flagged = flagged_workers(session, campaign) if include_flagged else {}
    decided = worker_decisions(session, campaign)
    out = []
    for w in list_workers(session, campaign.id, campaign.kind, counts=False):
        advice = decided.get(w.external_id, {})
        if w.status == "blocked":
            out.append(BlockEntry(w.external_id, "blocked", last_block.get(w.external_id)))
        elif advice.get("decision") == "block":
            reason = str(advice.get("reason") or "")
            out.append(BlockEntry(w.external_id, "decided", advice=reason))
        elif shown_status(w.status, flagged.get(w.external_id, [])) == "flagged":
            out.append(BlockEntry(w.external_id, "flagged", rules=tuple(flagged[w.external_id])))
    return out


def toloka_scope(project: str | None = None, pool: str | None = None) -> tuple[str, str, str]:
    """``(scope, project_id, pool_id)`` of a Toloka user restriction: every project of the
    requester, one project, or one pool (UsageError for both, or an id that is no id)."""
    if project is not None and pool is not None:
        raise UsageError("a Toloka restriction covers one project or one pool, not both")
    for option, value in (("--project", project), ("--pool", pool)):
        if value is not None and not TOLOKA_ID.fullmatch(value):
            raise UsageError(f"{option} {value!r}: not a Toloka id", hint=f"e.g. {option} 1234567")
    if project is not None:
        return ("PROJECT", project, "")
    if pool is not None:
        return ("POOL", "", pool)
    return ("ALL_PROJECTS", "", "")


def export_blocklist(
    session: Session,
    campaign_name: str,
    platform: Platform,
    *,
    include_flagged: bool = False,
    scope: tuple[str, str, str] = ("ALL_PROJECTS", "", ""),
) -> str:
    """The blocked workers of a campaign in the platform's upload format (and the workers the
    latest run flagged, with ``include_flagged``); ``scope``: a Toloka restriction's
    (:func:`toloka_scope`)."""
    campaign = get_campaign(session, campaign_name)
    entries = blocklist_entries(session, campaign, include_flagged=include_flagged)

    if platform == "mturk":
        return csv_table(
            MTURK_HEADER, [(e.worker, "", "", "", "", "Block", e.reason) for e in entries]
        )
    if platform == "prolific":
        # a line-based list cannot hold line breaks: they are dropped from the id
        return "".join(
            neutralise(e.worker).replace("\r", "").replace("\n", "") + "\n" for e in entries
        )
    if platform == "toloka":
        return csv_table(
            TOLOKA_HEADER,
            [(e.worker, *scope, e.reason, "") for e in entries],
            delimiter="\t",
        )
    rows = [
        {
            "worker": e.worker,
            "reason": e.reason,
            "actor": e.decision.actor if e.decision else None,
            "automatic": e.decision.automatic if e.decision else None,
            "blocked_at": e.decision.created_at.isoformat() if e.decision else None,
            "status": e.status,
        }
        for e in entries
    ]
    if platform == "json":
        return json_text({"campaign": campaign.name, "blocked": rows})
    return csv_table(
        ("worker", "reason", "actor", "automatic", "blocked_at", "status"),
        [tuple("" if v is None else v for v in r.values()) for r in rows],
    )


def export_weights(session: Session, campaign_name: str, platform: Platform) -> str:
    """Worker weights: CSV/JSON, or MTurk's Workers CSV setting a qualification score."""
    campaign = get_campaign(session, campaign_name)
    weights = worker_weights(session, campaign)
    if platform == "mturk":
        header = (*MTURK_HEADER[:4], f"UPDATE-{MTURK_QUALIFICATION}")
        return csv_table(
            header,
            [(w.worker, "", "", "", round(100 * min(max(w.effective, 0.0), 1.0))) for w in weights],
        )
    if platform in ("prolific", "toloka"):
        raise UsageError(
            f"{platform} has no worker weights to upload",
            hint="export them with --platform csv or json (or a blocklist for the platform)",
        )
    if platform == "json":
        return json_text(
            {
                "campaign": campaign.name,
                "weights": [
                    {
                        "worker": w.worker,
                        "status": w.status,
                        "weight": w.weight,
                        "wqs": w.wqs,
                        "effective_weight": w.effective,
                        "n_judgments": w.n_judgments,
                        "model_weight": w.model_weight,
                        "decision": w.decision,
                        "decision_weight": w.decision_weight,
                    }
                    for w in weights
                ],
            }
        )
    return csv_table(
        (
            "worker",
            "status",
            "weight",
            "wqs",
            "effective_weight",
            "n_judgments",
            "model_weight",
            "decision",
            "decision_weight",
        ),
        [
            (
                w.worker,
                w.status,
                w.weight,
                w.wqs,
                w.effective,
                w.n_judgments,
                w.model_weight,
                w.decision,
                w.decision_weight,
            )
            for w in weights
        ],
    )


__all__ = [
    "MTURK_HEADER",
    "PLATFORMS",
    "TOLOKA_HEADER",
    "BlockEntry",
    "Platform",
    "WorkerWeight",
    "blocklist_entries",
    "export_blocklist",
    "export_weights",
    "finite",
    "flagged_workers",
    "shown_status",
    "toloka_scope",
    "worker_decisions",
    "worker_weights",
]
