"""The live stop test's scores for ratings and multi-label sets (pure): each judgment scored
once, as it arrives, against the answers of its item that arrived before it, or its gold
(:mod:`monitor.metrics.stopping` has the test, the label scores and the reasoning they share).

**Ratings** (:func:`rating_arrival_scores`). The model is Raykar et al. (2010, "Learning from
crowds", JMLR 11): rater ``w`` answers ``x = mu + b_w + e``, ``e ~ N(0, s_w^2)``. A rating
used as it is misses the truth by ``b_w^2 + s_w^2`` on average (its mean squared error), and
the information it carries about ``mu`` goes as ``1 / (b_w^2 + s_w^2)``: a large constant bias
counts like noise. The reference of a rating is the precision-weighted mean of the earlier
others' debiased answers, ``ref = sum_o v_o (x_o - b_o) / sum_o v_o`` with ``v_o = 1 / s_o^2``
from the last run (a rater it has not seen counts as the typical one, bias 0), whose error
variance is ``V = 1 / sum_o v_o``; on a gold item ``ref`` is the gold and ``V = 0``. The score
is the squared error ``e^2 = (x - ref)^2``. A rater whose mean squared error is at most the
line ``c`` expects ``E[e^2] <= c + V`` where the reference is calibrated (unbiased, of
variance ``V``): the null. The test's factor ``1 + f (e^2 / (c + V) - 1)`` is at least
``1 - f > 0`` and at most 1 on average under H0, so the wealth is a supermartingale and the
test of :mod:`monitor.metrics.stopping` holds its error rate (Waudby-Smith & Ramdas 2024). A
judgment at a bound of the scale is not debiased (it is censored, as the model reads it).

The line (:func:`rating_line`): ``c = typical / stop_share``, the error of an answer carrying
``stop_share`` of the typical rater's information (``typical``: the median ``b^2 + s^2`` of the
raters with ``model_min_judgments`` judgments), and never less than ``typical (1 +
stop_margin)^2`` (a line at least ``stop_margin`` of the typical rater's root mean square error
above it; with the default share 0.75 the share decides: ``c = 1.33 typical``). A rater who
answers uniformly at random, or the same whatever the item, misses by the spread of the scale
or of the truth and is stopped within few ratings where that is well above the crowd's error;
where the crowd is noisier than the truth varies (``s`` above the truth's sd), a constant
answer at the crowd's mean misses by less than the typical rater and the test, which measures
error, does not stop it: the run's ``constant`` flag blocks it. In simulation
(``tests/metrics/test_stop_kinds.py``: 20 campaigns of 200 raters with 300 ratings each on
0..100, the truth uniform over 10..90, typical raters of noise sd 12, five ratings an item in
random order): none of the 3,000 typical raters and 2 of the 800 at the line (0.25%) were
stopped; every uniform random, constant (50) and biased (+25) rater was, after a median of 11,
31.5 and 27.5 scored ratings.

**Multi-label sets** (:func:`set_arrival_scores`). Each option is a binary label (present or
absent), the reference of each the one-coin posterior ``q_a`` of "present" given the earlier
others' answers on the option's prior (the last run's), and the option's score and null are the
label ones with two classes: ``s_a = q_a`` if selected else ``1 - q_a``, ``m_a = L A_a + (1 -
L)(1 - A_a)``, ``A_a = q_a^2 + (1 - q_a)^2`` (on gold ``q_a`` is the gold: right or wrong, null
``L``). A judgment's score is their mean weighted by ``omega_a = u_a q_a + v_a (1 - q_a)``, and
so is its null: one score per judgment, one step of the test. The weights are fixed before the
answer is seen, so the null holds option by option and so for the mean.

Why the weights. A worker of sensitivity ``alpha`` and specificity ``beta`` expects ``s_a - m_a
= (2q - 1)(q (alpha - L) - (1 - q)(beta - L))`` on a reference ``q``. Unweighted, the options'
absences dominate (options are rare): a worker who never selects anything is right ``1 - pi``
of the time and passes. Summed over the references the run sees, ``omega`` makes the
coefficients of ``alpha - L`` and ``beta - L`` equal where ``u / v = sum (1 - q)(1 - 2q) / sum
q (2q - 1)`` (:func:`set_balance`, each judgment weighed by its payoff's scale; with sure
references ``(1 - pi) / pi``): the test then reads the option's balanced accuracy ``(alpha +
beta) / 2`` against the line, as the model's accuracy does
(:mod:`monitor.metrics.labels.multilabel_model`), which is 0.5 for any answerer blind to the
item. In simulation (``tests/metrics/test_stop_kinds.py``: 20 campaigns of 200 workers with
300 judgments each, six options present 10-40% of the time, five answers an item in random
order), a worker who never selects anything was stopped in all 60 cases, after a median of 91
scored judgments (p90 149); with the sure references' weights in 45 of 60 (median 235), and
unweighted in none.

Every sum a score rests on is exact (weights and weighted values on a grid of 2^-20, the
options summed one by one), so a score does not depend on which other items are scored along
with it: the live path and a run agree to the bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray
from scipy.special import expit

from monitor.metrics.stopping import ArrivalScores

_GRID = float(2**20)
WEIGHT_RANGE = (2.0**-10, 2.0**6)
"""A rater's precision relative to the typical rater's is clipped to this range: none counts
for more than 64 typical raters, and a rater up to 32 times noisier keeps their variance."""


def _on_grid(x: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.round(x * _GRID) / _GRID


def rating_line(typical: float, *, share: float, margin: float) -> float:
    """The mean squared error above which a rater is not worth their pay: ``typical /
    share``, at least ``typical (1 + margin)^2`` (module docstring). NaN where the typical
    error is not a positive number or the share is 0 (no line)."""
    if not (math.isfinite(typical) and typical > 0.0) or share <= 0.0:
        return math.nan
    return max(typical / share, typical * (1.0 + margin) ** 2)


def rating_weights(variance: NDArray[np.float64], typical: float) -> NDArray[np.float64]:
    """Each rater's precision in units of the typical rater's, ``typical / s^2``, clipped to
    :data:`WEIGHT_RANGE`; 1 (the typical rater) where the variance is unknown (NaN)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        w = typical / np.asarray(variance, dtype=np.float64)
    return np.clip(np.where(np.isfinite(w), w, 1.0), *WEIGHT_RANGE)


