"""The automatic policy: a run's worker flags turned into decisions (pure; the pipeline
records them).

- ``suggest``: a recommendation is written to the audit trail; status and weight stay.
- ``block``: the flagged worker is blocked.
- ``down_weight``: the flagged worker's weight becomes ``down_weight``.

These three record as the reason the worker's decision's one-line reason (what the block lists
show the worker: "answers no better than chance over 40 questions"), else the flags' names; the
flags' technical messages stay in the evidence (``detail``).
- ``advice``: each worker's decision (:mod:`monitor.rules.decision`) is applied: ``block``
  blocks, ``down_weight`` gives the decision's weight; the decision's one-line reason is the
  reason recorded (and shown to the worker by the block lists).

Rules that keep the trail honest: a manual decision (block, down-weight or clear by a person) is
never overridden by the policy; the policy never loosens a state (a blocked worker is not
down-weighted); a worker already in the state the policy would give gets no duplicate decision,
and the same suggestion is not repeated run after run. The policy never clears a worker whose
flags went away: that is a person's call (``monitor clear``). It acts on the worker rules the
catalog marks (``monitor.core.catalog.POLICY_RULES``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from monitor.core.catalog import POLICY_RULES
from monitor.core.results import FlagRecord
from monitor.rules.decision import WorkerDecision

POLICIES = ("suggest", "block", "down_weight", "advice")
VERBS = {"suggest": "suggested block", "block": "blocked", "down_weight": "down-weighted"}


class WorkerStatus(Protocol):
    """A worker's state in force (``monitor.store.workers.WorkerState``)."""

    @property
    def status(self) -> str: ...
    @property
    def weight(self) -> float: ...


class PastDecision(Protocol):
    """A decision of the audit trail (``monitor.store.workers.DecisionRecord``)."""

    @property
    def id(self) -> int: ...
    @property
    def action(self) -> str: ...
    @property
    def automatic(self) -> bool: ...
    @property
    def evidence(self) -> dict[str, Any] | None: ...


@dataclass(frozen=True)
class Decision:
    """What the policy decided for one worker, with why and on which evidence."""

    worker: str
    action: str
    weight: float | None
    reason: str
    rules: tuple[str, ...]
    evidence: dict[str, Any] = field(default_factory=dict)


def _describe(f: FlagRecord) -> str:
    message = f.evidence.get("message")
    if message:
        return f"{f.rule}: {message}"
    if f.value is not None and f.threshold is not None:
        return f"{f.rule}: {f.value:.3g} against threshold {f.threshold:.3g}"
    return f.rule


def decide(
    flags: Iterable[FlagRecord],
    states: Mapping[str, WorkerStatus],
    history: Mapping[str, Sequence[PastDecision]],
    *,
    policy: str,
    down_weight: float,
    run_id: int | None = None,
    advice: Iterable[WorkerDecision] = (),
) -> list[Decision]:
    """Pure rules: the decisions the policy takes for the flagged workers (``advice``: the
    run's worker decisions, which the ``advice`` policy applies).

    ``history`` maps a worker to its decisions, newest first.
    """
    if policy not in POLICIES:
        raise ValueError(
            f"Unknown policy {policy!r}: expected suggest, block, down_weight or advice."
        )
    if policy == "advice":
        return _apply_advice(advice, states, history, run_id)
    short = {d.worker: d.reason for d in advice if d.reason}
    by_worker: dict[str, list[FlagRecord]] = defaultdict(list)
    for f in flags:
        if f.scope == "worker" and f.rule in POLICY_RULES:
            by_worker[f.subject].append(f)
    out: list[Decision] = []
    for worker in sorted(by_worker):
        state = states.get(worker)
        if state is None:
            continue
        wflags = by_worker[worker]
        rules = tuple(sorted({f.rule for f in wflags}))
        past = list(history.get(worker, ()))
        effective = next((d for d in past if d.action != "suggest"), None)
        if effective is not None and not effective.automatic:
            continue  # a person decided: the policy stays out
        if policy == "suggest":
            if state.status != "ok":
                continue
            last = next((d for d in past if d.action == "suggest"), None)
            newer = last is not None and (effective is None or last.id > effective.id)
            if (
                last is not None
                and newer
                and tuple((last.evidence or {}).get("rules", ())) == rules
            ):
                continue
            action, weight = "suggest", None
        elif policy == "block":
            if state.status == "blocked":
                continue
            action, weight = "block", None
        else:
            if state.status == "blocked":
                continue
            if state.status == "down_weighted" and abs(state.weight - down_weight) < 1e-12:
                continue
            action, weight = "down_weight", float(down_weight)
        reason = short.get(worker) or "flagged: " + ", ".join(rules).replace("_", " ")
        evidence = {
            "run_id": run_id,
            "rules": list(rules),
            "detail": f"{VERBS[action]} by the automatic policy: "
            + "; ".join(_describe(f) for f in wflags),
            "flags": [
                {"rule": f.rule, "value": f.value, "threshold": f.threshold, **f.evidence}
                for f in wflags
            ],
        }
        out.append(Decision(worker, action, weight, reason, rules, evidence))
    return out


def _apply_advice(
    advice: Iterable[WorkerDecision],
    states: Mapping[str, WorkerStatus],
    history: Mapping[str, Sequence[PastDecision]],
    run_id: int | None,
) -> list[Decision]:
    """The ``block`` and ``down_weight`` decisions put in force, under the same rules as the
    other policies: a person's decision stands, a state is never loosened, nothing is repeated."""
    out: list[Decision] = []
    for d in sorted(advice, key=lambda d: d.worker):
        state = states.get(d.worker)
        if state is None or d.decision not in ("block", "stop", "down_weight"):
            continue
        effective = next((p for p in history.get(d.worker, ()) if p.action != "suggest"), None)
        if effective is not None and not effective.automatic:
            continue
        if state.status == "blocked":
            continue
        # stop: no more tasks is the platform's part (the connectors); here the answers are
        # down-weighted
        action = "down_weight" if d.decision == "stop" else d.decision
        weight = None if action == "block" else float(d.applied_weight)
        if (
            action == "down_weight"
            and state.status == "down_weighted"
            and abs(state.weight - (weight or 0.0)) < 1e-12
        ):
            continue
        rules = tuple(d.evidence.get("rules") or ())
        evidence = {"run_id": run_id, "rules": list(rules), "decision": d.decision,
                    **{k: v for k, v in d.evidence.items() if k != "rules"}}  # fmt: skip
        out.append(Decision(d.worker, action, weight, d.reason, rules, evidence))
    return out
