"""Gold accuracy and the reliability model of a campaign, stored beside CrowdTruth.

Per kind: labels get Dawid & Skene (1979), ratings the distance-aware bias + noise model
(Raykar et al. 2010; updated locally in incremental runs, :mod:`monitor.incremental.rating`),
multi-label sets one binary Dawid-Skene per option (:mod:`monitor.metrics.labels.multilabel_model`).
Workers with gold answers get their accuracy on gold (:mod:`monitor.metrics.labels.gold`). Pairwise
campaigns have no model: their workers are judged by transitivity and position bias
(:mod:`monitor.pipeline.pairwise`).

The names of the stored values are in ``docs/store-values.md``; the flags built on them in
:mod:`monitor.rules`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from monitor.core.catalog import Kind
from monitor.core.results import Column
from monitor.incremental.live import as_number
from monitor.incremental.rating import rating_run
from monitor.metrics.ratings.model import RatingJudgments
from monitor.pipeline.collect import Values, names_of
from monitor.pipeline.fallback import rating_fallback
from monitor.pipeline.gold_export import label_gold, rating_gold
from monitor.pipeline.live import label_live, rating_live, set_live
from monitor.pipeline.params import Coded, Params
from monitor.store.arrays import CampaignArrays
from monitor.store.campaigns import CampaignInfo
from monitor.store.history import HistoryEntry

Z95 = 1.959963984540054


def gold_values(info: CampaignInfo, arrays: CampaignArrays) -> NDArray[np.float64]:
    """(N,) the gold of each item as a number: the category code (labels) or the rating;
    NaN where there is none (or it is not a known category / not a number)."""
    out = np.full(len(arrays.item_ids), np.nan)
    given = np.flatnonzero(np.not_equal(arrays.item_gold, np.array(None)))
    if not given.size:
        return out
    if arrays.kind == Kind.LABEL:
        code = {str(c): i for i, c in enumerate(arrays.categories)}
        out[given] = [code.get(str(arrays.item_gold[i]).strip(), np.nan) for i in given]
    elif arrays.kind == Kind.RATING:
        out[given] = [as_number(arrays.item_gold[i]) for i in given]
    return out


def gold_chance(gold: NDArray[np.float64], level: str, scale: tuple[float, float], k: int) -> float:
    """What a random or constant answerer reaches on these gold values: the larger of 1/K and
    the most frequent gold class (nominal); the credit of answering the gold median everywhere
    (ordinal / interval)."""
    g = gold[np.isfinite(gold)]
    if not g.size:
        return float("nan")
    if level == "nominal":
        top = np.bincount(g.astype(np.int64)).max() / g.size
        return float(max(1.0 / max(k, 1), top))
    width = scale[1] - scale[0]
    return float(1.0 - np.mean(np.abs(g - np.median(g))) / width) if width > 0 else float("nan")


def worker_prior(
    arrays: CampaignArrays,
    history: Mapping[str, Sequence[HistoryEntry]] | None,
    *,
    chance: float = np.nan,
    width: float = np.nan,
) -> NDArray[np.float64] | None:
    """(W,) each worker's quality in the platform's other campaigns, in this campaign's units
    (NaN: none), or None without any history.

    Labels and preferences: the accuracy above chance as a share of what is possible above it,
    ``(acc - chance') / (1 - chance')`` in each other label, multi-label or preference campaign
    (labels read label and multi-label campaigns, preferences those and preference campaigns),
    averaged with the judgments as weights, put back on this campaign's chance. Ratings: the
    noise sd as a share of the scale's width in other rating campaigns, times this campaign's
    width.
    """
    if not history:
        return None
    out = np.full(len(arrays.worker_ids), np.nan)
    for j, w in enumerate(arrays.worker_ids.tolist()):
        num = den = 0.0
        for e in history.get(str(w), ()):
            if e.kind in ACCURACY_HISTORY.get(arrays.kind, ()):
                m = e.measures.get("model_accuracy")
                if m is None or m.value is None or e.chance is None or e.chance >= 1:
                    continue
                x = (m.value - e.chance) / (1.0 - e.chance)
            elif arrays.kind == Kind.RATING and e.kind == Kind.RATING:
                m = e.measures.get("model_noise_sd")
                if m is None or m.value is None or e.scale_min is None or e.scale_max is None:
                    continue
                x = m.value / (e.scale_max - e.scale_min)
            else:
                continue
            weight = float(m.n or 1)
            num, den = num + weight * x, den + weight
        if den > 0:
            out[j] = num / den
    if not np.isfinite(out).any():
        return None
    if arrays.kind in ACCURACY_HISTORY:
        return np.clip(chance + out * (1.0 - chance), 0.01, 0.99)
    return out * width


ACCURACY_HISTORY = {
    Kind.LABEL: (Kind.LABEL, Kind.MULTILABEL),
    Kind.PAIRWISE: (Kind.PAIRWISE, Kind.LABEL, Kind.MULTILABEL),
}
"""The kinds of campaign whose model accuracy is a worker's history in a campaign of a kind."""