@dataclass(frozen=True)
class RatingArrivals:
    """Ratings in order of arrival: each one's item (any codes), value (NaN: not scored), its
    rater's bias and precision weight (:func:`rating_weights`, from the last run) and its
    item's gold (NaN: none)."""

    items: NDArray[np.int64]
    values: NDArray[np.float64]
    bias: NDArray[np.float64]
    weights: NDArray[np.float64]
    gold: NDArray[np.float64]

    def __getitem__(self, rows: NDArray[np.int64] | slice) -> RatingArrivals:
        return RatingArrivals(self.items[rows], self.values[rows], self.bias[rows],
                              self.weights[rows], self.gold[rows])  # fmt: skip


@dataclass(frozen=True)
class RatingReference:
    """What ratings are scored against: the ``line`` (a mean squared error), the ``typical``
    rater's (the unit of the weights), the ``scale`` (min, max), the fewest answers of others a
    rating waits for, and whether a rating at a bound is censored (not debiased)."""

    line: float
    typical: float
    scale: tuple[float, float]
    least: int = 1
    censored: bool = True


class _Places(NamedTuple):
    idx: NDArray[np.int64]  # the scored judgments, by item, in order of arrival
    starts: NDArray[np.int64]  # where each item's run begins
    group: NDArray[np.int64]  # each one's item run
    last: NDArray[np.int64]  # the last answer of its reference (a position in idx)
    complete: NDArray[np.bool_]  # its reference has arrived


def _places(items: NDArray[np.int64], ok: NDArray[np.bool_], least: int) -> _Places:
    """The judgments ``ok`` sorted by item in order of arrival, and each one's reference: the
    other answers among the item's first ``max(place, least + 1)``."""
    idx = np.flatnonzero(ok)
    idx = idx[np.argsort(items[idx], kind="stable")]
    it = items[idx]
    starts = np.flatnonzero(np.r_[True, it[1:] != it[:-1]]) if idx.size else idx
    size = np.diff(np.r_[starts, it.size])
    group = np.repeat(np.arange(starts.size), size)
    place = np.arange(it.size) - starts[group] + 1
    upto = np.maximum(place, least + 1)
    last = starts[group] + np.minimum(upto, size[group]) - 1
    return _Places(idx, starts, group, last, upto <= size[group])


