"""The live decisions of a run, from its reliability model: each worker's stop test
(:mod:`monitor.metrics.stopping`: the scores the live path froze as the judgments arrived,
:mod:`monitor.incremental.live`, tested against the stop line; the fit is the next reference)
for labels (Dawid-Skene), ratings (the bias and noise model) and multi-label sets (a binary
Dawid-Skene per option), and each item's ``need`` (:mod:`monitor.metrics.overlap`: the
judgments it wants, judged by the typical worker's posterior of the exported answer, the
stopped workers' left out; ratings and sets: :mod:`monitor.pipeline.item_overlap`), with what
the stops save and re-open (:func:`_savings`). A preference campaign's stop test runs over
scores each answer is given once, by the first run that sees it
(:mod:`monitor.pipeline.preference_stop`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.core.catalog import Kind
from monitor.core.results import State
from monitor.incremental.live import (
    REFERENCE_STATE,
    Arrived,
    payoffs,
    reference_state,
    score_arrivals,
    set_arrivals,
    set_gold,
)
from monitor.metrics.overlap import label_need, typical_posterior
from monitor.metrics.ratings.model import RatingJudgments
from monitor.metrics.stop_kinds import rating_line, set_balance, set_references
from monitor.metrics.stopping import StopTest, stop_line, stop_test
from monitor.pipeline.collect import Values
from monitor.pipeline.item_overlap import (
    NeedOf,
    exported_ratings,
    rating_needs,
    rule_of,
    set_needs,
    typical_error,
)
from monitor.pipeline.params import LiveScores, ModelOptions
from monitor.store.coded import CampaignArrays
from monitor.store.live import Scores

MIN_TYPICAL = 3
"""Workers with ``model_min_judgments`` it takes to say what the typical worker reaches."""

CONFUSION_CLASSES = 10
"""The most classes for which a run keeps each worker's confusion matrix for the live path
(``K^2`` numbers a worker); with more, each worker's answers are read as one coin."""

REFERENCE = 1
"""Answers of others a judgment is scored against at the least (the live path's reference:
:func:`monitor.metrics.stopping.arrival_scores`). One scores a judgment as soon as its item has
a second answer; a larger reference is surer but comes later, and on rte in random arrival the
delay costs more than the sureness gains (the near-chance workers' share of judgments arrived
before their stop: 17% with one, 20% with two, 31% with four)."""

Judged = tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]
"""Items, workers and category codes of the judgments the model saw (the latest of each pair)."""