def answer_chance(codes: NDArray[np.int64], k: int) -> float:
    """Before the model: the larger of 1/K and the commonest answer's share (what a constant
    answerer reaches if the answers' mix is the truth's)."""
    if not codes.size:
        return 1.0 / max(k, 1)
    return float(max(1.0 / max(k, 1), np.bincount(codes).max() / codes.size))


def reliability(
    coded: Coded,
    params: Params,
    items: NDArray[np.int64],
    workers: NDArray[np.int64],
    answers: NDArray[Any],
) -> Values:
    """Gold accuracy and the model of a rating or label campaign, on the latest judgment of
    each worker and item (``items``, ``workers``, ``answers``: category codes or ratings);
    the workers' entries in the platform's other campaigns are the model's prior."""
    info, arrays = coded.info, coded.arrays
    out = params.values(info.name)
    gold = gold_values(info, arrays)
    if arrays.kind == Kind.LABEL:
        chance = answer_chance(answers.astype(np.int64), len(arrays.categories))
        wprior = worker_prior(arrays, coded.history, chance=chance)
    else:
        width = float(info.scale_max - info.scale_min) if info.scale_max is not None else np.nan  # type: ignore[operator]
        wprior = worker_prior(arrays, coded.history, width=width)
    out.parameters["model"] = {
        "max_iter": params.model.model_max_iter,
        "tol": params.model.model_tol,
        "history_priors": int(np.isfinite(wprior).sum()) if wprior is not None else 0,
    }
    if arrays.kind == Kind.LABEL:
        K = len(arrays.categories)
        ordinal = info.level == "ordinal"
        scale = (0.0, float(max(K - 1, 1)))
        level = "ordinal" if ordinal else "nominal"
        _gold(arrays, out, (items, workers, answers), gold, level, scale, K)
        _labels(arrays, params, out, items, workers, answers, gold, wprior, coded.live)
    elif arrays.kind == Kind.RATING:
        scale = (float(info.scale_min), float(info.scale_max))  # type: ignore[arg-type]
        level = "ordinal" if info.level == "ordinal" else "interval"
        _gold(arrays, out, (items, workers, answers), gold, level, scale, 0)
        _ratings(arrays, params, out, items, workers, answers, gold, wprior, scale, coded.live)
    return out


def _gold(
    arrays: CampaignArrays,
    out: Values,
    judgments: tuple[NDArray[np.int64], NDArray[np.int64], NDArray[Any]],
    gold: NDArray[np.float64],
    level: str,
    scale: tuple[float, float],
    k: int,
) -> None:
    """``gold_accuracy`` (and ``gold_mae``) per worker and ``gold_chance`` of the ``judgments``
    (items, workers, answers: category codes or ratings) on gold items."""
    from monitor.metrics.labels.gold import gold_accuracy

    items, workers, answers = judgments
    on_gold = np.isfinite(gold[items])
    if not on_gold.any():
        return
    g = gold_accuracy(
        workers[on_gold],
        answers[on_gold].astype(np.float64),
        gold[items[on_gold]],
        n_workers=len(arrays.worker_ids),
        level=level,  # type: ignore[arg-type]
        scale=None if level == "nominal" else scale,
    )
    mask = g.n > 0
    ids = arrays.worker_ids
    out.per_subject("worker", "gold_accuracy", ids, g.accuracy, n=g.n, low=g.low, high=g.high,
                    mask=mask)  # fmt: skip
    if g.mae is not None:
        out.per_subject("worker", "gold_mae", ids, g.mae, n=g.n, mask=mask)
    judged = np.unique(items[on_gold])
    out.campaign_value(
        "gold_chance",
        gold_chance(gold[judged], level, scale, k),
        n=int(judged.size),
        detail={"level": level, "gold_judgments": int(on_gold.sum())},
    )


