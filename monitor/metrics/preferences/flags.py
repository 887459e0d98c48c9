"""Statistics behind the preference flags: chance floors, gold accuracy, an interval on
transitivity kappa, and the test for ambiguous pairs. Pure; the rules live elsewhere.

Conventions of :mod:`monitor.metrics.preferences.judgments` (``outcome`` +1 left, -1 right, 0 tie) and
of :mod:`monitor.metrics.preferences.model` (``gold`` per comparison: >0 left better, <0 right
better, 0 equal gold, NaN none).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from monitor.metrics.common import check_same_length
from monitor.metrics.labels.gold import GoldAccuracy, wilson_interval
from monitor.metrics.preferences.judgments import validate


def chance_floor(
    tie_rate: ArrayLike,
    *,
    left_rate: ArrayLike = 0.5,
    consensus_left: ArrayLike = 0.5,
    consensus_tie: ArrayLike = 0.0,
    over: str = "strict",
) -> NDArray[np.float64]:
    """What an annotator answering independently of the items reaches, given their own habits.

    Such an annotator answers tie with probability ``t`` (``tie_rate``) and, when strict, left
    with probability ``q`` (``left_rate``). On their pairs the consensus is a tie with share
    ``c0`` (``consensus_tie``) and, when strict, favours the left item with share ``cl``
    (``consensus_left``). Their answer and the consensus are independent, so:

    * ``over="strict"`` (the scale of the model's ``accuracy``, strict answers on pairs with a
      strict consensus): ``q cl + (1 - q)(1 - cl) = 1/2 + 2 (q - 1/2)(cl - 1/2)``. The tie rate
      drops out, and so does any position habit when the sides are randomised (``cl = 1/2``) or
      the annotator has none (``q = 1/2``): the floor is 0.5. The model's ``accuracy`` separates
      the position bias from ``eta``, so its floor is 0.5 for everyone.
    * ``over="all"`` (every answer, a tie counting as not along the order, as the model's
      ``agreement`` and a true accuracy that scores ties as wrong):
      ``(1 - t)(1 - c0) [1/2 + 2 (q - 1/2)(cl - 1/2)]``: ``(1 - t) / 2`` with random sides and
      no tied consensus. An annotator who ties half the time reaches 0.25, not 0.5.
    * ``over="all_ties_agree"``: the same, a tie on a pair whose consensus is a tie counting as
      agreement: ``t c0 + (1 - t)(1 - c0)[...]``.

    >>> chance_floor([0.0, 0.5], over="all").tolist()
    [0.5, 0.25]
    """
    t = np.asarray(tie_rate, dtype=np.float64)
    q = np.asarray(left_rate, dtype=np.float64)
    cl = np.asarray(consensus_left, dtype=np.float64)
    c0 = np.asarray(consensus_tie, dtype=np.float64)
    for name, v in (
        ("tie_rate", t),
        ("left_rate", q),
        ("consensus_left", cl),
        ("consensus_tie", c0),
    ):
        if np.any((v < 0) | (v > 1)):
            raise ValueError(f"{name} must hold shares in [0, 1].")
    strict = 0.5 + 2.0 * (q - 0.5) * (cl - 0.5)
    if over == "strict":
        return np.broadcast_to(strict, np.broadcast_shapes(t.shape, strict.shape)).astype(float)
    if over == "all":
        return (1 - t) * (1 - c0) * strict
    if over == "all_ties_agree":
        return t * c0 + (1 - t) * (1 - c0) * strict
    raise ValueError(f"over must be 'strict', 'all' or 'all_ties_agree', got {over!r}.")


def gold_pair_accuracy(
    workers: ArrayLike,
    outcome: ArrayLike,
    gold: ArrayLike,
    *,
    n_workers: int | None = None,
    confidence: float = 0.95,
) -> GoldAccuracy:
    """Per annotator, the share of their strict answers on gold pairs that go along the gold
    order, with the Wilson interval (:func:`monitor.metrics.labels.gold.wilson_interval`).

    ``workers, outcome, gold : (n,)``; comparisons without gold (NaN) or with equal gold (0)
    count for nothing, and so do ties (the gold order is strict). Annotators without a gold
    answer get ``n = 0`` and NaN."""
    w = np.asarray(workers).reshape(-1)
    y = np.asarray(outcome).reshape(-1)
    g = np.asarray(gold, dtype=np.float64).reshape(-1)
    check_same_length(workers=w, outcome=y, gold=g)
    if w.size and (not np.issubdtype(w.dtype, np.integer) or w.min() < 0):
        raise ValueError("workers must hold non-negative integer codes.")
    nw = max(int(w.max()) + 1 if w.size else 0, n_workers or 0)
    use = np.isfinite(g) & (g != 0) & (y != 0)
    n = np.bincount(w[use], minlength=nw)
    hits = np.bincount(w[use], weights=np.sign(g[use]) == y[use], minlength=nw)
    with np.errstate(invalid="ignore", divide="ignore"):
        acc = hits / n
    low, high = wilson_interval(acc, n, confidence)
    return GoldAccuracy(n, acc, low, high, None, "pairwise", confidence)


@dataclass(frozen=True, eq=False)
class KappaInterval:
    """Per annotator (W,): transitivity kappa, its interval, and the effective number of
    independent triplets behind it; NaN without a fully judged triplet."""

    kappa: NDArray[np.float64] = field(repr=False)
    low: NDArray[np.float64] = field(repr=False)
    # transitivity kappa; the label models' accuracy fields alike in shape mean other things
    high: NDArray[np.float64] = field(repr=False)
    n_effective: NDArray[np.float64] = field(repr=False)
    p_e: float
    confidence: float


def kappa_interval(
    n_triplets: ArrayLike,
    n_transitive: ArrayLike,
    triplets_per_pair_sq: ArrayLike,
    p_e: float,
    confidence: float = 0.95,
) -> KappaInterval:
    """An interval on each annotator's transitivity kappa, ``(P_A - p_e) / (1 - p_e)``.

    Triplets share pairs, so they are not independent trials: one wrong pair makes every triplet
    through it intransitive. If each judged pair is wrong independently with a small
    probability ``e``, the count of intransitive triplets is about ``sum_e err_e t_e`` (``t_e``
    the triplets through pair ``e``, ``sum_e t_e = 3T``), with variance ``e sum_e t_e^2`` against
    the ``3 e T`` of ``T`` independent trials: the design effect is ``sum_e t_e^2 / (3T)`` and the
    effective number of triplets ``n_eff = 3 T^2 / sum_e t_e^2`` (T for disjoint triangles, 9.3
    for the 56 triplets of a fully judged block of 8 items, whose 28 pairs lie in 6 each).
    The interval is the Wilson interval on ``P_A`` with ``n_eff`` trials, mapped linearly to
    kappa: wide for an annotator with few or heavily overlapping triplets, so a flag that asks
    for the whole interval below a floor does not fire on thin evidence.

    ``n_triplets, n_transitive, triplets_per_pair_sq : (W,)`` (the last from
    :func:`monitor.metrics.preferences.intraobserver.triplets_per_pair`); ``p_e`` 13/27 or 6/8.
    """
    t = np.asarray(n_triplets, dtype=np.float64)
    x = np.asarray(n_transitive, dtype=np.float64)
    sq = np.asarray(triplets_per_pair_sq, dtype=np.float64)
    check_same_length(n_triplets=t, n_transitive=x, triplets_per_pair_sq=sq)
    if np.any(x > t) or np.any(t < 0):
        raise ValueError("n_transitive must lie in 0..n_triplets.")
    if not 0 < p_e < 1:
        raise ValueError(f"p_e must lie in (0, 1), got {p_e}.")
    with np.errstate(invalid="ignore", divide="ignore"):
        p_a = x / t
        n_eff = np.where(t > 0, np.minimum(3 * t * t / np.maximum(sq, 1), t), 0.0)
    lo, hi = wilson_interval(p_a, n_eff, confidence)
    kappa = (p_a - p_e) / (1 - p_e)
    return KappaInterval(
        kappa, (lo - p_e) / (1 - p_e), (hi - p_e) / (1 - p_e), n_eff, p_e, confidence
    )


@dataclass(frozen=True, eq=False)
class AmbiguousPairs:
    """Per unordered pair judged strictly at least once, shape (P,) or (P, 2).

    ``pairs`` the item codes (smaller first); ``n`` strict answers, ``n_ties`` tie answers;
    ``first`` answers preferring the first item; ``against`` the answers against the order the
    answers support best (the one with the larger p-value); ``expected_against`` the number the
    model expects against a clear order, ``sum (1 - eta)`` over the answers; ``statistic``
    ``(against - expected) / sd``; ``p_value`` the larger of the two tail probabilities
    (below); ``q_value`` Benjamini-Hochberg adjusted over the pairs; ``gold`` whether the pair
    has a gold order; ``first_low``, ``first_high`` the 95% Wilson interval of the probability
    that a strict answer prefers the first item (Wilson 1927): a pair whose interval excludes
    one half has a clear majority, however its split compares with the model's expectation.
    """

    pairs: NDArray[np.int64] = field(repr=False)
    n: NDArray[np.int64] = field(repr=False)
    n_ties: NDArray[np.int64] = field(repr=False)
    first: NDArray[np.int64] = field(repr=False)
    against: NDArray[np.int64] = field(repr=False)
    expected_against: NDArray[np.float64] = field(repr=False)
    statistic: NDArray[np.float64] = field(repr=False)
    p_value: NDArray[np.float64] = field(repr=False)
    q_value: NDArray[np.float64] = field(repr=False)
    gold: NDArray[np.bool_] = field(repr=False)
    first_low: NDArray[np.float64] = field(repr=False)
    first_high: NDArray[np.float64] = field(repr=False)


def ambiguous_pairs(
    accuracy: ArrayLike,
    workers: ArrayLike,
    left: ArrayLike,
    right: ArrayLike,
    outcome: ArrayLike,
    gold: ArrayLike | None = None,
) -> AmbiguousPairs:
    """Pairs whose reliable annotators split beyond what their reliability explains.

    ``accuracy : (W,)`` each annotator's ``eta`` (``PreferenceModel.accuracy``). Under the
    fitted model an annotator answers a pair with a clear order ``o`` against it with
    probability ``1 - eta_k`` (at a clear order the position bias no longer matters). For each
    order the count of answers against it is then Poisson-binomial; its upper tail at the
    observed count is that order's p-value, and the pair's ``p_value`` is the larger of the
    two: small when *neither* order explains the split, e.g. eight annotators at ``eta = 0.9``
    splitting 4 to 4 (p = 0.005), never for two random answerers splitting 1 to 1 (p = 0.75).
    A pair judged once cannot split (p = 1). The tails are exact (a recursion over each pair's
    answers, vectorised over pairs). Strict answers only; ties are counted apart.
    """
    eta = np.asarray(accuracy, dtype=np.float64).reshape(-1)
    if np.any(~np.isfinite(eta) | (eta < 0) | (eta > 1)):
        raise ValueError("accuracy must hold probabilities in [0, 1], one per annotator code.")
    j = validate(workers, left, right, outcome, n_workers=len(eta))
    n_i = max(j.n_items, 1)
    keys, pair = np.unique(j.lo * n_i + j.hi, return_inverse=True)
    pair = pair.reshape(-1)
    P = len(keys)
    strict = j.rel != 0
    first = np.bincount(pair[strict], weights=j.rel[strict] > 0, minlength=P).astype(np.int64)
    n = np.bincount(pair[strict], minlength=P).astype(np.int64)
    err = 1.0 - eta[j.workers[strict]]
    expected = np.bincount(pair[strict], weights=err, minlength=P).astype(np.float64, copy=False)
    var = np.bincount(pair[strict], weights=err * (1 - err), minlength=P)
    # against "first item better" = answers preferring the second; and the reverse
    p_first = poisson_binomial_sf(pair[strict], err, n - first, P)
    p_second = poisson_binomial_sf(pair[strict], err, first, P)
    p = np.maximum(p_first, p_second)
    against = np.where(p_first >= p_second, n - first, first)
    with np.errstate(invalid="ignore", divide="ignore"):
        stat = (against - expected) / np.sqrt(var)
    has_gold = np.zeros(P, dtype=bool)
    if gold is not None:
        g = np.asarray(gold, dtype=np.float64).reshape(-1)
        check_same_length(workers=j.workers, gold=g)
        has_gold[pair[np.isfinite(g) & (g != 0)]] = True
    keep = n > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        low, high = wilson_interval(first / np.maximum(n, 1), n)
    pairs = np.stack([keys // n_i, keys % n_i], axis=1)
    return AmbiguousPairs(
        pairs=pairs[keep],
        n=n[keep],
        n_ties=np.bincount(pair[~strict], minlength=P)[keep].astype(np.int64),
        first=first[keep],
        against=against[keep],
        expected_against=expected[keep],
        statistic=stat[keep],
        p_value=p[keep],
        q_value=benjamini_hochberg(p[keep]),
        gold=has_gold[keep],
        first_low=low[keep],
        first_high=high[keep],
    )


def poisson_binomial_sf(
    group: NDArray[np.int64], prob: NDArray[np.float64], k: NDArray[np.int64], n_groups: int
) -> NDArray[np.float64]:
    """``P(S_g >= k_g)`` for ``S_g`` the number of successes among the trials of group ``g``
    (success probabilities ``prob``), exactly: the distribution of each group's count is built
    trial by trial (``f <- f (1 - p) + shift(f) p``), for all groups of similar size at once;
    the loop runs over trial ranks, not over trials."""
    size = np.bincount(group, minlength=n_groups)
    out = (np.asarray(k) <= 0).astype(np.float64)  # groups without trials
    order = np.argsort(group, kind="stable")
    g_sorted = group[order]
    start = np.searchsorted(g_sorted, np.arange(n_groups))
    rank = np.arange(len(group)) - start[g_sorted]
    cap = 1
    while True:
        members = np.flatnonzero((size > cap // 2 if cap > 1 else size >= 1) & (size <= cap))
        if len(members):
            f = np.zeros((len(members), cap + 1))
            f[:, 0] = 1.0
            row = np.full(n_groups, -1)
            row[members] = np.arange(len(members))
            sel = row[g_sorted] >= 0
            r_rows, r_rank, r_p = row[g_sorted][sel], rank[sel], prob[order][sel]
            for step in range(int(size[members].max())):
                at = r_rank == step
                p = np.zeros(len(members))
                p[r_rows[at]] = r_p[at]
                f[:, 1:] = f[:, 1:] * (1 - p)[:, None] + f[:, :-1] * p[:, None]
                f[:, 0] *= 1 - p
            tail = np.cumsum(f[:, ::-1], axis=1)[:, ::-1]
            kk = np.clip(k[members], 0, cap + 1)
            padded = np.concatenate([tail, np.zeros((len(members), 1))], axis=1)
            out[members] = np.minimum(padded[np.arange(len(members)), kk], 1.0)
        if cap >= size.max(initial=0):
            break
        cap *= 2
    out[k <= 0] = 1.0
    return out


def benjamini_hochberg(p: ArrayLike) -> NDArray[np.float64]:
    """Benjamini-Hochberg (1995) adjusted p-values (q-values), same order as ``p``."""
    p = np.asarray(p, dtype=np.float64)
    m = len(p)
    if not m:
        return p.copy()
    order = np.argsort(p)
    ranked = p[order] * m / np.arange(1, m + 1)
    q = np.minimum.accumulate(ranked[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(q, 1.0)
    return out
