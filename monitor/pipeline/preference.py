"""The reliability model of a preference campaign in a run: item scores and annotator
reliability estimated together (:mod:`monitor.metrics.preferences.model`: Crowd-BT with
Davidson's ties and a position bias per annotator), gold-pair accuracy, the ambiguous pairs'
test, and what the campaign's design lets monitor measure.

``model_accuracy`` is the expected share of an annotator's answers that go along the true order
of their pairs, a tie counting as wrong: each answer is judged against the consensus of every
other comparison, with that consensus's own chance of being right
(:mod:`monitor.metrics.preferences.accuracy`), so a consensus that is often wrong leaves the
interval wide. Chance is what the same annotator reaches answering at random with their own tie
rate, half their strict answers (0.5 in strict campaigns), kept per worker as
``model_worker_chance``. The model's ``eta`` (answers along the Bradley-Terry outcome) still
weighs the answers in the ambiguous pairs' test.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.core.results import State, Value
from monitor.incremental.warm import WarmStart, digest
from monitor.metrics.preferences.flags import ambiguous_pairs, gold_pair_accuracy
from monitor.metrics.preferences.model import PreferenceStart, gold_order, preference_model
from monitor.pipeline.collect import Values, num
from monitor.pipeline.overlap import pair_overlap
from monitor.pipeline.params import Coded, Params
from monitor.pipeline.preference_stop import preference_stop
from monitor.pipeline.reliability import worker_prior
from monitor.store.coded import CampaignArrays

STATE = "preference_model"
"""(I + W, 4): the last fit's item scores, then per annotator accuracy, position bias and tie
propensity; the crowd's accuracy and bias sd in the meta (the next run's warm start)."""
MIN_SPLIT = 2
"""Pairs with fewer strict answers cannot split: their test is not stored."""


def preference_reliability(coded: Coded, params: Params) -> Values:
    """The model's values of a pairwise campaign (module docstring)."""
    info, a = coded.info, coded.arrays
    left, right, outcome = a.comparisons
    out = params.values(info.name)
    N, W = len(a.item_ids), len(a.worker_ids)
    gold = gold_order(left, right, gold_numbers(a))
    prior = worker_prior(a, coded.history, chance=0.5)
    max_iter = 2 * params.model.model_max_iter  # L-BFGS iterations: 1,000 at the default
    meta = _meta(a, N, W, strict=info.strict)
    fit = preference_model(
        a.workers, left, right, outcome, n_workers=W, n_items=N,
        ties_allowed=not info.strict, gold=gold if np.isfinite(gold).any() else None,
        prior_accuracy=prior, init=_start(params.warm, a, info.strict), max_iter=max_iter,
    )  # fmt: skip
    out.parameters["model"] = {
        "name": "preference_model",
        "max_iter": max_iter,
        "tol": fit.tol,
        "iterations": fit.iterations,
        "history_priors": int(np.isfinite(prior).sum()) if prior is not None else 0,
    }
    out.states[STATE] = _state(fit, meta)
    out.campaign_value(
        "model_iterations",
        fit.iterations,
        detail={
            "model": "preference_model",
            "converged": bool(fit.converged),
            "warm_start": params.warm is not None and STATE in params.warm.states,
            "log_likelihood": float(fit.log_posterior),
            "crowd_accuracy": num(fit.crowd_accuracy),
            "crowd_bias_sd": num(fit.crowd_bias_sd),
            "crowd_tie_propensity": num(fit.crowd_tie_propensity),
        },
    )
    judged = fit.n_judgments > 0
    assert fit.answer_accuracy is not None
    assert fit.answer_accuracy_low is not None and fit.answer_accuracy_high is not None
    acc, low, high = fit.answer_accuracy, fit.answer_accuracy_low, fit.answer_accuracy_high
    with np.errstate(invalid="ignore", divide="ignore"):
        # an annotator answering at random with their own tie rate: half their strict answers
        chance = np.where(judged, 0.5 * fit.n_strict / fit.n_judgments, np.nan)
    measure = "answers along the true order of the pair, a tie wrong"
    campaign_chance = float(np.nanmedian(chance)) if judged.any() else 0.5
    out.campaign_value(
        "model_chance", campaign_chance,
        detail={"measure": "accuracy", "classes": 2, "floor": campaign_chance, "of": measure},
    )  # fmt: skip
    ids = a.worker_ids
    out.per_subject("worker", "model_accuracy", ids, acc, n=fit.n_judgments, low=low,
                    high=high, mask=judged)  # fmt: skip
    out.per_subject("worker", "model_worker_chance", ids, chance, mask=judged)
    with np.errstate(invalid="ignore"):
        weight = np.clip((acc - chance) / (1.0 - chance), 0.0, 1.0)
    out.per_subject("worker", "model_weight", ids, weight, mask=judged)
    if fit.bias_modelled:
        out.per_subject("worker", "model_position_bias", ids, fit.position_bias,
                        n=fit.n_strict, low=fit.position_bias_low,
                        high=fit.position_bias_high, mask=judged)  # fmt: skip
    if fit.ties_modelled:
        out.per_subject("worker", "model_tie_propensity", ids, fit.tie_propensity,
                        n=fit.n_judgments, low=fit.tie_propensity_low,
                        high=fit.tie_propensity_high, mask=judged)  # fmt: skip
    _scores(out, a, fit)
    test = preference_stop(out, params.model, a, fit, coded.live)
    stopped = None if test is None else test.stopped
    pair_overlap(out, params.model, a, fit, gold_numbers(a), stopped)
    out.add(_gold(coded, params, gold))
    out.add(_ambiguous(coded, params, fit.accuracy, gold))
    return out