def _model_summary(out: Values, model: str, res: Any, warm_start: bool) -> None:
    detail = {"model": model, "converged": bool(res.converged), "warm_start": warm_start}
    if hasattr(res, "log_likelihood"):
        detail["log_likelihood"] = float(res.log_likelihood)
    out.parameters["model"].update(name=model, iterations=int(res.iterations))
    out.campaign_value("model_iterations", res.iterations, detail=detail)


def label_weight(acc: NDArray[np.float64], chance: float) -> NDArray[np.float64]:
    """Weight of a labeller: accuracy above chance as a share of what is possible above it,
    ``max(0, (acc - chance) / (1 - chance))`` (1 perfect, 0 no better than guessing)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.clip((acc - chance) / (1.0 - chance), 0.0, 1.0)


def rating_weight(
    noise_sd: NDArray[np.float64], chance_sd: NDArray[np.float64] | float
) -> NDArray[np.float64]:
    """Weight of a rater: the share of a random answerer's noise variance they do not have,
    ``max(0, 1 - s^2 / s_chance^2)`` (1 noiseless, 0 no better than guessing)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.clip(1.0 - (noise_sd / chance_sd) ** 2, 0.0, 1.0)


def _posterior_column(
    # one stored column of a model's posterior
    out: Values,
    metric: str,
    ids: NDArray[np.object_],
    mask: NDArray[np.bool_],
    value: NDArray[np.float64],
    n: NDArray[np.int64],
    posterior: NDArray[np.float64] | sparse.csr_array,
    names: tuple[str, ...],
) -> None:
    keep = np.flatnonzero(mask)
    if sparse.issparse(posterior):  # the one-coin model: the answered categories only
        rows = sparse.csr_array(posterior[keep])
        rows.data[rows.data < 1e-6] = 0.0
        rows.eliminate_zeros()
    else:
        rows = sparse.csr_array(np.where(posterior[keep] >= 1e-6, posterior[keep], 0.0))
    column = Column(
        "item",
        metric,
        names_of(ids, keep),
        value[keep].astype(np.float64),
        n=n[keep].astype(np.int64),
        detail_key="posterior",
        names=names,
        indptr=rows.indptr.astype(np.int64),
        indices=rows.indices.astype(np.int64),
        data=rows.data.astype(np.float64),
    )
    if "item" in out.columnar:
        out.columns.append(column)
    else:
        out.values.extend(column.expand())


EXPORT_OF = {
    "accuracy": "the exported labels (the model's answer per item), scored by the one-coin "
    "model with the workers' accuracies drawn from their posteriors",
    "mae": "the model's posterior means, from their posterior sd",
    "pair_accuracy": "the ranking by the model's scores, from their standard errors",
}


def export_quality(out: Values, measure: str, r: Any) -> None:
    """``export_quality``: how good the exported answers are expected to be (``r``: an
    :class:`~monitor.metrics.labels.export_accuracy.ExpectedAccuracy`)."""
    from monitor.metrics.common import Interval

    if not r.n or not np.isfinite(r.value):
        out.campaign_value("export_quality", None, detail={"measure": measure},
                           reason="no item to score")  # fmt: skip
        return
    out.campaign_value(
        "export_quality", r.value, Interval(r.low, r.high), n=int(r.n),
        detail={"measure": measure, "model_sd": r.model_sd, "items_sd": r.items_sd,
                "of": EXPORT_OF[measure]},
    )  # fmt: skip


