"""The grid on ``u = log p`` of Phi's exact posterior: laid afresh around the posterior's mode,
or taken over from an earlier call (:class:`PhiGrid`, each distinct item's ``log L_i`` on it)
and slid after a posterior that moved (:mod:`monitor.metrics.ratings.phi_measure`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import optimize

from monitor.metrics.ratings.phi_posterior import (
    GRID_POINTS,
    MAX_GRID_PATTERNS,
    U_RANGE,
    ItemStats,
    Prior,
    grid_chunks,
    item_quadrature,
    log_marginal,
    log_prior_p,
)


@dataclass(frozen=True)
class PhiGrid:
    """The grid on u = log p of an exact posterior, with ``log L_i(p)`` on it per distinct item
    statistics: ``keys`` (G, 5) rows (n, s1, s2, gold, gold sd; as grouped), ``logl`` (G, M).
    Valid only for the same scale, mapping and prior (the caller checks)."""

    u: NDArray[np.float64]
    keys: NDArray[np.float64]
    logl: NDArray[np.float64]
    u_map: float = float("nan")
    """log p of the joint mode (where the next search for it starts)."""

    def to_array(self) -> NDArray[np.float64]:
        """One (G + 1, 5 + M) array: a first row of the mode, four NaN and the grid, then the
        rows."""
        head = np.r_[self.u_map, np.full(4, np.nan), self.u][None, :]
        return np.vstack([head, np.hstack([self.keys, self.logl])])

    @classmethod
    def from_array(cls, a: NDArray[np.float64]) -> PhiGrid | None:
        """The inverse of :meth:`to_array` (None for an array of another shape)."""
        if a.ndim != 2 or a.shape[0] < 1 or a.shape[1] < 7:
            return None
        return cls(a[0, 5:].copy(), a[1:, :5].copy(), a[1:, 5:].copy(), float(a[0, 0]))


def posterior_grid(
    stats: ItemStats, counts: NDArray, prior: Prior, keep: list[NDArray] | None = None
) -> tuple[NDArray, NDArray]:
    """Grid on u = log p covering the posterior: log posterior (G,) on it.

    A coarse scan, Brent's method for the mode, the Laplace scale from a finite difference, then
    a uniform grid over mode +- 9 scales, widened on a side until the density there is below
    e^-25 of the maximum (skewed posteriors of small data sets). ``keep`` (a list) receives the
    log L_i on the final grid, by chunks of items.
    """

    def logpost(u: NDArray, store: list | None = None) -> NDArray:
        p = np.exp(u)
        marginal = log_marginal(p, stats, counts, store)
        return log_prior_p(p, prior) + u + marginal

    lo, hi = U_RANGE
    points = GRID_POINTS
    coarse = np.linspace(lo, hi, 18)
    k = int(np.argmax(logpost(coarse)))
    a, b = coarse[max(k - 1, 0)], coarse[min(k + 1, coarse.size - 1)]
    res = optimize.minimize_scalar(
        lambda v: -float(logpost(np.array([v]))[0]),
        bounds=(a, b),
        method="bounded",
        options={"xatol": 1e-7},
    )
    mode = float(res.x)
    h = 1e-4
    f3 = logpost(np.array([mode - h, mode, mode + h]))
    curv = -(f3[0] - 2.0 * f3[1] + f3[2]) / h**2
    scale = 1.0 / np.sqrt(curv) if curv > 1e-8 else 1.0
    left, right = max(lo, mode - 9.0 * scale), min(hi, mode + 9.0 * scale)
    for _ in range(12):
        u = np.linspace(left, right, points)
        store: list | None = None if keep is None else []
        lp = logpost(u, store)
        if _covers(u, lp):
            break
        width = right - left
        left = max(lo, left - width) if lp[0] > lp.max() - 25.0 and left > lo else left
        right = min(hi, right + width) if lp[-1] > lp.max() - 25.0 and right < hi else right
    # Trim far tails so that the grid resolves the mass (widening may overshoot).
    if not _resolves(lp):
        kept = np.flatnonzero(lp > lp.max() - 30.0)
        left, right = u[max(kept[0] - 1, 0)], u[min(kept[-1] + 1, u.size - 1)]
        u = np.linspace(left, right, points)
        store = None if keep is None else []
        lp = logpost(u, store)
    if keep is not None and store is not None:
        keep.extend(store)
    return u, lp


def _covers(u: NDArray, lp: NDArray) -> bool:
    """The grid holds the posterior: at each end the density is below e^-25 of its maximum,
    or the end is that of the searched range."""
    top = lp.max()
    lo, hi = U_RANGE
    return bool((lp[0] <= top - 25.0 or u[0] <= lo) and (lp[-1] <= top - 25.0 or u[-1] >= hi))


def _resolves(lp: NDArray) -> bool:
    """At least 80% of the grid's points lie where the density is above e^-30 of its maximum."""
    return bool(np.count_nonzero(lp > lp.max() - 30.0) >= 0.8 * lp.size)