def _others(cum: NDArray[np.float64], own: NDArray[np.float64], p: _Places) -> NDArray[Any]:
    """The sums of ``own`` over each judgment's reference, from their running sums ``cum``
    (exact on the grid)."""
    before = np.where((p.starts > 0).reshape((-1,) + (1,) * (cum.ndim - 1)),
                      cum[np.maximum(p.starts - 1, 0)], 0.0)  # fmt: skip
    return cum[p.last] - before[p.group] - own


def rating_arrival_scores(a: RatingArrivals, ref: RatingReference) -> ArrivalScores:
    """Each rating's squared error and null against the ratings that arrived before it, frozen
    once given (module docstring); NaN until its reference has arrived. ``ready``: the
    judgment whose arrival made it ready (an index; -1: not yet)."""
    n = a.values.size
    scores, nulls = np.full(n, np.nan), np.full(n, np.nan)
    ready = np.full(n, -1, dtype=np.int64)
    p = _places(a.items, np.isfinite(a.values), ref.least)
    if p.idx.size == 0:
        return ArrivalScores(scores, nulls, ready)
    lo, hi = float(ref.scale[0]), float(ref.scale[1])
    width = hi - lo if hi > lo else 1.0
    x = a.values[p.idx]
    inside = (x > lo) & (x < hi) if ref.censored else np.ones(x.size, dtype=bool)
    y = (x - np.where(inside, a.bias[p.idx], 0.0) - lo) / width  # debiased, in widths
    w = _on_grid(np.clip(a.weights[p.idx], *WEIGHT_RANGE))
    wy = _on_grid(w * y)
    sw = _others(np.cumsum(w), w, p)
    swy = _others(np.cumsum(wy), wy, p)
    g = a.gold[p.idx]
    on_gold = np.isfinite(g)
    keep = p.complete | on_gold
    with np.errstate(divide="ignore", invalid="ignore"):
        off = (x - lo) / width - swy / sw  # in widths
        e2 = np.square(off * width)
        null = ref.line + ref.typical / sw
    e2 = np.where(on_gold, np.square(x - g), e2)
    null = np.where(on_gold, ref.line, null)
    scores[p.idx[keep]], nulls[p.idx[keep]] = e2[keep], null[keep]
    at = np.where(on_gold, np.arange(p.idx.size), p.last)
    ready[p.idx[keep]] = p.idx[at[keep]]
    return ArrivalScores(scores, nulls, ready)


@dataclass(frozen=True)
class SetArrivals:
    """Multi-label judgments in order of arrival: each one's item, its answer as ``chosen``
    (n, A) (1: the option selected, 0: not), whether it is scored at all (``scored``: its
    worker's first answer to the item), the log odds its worker's answer adds
    (:func:`monitor.metrics.stopping.coin_weights` with two classes, from the last run) and its
    item's gold (n, A) (1 present, 0 absent, -1 no gold)."""

    items: NDArray[np.int64]
    chosen: NDArray[np.int8]
    scored: NDArray[np.bool_]
    weights: NDArray[np.float64]
    gold: NDArray[np.int8]

    def __getitem__(self, rows: NDArray[np.int64] | slice) -> SetArrivals:
        return SetArrivals(self.items[rows], self.chosen[rows], self.scored[rows],
                           self.weights[rows], self.gold[rows])  # fmt: skip