def _labels(arrays, params, out, items, workers, answers, gold, wprior, live):  # noqa: ANN001, PLR0913
    from monitor.metrics.labels.label_model import dawid_skene

    N, W, K = len(arrays.item_ids), len(arrays.worker_ids), len(arrays.categories)
    codes = answers.astype(np.int64)
    if params.model.model_max_categories < K:
        _one_coin_labels(arrays, params, out, items, workers, codes, gold, wprior)
        return
    # No warm start: from the last run's posterior EM can settle on another optimum than from
    # the majority vote (label_small_complete_5_adversarial: class prior 0.28 against 0.32), and
    # a run's result must depend on its data alone. Dawid-Skene is two sparse products per
    # iteration: starting afresh costs little.
    gold_codes = np.where(np.isfinite(gold), gold, -1).astype(np.int64)

    def fit(given: NDArray[np.int64]) -> Any:  # noqa: ANN401 - the model's result
        return dawid_skene(
            items, workers, codes, n_items=N, n_workers=W, n_classes=K,
            gold=given if (given >= 0).any() else None, worker_prior=wprior,
            min_judgments=params.model.model_min_judgments, init="majority",
            max_iter=params.model.model_max_iter, tol=params.model.model_tol,
            floor_margin=params.model.quality_margin,
        )  # fmt: skip

    res = fit(gold_codes)
    _model_summary(out, "dawid_skene", res, False)
    out.campaign_value(
        "model_chance", res.chance, detail={"measure": "accuracy", "classes": K, "floor": res.floor}
    )
    _worker_accuracy(arrays, out, res, res.chance)
    if getattr(res, "worker_chance", None) is not None:  # the same answers shuffled over items
        out.per_subject("worker", "model_worker_chance", arrays.worker_ids, res.worker_chance,
                        mask=res.n > 0)  # fmt: skip
    per_item = np.bincount(items, minlength=N)
    mask = (res.labels >= 0) & (per_item > 0)
    _posterior_column(out, "model_label", arrays.item_ids, mask, res.posterior.max(axis=1),
                      per_item, res.posterior, tuple(str(c) for c in arrays.categories))  # fmt: skip
    out.per_subject("item", "majority_disputed", arrays.item_ids,
                    majority_disputed(items, codes, res.labels, N, K), n=per_item,
                    mask=mask)  # fmt: skip
    _label_export(out, items, workers, codes, res, gold_codes)
    label_gold(out, params.model, lambda given: fit(given).labels, gold, items)
    label_live(out, params.model, arrays, (items, workers, codes), res, live)


def _one_coin_labels(arrays, params, out, items, workers, codes, gold, wprior):  # noqa: ANN001, PLR0913
    """More categories than ``model_max_categories``: the one-coin Dawid-Skene model, whose
    cost grows with the judgments, not K² per worker (:mod:`monitor.metrics.labels.one_coin`)."""
    from monitor.metrics.labels.one_coin import one_coin_dawid_skene

    N, W, K = len(arrays.item_ids), len(arrays.worker_ids), len(arrays.categories)
    gold_codes = np.where(np.isfinite(gold), gold, -1).astype(np.int64)

    def fit(given: NDArray[np.int64]) -> Any:  # noqa: ANN401 - the model's result
        return one_coin_dawid_skene(
            items, workers, codes, n_items=N, n_workers=W, n_classes=K,
            gold=given if (given >= 0).any() else None, worker_prior=wprior,
            max_iter=params.model.model_max_iter, tol=params.model.model_tol,
            floor_margin=params.model.quality_margin,
        )  # fmt: skip

    res = fit(gold_codes)
    model = "one_coin_dawid_skene"
    why = (
        f"{K:,} categories, more than model_max_categories ({params.model.model_max_categories}):"
        " the one-coin Dawid-Skene model (one accuracy per worker, errors spread evenly over the"
        " other categories) instead of a K x K confusion matrix per worker"
    )
    _model_summary(out, model, res, False)
    out.parameters["model"]["reason"] = why
    detail = {"measure": "accuracy", "classes": K, "floor": res.floor, "model": model}
    out.campaign_value("model_chance", res.chance, detail={**detail, "reason": why})
    _worker_accuracy(arrays, out, res, res.chance)
    out.per_subject("worker", "model_worker_chance", arrays.worker_ids, res.worker_chance,
                    mask=res.n > 0)  # fmt: skip
    per_item = np.bincount(items, minlength=N)
    mask = (res.labels >= 0) & (per_item > 0)
    _posterior_column(out, "model_label", arrays.item_ids, mask, res.label_posterior, per_item,
                      res.posterior, tuple(str(c) for c in arrays.categories))  # fmt: skip
    out.per_subject("item", "majority_disputed", arrays.item_ids,
                    majority_disputed(items, codes, res.labels, N, K), n=per_item,
                    mask=mask)  # fmt: skip
    _label_export(out, items, workers, codes, res, gold_codes)
    label_gold(out, params.model, lambda given: fit(given).labels, gold, items)


