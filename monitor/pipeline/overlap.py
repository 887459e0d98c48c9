"""Dynamic overlap of a preference campaign in a run: each judged pair's ``need``
(:func:`monitor.metrics.overlap.pair_need`), the judgments it wants before its exported order
is settled.

* **The exported order** is the order of the two items' scores under the run's reliability
  model (what ``monitor export labels`` ranks by); equal scores order nothing.
* **Its posterior** is the typical annotator's: each strict answer counted as from an annotator
  right as often as the crowd's median annotator surely is on strict answers (the median of the
  low ends of their intervals, :func:`typical_strict`), on an even prior. The
  model's own posterior of the order is not used: it weighs each answer by its annotator's
  reliability, fitted on the same few answers, and reads the rest of the comparison graph
  through scores fitted to the pair's own answers too. Where most pairs are judged once or
  twice, that counts the pair's answers twice and settles pairs one annotator judged
  (the label case: Dawid-Skene's per-worker posterior settled duck's items after three answers
  and its export fell from 90% right to 57%).
* **Ties** count as judgments (``n``; a platform's overlap counts them), never as evidence of
  the order: a pair its annotators keep calling a tie wants judgments up to ``max_overlap``.
* **Gold pairs** (both items' gold values known and unequal) want only ``min_overlap``.
* **Repair**: the answers of the annotators the run stopped count for nothing, neither as
  evidence nor in ``n``, so a pair whose order rested on them wants judgments again in the
  same run.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.metrics.labels.gold import wilson_interval
from monitor.metrics.overlap import Overlap, pair_need
from monitor.metrics.preferences.judgments import canonical_pairs
from monitor.metrics.preferences.model import gold_order
from monitor.pipeline.collect import Values
from monitor.pipeline.live import MIN_TYPICAL
from monitor.pipeline.params import ModelOptions
from monitor.store.coded import CampaignArrays

__all__ = ["pair_overlap", "typical_strict"]


def pair_overlap(
    out: Values,
    options: ModelOptions,
    arrays: CampaignArrays,
    fit: Any,  # noqa: ANN401 - a PreferenceModel
    gold: NDArray[np.float64],
    stopped: NDArray[np.bool_] | None = None,
) -> None:
    """``need`` of every judged pair (module docstring) from the run's fit, its subject the
    pair as the run keys pairs (``low<TAB>high``, in item code order), ``n`` the judgments
    that count (the latest of each annotator, the stopped annotators' left out). ``gold``:
    each item's gold value as a number (NaN: none); ``stopped`` (W,): the annotators the run's
    stop test stopped (None: none)."""
    if not arrays.n:
        return
    left, right, outcome = arrays.comparisons
    cp = canonical_pairs(arrays.workers, left, right, outcome, arrays.order, latest_only=True)
    P = len(cp.pairs)
    if not P:
        return
    counted = np.ones(cp.workers.size, dtype=bool) if stopped is None else ~stopped[cp.workers]
    # the canonical label is the relation of the lower item to the higher, plus one
    low_won = np.bincount(cp.pair[counted & (cp.label == 2)], minlength=P)
    high_won = np.bincount(cp.pair[counted & (cp.label == 0)], minlength=P)
    n = np.bincount(cp.pair[counted], minlength=P)
    lo, hi = cp.pairs[:, 0], cp.pairs[:, 1]
    d = np.sign(np.nan_to_num(fit.score[lo] - fit.score[hi]))
    along = np.where(d > 0, low_won, np.where(d < 0, high_won, 0))
    against = np.where(d > 0, high_won, np.where(d < 0, low_won, 0))
    order = gold_order(lo, hi, gold)
    is_gold = np.isfinite(order) & (order != 0)
    typical = typical_strict(fit, options)
    rule = Overlap(options.overlap_confidence, options.min_overlap, options.max_overlap)
    need = pair_need(along, against, n, is_gold, 0.0 if typical is None else typical, rule)
    ids = arrays.item_ids
    subjects = [f"{ids[a]}\t{ids[b]}" for a, b in cp.pairs.tolist()]
    out.per_subject("pair", "need", subjects, need.astype(np.float64), n=n)


def typical_strict(fit: Any, options: ModelOptions) -> float | None:  # noqa: ANN401
    """The accuracy on strict answers the typical annotator surely reaches: the median, over
    the annotators with ``model_min_judgments`` strict answers (at least :data:`MIN_TYPICAL` of
    them), of the low end of each one's Wilson interval (the label campaigns' rule:
    :func:`monitor.pipeline.live.label_live`); None with fewer (the run cannot tell: only the
    caps end a pair)."""
    strict = fit.answer_strict
    if strict is None:
        return None
    enough = (fit.n_strict >= max(options.model_min_judgments, 1)) & np.isfinite(strict)
    if int(enough.sum()) < MIN_TYPICAL:
        return None
    low, _ = wilson_interval(strict[enough], fit.n_strict[enough])
    return float(np.median(low))
