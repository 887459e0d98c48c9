"""SQUAREM acceleration of the rating model's fixed-point sweep."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from monitor.metrics.common import squarem_jump


@dataclass(frozen=True, eq=False)
class Sweep:
    """One sweep of the rating model: item means, worker biases and noise variances, and the
    last step's ``ok`` and ``loo_v`` per judgment (the iterations and convergence once done)."""

    mu: NDArray[np.float64]
    b: NDArray[np.float64]
    var: NDArray[np.float64]
    ok: NDArray[np.bool_]
    loo_v: NDArray[np.float64]
    iterations: int = 0
    converged: bool = False


def squarem(
    sweep: Callable[[NDArray[np.float64], NDArray[np.float64]], Sweep],
    mu: NDArray[np.float64],
    b: NDArray[np.float64],
    var: NDArray[np.float64],
    max_iter: int,
    tol: float,
) -> Sweep:
    """Iterate ``sweep`` on ``(b, var)`` to its fixed point, accelerated by SQUAREM (Varadhan &
    Roland 2008, *Scand. J. Statist.* 35:335, scheme S3) on ``(b, log var)``.

    The damped steps contract slowly near the fixed point (30-odd steps from a cold start, 25
    from the last run's estimates at 1M judgments). The jump from two plain steps
    (:func:`~monitor.metrics.common.squarem_jump`) is followed by one plain step, and kept
    only when that step moves less than the second plain one (log var keeps the noise
    positive; the gauge of the biases is affine, so the jump keeps it). A failed jump is tried
    again only after ``2^failures`` plain rounds (a success resets the count): early on, and
    where the map oscillates (two judgments per item), jumps fail and would waste a sweep each
    time. Every sweep counts as an iteration; it stops when one moves no mean, bias or noise sd
    by ``tol`` or more. The fixed point is the plain iteration's."""
    it, failures, wait = 0, 0, 0

    def step(mu: NDArray, b: NDArray, var: NDArray) -> tuple[Sweep, float, float]:
        """One sweep; how far it moved the biases and noise sds, and that or the means."""
        nonlocal it
        it += 1
        nxt = sweep(b, var)
        moved = max(
            float(np.max(np.abs(nxt.b - b), initial=0.0)),
            float(np.max(np.abs(np.sqrt(nxt.var) - np.sqrt(var)), initial=0.0)),
        )
        return nxt, moved, max(moved, float(np.nanmax(np.abs(nxt.mu - mu), initial=0.0)))

    def done(res: Sweep, converged: bool) -> Sweep:
        return Sweep(res.mu, res.b, res.var, res.ok, res.loo_v, it, converged)

    res, _, change = step(mu, b, var)
    while True:
        if change < tol:
            return done(res, True)
        if it >= max_iter:
            return done(res, False)
        # from here on ``res`` is read for its means, biases and noise only: its judgment-sized
        # arrays go before the next sweep makes its own
        res = Sweep(res.mu, res.b, res.var, np.zeros(0, dtype=bool), np.zeros(0))
        res2, moved2, change2 = step(res.mu, res.b, res.var)
        if change2 < tol or it >= max_iter:
            res, change = res2, change2
            continue
        jump = squarem_jump(
            np.r_[b, np.log(var)], np.r_[res.b, np.log(res.var)], np.r_[res2.b, np.log(res2.var)]
        )
        wait -= 1
        if jump is not None and wait < 0:
            jb, jv = jump[: b.size], np.exp(jump[b.size :])
            if np.all(np.isfinite(jump)):
                # the means follow the jump: judge it by what it leaves the state to move
                res3, moved3, change3 = step(res2.mu, jb, jv)
                if moved3 < moved2:
                    b, var, res, change = jb, jv, res3, change3
                    failures = 0
                    continue
            failures += 1
            wait = 2**failures
        b, var, res, change = res.b, res.var, res2, change2
