"""Dynamic overlap of a rating or multi-label campaign in a run: each item's ``need``, the
judgments it wants before its exported answer is settled (:func:`rating_needs`,
:func:`set_needs`; the rules: :mod:`monitor.metrics.overlap`). The label campaigns' is
:func:`monitor.pipeline.live.label_live`'s, the preference pairs' :mod:`monitor.pipeline.overlap`.

* **Ratings.** The exported answer is the model's mean (the plain mean of the ratings where the
  model lost its held-out check: what ``monitor export labels`` then gives). Each rating that
  counts is worth one of the typical rater, whose error variance ``sigma^2`` is what the
  crowd's median rater surely reaches: the median, over the raters with
  ``model_min_judgments`` ratings, of ``bias^2 + high^2`` (``high``: the high end of the 95%
  interval on their noise sd; the label campaigns take the low end of the accuracy), or the
  ratings' own mean square about the exported answer where larger. None where fewer than
  three raters have ``model_min_judgments``: then only the caps end an item. The tolerance is
  ``overlap_tolerance`` times the scale's width.
* **Multi-label sets.** Each option of each item is a two-class label, its exported answer
  present where the model's posterior is above one half (what the export holds), on the
  model's prior share of the option; each judgment that counts (the latest of each worker)
  says present or absent, as from a worker right as often as the typical worker surely is
  (the label rule: the median of the low ends of the workers' intervals on their balanced
  accuracy; chance, no evidence, where the run cannot tell). An item wants what its least
  settled option wants.
* **Gold** items (a gold value, a gold set) want only ``min_overlap``.
* **Repair**: the caller counts no judgment of a worker the run stopped, so an item whose
  answer rested on them wants judgments again in the same run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.metrics.overlap import Overlap, rating_need, set_need
from monitor.pipeline.params import ModelOptions
from monitor.store.coded import CampaignArrays

NeedOf = Callable[[NDArray[np.bool_]], tuple[NDArray[np.int64], NDArray[np.int64]]]
"""Each item's ``need`` and the judgments that count, from which of the run's judgments count."""


def rule_of(options: ModelOptions) -> Overlap:
    """The overlap settings of ``options``."""
    return Overlap(options.overlap_confidence, options.min_overlap, options.max_overlap)


def typical_error(res: Any, least: int, enough: int) -> float:  # noqa: ANN401 - a RatingModel
    """``sigma^2`` of the typical rater (module docstring): the median of ``bias^2 + high^2``
    over the raters with ``least`` ratings, at least ``enough`` of them; infinite with fewer
    (the run cannot tell)."""
    sure = res.n >= least
    if int(sure.sum()) < enough:
        return float("inf")
    return float(np.median(np.square(res.bias[sure]) + np.square(res.high[sure])))


def rating_needs(
    options: ModelOptions,
    judged: tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]],
    exported: NDArray[np.float64],
    gold: NDArray[np.bool_],
    sigma2: float,
    scale: tuple[float, float],
) -> NeedOf:
    """``need`` of a rating campaign's items from the ``judged`` (items, workers, values: the
    latest rating of each rater and item) about the ``exported`` answers (N,); ``gold`` (N,)
    the items whose value is given; ``sigma2`` the typical rater's error variance."""
    items, _, values = judged
    N = exported.size
    tolerance = options.overlap_tolerance * (scale[1] - scale[0])
    rule = rule_of(options)

    def need_of(counted: NDArray[np.bool_]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        it = items[counted]
        off = np.nan_to_num(values[counted] - exported[it])
        ss = np.bincount(it, weights=off * off, minlength=N).astype(np.float64)
        n = np.bincount(it, minlength=N)
        return rating_need(ss, n, gold, sigma2, tolerance, rule), n

    return need_of


def exported_ratings(
    res: Any,  # noqa: ANN401 - a RatingModel
    judged: tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]],
    fallback: bool,
) -> NDArray[np.float64]:
    """(N,) what ``monitor export labels`` gives each item: the model's mean, or with
    ``fallback`` the plain mean of the ``judged`` ratings (NaN: unjudged)."""
    if not fallback:
        return np.asarray(res.mean, dtype=np.float64)
    items, _, values = judged
    N = res.mean.size
    n = np.bincount(items, minlength=N)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.bincount(items, weights=values, minlength=N) / np.where(n > 0, n, np.nan)


def set_needs(
    options: ModelOptions,
    arrays: CampaignArrays,
    res: Any,  # noqa: ANN401 - a MultilabelModel
    typical: float,
) -> tuple[NDArray[np.int64], NeedOf]:
    """``need`` of a multi-label campaign's items (module docstring) from the latest judgment of
    each worker and item, the workers typically right ``typical`` of the time: the judgments'
    workers (codes), and what gives each item's ``need`` from which of them count."""
    idx = arrays.latest
    items = arrays.items[idx]
    N, A = len(arrays.item_ids), len(arrays.annotation_names)
    position = np.full(arrays.n, -1, dtype=np.int64)
    position[idx] = np.arange(idx.size)
    ann_judgment, ann_code, _ = arrays.annotations
    at = position[ann_judgment]
    kept = np.unique(at[at >= 0] * max(A, 1) + ann_code[at >= 0])  # an option counts once
    at, code = kept // max(A, 1), kept % max(A, 1)
    exported = np.asarray(res.posterior) > 0.5
    gold = np.not_equal(arrays.item_gold, np.array(None))
    rule = rule_of(options)

    def need_of(counted: NDArray[np.bool_]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        n = np.bincount(items[counted], minlength=N)
        sel = counted[at]
        cells = items[at[sel]] * A + code[sel]
        present = np.bincount(cells, minlength=N * A).reshape(N, A)
        return set_need(present, n, exported, res.prior, gold, typical, rule), n

    return arrays.workers[idx], need_of