def gold_numbers(a: CampaignArrays) -> NDArray[np.float64]:
    """(N,) each item's gold as a number (NaN: none, or not a number)."""
    out = np.full(len(a.item_ids), np.nan)
    for i in np.flatnonzero(np.not_equal(a.item_gold, np.array(None))).tolist():
        try:
            out[i] = float(a.item_gold[i])
        except (TypeError, ValueError):
            continue
    return out


def _meta(a: CampaignArrays, n_items: int, n_workers: int, *, strict: bool) -> dict[str, Any]:
    """What a kept fit depends on: the items and annotators its rows are, the campaign's ties."""
    return {
        "n_items": n_items,
        "n_workers": n_workers,
        "items": digest(a.item_db_ids[:n_items]),
        "workers": digest(a.worker_db_ids[:n_workers]),
        "strict": strict,
    }


def _state(fit: Any, meta: dict[str, Any]) -> State:
    rows = np.full((len(fit.score) + len(fit.accuracy), 4), np.nan)
    rows[: len(fit.score), 0] = fit.score
    tail = rows[len(fit.score) :]
    tail[:, 1] = fit.accuracy
    if fit.bias_modelled:
        tail[:, 2] = fit.position_bias
    if fit.ties_modelled:
        tail[:, 3] = fit.tie_propensity
    crowd = {"crowd_accuracy": num(fit.crowd_accuracy), "crowd_bias_sd": num(fit.crowd_bias_sd)}
    return State({**meta, **crowd}, rows)


def _start(warm: WarmStart | None, a: CampaignArrays, strict: bool) -> PreferenceStart | None:
    """The last run's fit as this one's start, its rows aligned with the codes now (codes are
    stable: new items and annotators come last and start cold); None without one that fits."""
    kept = warm.states.get(STATE) if warm is not None else None
    if kept is None:
        return None
    N, W = len(a.item_ids), len(a.worker_ids)
    n0, w0 = int(kept.meta.get("n_items", -1)), int(kept.meta.get("n_workers", -1))
    if (
        not (0 <= n0 <= N and 0 <= w0 <= W)
        or kept.array.shape != (n0 + w0, 4)
        or kept.meta.get("strict") != strict
        or kept.meta.get("items") != digest(a.item_db_ids[:n0])
        or kept.meta.get("workers") != digest(a.worker_db_ids[:w0])
    ):
        return None

    def column(rows: NDArray[np.float64], size: int) -> NDArray[np.float64]:
        out = np.full(size, np.nan)
        out[: len(rows)] = rows
        return out

    items, workers = kept.array[:n0], kept.array[n0:]
    bias, ties = column(workers[:, 2], W), column(workers[:, 3], W)
    return PreferenceStart(
        column(items[:, 0], N),
        column(workers[:, 1], W),
        None if np.isnan(bias).all() else bias,
        None if np.isnan(ties).all() else ties,
        kept.meta.get("crowd_accuracy"),
        kept.meta.get("crowd_bias_sd"),
    )