def set_references(
    a: SetArrivals, prior: NDArray[np.float64], least: int = 1
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
    """The judgments whose reference has arrived (their indices), the judgment whose arrival made
    each ready, and each one's reference (n_ready, A): the one-coin posterior that each option is
    present given the earlier others' answers on ``prior`` (the gold where there is gold)."""
    p = _places(a.items, a.scored, least)
    if p.idx.size == 0 or a.chosen.shape[1] == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros((0, a.chosen.shape[1]))
    pi = np.clip(np.asarray(prior, dtype=np.float64), 1e-6, 1.0 - 1e-6)
    w = _on_grid(a.weights[p.idx])[:, None]
    own = np.where(a.chosen[p.idx] == 1, w, -w)  # the log odds of "present" each answer adds
    logit = _others(np.cumsum(own, axis=0), own, p)
    g = a.gold[p.idx]
    on_gold = (g >= 0).any(axis=1)
    keep = p.complete | on_gold
    q = expit(np.log(pi / (1.0 - pi))[None, :] + logit[keep])
    q = np.where(g[keep] >= 0, g[keep].astype(np.float64), q)
    at = np.where(on_gold, np.arange(p.idx.size), p.last)
    return p.idx[keep], p.idx[at[keep]], q


def set_balance(
    q: NDArray[np.float64], prior: NDArray[np.float64], line: float, rounds: int = 3
) -> NDArray[np.float64]:
    """(A, 2) each option's weights ``(u, v)`` of "present" and "absent" in ``omega = q u + (1 -
    q) v``, from the references ``q`` (n, A) the scores are reckoned against, so that over them
    the option counts its sensitivity and its specificity alike (module docstring): ``u / v =
    sum (1 - q)(1 - 2q) / D / sum q (2q - 1) / D``, each judgment weighed by its payoff's scale
    ``D = sum_a omega_a (1 - m_a)`` (the bet is a fraction of the largest safe one), found in
    ``rounds`` from the sure references' ``(1 - pi, pi)``; that where the references say nothing
    of the option."""
    pi = np.clip(np.asarray(prior, dtype=np.float64), 1e-6, 1.0 - 1e-6)
    out = np.column_stack([1.0 - pi, pi])
    agree = np.square(q) + np.square(1.0 - q)
    slack = 1.0 - (line * agree + (1.0 - line) * (1.0 - agree))  # 1 - m_a
    for _ in range(rounds):
        scale = (q * out[:, 0] + (1.0 - q) * out[:, 1]) * slack
        d = np.maximum(scale.sum(axis=1, keepdims=True), 1e-12)
        u = np.maximum(((1.0 - q) * (1.0 - 2.0 * q) / d).sum(axis=0), 0.0)
        v = np.maximum((q * (2.0 * q - 1.0) / d).sum(axis=0), 0.0)
        none = u + v <= 0.0
        u, v = np.where(none, 1.0 - pi, u), np.where(none, pi, v)
        out = np.maximum(np.column_stack([u, v]) / (u + v)[:, None], 1e-3)
    return out


def set_arrival_scores(
    a: SetArrivals,
    prior: NDArray[np.float64],
    line: float,
    balance: NDArray[np.float64] | None = None,
    least: int = 1,
) -> ArrivalScores:
    """Each multi-label judgment's score and null against the answers that arrived before it,
    frozen once given (module docstring): the options' binary label scores and nulls, averaged
    with the weights ``omega``. ``prior`` (A,): each option's chance of being present; ``line``:
    the stop line on the accuracy (two classes); ``balance`` (A, 2): :func:`set_balance`
    (default: the sure references' ``(1 - pi, pi)``)."""
    n, A = a.chosen.shape
    scores, nulls = np.full(n, np.nan), np.full(n, np.nan)
    ready = np.full(n, -1, dtype=np.int64)
    rows, made, q = set_references(a, prior, least)
    if rows.size == 0:
        return ArrivalScores(scores, nulls, ready)
    pi = np.clip(np.asarray(prior, dtype=np.float64), 1e-6, 1.0 - 1e-6)
    uv = np.column_stack([1.0 - pi, pi]) if balance is None else np.asarray(balance, np.float64)
    s_a = np.where(a.chosen[rows] == 1, q, 1.0 - q)
    agree = np.square(q) + np.square(1.0 - q)
    m_a = line * agree + (1.0 - line) * (1.0 - agree)
    omega = q * uv[:, 0][None, :] + (1.0 - q) * uv[:, 1][None, :]
    num_s, num_m, den = (np.zeros(rows.size) for _ in range(3))
    for k in range(A):  # one option at a time: each row's sums in the same order whatever the rows
        num_s += omega[:, k] * s_a[:, k]
        num_m += omega[:, k] * m_a[:, k]
        den += omega[:, k]
    scores[rows], nulls[rows], ready[rows] = num_s / den, num_m / den, made
    return ArrivalScores(scores, nulls, ready)
