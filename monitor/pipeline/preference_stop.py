"""The stop test of a preference campaign's annotators (:func:`preference_stop`): their
agreement with the consensus of the others, each answer scored once by the first run that sees
it, and beside it the side of the screen they pick (:mod:`monitor.metrics.stop_side`); each at
half of ``stop_alpha``. The other kinds' tests: :mod:`monitor.pipeline.live`."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.metrics.stop_side import earlier, side_payoffs
from monitor.metrics.stopping import StopTest, either, label_payoffs, stop_test
from monitor.pipeline.collect import Values
from monitor.pipeline.live import (
    MIN_TYPICAL,
    merged_scores,
    stop_line_value,
    taken,
    tested,
    write_test,
)
from monitor.pipeline.params import LiveScores, ModelOptions
from monitor.store.coded import CampaignArrays
from monitor.store.live import Scores


def preference_stop(
    out: Values,
    options: ModelOptions,
    arrays: CampaignArrays,
    fit: Any,  # noqa: ANN401 - a PreferenceModel
    live: LiveScores | None = None,
) -> StopTest | None:
    """The stop test of a preference campaign's annotators (``fit``: a ``PreferenceModel``): each
    strict answer scored by its chance of being along the true order given the other
    annotators' comparisons (the cavity consensus, or the gold), the line on the strict
    answers' accuracy (two outcomes: the label case with K = 2). Ties are not scored.

    Each answer is scored once, by the first run that can score it, and the score and its null
    are kept (``out.live_rows``, stored with the run in ``live_scores``): a later run tests the
    ``live`` scores as they were given and scores only the answers new to it, so the test's
    error rate holds across every run, as the label campaigns' frozen scores do. Without
    ``live`` (a campaign read outside the store) every answer is scored by this run.

    Beside it, each annotator's answers are tested for a side of the screen picked whatever
    the items (:func:`_side_test`, recorded as ``stop_side`` where it stops them first); each
    test at half of ``stop_alpha``, a worker stopped where either says so
    (:func:`~monitor.metrics.stopping.either`). Where there is no line (too few annotators
    with ``model_min_judgments`` strict answers, or the typical one at chance: pairs judged
    once or twice), ``stop_line`` is recorded without a value and the side alone can stop an
    annotator, still at half of ``stop_alpha``. The test, or None where nobody gave a strict
    answer."""
    half = options.stop_alpha / 2  # the two tests share alpha, whichever runs
    side, left_share = _side_test(options, arrays, half)
    if not side.n.any():
        return None
    W = len(arrays.worker_ids)
    agree = _agreement_test(out, options, arrays, fit, live, half)
    if agree is None:
        out.campaign_value("stop_line", None, detail={"alpha": options.stop_alpha,
                           "side_margin": options.stop_side_margin},
                           reason="no typical annotator to set it by")  # fmt: skip
        agree = StopTest(np.zeros(W, np.int64), np.ones(W), np.zeros(W, np.int64), half)
    test = either(agree, side)
    write_test(out, arrays, test)
    by_side = side.stopped & ((side.stopped_after < agree.stopped_after) | ~agree.stopped)
    out.per_subject("worker", "stop_side", arrays.worker_ids, left_share,
                    n=side.stopped_after, mask=by_side)  # fmt: skip
    return test


def _agreement_test(
    out: Values,
    options: ModelOptions,
    arrays: CampaignArrays,
    fit: Any,  # noqa: ANN401 - a PreferenceModel
    live: LiveScores | None,
    alpha: float,
) -> StopTest | None:
    """The test at ``alpha`` of the annotators' agreement with the consensus
    (:func:`preference_stop`), recording ``stop_line``; None where there is no line."""
    right, strict = fit.answer_right, fit.answer_strict
    if right is None or strict is None:
        return None
    enough = fit.n_strict >= max(options.model_min_judgments, 1)
    if int(enough.sum()) < MIN_TYPICAL:
        return None
    typical = float(np.median(strict[enough]))
    line = stop_line_value(out, options, typical, 2, side_margin=options.stop_side_margin)
    if line is None:
        return None
    rows = np.flatnonzero(np.isfinite(right))
    c = right[rows]
    A = c * c + (1.0 - c) * (1.0 - c)
    nulls = line * A + (1.0 - line) * (1.0 - A)
    workers = arrays.worker_db_ids[arrays.workers[rows]]
    ready = np.full(rows.size, arrays.watermark, dtype=np.int64)  # known as of this run
    fresh = Scores(arrays.ids[rows], workers, ready, c, nulls)
    if live is not None:
        fresh = taken(fresh, ~np.isin(fresh.ids, live.stored))
        out.live_rows.extend(zip(*(getattr(fresh, name).tolist() for name in
                                   ("ids", "workers", "scores", "nulls", "ready")), strict=True))  # fmt: skip
    codes, _, scores, nulls = merged_scores(arrays, fresh, live)
    return tested(arrays, (codes, np.arange(codes.size), label_payoffs(scores, nulls)), alpha)


def _side_test(
    options: ModelOptions, arrays: CampaignArrays, alpha: float
) -> tuple[StopTest, NDArray[np.float64]]:
    """The position bettor's test of every annotator (:mod:`monitor.metrics.stop_side`), over
    the answers in order of arrival, and each one's share of the left item among their strict
    answers up to their stop (NaN: not stopped by it)."""
    outcome = arrays.comparisons[2]
    order = np.argsort(arrays.ids, kind="stable")
    shown = (1 - outcome.astype(np.int64))[order]  # 0 left, 1 tie, 2 right
    workers = arrays.workers[order].astype(np.int64)
    paid = side_payoffs(workers, shown, margin=options.stop_side_margin)
    W = len(arrays.worker_ids)
    test = stop_test(workers, np.arange(workers.size), paid, n_workers=W, alpha=alpha)
    strict = np.isfinite(paid)
    w, is_left = workers[strict], (shown[strict] == 0).astype(np.float64)
    upto = earlier(w) < test.stopped_after[w]
    k = np.bincount(w[upto], weights=is_left[upto], minlength=W)
    share = np.where(test.stopped, k / np.maximum(test.stopped_after, 1), np.nan)
    return test, share