def label_live(
    out: Values,
    options: ModelOptions,
    arrays: CampaignArrays,
    judged: Judged,
    res: Any,  # noqa: ANN401 - a LabelModel
    live: LiveScores | None = None,
) -> None:
    """``stop_line`` (campaign), ``stop_evidence`` and ``stop_after`` (workers) and ``need``
    (items) of the ``judged`` and the Dawid-Skene fit ``res`` (a ``LabelModel``); the stop test
    runs over the ``live`` scores, frozen as they were given (:mod:`monitor.incremental.live`),
    and the run keeps its fit as the live path's next reference. No stop test where fewer than
    :data:`MIN_TYPICAL` workers have ``model_min_judgments`` judgments, or the typical one is
    no better than chance."""
    items, workers, codes = judged
    least = max(options.model_min_judgments, 1)
    typical = _typical(res, least)
    tested = _stop(out, options, arrays, res, typical, live)
    N, K = res.posterior.shape
    # need: the accuracy the typical worker surely reaches, the median of the low ends of the
    # workers' intervals (Dawid-Skene's own run high where items have few answers: duck's
    # 0.72-0.76 in its replay, where the median worker is right 62% of the time); where the
    # run cannot tell, chance: no item is settled before max_overlap
    surely = _typical(res, least, "low") if typical is not None else None
    a = surely if surely is not None else 1.0 / K
    gold = res.posterior.max(axis=1) >= 1.0  # clamped: the gold class

    def need_of(counted: NDArray[np.bool_]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        counts = np.bincount(items[counted] * K + codes[counted], minlength=N * K).reshape(N, K)
        post = typical_posterior(counts.astype(np.float64), res.prior, a)
        label = res.labels
        sure = np.where(label >= 0, post[np.arange(N), np.maximum(label, 0)], post.max(axis=1))
        n = counts.sum(axis=1)
        need = label_need(sure, n, gold, a, K, rule_of(options))
        return need, n

    _needs(out, arrays, workers, need_of, tested)


def _needs(
    out: Values,
    arrays: CampaignArrays,
    workers: NDArray[np.int64],
    need_of: NeedOf,
    tested: tuple[StopTest, Scored] | None,
) -> None:
    """``need`` of every item, the judgments (of ``workers``) of the workers the stop test
    stopped left out, and what the stops save and cost (:func:`_savings`)."""
    stopped = np.zeros(len(arrays.worker_ids), dtype=bool) if tested is None else tested[0].stopped
    need, n = need_of(~stopped[workers])
    out.per_subject("item", "need", arrays.item_ids, need.astype(np.float64), n=n)
    if tested is not None and tested[0].stopped.any():
        _savings(out, arrays, tested[1][:2], tested[0], need,
                 need_of(np.ones_like(workers, bool))[0])  # fmt: skip


def _savings(
    out: Values,
    arrays: CampaignArrays,
    arrived: tuple[NDArray[np.int64], NDArray[np.int64]],
    test: StopTest,
    need: NDArray[np.int64],
    need_with: NDArray[np.int64],
) -> None:
    """What the stops save and cost. ``stop_saved`` (``stop_savings`` in all): each stopped
    worker's share of the campaign's judgments up to their stop (their pace) times the
    judgments the items still want (``need``; a judgment's pace: the stopped worker's scored
    judgments over the campaign's judgments up to the one that stopped them);
    ``stop_recollect``: the items that want
    judgments only because the stopped workers' answers no longer count (``need_with``: the
    needs with them)."""
    workers, ids = arrived  # the scored judgments, in the order their scores became known
    stopped = np.flatnonzero(test.stopped)
    mine = np.argsort(workers, kind="stable")
    starts = np.searchsorted(workers[mine], stopped)
    at = ids[mine[starts + test.stopped_after[stopped] - 1]]  # the judgment that stopped them
    so_far = np.searchsorted(np.sort(arrays.ids), at, side="right")
    pace = test.stopped_after[stopped] / np.maximum(so_far, 1)
    remaining = int(need.sum())
    saved = np.zeros(len(arrays.worker_ids))
    saved[stopped] = pace * remaining
    out.per_subject("worker", "stop_saved", arrays.worker_ids, saved, n=test.stopped_after,
                    mask=test.stopped)  # fmt: skip
    reopened = (need > 0) & (need_with == 0)
    out.campaign_value(
        "stop_savings", float(saved.sum()), n=int(stopped.size),
        detail={"remaining": remaining},
    )  # fmt: skip
    out.campaign_value(
        "stop_recollect", int(reopened.sum()), n=int(need[reopened].sum()),
        detail={"judgments": int(need[reopened].sum())},
    )  # fmt: skip


def _typical(res: Any, least: int, of: str = "accuracy") -> float | None:  # noqa: ANN401 - a LabelModel
    """The median accuracy (``of="low"``: the low end of its interval) of the workers with
    ``least`` judgments (at least :data:`MIN_TYPICAL` of them), else None."""
    enough = res.n >= least
    if int(enough.sum()) < MIN_TYPICAL:
        return None
    return float(np.median(getattr(res, of)[enough]))


def _stop(
    out: Values,
    options: ModelOptions,
    arrays: CampaignArrays,
    res: Any,  # noqa: ANN401 - a LabelModel
    typical: float | None,
    live: LiveScores | None,
) -> tuple[StopTest, Scored] | None:
    """The stop test and its values, and the reference the run keeps for the live path; None
    where there is no line to test (no ``typical`` worker, or one at chance)."""
    K = res.posterior.shape[1]
    if typical is None or K < 2:
        return None
    line = stop_line_value(out, options, typical, K)
    if line is None:
        return None
    seen = res.n > 0
    columns = [np.where(seen, res.accuracy, np.nan)]
    if K <= CONFUSION_CLASSES:
        flat = res.confusion.reshape(seen.size, K * K)
        columns.append(np.where(seen[:, None], flat, np.nan))
    state = reference_state(
        arrays.worker_db_ids, np.column_stack(columns),
        {"categories": [str(c) for c in arrays.categories], "prior": res.prior.tolist(),
         "typical": typical, "line": line, "alpha": options.stop_alpha,
         "reference": REFERENCE},
    )  # fmt: skip
    values = arrays.values
    codes = np.where(np.isfinite(values), values, -1).astype(np.int64)
    gold = np.where(res.posterior.max(axis=1) >= 1.0, res.posterior.argmax(axis=1), -1)
    return _test(out, options, arrays, state, _arrived(arrays, codes, gold[arrays.items]), live)


def _arrived(arrays: CampaignArrays, answers: NDArray[Any], gold: NDArray[Any]) -> Arrived:
    """The run's judgments as the live scores take them."""
    workers = arrays.worker_db_ids[arrays.workers]
    return Arrived(arrays.ids, workers, arrays.items, answers, gold)


def _test(
    out: Values,
    options: ModelOptions,
    arrays: CampaignArrays,
    state: State,
    arrived: Arrived,
    live: LiveScores | None,
) -> tuple[StopTest, Scored]:
    """Keep ``state`` as the live path's next reference, and run the stop test over the ``live``
    scores and over those the next live update will give with it (the same function, the same
    reference: scored now as they will be then)."""
    out.states[REFERENCE_STATE] = state
    scored = _scored(arrays, arrived, state, live)
    paid = payoffs(state.meta, scored[2], scored[3])
    return _record(out, options, arrays, (scored[0], np.arange(scored[0].size), paid)), scored


def rating_live(
    out: Values,
    options: ModelOptions,
    arrays: CampaignArrays,
    data: RatingJudgments,
    res: Any,  # noqa: ANN401 - a RatingModel
    live: LiveScores | None,
    fallback: bool = False,
) -> None:
    """``stop_line`` (campaign), ``stop_evidence`` and ``stop_after`` (workers) of a rating
    campaign from its model ``res`` (a ``RatingModel``, fitted on ``data``): the line on the
    mean squared error ``b^2 + s^2`` (:func:`~monitor.metrics.stop_kinds.rating_line`), the
    typical rater the median of those with ``model_min_judgments`` judgments (at least
    :data:`MIN_TYPICAL` of them); and each item's ``need``
    (:func:`~monitor.pipeline.item_overlap.rating_needs`, about the exported answers: the
    plain means where the model ``fallback``)."""
    least = max(options.model_min_judgments, 1)
    judged = (data.items, data.workers, data.values)
    exported = exported_ratings(res, judged, fallback)
    sigma2 = typical_error(res, least, MIN_TYPICAL)
    need_of = rating_needs(options, judged, exported, np.isfinite(data.gold), sigma2, data.scale)
    _needs(out, arrays, data.workers, need_of, _rating_test(out, options, arrays, data, res, live))


def _rating_test(
    out: Values,
    options: ModelOptions,
    arrays: CampaignArrays,
    data: RatingJudgments,
    res: Any,  # noqa: ANN401 - a RatingModel
    live: LiveScores | None,
) -> tuple[StopTest, Scored] | None:
    """The raters' stop test (:func:`rating_live`); None where there is no line to test."""
    enough = res.n >= max(options.model_min_judgments, 1)
    if int(enough.sum()) < MIN_TYPICAL:
        return None
    mse = np.square(res.bias) + np.square(res.noise_sd)
    typical = float(np.median(mse[enough]))
    line = rating_line(typical, share=options.stop_share, margin=options.stop_margin)
    if not np.isfinite(line):
        return None
    out.campaign_value(
        "stop_line", line,
        detail={"typical": typical, "alpha": options.stop_alpha, "share": options.stop_share,
                "margin": options.stop_margin, "measure": "mse"},
    )  # fmt: skip
    seen = res.n > 0
    scale = data.scale
    state = reference_state(
        arrays.worker_db_ids,
        np.column_stack([np.where(seen, res.bias, np.nan),
                         np.where(seen, np.square(res.noise_sd), np.nan)]),
        {"kind": Kind.RATING.value, "scale": [float(scale[0]), float(scale[1])],
         "typical": typical, "line": line, "alpha": options.stop_alpha,
         "reference": REFERENCE, "censored": True},
    )  # fmt: skip
    arrived = _arrived(arrays, arrays.values, data.gold[arrays.items])
    return _test(out, options, arrays, state, arrived, live)


def set_live(
    out: Values,
    options: ModelOptions,
    arrays: CampaignArrays,
    res: Any,  # noqa: ANN401 - a MultilabelModel
    live: LiveScores | None,
) -> None:
    """``stop_line`` (campaign), ``stop_evidence`` and ``stop_after`` (workers) of a multi-label
    campaign from its model ``res`` (a ``MultilabelModel``): the line on the model's accuracy
    (two classes), each option weighed by :func:`~monitor.metrics.stop_kinds.set_balance` over
    the references of this run's scores; and each item's ``need``
    (:func:`~monitor.pipeline.item_overlap.set_needs`, the typical worker counted at the low
    end of the workers' intervals, as for labels; chance where the run cannot tell)."""
    least = max(options.model_min_judgments, 1)
    typical = _typical(res, least)
    line = None if typical is None else stop_line_value(out, options, typical, 2)
    tested = None
    if line is not None and typical is not None:
        tested = _set_test(out, options, arrays, res, live, (typical, line))
    surely = _typical(res, least, "low")
    workers, need_of = set_needs(options, arrays, res, 0.5 if surely is None else surely)
    _needs(out, arrays, workers, need_of, tested)


def _set_test(
    out: Values,
    options: ModelOptions,
    arrays: CampaignArrays,
    res: Any,  # noqa: ANN401 - a MultilabelModel
    live: LiveScores | None,
    typical_line: tuple[float, float],
) -> tuple[StopTest, Scored]:
    """The set workers' stop test (:func:`set_live`) on the line of the ``typical`` worker."""
    typical, line = typical_line
    names = [str(a) for a in arrays.annotation_names]
    ann_judgment, ann_code, _ = arrays.annotations
    chosen = np.zeros((arrays.n, len(names)), dtype=np.int8)
    chosen[ann_judgment, ann_code] = 1
    gold = set_gold(arrays.item_gold, names)[arrays.items]
    arrived = _arrived(arrays, chosen, gold)
    accuracy = np.where(res.n > 0, res.accuracy, np.nan)
    meta = {"kind": Kind.MULTILABEL.value, "options": names, "prior": res.prior.tolist(),
            "typical": typical, "line": line, "alpha": options.stop_alpha,
            "reference": REFERENCE}  # fmt: skip
    order = np.argsort(arrays.ids, kind="stable")
    arrivals = set_arrivals(arrived, reference_state(arrays.worker_db_ids, accuracy, meta))
    q = set_references(arrivals[order], res.prior, REFERENCE)[2]
    meta["balance"] = set_balance(q, res.prior, line).tolist()
    state = reference_state(arrays.worker_db_ids, accuracy, meta)
    return _test(out, options, arrays, state, arrived, live)


Scored = tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]
"""Scored judgments in the order their scores became known: worker codes, judgment ids,
scores, nulls."""


