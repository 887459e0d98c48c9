"""Stopping a worker while the campaign runs: an anytime-valid test by betting (pure).

Each of a worker's judgments, in the order they arrived (t = 1, 2, ...), has a score
``s_t`` in [0, 1] (how far the answer agrees with the reference: gold, or the other workers)
and a null ``m_t``: the score a worker exactly at the stop line expects on that question. Under
H0, "the worker is at or above the line", ``E[s_t | past] >= m_t``; so for every bet
``lambda_t`` in [0, 1 / (1 - m_t)) fixed before ``s_t`` is seen, the wealth

    K_t = prod_{u <= t} (1 + lambda_u (m_u - s_u))

is a non-negative supermartingale with ``K_0 = 1``, and by Ville's inequality
``P(sup_t K_t >= 1 / alpha) <= alpha`` (Shafer & Vovk 2019; Waudby-Smith & Ramdas 2024,
"Estimating means of bounded random variables by betting", JRSS B 86(1)). The worker is
stopped at the first t with ``K_t >= 1 / alpha``: a worker at or above the line is stopped with
probability at most ``alpha`` however long the campaign runs and however often it is looked at.
A label judgment's score is given once, as it arrives, against the answers before it
(:func:`arrival_scores`), and never changes: the guarantee holds across every look and run.
(:func:`label_scores` scores against a whole posterior, for a single look.)

The bets are fixed fractions ``f`` of the largest safe bet, ``lambda_t = f / (1 - m_t)``, and
the wealth is the average over :data:`FRACTIONS` (an average of supermartingales is one): a
large fraction stops a worker at chance within few judgments, a small one a worker just under
the line. Each factor is ``1 + f p_t`` with the *payoff* ``p_t = (m_t - s_t) / (1 - m_t)``
(:func:`label_payoffs`): at least -1, and at most 0 on average under H0. A rating's payoff is
``e_t^2 / c_t - 1`` (:func:`rating_payoffs`: its squared error against what a rater at the
line expects at the most, :mod:`monitor.metrics.stop_kinds`), of the same two properties: every
kind shares one wealth. :func:`stop_test` is vectorised over all judgments;
:func:`wealth_plain` is the same product written as a loop, for reading and for the tests.

The scores of label campaigns (:func:`label_scores`): the reference is the posterior of the
item's class given the other answers (or its gold), ``q``; the score of answer ``x`` is
``q(x)``. A worker right with probability ``L`` expects at least
``L A + (1 - L) B`` with ``A = sum_k q(k)^2`` and ``B = sum_y q(y) min_{x != y} q(x)`` (their
errors all on the least likely other class) where ``q`` is calibrated: the null, whatever the
spread of the errors, increasing in ``L``. With two classes ``B = 1 - A``, the exact
expectation. On gold, ``q`` is the gold class: the score is "right or wrong" and the null is
``L`` itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import brentq
from scipy.special import logsumexp

MAX_EVIDENCE = 1e12
"""The largest e-value kept: beyond it the evidence is overwhelming, and a number a JSON reader
takes for an integer past 64 bits."""
FRACTIONS = (0.1, 0.25, 0.5, 0.75)
"""Fractions of the largest safe bet whose wealths are averaged (a mixture of bettors)."""
_EDGE = 1e-9
_GRID = float(2**20)


@dataclass(frozen=True)
class StopTest:
    """The test of each worker (indexed by worker code): judgments scored ``n``, the largest
    wealth reached ``evalue`` (the evidence against "at or above the line": 1 is none; at most
    :data:`MAX_EVIDENCE`), and ``stopped_after``, the judgments scored when the wealth first
    reached ``1 / alpha`` (0: not stopped)."""

    n: NDArray[np.int64]
    evalue: NDArray[np.float64]
    stopped_after: NDArray[np.int64]
    alpha: float

    @property
    def stopped(self) -> NDArray[np.bool_]:
        return self.stopped_after > 0


def label_payoffs(scores: NDArray[np.float64], nulls: NDArray[np.float64]) -> NDArray[np.float64]:
    """The payoff of a bet on a label judgment, ``(m - s) / (1 - m)``: at least -1 (``s`` is at
    most 1), below 0 on average for a worker at or above the line (``E[s] >= m``). NaN where
    the judgment is not scored."""
    m = np.minimum(nulls, 1.0 - _EDGE)
    return (m - scores) / (1.0 - m)


def rating_payoffs(squared: NDArray[np.float64], nulls: NDArray[np.float64]) -> NDArray[np.float64]:
    """The payoff of a bet on a rating, ``e^2 / c - 1``: the squared error ``e^2`` against its
    null ``c``, what a rater at the line expects at the most (:mod:`monitor.metrics.stop_kinds`).
    At least -1 (``e^2 >= 0``), below 0 on average for a rater at or above the line. NaN where
    the rating is not scored."""
    return squared / nulls - 1.0


def stop_test(
    workers: NDArray[np.int64],
    order: NDArray[np.int64] | NDArray[np.float64],
    payoffs: NDArray[np.float64],
    *,
    n_workers: int,
    alpha: float,
) -> StopTest:
    """The betting test of every worker over their judgments in ``order`` (arrival: smaller
    first). ``payoffs`` (:func:`label_payoffs`, :func:`rating_payoffs`) are at least -1 and
    below 0 on average under "at or above the line"; the wealth of fraction ``f`` is
    ``prod (1 + f p_t)``. A judgment whose payoff is NaN (nothing to compare it with) is not
    scored."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    ok = np.isfinite(payoffs)
    w, o, p = workers[ok], order[ok], payoffs[ok]
    n = np.bincount(w, minlength=n_workers).astype(np.int64)
    evalue = np.ones(n_workers)
    after = np.zeros(n_workers, np.int64)
    if w.size == 0:
        return StopTest(n, evalue, after, alpha)
    idx = np.lexsort((o, w))
    w, p = w[idx], p[idx]
    cum = np.cumsum(np.log1p(np.asarray(FRACTIONS)[:, None] * p[None, :]), axis=1)
    starts = np.flatnonzero(np.r_[True, w[1:] != w[:-1]])
    group = np.repeat(np.arange(starts.size), np.diff(np.r_[starts, w.size]))
    before = np.where(starts > 0, cum[:, np.maximum(starts - 1, 0)], 0.0)
    cum -= before[:, group]
    log_wealth = logsumexp(cum, axis=0) - math.log(len(FRACTIONS))
    best = np.full(starts.size, -np.inf)
    np.maximum.at(best, group, log_wealth)
    evalue[w[starts]] = np.exp(np.clip(best, 0.0, math.log(MAX_EVIDENCE)))
    position = np.arange(w.size) - starts[group] + 1
    crossed = np.flatnonzero(log_wealth >= math.log(1.0 / alpha))
    if crossed.size:
        first = crossed[np.unique(group[crossed], return_index=True)[1]]
        after[w[first]] = position[first]
    return StopTest(n, evalue, after, alpha)


