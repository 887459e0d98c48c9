"""The automatic policy's decisions recorded at the end of a run, in its transaction: the
policy decides (:func:`monitor.rules.policy.decide`, pure), this writes each decision to the
audit trail and puts it in force."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from sqlalchemy.orm import Session

from monitor.core.results import FlagRecord
from monitor.core.thresholds import PolicyOptions
from monitor.rules.decision import WorkerDecision
from monitor.rules.policy import Decision, decide
from monitor.store.workers import DecisionRecord, append_decision, decisions, worker_states


def apply_policy(
    session: Session,
    campaign_id: int,
    run_id: int | None,
    flags: Iterable[FlagRecord],
    options: PolicyOptions,
    advice: Iterable[WorkerDecision] = (),
) -> list[Decision]:
    """Decide and record: each decision is appended to the audit trail and put in force
    (``advice``: the run's worker decisions, for the ``advice`` policy)."""
    history: dict[str, list[DecisionRecord]] = defaultdict(list)
    for past in decisions(session, campaign_id):
        history[past.worker].append(past)
    taken = decide(
        flags,
        worker_states(session, campaign_id),
        history,
        policy=options.policy,
        down_weight=options.down_weight,
        run_id=run_id,
        advice=advice,
    )
    for d in taken:
        append_decision(
            session,
            campaign_id,
            d.worker,
            d.action,  # type: ignore[arg-type]
            reason=d.reason,
            actor=f"policy:{options.policy}",
            automatic=True,
            weight=d.weight,
            run_id=run_id,
            evidence=d.evidence,
        )
    return taken