def _scored(
    arrays: CampaignArrays, arrived: Arrived, state: State, live: LiveScores | None
) -> Scored:
    """The ``live`` scores, and those still to give, in the order they became known."""
    workers = arrived.workers
    scores, nulls, ready = score_arrivals(arrived, state)
    new = ready >= 0
    if live is not None:
        new &= ~np.isin(arrays.ids, live.stored)
    fresh = Scores(arrays.ids[new], workers[new], ready[new], scores[new], nulls[new])
    return merged_scores(arrays, fresh, live)


def merged_scores(arrays: CampaignArrays, fresh: Scores, live: LiveScores | None) -> Scored:
    """The ``live`` scores kept (of the judgments the run sees: one ingested after its snapshot
    is the next run's) and the ``fresh`` ones, in the order they became known (``ready``, then
    the judgment), their workers as codes."""
    parts = [fresh]
    if live is not None:
        parts.insert(0, taken(live.scores, np.isin(live.scores.ids, arrays.ids)))
    ids, workers, ready, scores, nulls = (
        np.concatenate([getattr(p, name) for p in parts])
        for name in ("ids", "workers", "ready", "scores", "nulls")
    )
    order = np.lexsort((ids, ready))
    codes = np.searchsorted(arrays.worker_db_ids, workers[order]).astype(np.int64)
    return codes, ids[order], scores[order], nulls[order]


