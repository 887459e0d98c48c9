"""Workers of a campaign: their status and weight in force, and the audit trail of decisions.

A decision is appended to ``worker_decisions`` (never rewritten) and the worker's ``status`` and
``weight`` are updated in the same transaction, so the trail always explains the state.

| action | status | weight |
|---|---|---|
| ``block`` | ``blocked`` | unchanged (a blocked worker counts for nothing in exports) |
| ``down_weight`` | ``down_weighted`` | the given weight |
| ``clear`` | ``ok`` | 1.0 |
| ``suggest`` | unchanged | unchanged (a recommendation of the automatic policy) |
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from monitor.core.errors import NotFound, UsageError
from monitor.store.models import (
    Campaign,
    Judgment,
    MetricRun,
    Preference,
    Worker,
    WorkerDecision,
)

Action = Literal["block", "down_weight", "clear", "suggest"]


@dataclass(frozen=True)
class WorkerState:
    """A worker and the decision in force."""

    id: int
    external_id: str
    status: str
    weight: float
    n_judgments: int = 0


@dataclass(frozen=True)
class DecisionRecord:
    """One entry of the audit trail."""

    id: int
    worker: str
    action: str
    weight: float | None
    reason: str
    automatic: bool
    actor: str
    run_id: int | None
    evidence: dict[str, Any] | None
    created_at: datetime
    run_number: int | None = None
    """The number of the decision's run in its campaign (what users see)."""


def _judgment_counts(session: Session, campaign_id: int, kind: str) -> dict[int, int]:
    table = Preference if kind == "pairwise" else Judgment
    rows = session.execute(
        select(table.worker_id, func.count(table.id))
        .where(table.campaign_id == campaign_id)
        .group_by(table.worker_id)
    )
    return {int(w): int(n) for w, n in rows}


def list_workers(
    session: Session, campaign_id: int, kind: str = "rating", *, counts: bool = True
) -> list[WorkerState]:
    """Every worker of the campaign with status, weight and judgment count (0 without
    ``counts``: counting scans every judgment), by external id."""
    judged = _judgment_counts(session, campaign_id, kind) if counts else {}
    rows = session.scalars(
        select(Worker).where(Worker.campaign_id == campaign_id).order_by(Worker.external_id)
    )
    return [
        WorkerState(w.id, w.external_id, w.status, float(w.weight), judged.get(w.id, 0))
        for w in rows
    ]


def worker_states(session: Session, campaign_id: int) -> dict[str, WorkerState]:
    """Status and weight of every worker, keyed by external id (no counts: cheap)."""
    rows = session.scalars(select(Worker).where(Worker.campaign_id == campaign_id))
    return {
        w.external_id: WorkerState(w.id, w.external_id, w.status, float(w.weight)) for w in rows
    }


def _worker(session: Session, campaign_id: int, external_id: str) -> Worker:
    """The worker row by external id, or NotFound."""
    w = session.scalars(
        select(Worker).where(Worker.campaign_id == campaign_id, Worker.external_id == external_id)
    ).one_or_none()
    if w is None:
        name = session.scalar(select(Campaign.name).where(Campaign.id == campaign_id)) or ""
        raise NotFound(
            f"no worker {external_id!r} in this campaign",
            hint=f"list them with: monitor workers --campaign {shlex.quote(name)}",
        )
    return w


def get_worker(session: Session, campaign_id: int, external_id: str) -> WorkerState:
    """One worker by external id, or NotFound."""
    w = _worker(session, campaign_id, external_id)
    return WorkerState(w.id, w.external_id, w.status, float(w.weight))


def append_decision(
    session: Session,
    campaign_id: int,
    external_id: str,
    action: Action,
    *,
    reason: str,
    actor: str,
    automatic: bool = False,
    weight: float | None = None,
    run_id: int | None = None,
    evidence: Mapping[str, Any] | None = None,
) -> DecisionRecord:
    """Append a decision to the trail and put it in force (status, weight). A block or a
    down-weight needs a reason in words (never made up: the block lists show it to the
    worker); a clear may have none (``""``)."""
    if action in ("block", "down_weight") and not reason.strip():
        raise UsageError(
            f"a {action.replace('_', '-')} needs a reason in words, got {reason!r}",
            hint='for example reason="random answers on gold questions"',
        )
    w = _worker(session, campaign_id, external_id)
    if action == "block":
        w.status = "blocked"
    elif action == "down_weight":
        if weight is None or not 0.0 <= weight <= 1.0:
            raise UsageError(f"a down-weight needs a weight in [0, 1], got {weight!r}")
        w.status, w.weight = "down_weighted", float(weight)
    elif action == "clear":
        w.status, w.weight = "ok", 1.0
    elif action != "suggest":
        raise UsageError(f"unknown action {action!r}", hint="block, down_weight, clear or suggest")
    row = WorkerDecision(
        campaign_id=campaign_id,
        worker_id=w.id,
        action=action,
        weight=weight if action == "down_weight" else None,
        reason=reason,
        automatic=automatic,
        actor=actor,
        run_id=run_id,
        evidence=dict(evidence) if evidence is not None else None,
    )
    session.add(row)
    session.flush()
    return _record(row, external_id)


def _record(d: WorkerDecision, external_id: str, run_number: int | None = None) -> DecisionRecord:
    return DecisionRecord(
        d.id,
        external_id,
        d.action,
        d.weight,
        d.reason,
        d.automatic,
        d.actor,
        d.run_id,
        dict(d.evidence) if d.evidence is not None else None,
        d.created_at,
        run_number,
    )


def decisions(
    session: Session, campaign_id: int, worker: str | None = None, limit: int | None = None
) -> list[DecisionRecord]:
    """The audit trail, newest first (optionally of one worker)."""
    q = (
        select(WorkerDecision, Worker.external_id, MetricRun.number)
        .join(Worker, Worker.id == WorkerDecision.worker_id)
        .outerjoin(MetricRun, MetricRun.id == WorkerDecision.run_id)
        .where(WorkerDecision.campaign_id == campaign_id)
    )
    if worker is not None:
        q = q.where(Worker.external_id == worker)
    q = q.order_by(WorkerDecision.id.desc())
    if limit is not None:
        q = q.limit(limit)
    return [_record(d, ext, number) for d, ext, number in session.execute(q)]


def last_decisions(session: Session, campaign_id: int) -> dict[str, DecisionRecord]:
    """The newest decision of each worker that has one (for the automatic policy)."""
    out: dict[str, DecisionRecord] = {}
    for d in decisions(session, campaign_id):
        out.setdefault(d.worker, d)
    return out


__all__ = [
    "Action",
    "DecisionRecord",
    "WorkerState",
    "append_decision",
    "decisions",
    "get_worker",
    "last_decisions",
    "list_workers",
    "worker_states",
]
