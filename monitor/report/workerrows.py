"""The document's worker rows: each worker's status, the catalog's worker measures, the run's
decision, transitivity, and their numbers in the platform's other campaigns."""

from __future__ import annotations

from typing import Any, cast

from monitor.core import catalog
from monitor.core.catalog import Kind
from monitor.report.data import CampaignData
from monitor.report.jsonsafe import clean, natural_key, num, value_count
from monitor.report.jsonsafe import value_interval as _interval
from monitor.report.jsonsafe import value_number as _v
from monitor.report.shape import DecisionFields, Transitivity, WorkerRow
from monitor.store.runs import FlagRecord

P_E = {False: 13 / 27, True: 6 / 8}


def _transitivity(data: CampaignData, worker: str) -> Transitivity | None:
    if data.campaign.kind != Kind.PAIRWISE:
        return None
    v = data.get("worker", "transitivity_kappa", worker)
    d = (v.detail or {}) if v is not None else {}
    triplets = d.get("triplets", v.n if v is not None else 0)
    return {
        "kappa": _v(v),
        "p_a": num(d.get("p_a")),
        "p_e": num(d.get("p_e")) if d.get("p_e") is not None else P_E[data.campaign.strict],
        "triplets": int(triplets or 0),
        "transitive": int(d.get("transitive") or 0),
    }


WORKER_KEYS = tuple(
    (m.name, m.key, m.shows_interval) for m in catalog.measures("worker") if m.key is not None
)
"""The worker measures of the document's rows, by the catalog: (metric, key, with interval)."""


def worker_rows(data: CampaignData) -> list[WorkerRow]:
    """Every worker the campaign or the run knows, in natural order of their ids."""
    states = {w.external_id: w for w in data.workers}
    flags = data.flags_of("worker")
    subjects = set(states) | data.subjects("worker")
    pairwise = data.campaign.kind == Kind.PAIRWISE
    out: list[WorkerRow] = []
    for w in sorted(subjects, key=natural_key):
        state = states.get(w)
        rules = sorted({f.rule for f in flags.get(w, [])})
        status = state.status if state is not None else "ok"
        if status == "ok" and rules:
            status = "flagged"
        row: dict[str, Any] = {"worker": str(w)}
        for metric, key, interval in WORKER_KEYS:
            v = data.get("worker", metric, w)
            row[key] = _v(v)
            if interval:
                row[f"{key}_interval"] = _interval(v)
        n = value_count(data.get("worker", "n_judgments", w))
        if n is None and state is not None and data.run is None:
            n = state.n_judgments
        pos = data.get("worker", "position_bias", w)
        gold = data.get("worker", "gold_accuracy", w)
        row.update(_decision(data, w, n))
        row.update(
            n_judgments=n,
            transitivity=_transitivity(data, w),
            flags=rules,
            status=status,
            weight=state.weight if state is not None else 1.0,
            position_bias_p=num((pos.detail or {}).get("p_value")) if pos else None,
            gold_n=gold.n if gold is not None else None,
            **_worker_history(data, w, flags.get(w, [])),
        )
        if pairwise:
            tk = data.get("worker", "transitivity_kappa", w)
            row["cycles"] = clean((tk.detail or {}).get("cycles") or []) if tk else []
        out.append(cast(WorkerRow, row))  # its measure keys are the catalog's
    return out


def _decision(data: CampaignData, w: str, n: int | None) -> DecisionFields:
    """The run's decision for the worker (:mod:`monitor.rules.decision`): ``decision``,
    ``decision_reason`` (one line fit to show the worker), ``decision_weight`` and
    ``decision_evidence``. Without a run, or for a worker the run did not see, ``cannot_tell``."""
    v = data.get("worker", "decision", w)
    d = (v.detail or {}) if v is not None else {}
    if not d.get("decision"):
        why = "no metric run yet" if data.run is None else "the latest run made no decision"
        return {"decision": "cannot_tell", "decision_reason": why, "decision_weight": None,
                "decision_evidence": None}  # fmt: skip
    return {
        "decision": d["decision"],
        "decision_reason": d.get("reason") or "",
        "decision_weight": num(d.get("weight")),
        "decision_evidence": clean(d.get("evidence")),
    }


def _worker_history(data: CampaignData, w: str, flags: list[FlagRecord]) -> dict[str, Any]:
    """A worker's reliability-model and gold numbers in the platform's other campaigns, and,
    for each flag, why in words."""
    history = [
        {
            "campaign": e.campaign,
            "kind": e.kind,
            "run": e.run_id,
            **{m: _measure(e.measures.get(m)) for m in catalog.HISTORY if m != "n_judgments"},
            "n_judgments": _measure(e.measures.get("n_judgments"), value_only=True),
        }
        for e in data.worker_history.get(w, [])
    ]
    return {
        "history": history,
        "evidence": [
            {"rule": f.rule, "message": str(f.evidence.get("message") or f.rule)}
            for f in sorted(flags, key=lambda f: f.rule)
        ],
    }


def _measure(m: Any, value_only: bool = False) -> Any:
    if m is None:
        return None
    if value_only:
        return num(m.value)
    lo, hi = num(m.low), num(m.high)
    return {"value": num(m.value), "interval": [lo, hi] if lo is not None and hi is not None
            else None, "n": m.n}  # fmt: skip


__all__ = ["P_E", "WORKER_KEYS", "worker_rows"]