def _label_export(out: Values, items: Any, workers: Any, codes: Any, res: Any, gold: Any) -> None:
    from monitor.metrics.labels.export_accuracy import expected_accuracy

    r = expected_accuracy(items, workers, codes, res.labels, res.accuracy, res.n, res.prior,
                          gold=np.asarray(gold) >= 0)  # fmt: skip
    export_quality(out, "accuracy", r)


def majority_disputed(
    items: NDArray[np.int64], codes: NDArray[np.int64], labels: NDArray[np.int64], N: int, K: int
) -> NDArray[np.float64]:
    """Per item, 1.0 where the plain vote does not settle it: its top count is shared by two
    labels, or the model's label (``labels``, -1 for none) is not the plain majority; else 0.0.
    Where the reliable workers overrule the majority, the majority label is not to be trusted.
    Counted over the (item, label) pairs answered only: memory linear in the judgments."""
    cells, count = np.unique(items * K + codes, return_counts=True)
    row = cells // K
    top = np.zeros(N, np.int64)
    np.maximum.at(top, row, count)
    tied = np.bincount(row, weights=count == top[row], minlength=N) > 1
    tied |= (top == 0) & (K > 1)  # an item nobody judged: every label at 0 votes
    mine = np.zeros(N, np.int64)  # the votes for the model's label
    if cells.size:
        at = np.maximum(labels, 0) + np.arange(N) * K
        where = np.minimum(np.searchsorted(cells, at), cells.size - 1)
        mine = np.where(cells[where] == at, count[where], 0)
    overruled = (labels >= 0) & (mine < top)
    return (tied | overruled).astype(np.float64)


def _worker_accuracy(arrays: CampaignArrays, out: Values, res: Any, chance: float) -> None:
    ids = arrays.worker_ids
    mask = res.n > 0
    out.per_subject("worker", "model_accuracy", ids, res.accuracy, n=res.n, low=res.low,
                    high=res.high, mask=mask)  # fmt: skip
    out.per_subject("worker", "model_weight", ids, label_weight(res.accuracy, chance), mask=mask)