def either(*tests: StopTest) -> StopTest:
    """Several tests of the same workers as one (a union bound): a worker is stopped where one
    of them stopped them, first at the fewest judgments; each test run at ``alpha`` over the
    number of tests, the one's error rate is the sum of theirs. Its evidence is the largest of
    theirs over the number of tests, so that it reaches ``1 / alpha`` where one of them
    does."""
    after = np.stack([t.stopped_after for t in tests])
    first = np.where(after > 0, after, np.iinfo(np.int64).max).min(axis=0)
    return StopTest(
        n=np.max([t.n for t in tests], axis=0),
        evalue=np.maximum(np.max([t.evalue for t in tests], axis=0) / len(tests), 1.0),
        stopped_after=np.where(after.max(axis=0) > 0, first, 0),
        alpha=sum(t.alpha for t in tests),
    )


def wealth_plain(payoffs: list[float]) -> list[float]:
    """One worker's mixture wealth after each judgment, as a loop (what :func:`stop_test`
    computes for every worker at once)."""
    wealth = [1.0] * len(FRACTIONS)
    out = []
    for p in payoffs:
        wealth = [k * (1.0 + f * p) for k, f in zip(wealth, FRACTIONS, strict=True)]
        out.append(sum(wealth) / len(wealth))
    return out