def _match_rows(known: NDArray, rows: NDArray) -> NDArray[np.int64]:
    """For each row of ``rows``, the index of the equal row of ``known`` (-1 where none)."""
    out = np.full(rows.shape[0], -1, dtype=np.int64)
    if known.shape[0] == 0 or rows.shape[0] == 0:
        return out
    both = np.vstack([known, rows])
    order = np.lexsort(both.T[::-1])  # stable: in a run of equal rows, a known one comes first
    ordered = both[order]
    start = np.r_[True, np.any(ordered[1:] != ordered[:-1], axis=1)]
    first = order[np.flatnonzero(start)[np.cumsum(start) - 1]]  # first row of each one's run
    new = order >= known.shape[0]
    hit = new & (first < known.shape[0])
    out[order[hit] - known.shape[0]] = first[hit]
    return out


def reused_grid(
    grid: PhiGrid, keys: NDArray, stats: ItemStats, counts: NDArray, prior: Prior
) -> tuple[NDArray, NDArray, NDArray] | None:
    """The log posterior on ``grid``'s points from its log L_i, those of statistics it has not
    seen computed now. A posterior that moved towards an end is followed by sliding the grid
    (same spacing) until its mode is back in the middle: only the points added are computed.
    None when the posterior is not held and resolved on the grid even so."""
    u = grid.u
    if u.size != GRID_POINTS or grid.logl.shape != (grid.keys.shape[0], u.size):
        return None
    if keys.shape[0] > MAX_GRID_PATTERNS:  # too many to hold on the grid: a fresh one
        return None
    at = _match_rows(grid.keys, keys)
    logl = np.empty((keys.shape[0], u.size))
    logl[at >= 0] = grid.logl[at[at >= 0]]

    def fill(rows: NDArray[np.int64], cols: NDArray[np.int64]) -> None:
        p = np.exp(u[cols])
        for sl in grid_chunks(rows.size, cols.size):
            r = rows[sl]
            logl[np.ix_(r, cols)] = item_quadrature(p, stats.at(r))[2]

    fill(np.flatnonzero(at < 0), np.arange(u.size))

    def logpost() -> NDArray[np.float64]:
        return log_prior_p(np.exp(u), prior) + u + counts @ logl

    lp = logpost()
    shift = int(np.argmax(lp)) - u.size // 2
    if np.all(np.isfinite(lp)) and not (_covers(u, lp) and _resolves(lp)) and shift:
        step = (u[-1] - u[0]) / (u.size - 1)
        moved = u[0] + (np.arange(u.size) + shift) * step
        if moved[0] < U_RANGE[0] or moved[-1] > U_RANGE[1] or abs(shift) >= u.size:
            return None
        u, logl = moved, np.roll(logl, -shift, axis=1)  # the kept points, in their new places
        fill(np.arange(keys.shape[0]), np.arange(u.size - shift, u.size) if shift > 0
             else np.arange(-shift))  # fmt: skip
        lp = logpost()
    if not (np.all(np.isfinite(lp)) and _covers(u, lp) and _resolves(lp)):
        return None
    return u, lp, logl
