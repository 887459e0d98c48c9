"""The position bettor of the preference stop test (pure): an annotator who picks a side of
the screen, whatever the items.

An annotator whose answers follow the items picks the left item about as often as the other
annotators do: where the sides are shown in random order, half the time; where the better item
is mostly shown on one side, about as often as the crowd picks it. The null of this test: the
annotator picks the side they favour at most ``margin`` more often than the campaign's
annotators did before,

    E[x_t | past] <= p_t + margin = m_t,

where ``x_t`` is 1 when strict answer ``t`` names ``b_t``, the side the annotator picked more
often among their strict answers before it, and ``p_t`` the share of ``b_t`` among the
campaign's strict answers before ``t``, from ``prior`` pseudo-answers half each way:
``(k + prior / 2) / (n + prior)``. Both are fixed by the answers before ``t`` and are the same
however often they are computed. The payoff ``(x_t - m_t) / m_t`` is at least -1 and at most
0 on average under the null: the betting test of :func:`monitor.metrics.stopping.stop_test`
takes it as it takes the agreement payoffs (Waudby-Smith & Ramdas 2024). A strict answer with
no side to bet on (the first, or an even split so far) pays 0; a tie is not scored.

The reference is the campaign's share, not the pair's: a pair is mostly judged once or twice,
and a share read off one or two answers swings so far that a bet against it gains even on an
annotator inside the margin (the mean of ``x / m`` exceeds 1 where ``m`` varies and ``x`` does
not follow it). The nightly :func:`monitor.metrics.behaviour.side_test` reads the pairs.

An annotator right ``a`` of the time picks a side at most ``1 - a`` beyond the true order's
share, so a stop here names a habit, not an accuracy: an annotator with a pull of at most
``margin`` toward one side (the annotators of passages and face-age: their left shares spread as
a fair coin's over their answers) is stopped by it with probability at most alpha.
:func:`side_payoffs_plain` is the same, one answer at a time.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

SIDE_PRIOR = 10.0
"""Pseudo-answers, half of them each way, the campaign's share starts from."""
LEFT, TIE, RIGHT = 0, 1, 2
"""A preference as shown on the screen."""


def side_payoffs(
    workers: NDArray[np.int64],
    shown: NDArray[np.int64],
    *,
    margin: float,
    prior: float = SIDE_PRIOR,
) -> NDArray[np.float64]:
    """Each answer's payoff (module docstring), the answers given in order of arrival: their
    annotators and answers as shown (:data:`LEFT`, :data:`TIE`, :data:`RIGHT`). NaN for a
    tie."""
    out = np.full(shown.size, np.nan)
    strict = np.flatnonzero(shown != TIE)
    if not strict.size:
        return out
    left = (shown[strict] == LEFT).astype(np.float64)
    p_left = (np.cumsum(left) - left + prior / 2) / (np.arange(strict.size) + prior)
    w = workers[strict]
    seen = earlier(w)
    by = np.argsort(w, kind="stable")
    cum = np.cumsum(left[by]) - left[by]
    lefts = np.empty(w.size)
    lefts[by] = cum - cum[np.searchsorted(w[by], w[by])]  # less the annotator's first's
    favour = np.sign(2 * lefts - seen)  # 1: the left side so far, -1: the right, 0: neither
    p = np.where(favour > 0, p_left, 1.0 - p_left)
    x = np.where(favour > 0, left, 1.0 - left)
    m = p + margin
    out[strict] = np.where((favour != 0) & (m < 1.0), (x - m) / np.minimum(m, 1.0), 0.0)
    return out


def earlier(workers: NDArray[np.int64]) -> NDArray[np.int64]:
    """How many answers of the same annotator come before each one (0 for their first)."""
    by = np.argsort(workers, kind="stable")
    out = np.empty(workers.size, np.int64)
    out[by] = np.arange(workers.size) - np.searchsorted(workers[by], workers[by])
    return out


def side_payoffs_plain(
    workers: list[int], shown: list[int], margin: float, prior: float = SIDE_PRIOR
) -> list[float]:
    """:func:`side_payoffs`, one answer at a time."""
    k = n = 0.0
    mine: dict[int, tuple[int, int]] = {}
    out = []
    for w, s in zip(workers, shown, strict=True):
        if s == TIE:
            out.append(float("nan"))
            continue
        left = 1.0 if s == LEFT else 0.0
        p_left = (k + prior / 2) / (n + prior)
        lefts, rights = mine.get(w, (0, 0))
        payoff = 0.0
        if lefts != rights:
            p, x = (p_left, left) if lefts > rights else (1.0 - p_left, 1.0 - left)
            m = p + margin
            payoff = (x - m) / m if m < 1.0 else 0.0
        out.append(payoff)
        k, n = k + left, n + 1
        mine[w] = (lefts + int(left), rights + int(not left))
    return out
