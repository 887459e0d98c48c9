"""Labels aggregated by quality: one answer an item (weighted mean, weighted majority, the
annotations held by half of the weight, or the reliability model's answers), and the ranking of
a preference campaign's items; ``monitor export labels`` writes them as CSV or JSON."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from monitor.actions.worker_lists import Platform, finite, worker_weights
from monitor.core.cells import csv_table, json_text
from monitor.core.errors import UsageError
from monitor.store.arrays import load_arrays
from monitor.store.campaigns import CampaignInfo, get_campaign
from monitor.store.runs import latest_run, run_values

FALLBACK_METHOD = "mean (model fallback)"  # the rating model lost its held-out check


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
            "low": finite(float(low[r])),
            "high": finite(float(high[r])),
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
        return json_text({"campaign": campaign.name, "kind": campaign.kind, "labels": rows})
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
    return csv_table(header, [tuple("" if r[h] is None else r[h] for h in header) for r in rows])


__all__ = ["FALLBACK_METHOD", "aggregate_labels", "export_labels", "ranking"]