def _scores(out: Values, a: CampaignArrays, fit: Any) -> None:
    """The items' scores (log-strength) with their intervals, over the items compared."""
    compared = fit.n_item_comparisons > 0
    for i in np.flatnonzero(compared).tolist():
        s, se = float(fit.score[i]), float(fit.score_se[i])
        ok = np.isfinite(se)
        out.values.append(
            Value(
                "item",
                str(a.item_ids[i]),
                "score",
                s,
                num(fit.score_low[i]) if ok else None,
                num(fit.score_high[i]) if ok else None,
                int(fit.n_item_comparisons[i]),
                {"se": se if ok else None},
            )
        )
    from monitor.metrics.preferences.pair_accuracy import expected_pair_accuracy
    from monitor.pipeline.reliability import export_quality

    export_quality(out, "pair_accuracy",
                   expected_pair_accuracy(fit.score[compared], fit.score_se[compared]))  # fmt: skip


def _gold(coded: Coded, params: Params, gold: NDArray[np.float64]) -> Values:
    """Each annotator's accuracy on the gold pairs (the order of the items' gold values; a pair
    of equal gold orders nothing), with its Wilson interval."""
    a = coded.arrays
    out = params.values(coded.info.name)
    if not np.isfinite(gold).any():
        return out
    left, right, outcome = a.comparisons
    g = gold_pair_accuracy(a.workers, outcome, gold, n_workers=len(a.worker_ids))
    mask = g.n > 0
    if not mask.any():
        return out
    out.per_subject("worker", "gold_accuracy", a.worker_ids, g.accuracy, n=g.n, low=g.low,
                    high=g.high, mask=mask)  # fmt: skip
    ordered = np.isfinite(gold) & (gold != 0)
    pairs = {
        (min(x, y), max(x, y))
        for x, y in zip(left[ordered].tolist(), right[ordered].tolist(), strict=True)
    }
    out.campaign_value("gold_chance", 0.5, n=len(pairs),
                       detail={"level": "nominal", "gold_judgments": int(ordered.sum())})  # fmt: skip
    return out


def _ambiguous(
    coded: Coded, params: Params, accuracy: NDArray[np.float64], gold: NDArray[np.float64]
) -> Values:
    """The test of each pair judged strictly at least twice: does either order explain the
    split of its answers, given each annotator's reliability?"""
    a = coded.arrays
    out = params.values(coded.info.name)
    eta = np.clip(np.nan_to_num(accuracy, nan=0.5), 0.0, 1.0)
    amb = ambiguous_pairs(eta, a.workers, *a.comparisons,
                          gold=gold if np.isfinite(gold).any() else None)  # fmt: skip
    ids = a.item_ids
    for k in np.flatnonzero(amb.n >= MIN_SPLIT).tolist():
        lo, hi = (str(ids[x]) for x in amb.pairs[k])
        out.values.append(
            Value(
                "pair",
                f"{lo}\t{hi}",
                "model_split_p",
                float(amb.p_value[k]),
                n=int(amb.n[k]),
                detail={
                    "q_value": float(amb.q_value[k]),
                    "against": int(amb.against[k]),
                    "expected_against": round(float(amb.expected_against[k]), 6),
                    "ties": int(amb.n_ties[k]),
                    "gold": bool(amb.gold[k]),
                    "first_interval": [
                        round(float(amb.first_low[k]), 6),
                        round(float(amb.first_high[k]), 6),
                    ],
                    "left": lo,
                    "right": hi,
                },
            )
        )
    return out