def _ratings(arrays, params, out, items, workers, values, gold, wprior, scale, live):  # noqa: ANN001, PLR0913
    data = RatingJudgments(items, workers, values, gold, wprior, scale)
    run = rating_run(arrays, params.model, params.warm, data)
    res = run.model
    out.states.update(run.states)
    out.parameters["model"].update(run.parameters)
    N = len(arrays.item_ids)
    _model_summary(out, "rating_model", res, run.warm_start)
    out.campaign_value(
        "model_chance", res.chance_sd, detail={"measure": "noise_sd", "floor": res.floor_sd}
    )
    out.campaign_value("model_scale_width", scale[1] - scale[0])
    fallback = rating_fallback(out, params, res, data, N)
    rating_gold(out, params.model, res, data, fallback)
    ids = arrays.worker_ids
    wmask = res.n > 0
    out.per_subject("worker", "model_noise_sd", ids, res.noise_sd, n=res.n, low=res.low,
                    high=res.high, mask=wmask)  # fmt: skip
    with np.errstate(invalid="ignore", divide="ignore"):
        se = res.noise_sd / np.sqrt(res.n + 1.0)  # one pseudo-judgment of bias 0
    out.per_subject("worker", "model_bias", ids, res.bias, n=res.n, low=res.bias - Z95 * se,
                    high=res.bias + Z95 * se, mask=wmask)  # fmt: skip
    # What this worker's answers would give if they were shuffled across their items (a
    # constant or random answerer sits at it), and the floor the flags use, (1 - margin) x it.
    out.per_subject("worker", "model_chance_sd", ids, res.worker_chance_sd, mask=wmask)
    out.per_subject("worker", "model_floor_sd", ids, res.worker_floor_sd, mask=wmask)
    out.per_subject("worker", "model_weight", ids,
                    rating_weight(res.noise_sd, res.worker_chance_sd), mask=wmask)  # fmt: skip
    per_item = np.bincount(items, minlength=N)
    imask = np.isfinite(res.mean) & (per_item > 0)
    out.per_subject("item", "model_mean", arrays.item_ids, res.mean, n=per_item,
                    low=res.mean - Z95 * res.sd, high=res.mean + Z95 * res.sd, mask=imask)  # fmt: skip
    out.per_subject("item", "model_sd", arrays.item_ids, res.sd, mask=imask)
    out.per_subject("item", "model_spread", arrays.item_ids, res.item_spread, n=per_item,
                    mask=imask)  # fmt: skip
    out.per_subject("item", "model_expected_spread", arrays.item_ids, res.expected_spread,
                    mask=imask)  # fmt: skip
    out.per_subject("item", "model_spread_p", arrays.item_ids, res.spread_p, mask=imask)
    from monitor.metrics.ratings.export_error import expected_mae

    export_quality(out, "mae", expected_mae(np.where(imask, res.sd, np.nan)))
    rating_live(out, params.model, arrays, data, res, live, fallback)


def multilabel_reliability(coded: Coded, params: Params) -> Values:
    """One binary Dawid-Skene per option (closed and open sets alike: an open set's options
    are the annotations seen)."""
    from monitor.metrics.labels.multilabel_model import multilabel_model

    arrays = coded.arrays
    out = params.values(coded.info.name)
    N, W, A = len(arrays.item_ids), len(arrays.worker_ids), len(arrays.annotation_names)
    options = params.model
    out.parameters["model"] = {"max_iter": options.model_max_iter, "tol": options.model_tol}
    if A == 0 or arrays.ann_judgment is None or arrays.ann_code is None:
        out.campaign_value("model_iterations", None, reason="no annotation given yet")
        return out
    res = multilabel_model(
        arrays.items, arrays.workers, arrays.ann_judgment, arrays.ann_code,
        n_items=N, n_workers=W, n_options=A,
        max_iter=options.model_max_iter, tol=options.model_tol,
        floor_margin=options.quality_margin,
    )  # fmt: skip
    _model_summary(out, "multilabel_model", res, False)
    out.campaign_value("model_chance", res.chance, detail={"measure": "accuracy", "classes": 2})
    _worker_accuracy(arrays, out, res, res.chance)
    per_item = np.bincount(arrays.items, minlength=N)
    post = np.asarray(res.posterior, dtype=np.float64)
    certainty = np.maximum(post, 1.0 - post).min(axis=1) if A else np.full(N, np.nan)
    _posterior_column(out, "model_label", arrays.item_ids, per_item > 0, certainty, per_item,
                      post, tuple(str(a) for a in arrays.annotation_names))  # fmt: skip
    from monitor.metrics.labels.export_accuracy import expected_set_accuracy

    chosen = np.zeros((arrays.n, A), dtype=bool)
    chosen[arrays.ann_judgment, arrays.ann_code] = True
    r = expected_set_accuracy(arrays.items, arrays.workers, chosen, post > 0.5, res.accuracy,
                              res.n, post[per_item > 0].mean(axis=0), draws=max(10, 400 // A))  # fmt: skip
    export_quality(out, "accuracy", r)
    set_live(out, options, arrays, res, coded.live)
    return out
