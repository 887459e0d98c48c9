"""Answering habits tested on each worker's own answers, against what the other workers' answers
on the same questions make likely (pure; the pipeline's :mod:`monitor.pipeline.behaviour` codes
the answers and stores the values).

Each question's expected answer is the others' share of it on that question, smoothed toward
the campaign's share (``(others giving it + share) / (others + 1)``: a question nobody else
answered counts at the campaign's share). The count over a worker's questions is then
Poisson-binomial and its tails are exact
(:func:`monitor.metrics.preferences.flags.poisson_binomial_sf`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from monitor.metrics.preferences.flags import poisson_binomial_sf


@dataclass(frozen=True, eq=False)
class ConstantAnswer:
    """Per worker (shape ``(W,)``): answers ``n``, their commonest answer's code ``modal`` and
    count ``k``, the count an honest worker would give ``expected``, and the exact probability
    of ``k`` or more ``p_value``."""

    n: NDArray[np.int64]
    modal: NDArray[np.int64]
    k: NDArray[np.int64]
    expected: NDArray[np.float64]
    p_value: NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class SideTest:
    """Per worker (shape ``(W,)``): strict answers ``n``, "left" among them ``k``, the expected
    count ``expected`` and the two-sided exact probability ``p_value``."""

    n: NDArray[np.int64]
    k: NDArray[np.int64]
    expected: NDArray[np.float64]
    p_value: NDArray[np.float64]


class Answers(NamedTuple):
    """The answers as the tests here take them, one entry each: the worker's code, the unit's
    code, the answer in the unit's own order (``canon``; a preference: 0 the first item better,
    1 tie, 2 the second), the answer as shown (``shown``) and whether the screen showed the
    unit's items reversed (``flipped``, pairwise only)."""

    workers: NDArray[np.int64]
    units: NDArray[np.int64]
    canon: NDArray[np.int64]
    shown: NDArray[np.int64]
    flipped: NDArray[np.bool_]

    def subset(self, keep: NDArray[np.bool_]) -> Answers:
        """The answers where ``keep``."""
        w, u, c, s, f = self
        return Answers(w[keep], u[keep], c[keep], s[keep], f[keep])


def _lookup(
    keys: NDArray[np.int64], counts: NDArray[np.int64], query: NDArray[np.int64]
) -> NDArray[np.int64]:
    """``counts`` of each ``query`` key among the sorted unique ``keys`` (0 where absent)."""
    if not keys.size:
        return np.zeros(query.size, dtype=np.int64)
    at = np.clip(np.searchsorted(keys, query), 0, keys.size - 1)
    return np.where(keys[at] == query, counts[at], 0)


def others_share(
    answers: Answers, target: NDArray[np.int64], n_values: int, prior: NDArray[np.float64]
) -> NDArray[np.float64]:
    """For each answer, the share of the *other* workers' answers on its unit that equal
    ``target`` (canonical code), smoothed toward ``prior[target]`` with one pseudo-answer."""
    workers, units, canon = answers.workers, answers.units, answers.canon
    n_units = int(units.max()) + 1 if units.size else 0
    unit_value = units * n_values + canon
    uv_keys, uv_counts = np.unique(unit_value, return_counts=True)
    own_key = (workers * n_units + units) * n_values + canon
    own_keys, own_counts = np.unique(own_key, return_counts=True)
    u_total = np.bincount(units, minlength=n_units)
    wu_keys, wu_counts = np.unique(workers * n_units + units, return_counts=True)
    q_uv = units * n_values + target
    q_own = (workers * n_units + units) * n_values + target
    others_v = _lookup(uv_keys, uv_counts, q_uv) - _lookup(own_keys, own_counts, q_own)
    others = u_total[units] - _lookup(wu_keys, wu_counts, workers * n_units + units)
    return (others_v + prior[target]) / (others + 1.0)


def constant_answer(
    answers: Answers, n_workers: int, n_values: int, *, pairwise: bool
) -> ConstantAnswer:
    """How often each worker gives their commonest answer as shown (``shown``, codes
    ``0..n_values - 1``), tested against the others' answers on the same units. ``canon`` is
    the answer in the unit's own order (a preference: the first item better, tie, the second);
    ``flipped`` marks the answers whose screen order is the unit's reversed (pairwise only)."""
    workers, canon, shown, flipped = answers.workers, answers.canon, answers.shown, answers.flipped
    W, V = n_workers, n_values
    prior = np.bincount(canon, minlength=V) / canon.size
    n_w = np.bincount(workers, minlength=W)
    by_answer = np.bincount(workers * V + shown, minlength=W * V).reshape(W, V)
    modal = by_answer.argmax(axis=1)
    k = by_answer[np.arange(W), modal]
    mine = modal[workers]
    target = np.where(flipped, 2 - mine, mine) if pairwise else mine
    p = np.clip(others_share(answers, target, V, prior), 0.0, 1.0)
    return ConstantAnswer(
        n=n_w,
        modal=modal,
        k=k,
        expected=np.asarray(np.bincount(workers, weights=p, minlength=W), dtype=np.float64),
        p_value=poisson_binomial_sf(workers, p, k, W),
    )


def side_test(answers: Answers, n_workers: int) -> SideTest | None:
    """The two-sided exact test of each worker's "left" count among their strict answers
    (``shown`` 0 left, 1 tie, 2 right), against a worker who picks the left item as often as
    the others did on the same pairs; None when nobody gave a strict answer. The answers come
    as for :func:`constant_answer`: another test on the same arrays."""
    W = n_workers
    strict = answers.subset(answers.shown != 1)
    w, c, f, s = strict.workers, strict.canon, strict.flipped, strict.shown
    if not w.size:
        return None
    # the others' share of "the first item better" among their strict answers on the pair
    first = np.where(c == 0, 1, 0)
    prior = np.array([first.mean(), 1 - first.mean()])
    by_first = strict._replace(canon=c // 2)  # 0 the first item better, 1 the second
    p_first = others_share(by_first, np.zeros(w.size, np.int64), 2, prior)
    p_left = np.clip(np.where(f, 1 - p_first, p_first), 0.0, 1.0)
    n = np.bincount(w, minlength=W)
    k = np.bincount(w, weights=s == 0, minlength=W).astype(np.int64)
    upper = poisson_binomial_sf(w, p_left, k, W)
    lower = poisson_binomial_sf(w, 1 - p_left, n - k, W)
    return SideTest(
        n=n,
        k=k,
        expected=np.asarray(np.bincount(w, weights=p_left, minlength=W), dtype=np.float64),
        p_value=np.minimum(1.0, 2 * np.minimum(upper, lower)),
    )
