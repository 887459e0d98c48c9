"""The verdict's export figure measured on gold: the run's model refitted with each fold of the
gold withheld, its answers on that gold scored (:mod:`monitor.metrics.labels.gold_export`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.metrics.common import Interval, group_mean
from monitor.metrics.labels.gold_export import (
    accuracy_on_gold,
    cross_fitted_answers,
    mae_on_gold,
)
from monitor.metrics.ratings.model import RatingJudgments
from monitor.pipeline.collect import Values
from monitor.pipeline.params import ModelOptions

GOLD_FOLDS = 5


def gold_export(
    out: Values,
    options: ModelOptions,
    measure: str,
    fit: Callable[[NDArray[np.bool_]], NDArray],
    gold: NDArray[np.float64],
    judged: NDArray[np.bool_],
) -> None:
    """``export_gold``: the exported answers' ``accuracy`` (labels: ``gold`` holds category
    codes) or ``mae`` (ratings) on the judged gold items, each answered by ``fit(withheld)``
    with its own gold withheld. Stored where the campaign has gold on at least
    ``export_gold_min_items`` judged items; with fewer, an undefined value saying why (the
    verdict keeps the crowd-only figure); without gold, nothing."""
    given = np.flatnonzero(np.isfinite(gold) & judged)
    least = options.export_gold_min_items
    detail = {"measure": measure, "basis": "gold", "min_items": least}
    if given.size == 0:
        return
    if given.size < least:
        out.campaign_value(
            "export_gold", None, n=int(given.size), detail=detail,
            reason=f"gold on {given.size:,} judged items, fewer than export_gold_min_items "
            f"({least:,}): the figure is the crowd-only expectation",
        )  # fmt: skip
        return
    answers = cross_fitted_answers(fit, given, gold.size, GOLD_FOLDS)[given]
    if measure == "accuracy":
        s = accuracy_on_gold(answers, gold[given].astype(np.int64), folds=GOLD_FOLDS)
    else:
        s = mae_on_gold(answers.astype(np.float64), gold[given], folds=GOLD_FOLDS)
    out.campaign_value(
        "export_gold", s.value, Interval(s.low, s.high), n=s.n, detail={**detail, "folds": s.folds}
    )


def label_gold(
    out: Values,
    options: ModelOptions,
    labels: Callable[[NDArray[np.int64]], NDArray[np.int64]],
    gold: NDArray[np.float64],
    items: NDArray[np.int64],
) -> None:
    """``export_gold`` of a label campaign: ``labels(gold codes)`` refits the run's model with
    the gold given (-1 where none) and returns its labels."""
    codes = np.where(np.isfinite(gold), gold, -1).astype(np.int64)

    def answers(withheld: NDArray[np.bool_]) -> NDArray[np.int64]:
        return labels(np.where(withheld, -1, codes))

    judged = np.bincount(items, minlength=gold.size) > 0
    gold_export(out, options, "accuracy", answers, gold, judged)


def rating_gold(
    out: Values,
    options: ModelOptions,
    res: Any,  # noqa: ANN401 - the run's RatingModel, whose fit starts each fold's
    data: RatingJudgments,
    fallback: bool,
) -> None:
    """``export_gold`` of a rating campaign: the exported values, the model's means refitted
    with each fold of gold withheld, or, where the held-out check fell back, the plain means
    (which no gold moves)."""
    from monitor.metrics.ratings.model import rating_model

    items, workers, values, gold, prior, scale = data
    N = gold.size
    count = np.bincount(items, minlength=N)
    plain = group_mean(items, values, N)

    def answers(withheld: NDArray[np.bool_]) -> NDArray[np.float64]:
        if fallback:
            return plain
        given = np.where(withheld, np.nan, gold)
        return rating_model(
            items, workers, values, n_items=N, n_workers=len(res.bias), scale=scale,
            gold=given if np.isfinite(given).any() else None, worker_prior=prior,
            init=res.mean, init_bias=res.bias, init_noise=res.noise_sd,
            max_iter=options.model_max_iter, tol=options.model_tol,
            floor_margin=options.quality_margin,
        ).mean  # fmt: skip

    gold_export(out, options, "mae", answers, gold, count > 0)