def label_scores(
    posterior: NDArray[np.float64], labels: NDArray[np.int64], own: NDArray[np.float64], line: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Each judgment's score and null (module docstring). ``posterior`` (n, K) is the model's
    posterior of the judged item's class given every answer (gold items: the gold class), and
    ``own`` (n, K) the probability of the judgment's answer under each class for its worker
    (Dawid-Skene: ``confusion[worker, :, label]``): it is divided out of the posterior (naive
    Bayes), so that the reference is the other answers'."""
    q = posterior / np.maximum(own, 1e-300)
    q /= np.maximum(q.sum(axis=1, keepdims=True), 1e-300)
    scores = q[np.arange(labels.size), labels]
    A = np.square(q).sum(axis=1)
    return scores, line * A + (1.0 - line) * least_wrong(q)


def least_wrong(q: NDArray[np.float64]) -> NDArray[np.float64]:
    """``sum_y q(y) min_{x != y} q(x)`` per row of ``q`` (n, K): what a worker's wrong answers
    score at the least, all on the least likely other class. With two classes it is
    ``1 - sum q^2``, the even spread's; with more, the null holds whatever the errors' spread
    (an ordinal worker's errors go to the neighbours, a careless one's anywhere)."""
    if q.shape[1] < 2:
        return np.zeros(q.shape[0])
    two = np.partition(q, 1, axis=1)[:, :2]  # the smallest and the second smallest
    smallest = q.argmin(axis=1)
    other = np.where(np.arange(q.shape[1])[None, :] == smallest[:, None], two[:, 1:2], two[:, 0:1])
    return (q * other).sum(axis=1)


def information(accuracy: float, k: int) -> float:
    """Bits an answer carries about a uniform class of ``k`` when it is right with probability
    ``accuracy``, its errors spread evenly (the mutual information of a symmetric channel)."""
    p = min(max(accuracy, 0.0), 1.0)
    bits = math.log2(k)
    if p > 0:
        bits += p * math.log2(p)
    if p < 1:
        bits += (1 - p) * math.log2((1 - p) / (k - 1))
    return bits


def stop_line(typical: float, k: int, *, share: float, margin: float) -> float:
    """The accuracy below which a worker is not worth their pay: where an answer carries
    ``share`` of the information of the typical worker's (:func:`information`), and never
    above ``typical - margin`` (a worker at or above that is stopped with probability at most
    alpha). NaN where the typical worker is no better than chance."""
    chance = 1.0 / k
    if not np.isfinite(typical) or typical <= chance:
        return math.nan
    cap = typical - margin
    target = share * information(typical, k)
    if share >= 1.0 or information(cap, k) <= target:
        return max(cap, chance)
    return float(brentq(lambda p: information(p, k) - target, chance, cap))


@dataclass(frozen=True)
class Arrivals:
    """Judgments in order of arrival, as the live test scores them: each one's item and answer
    (codes; answer -1: not scored), what the answer adds to the item's log-likelihood over the
    classes, from the last run, and its item's gold class (-1: none). ``weights`` is either
    (n,) log odds ``log(a (K - 1) / (1 - a))`` added to the class the answer names (one coin,
    :func:`coin_weights`) or (n, K) rows, one per judgment (its worker's confusion,
    :func:`confusion_weights`)."""

    items: NDArray[np.int64]
    codes: NDArray[np.int64]
    weights: NDArray[np.float64]
    gold: NDArray[np.int64]

    def __getitem__(self, rows: NDArray[np.int64] | slice) -> Arrivals:
        return Arrivals(self.items[rows], self.codes[rows], self.weights[rows], self.gold[rows])


@dataclass(frozen=True)
class Reference:
    """What the live scores are reckoned against: the class prior, the stop line, and the
    fewest answers of others a judgment waits for."""

    prior: NDArray[np.float64]
    line: float
    least: int = 1


class ArrivalScores(NamedTuple):
    """Each judgment's score and null (NaN: not scored yet), and the judgment whose arrival
    made it ready (an index; -1: not yet)."""

    scores: NDArray[np.float64]
    nulls: NDArray[np.float64]
    ready: NDArray[np.int64]


def arrival_scores(arrivals: Arrivals, ref: Reference) -> ArrivalScores:
    """Each judgment's score and null against the answers that *arrived before it*, frozen
    once given (the live test's scores: :mod:`monitor.incremental.live`).

    The reference of the judgment at place ``p`` of its item (1, 2, ...) is every other
    answer among the item's first ``max(p, ref.least + 1)``: the answers before it, or the
    first ``ref.least`` others where fewer came before. It is scored as soon as they have
    arrived (NaN until then): whenever it is computed, a judgment gets the same score. On a
    gold item the reference is the gold: the score is right or wrong and the null is
    ``ref.line``. The posterior of the reference is ``q`` (naive Bayes over the answers'
    ``weights``, on ``ref.prior``); the score is ``q(x)`` and the null ``line A + (1 - line) B``
    (:func:`label_scores`). ``ready`` says which judgment's arrival made each score ready:
    the test takes the scores in that order, the order in which they became known."""
    items, codes, prior, line = arrivals.items, arrivals.codes, ref.prior, ref.line
    n, K = codes.size, prior.size
    scores, nulls = np.full(n, np.nan), np.full(n, np.nan)
    ready = np.full(n, -1, dtype=np.int64)
    ok = codes >= 0
    idx = np.flatnonzero(ok)
    idx = idx[np.argsort(items[idx], kind="stable")]  # by item, in order of arrival
    if idx.size == 0 or K < 2:
        return ArrivalScores(scores, nulls, ready)
    it, x = items[idx], codes[idx]
    # on a grid of 2^-20 every sum of weights below is exact: a score does not depend on which
    # other items are scored along with it (the live path and a run agree to the bit)
    w = np.round(arrivals.weights[idx] * _GRID) / _GRID
    starts = np.flatnonzero(np.r_[True, it[1:] != it[:-1]])
    size = np.diff(np.r_[starts, it.size])
    group = np.repeat(np.arange(starts.size), size)
    place = np.arange(it.size) - starts[group] + 1
    # each answer's log-likelihood over the classes: its row, or one coin: w where it says k
    own = w if w.ndim == 2 else np.zeros((it.size, K))
    if w.ndim == 1:
        own[np.arange(it.size), x] = w
    cum = np.cumsum(own, axis=0)
    before = np.where(starts > 0, 1, 0)[:, None] * cum[np.maximum(starts - 1, 0)]
    upto = np.maximum(place, ref.least + 1)
    complete = upto <= size[group]
    last = starts[group] + np.minimum(upto, size[group]) - 1
    loglik = cum[last] - before[group] - own
    g = arrivals.gold[idx]
    on_gold = g >= 0
    keep = complete | on_gold
    logq = np.log(np.maximum(prior, 1e-300))[None, :] + loglik[keep]
    q = np.exp(logq - logq.max(axis=1, keepdims=True))
    q /= q.sum(axis=1, keepdims=True)
    s = q[np.arange(q.shape[0]), x[keep]]
    m = line * np.square(q).sum(axis=1) + (1.0 - line) * least_wrong(q)
    s = np.where(on_gold[keep], (x[keep] == g[keep]).astype(np.float64), s)
    m = np.where(on_gold[keep], line, m)
    scores[idx[keep]], nulls[idx[keep]] = s, m
    ready[idx[keep]] = idx[np.where(on_gold, np.arange(it.size), last)[keep]]
    return ArrivalScores(scores, nulls, ready)


def confusion_weights(
    confusion: NDArray[np.float64], answers: NDArray[np.int64]
) -> NDArray[np.float64]:
    """What each answer adds to its item's log-likelihood over the ``K`` classes, from its
    worker's confusion matrix (Dawid & Skene 1979; ``confusion`` (n, K, K), [truth k, answer
    l]): ``log P(answer | k)``, shifted so that the least is 0. A worker who names one class
    whatever the truth then adds almost nothing when they name it, and much when they do not:
    a crowd that leans one way is not read as agreeing. As :func:`coin_weights` does for one
    coin, no answer counts against the class it names (that class's likelihood is raised to
    the largest: a flipped worker is read as at chance, not turned round), and none counts
    above ``log(99 (K - 1))`` (the likelihoods floored at ``0.01 / (K - 1)``). A one-coin
    matrix of accuracy ``a`` gives :func:`coin_weights`'s ``a`` on the answer, 0 elsewhere."""
    n, K = confusion.shape[0], confusion.shape[1]
    rows = np.arange(n)
    x = np.maximum(answers, 0)  # an answer not scored (-1): any row will do
    c = np.clip(confusion[rows, :, x], 0.01 / max(K - 1, 1), 1.0)
    c[rows, x] = c.max(axis=1)
    out = np.log(c)
    out -= out.min(axis=1, keepdims=True)
    return np.minimum(out, math.log(99.0 * max(K - 1, 1)))


def coin_weights(accuracy: NDArray[np.float64], k: int) -> NDArray[np.float64]:
    """The log odds an answer of a worker right with probability ``accuracy`` adds to the class
    it names (one coin, errors spread evenly over the ``k - 1`` others): clipped to [chance,
    0.99], so that no worker counts against their answer and none settles an item alone."""
    a = np.clip(accuracy, 1.0 / k, 0.99)
    return np.log(a * (k - 1) / (1.0 - a))
