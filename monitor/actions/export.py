"""Exports for the platforms: block lists, worker weights, and labels aggregated by quality.

See ``docs/exports.md`` for each file's format. Every CSV/TSV cell (and every line of the
Prolific list) that a spreadsheet would read as a formula (``=``, ``+``, ``-``, ``@``, tab, CR)
is neutralised with a leading single quote.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from sqlalchemy.orm import Session

from monitor.core.errors import UsageError
from monitor.store.arrays import load_arrays
from monitor.store.campaigns import CampaignInfo, get_campaign
from monitor.store.runs import latest_run, run_flags, run_values
from monitor.store.workers import DecisionRecord, decisions, list_workers

What = Literal["blocklist", "weights", "labels"]
Platform = Literal["mturk", "prolific", "toloka", "csv", "json"]
WHATS = ("blocklist", "weights", "labels")
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
FALLBACK_METHOD = "mean (model fallback)"  # the rating model lost its held-out check
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def neutralise(value: Any) -> str:
    """A cell a spreadsheet will not evaluate: text starting like a formula gets a ``'``."""
    if value is None:
        return ""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value) if math.isfinite(value) else ""
    s = str(value)
    return "'" + s if s.startswith(FORMULA_START) else s


def _table(header: Sequence[str], rows: Iterable[Sequence[Any]], delimiter: str = ",") -> str:
    """CSV/TSV text with every text cell neutralised (numbers are written as numbers)."""
    buf = io.StringIO()
    w = csv.writer(buf, delimiter=delimiter, lineterminator="\r\n")
    w.writerow([neutralise(h) for h in header])
    for row in rows:
        w.writerow(
            [
                ("" if not math.isfinite(c) else f"{c:.6g}")
                if isinstance(c, float)
                else str(c)
                if isinstance(c, int) and not isinstance(c, bool)
                else neutralise(c)
                for c in row
            ]
        )
    return buf.getvalue()