def taken(s: Scores, rows: NDArray[np.bool_]) -> Scores:
    """The scores of ``s`` at ``rows``."""
    return Scores(s.ids[rows], s.workers[rows], s.ready[rows], s.scores[rows], s.nulls[rows])


def _record(
    out: Values,
    options: ModelOptions,
    arrays: CampaignArrays,
    scored: tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]],
) -> StopTest:
    """Test the ``scored`` judgments (workers, order, payoffs), record ``stop_evidence`` and
    ``stop_after``."""
    test = tested(arrays, scored, options.stop_alpha)
    write_test(out, arrays, test)
    return test


def tested(
    arrays: CampaignArrays,
    scored: tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]],
    alpha: float,
) -> StopTest:
    """The stop test at ``alpha`` of the ``scored`` judgments (workers, order, payoffs)."""
    workers, order, paid = scored
    return stop_test(workers, order, paid, n_workers=len(arrays.worker_ids), alpha=alpha)


def write_test(out: Values, arrays: CampaignArrays, test: StopTest) -> None:
    """Record the ``test``'s ``stop_evidence`` and ``stop_after``."""
    ids = arrays.worker_ids
    out.per_subject("worker", "stop_evidence", ids, test.evalue, n=test.n, mask=test.n > 0)
    out.per_subject("worker", "stop_after", ids, test.stopped_after.astype(np.float64),
                    n=test.n, mask=test.stopped)  # fmt: skip


def stop_line_value(
    out: Values, options: ModelOptions, typical: float, K: int, **more: float
) -> float | None:
    """The stop line of a campaign whose typical worker is right ``typical`` of the time over
    ``K`` classes, recorded as ``stop_line`` (with ``more`` in its detail); None where the
    typical one is at chance."""
    line = stop_line(typical, K, share=options.stop_share, margin=options.stop_margin)
    if not np.isfinite(line):
        return None
    out.campaign_value(
        "stop_line", line,
        detail={"typical": typical, "alpha": options.stop_alpha, "share": options.stop_share,
                "margin": options.stop_margin, "classes": K, **more},
    )  # fmt: skip
    return line