def _json(obj: Any) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


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
    ``reason``, ``weight``, ``evidence``); empty without a run."""
    run = latest_run(session, campaign.id)
    if run is None:
        return {}
    return {
        v.subject: dict(v.detail)
        for v in run_values(session, run.id, "worker", ["decision"])
        if v.detail and v.detail.get("decision")
    }


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


def _finite(x: float | None) -> float | None:
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
        q = _finite(by["wqs"].get(w.external_id))
        m = _finite(by["model_weight"].get(w.external_id))
        quality = m if m is not None else q if q is not None else 1.0
        eff = 0.0 if w.status == "blocked" else w.weight * quality
        status = shown_status(w.status, flagged.get(w.external_id, []))
        d = decided.get(w.external_id, {})
        out.append(
            WorkerWeight(
                w.external_id, status, w.weight, q, eff, w.n_judgments, m,
                str(d.get("decision") or "cannot_tell"), _finite(d.get("weight")),
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
        return _table(
            MTURK_HEADER, [(e.worker, "", "", "", "", "Block", e.reason) for e in entries]
        )
    if platform == "prolific":
        # a line-based list cannot hold line breaks: they are dropped from the id
        return "".join(
            neutralise(e.worker).replace("\r", "").replace("\n", "") + "\n" for e in entries
        )
    if platform == "toloka":
        return _table(
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
        return _json({"campaign": campaign.name, "blocked": rows})
    return _table(
        ("worker", "reason", "actor", "automatic", "blocked_at", "status"),
        [tuple("" if v is None else v for v in r.values()) for r in rows],
    )


def export_weights(session: Session, campaign_name: str, platform: Platform) -> str:
    """Worker weights: CSV/JSON, or MTurk's Workers CSV setting a qualification score."""
    campaign = get_campaign(session, campaign_name)
    weights = worker_weights(session, campaign)
    if platform == "mturk":
        header = (*MTURK_HEADER[:4], f"UPDATE-{MTURK_QUALIFICATION}")
        return _table(
            header,
            [(w.worker, "", "", "", round(100 * min(max(w.effective, 0.0), 1.0))) for w in weights],
        )
    if platform in ("prolific", "toloka"):
        raise UsageError(
            f"{platform} has no worker weights to upload",
            hint="export them with --platform csv or json (or a blocklist for the platform)",
        )
    if platform == "json":
        return _json(
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
    return _table(
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


def aggregate_labels(session: Session, campaign: CampaignInfo) -> list[dict[str, Any]]:
    """One aggregated answer per item (per pair for pairwise campaigns), weighted by quality.

    Weighted mean for ratings, weighted majority for labels, and for multi-label the annotations
    held by at least half of the weight; the reliability model's answers where the latest run
    fitted one (method ``model``, or ``model (not converged)`` where it stopped at
    ``model_max_iter``: EM climbs from the majority vote, so where it stops is still the better
    answer: on the simulated ordinal campaign of ``bench/flags.py --models``, Dawid-Skene is
    right on 0.658 of the items stopped at 100 iterations, 0.644 converged (293), the weighted
    majority on 0.612);
    preference campaigns: the items' ranking (:func:`ranking`). ``confidence`` is the winner's share of the weight (the weighted standard deviation
    for ratings). Items whose judges all have weight 0 get no value.
    """
    arrays = load_arrays(session, campaign)
    weights = worker_weights(session, campaign)
    by_worker = {w.worker: w.effective for w in weights}
    wt = np.array([by_worker.get(str(w), 0.0) for w in arrays.worker_ids], dtype=np.float64)
    jw = wt[arrays.workers] if arrays.n else np.zeros(0)
    fallback = campaign.kind == "rating" and _model_fallback(session, campaign)
    if fallback:
        # the model lost the held-out check: the plain mean, each worker at their decision
        # weight (0 when blocked), not the model's weight
        plain = {w.worker: 0.0 if w.status == "blocked" else w.weight for w in weights}
        wt = np.array([plain.get(str(w), 0.0) for w in arrays.worker_ids], dtype=np.float64)
        jw = wt[arrays.workers] if arrays.n else np.zeros(0)
    elif (
        campaign.kind != "pairwise"
        and (converged := _model_converged(session, campaign)) is not None
    ):
        blocked = {w.worker for w in weights if w.status == "blocked"}
        out_w = np.array([str(w) in blocked for w in arrays.worker_ids], dtype=bool)
        keep = ~out_w[arrays.workers] if arrays.n else np.zeros(0, dtype=bool)
        method = "model" if converged else "model (not converged)"
        return _model_labels(campaign, arrays, jw, keep, method)
    if campaign.kind == "pairwise":
        blocked = {w.worker for w in weights if w.status == "blocked"}
        out_w = np.array([str(w) in blocked for w in arrays.worker_ids], dtype=bool)
        return ranking(campaign, arrays, ~out_w[arrays.workers] if arrays.n else out_w[:0])
    out: list[dict[str, Any]] = []
    n_items = len(arrays.item_ids)
    n_j = np.bincount(arrays.items, minlength=n_items)
    tot = np.bincount(arrays.items, weights=jw, minlength=n_items)
    if campaign.kind == "rating":
        s1 = np.bincount(arrays.items, weights=jw * arrays.values, minlength=n_items)
        s2 = np.bincount(arrays.items, weights=jw * arrays.values**2, minlength=n_items)
        for i in range(n_items):
            if n_j[i] == 0:
                continue
            mean = s1[i] / tot[i] if tot[i] > 0 else None
            sd = math.sqrt(max(s2[i] / tot[i] - mean**2, 0.0)) if mean is not None else None
            method = FALLBACK_METHOD if fallback else "weighted"
            row = _label_row(arrays.item_ids[i], mean, sd, int(n_j[i]), float(tot[i]), method)
            out.append(row)
    elif campaign.kind == "label":
        codes = arrays.values.astype(np.int64)
        K = max(len(arrays.categories), int(codes.max()) + 1 if codes.size else 0)
        mat = np.zeros((n_items, K))
        np.add.at(mat, (arrays.items, codes), jw)
        for i in range(n_items):
            if n_j[i] == 0:
                continue
            best = int(np.argmax(mat[i])) if tot[i] > 0 else None
            value = arrays.categories[best] if best is not None else None
            conf = mat[i, best] / tot[i] if best is not None else None
            out.append(_label_row(arrays.item_ids[i], value, conf, int(n_j[i]), float(tot[i])))
    else:  # multilabel: weighted share of each annotation
        names = arrays.annotation_names
        mat = np.zeros((n_items, max(len(names), 1)))
        if (
            arrays.ann_judgment is not None
            and arrays.ann_code is not None
            and arrays.ann_judgment.size
        ):
            np.add.at(
                mat,
                (arrays.items[arrays.ann_judgment], arrays.ann_code),
                jw[arrays.ann_judgment],
            )
        for i in range(n_items):
            if n_j[i] == 0:
                continue
            if tot[i] <= 0:
                out.append(_label_row(arrays.item_ids[i], None, None, int(n_j[i]), 0.0))
                continue
            share = mat[i] / tot[i]
            held = [names[k] for k in np.flatnonzero(share >= 0.5)]
            conf = float(np.mean([max(s, 1 - s) for s in share[: len(names)]])) if names else None
            out.append(
                _label_row(
                    arrays.item_ids[i], "|".join(sorted(held)), conf, int(n_j[i]), float(tot[i])
                )
            )
    return out


def ranking(campaign: CampaignInfo, arrays: Any, keep: np.ndarray) -> list[dict[str, Any]]:
    """The items of a preference campaign ranked by their score under the reliability model
    fitted on the judgments ``keep`` (the blocked workers' left out), with the score's 95%
    interval and the ranks that interval allows (the items whose intervals overlap it)."""
    from monitor.metrics.preferences.model import gold_order, preference_model
    from monitor.pipeline.preference import gold_numbers

    k = np.flatnonzero(keep)
    n_items = len(arrays.item_ids)
    if not k.size:
        return []
    gold = gold_order(arrays.left[k], arrays.right[k], gold_numbers(arrays))
    fit = preference_model(
        arrays.workers[k], arrays.left[k], arrays.right[k], arrays.outcome[k],
        n_workers=len(arrays.worker_ids), n_items=n_items, ties_allowed=not campaign.strict,
        gold=gold if np.isfinite(gold).any() else None,
    )  # fmt: skip
    compared = np.flatnonzero(fit.n_item_comparisons > 0)
    order = compared[np.argsort(-fit.score[compared], kind="stable")]
    low, high = fit.score_low[order], fit.score_high[order]
    # rank r can be as good as 1 + the items surely above it, as bad as those not surely below
    surely_above = np.searchsorted(np.sort(-low), -high, side="left")
    not_below = np.searchsorted(np.sort(-high), -low, side="right")
    method = "model" if fit.converged else "model (not converged)"
    return [
        {
            "rank": r + 1,
            "item": str(arrays.item_ids[i]),
            "score": float(fit.score[i]),
            "low": _finite(float(low[r])),
            "high": _finite(float(high[r])),
            "best_rank": int(surely_above[r]) + 1,
            "worst_rank": int(not_below[r]),
            "n_comparisons": int(fit.n_item_comparisons[i]),
            "method": method,
        }
        for r, i in enumerate(order.tolist())
    ]


def _label_row(
    item: Any,
    value: Any,
    confidence: float | None,
    n: int,
    total: float,
    method: str = "weighted",
) -> dict[str, Any]:
    return {
        "item": str(item),
        "value": value,
        "confidence": confidence,
        "n_judgments": n,
        "total_weight": total,
        "method": method,
    }


def _model_converged(session: Session, campaign: CampaignInfo) -> bool | None:
    """Whether the latest run's reliability model converged; None where it fitted none."""
    run = latest_run(session, campaign.id)
    if run is None:
        return None
    found = run_values(session, run.id, "campaign", ["model_iterations"], columns=False)
    fitted = [v for v in found if v.value is not None]
    if not fitted:
        return None
    return any((v.detail or {}).get("converged") for v in fitted)


def _model_fallback(session: Session, campaign: CampaignInfo) -> bool:
    """The latest run found the rating model no better than the plain mean on held-out
    judgments (``model_fallback``)."""
    run = latest_run(session, campaign.id)
    if run is None:
        return False
    found = run_values(session, run.id, "campaign", ["model_fallback"], columns=False)
    return any(v.value for v in found)


def _model_labels(
    campaign: CampaignInfo, arrays: Any, jw: np.ndarray, keep: np.ndarray, method: str
) -> list[dict[str, Any]]:
    """The reliability model's answers, fitted on the judgments of the workers who are not
    blocked (a down-weight does not enter the model: it weighs workers by their own errors)."""
    from monitor.pipeline.answers import model_answers
    from monitor.pipeline.params import ModelOptions

    n_items = len(arrays.item_ids)
    n_j = np.bincount(arrays.items, minlength=n_items)
    tot = np.bincount(arrays.items, weights=jw, minlength=n_items)
    _, values, uncertainty = model_answers(campaign, arrays, keep, ModelOptions())
    return [
        _label_row(
            arrays.item_ids[i],
            values[i],
            float(uncertainty[i]) if values[i] is not None else None,
            int(n_j[i]),
            float(tot[i]),
            method,
        )
        for i in np.flatnonzero(n_j)
    ]


def export_labels(session: Session, campaign_name: str, platform: Platform) -> str:
    """Aggregated labels as CSV or JSON (see :func:`aggregate_labels`)."""
    campaign = get_campaign(session, campaign_name)
    if platform not in ("csv", "json"):
        raise UsageError(
            f"labels are not uploaded to {platform}", hint="use --platform csv or json"
        )
    rows = aggregate_labels(session, campaign)
    if platform == "json":
        return _json({"campaign": campaign.name, "kind": campaign.kind, "labels": rows})
    header = (
        (
            "rank",
            "item",
            "score",
            "low",
            "high",
            "best_rank",
            "worst_rank",
            "n_comparisons",
            "method",
        )
        if campaign.kind == "pairwise"
        else ("item", "value", "confidence", "n_judgments", "total_weight", "method")
    )
    return _table(header, [tuple("" if r[h] is None else r[h] for h in header) for r in rows])


def export(
    session: Session,
    what: What,
    campaign_name: str,
    platform: Platform,
    *,
    include_flagged: bool = False,
    project: str | None = None,
    pool: str | None = None,
) -> str:
    """Dispatch: ``what`` is blocklist, weights or labels (``include_flagged``: blocklist;
    ``project`` or ``pool``: the scope of a Toloka blocklist)."""
    if what not in WHATS:
        raise UsageError(f"unknown export {what!r}", hint=", ".join(WHATS))
    if platform not in PLATFORMS:
        raise UsageError(f"unknown platform {platform!r}", hint=", ".join(PLATFORMS))
    if (project is not None or pool is not None) and (what, platform) != ("blocklist", "toloka"):
        raise UsageError(
            "--project and --pool are for a Toloka blocklist",
            hint="monitor export blocklist --platform toloka --project ID",
        )
    if what == "blocklist":
        return export_blocklist(
            session, campaign_name, platform, include_flagged=include_flagged,
            scope=toloka_scope(project, pool),
        )  # fmt: skip
    if include_flagged:
        raise UsageError("--include-flagged is for the blocklist")
    fn = {"weights": export_weights, "labels": export_labels}
    return fn[what](session, campaign_name, platform)


__all__ = [
    "MTURK_HEADER",
    "TOLOKA_HEADER",
    "BlockEntry",
    "aggregate_labels",
    "blocklist_entries",
    "export",
    "export_blocklist",
    "export_labels",
    "export_weights",
    "flagged_workers",
    "neutralise",
    "shown_status",
    "worker_decisions",
    "worker_weights",
]
