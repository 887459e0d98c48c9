"""The posterior of Phi's precision: each item's integral ``L_i(p)`` by Gauss-Hermite
quadrature around the integrand's mode, the log marginal on a grid of log p, and the HPD
interval of a density on a grid or of draws (:mod:`monitor.metrics.ratings.phi_measure`, Checco et al. 2017)."""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

import numpy as np
from numpy.typing import NDArray
from scipy import special

Prior = Literal["precision", "phi", "gamma"]

LOG2 = float(np.log(2.0))
#: sd of the authors' "flat" prior on the precision, N(2, 1e6) truncated to p > 0.
FLAT_PRECISION_SD = 1e6
#: Gamma(mean 2, sd 1) on p: shape 4, rate 2.
GAMMA_SHAPE, GAMMA_RATE = 4.0, 2.0

U_RANGE = (-12.0, 22.0)  # log p searched; p from 6e-6 to 3.6e9
_QUAD_NODES = 20  # Gauss-Hermite nodes per item integral (log L_i error < 1e-5 in tests)
LEVEL = 0.95
GRID_POINTS = 121  # points of the grid on log p
MAP_WARM = 0.05  # half-width in log p of the bracket around an earlier mode
MAX_GRID_PATTERNS = 2000
"""Most distinct item statistics a :class:`PhiGrid` keeps (each a row of ``GRID_POINTS``)."""


# --------------------------------------------------------------------------- the item integrals


class ItemStats(NamedTuple):
    """What an item's integral ``L_i(p)`` depends on: its number of ratings ``n``, ``s1 = sum
    log y`` and ``s2 = sum log(1 - y)``, the mean of its gold prior ``gm`` (NaN: none) and that
    prior's precision ``gprec``; arrays of one shape (one entry per item or group of items)."""

    n: NDArray
    s1: NDArray
    s2: NDArray
    gm: NDArray
    gprec: NDArray

    def at(self, index: Any) -> ItemStats:
        """Every array indexed alike: ``stats.at(rows)``, or ``stats.at(np.s_[:, None])`` to
        broadcast the items against a grid of ``p``."""
        return ItemStats(*(a[index] for a in self))


def log_prior_p(p: NDArray, prior: Prior) -> NDArray:
    """Log prior density of p in p-space (up to a constant)."""
    if prior == "precision":
        return -((p - 2.0) ** 2) / (2.0 * FLAT_PRECISION_SD**2)
    if prior == "phi":
        return -0.5 * LOG2 * p  # flat on Phi in (-1, 1): |dPhi/dp| is proportional to 2^(-p/2)
    return (GAMMA_SHAPE - 1.0) * np.log(p) - GAMMA_RATE * p


def _trigamma(x: NDArray) -> NDArray:
    """psi'(x) for x > 0: recurrence to x + 10, then the asymptotic series (abs. error < 1e-14);
    several times faster than ``scipy.special.polygamma(1, x)``."""
    s = np.zeros_like(x)
    for k in range(10):
        t = 1.0 / (x + k)
        s += t * t
    iy = 1.0 / (x + 10.0)
    iy2 = iy * iy
    poly = 1 / 30 - iy2 * (1 / 42 - iy2 * (1 / 30 - iy2 * 5 / 66))
    return s + iy + iy2 * (0.5 + iy * (1 / 6 - iy2 * poly))


def log_integrand(z: NDArray, p: NDArray, stats: ItemStats, jac: bool) -> NDArray:
    """Log integrand of an item in z = logit(mu), without the n lgamma(p) term.

    Shapes broadcast: z (U, G[, K]), p (G[, 1]), item arrays (U, 1[, 1]).
    """
    n, s1, s2, gm, gprec = stats
    mu, nu = special.expit(z), special.expit(-z)
    f = p * (mu * s1 + nu * s2) - n * (special.gammaln(mu * p) + special.gammaln(nu * p))
    if np.any(~np.isnan(gm)):
        dev = np.where(np.isnan(gm), 0.0, mu - np.nan_to_num(gm))
        f = f - 0.5 * gprec * dev * dev
    if jac:  # log mu + log(1 - mu): the Jacobian of the logit transform
        f = f + np.log(mu * nu)
    return f


def _grad(z: NDArray, p: NDArray, stats: ItemStats, jac: bool) -> tuple[NDArray, NDArray]:
    """First and second derivative of :func:`log_integrand` in z."""
    n, s1, s2, gm, gprec = stats
    mu, nu = special.expit(z), special.expit(-z)
    a, b = mu * p, nu * p
    d1 = p * (s1 - s2) - n * p * (special.digamma(a) - special.digamma(b))  # d/dmu
    d2 = -n * p * p * (_trigamma(a) + _trigamma(b))  # d2/dmu2
    if np.any(~np.isnan(gm)):
        gold = ~np.isnan(gm)
        d1 = d1 - np.where(gold, gprec * (mu - np.nan_to_num(gm)), 0.0)
        d2 = d2 - np.where(gold, gprec, 0.0)
    m1 = mu * nu
    gz = m1 * d1
    gzz = m1 * m1 * d2 + m1 * (nu - mu) * d1
    if jac:
        gz = gz + (nu - mu)
        gzz = gzz - 2.0 * m1
    return gz, gzz


def integrand_mode(
    p: NDArray, stats: ItemStats, jac: bool, iters: int = 40
) -> tuple[NDArray, NDArray]:
    """Mode in z of the (concave in z) item log integrand: bracketed Newton, vectorised (U, G)."""
    n, s1, s2, gm, _ = stats
    shape = np.broadcast_shapes(np.shape(p), np.shape(n))
    z = np.broadcast_to(np.clip((s1 - s2) / np.maximum(n, 1), -30.0, 30.0), shape).copy()
    if np.any(~np.isnan(gm)):
        z = np.where(np.isnan(gm), z, special.logit(np.clip(np.nan_to_num(gm), 1e-6, 1 - 1e-6)))
    lo, hi = np.full(shape, -60.0), np.full(shape, 60.0)
    for _ in range(iters):
        gz, gzz = _grad(z, p, stats, jac)
        curv = np.maximum(-gzz, 1e-300)
        # Done when the Newton step is below 1e-7 Laplace scales (rounding noise in gz would
        # defeat a tolerance on z itself at large p).
        if np.all(np.abs(gz) < 1e-7 * np.sqrt(curv)):
            break
        lo = np.where(gz > 0, z, lo)
        hi = np.where(gz > 0, hi, z)
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            zn = z + gz / curv
        # Outside the bracket: bisect if far out, else restart Newton from the nearer end.
        width = hi - lo
        far = (zn < lo - 0.5 * width) | (zn > hi + 0.5 * width) | ~np.isfinite(zn)
        z = np.where(far, 0.5 * (lo + hi), np.clip(zn, lo, hi))
    _, gzz = _grad(z, p, stats, jac)
    return z, gzz


NODES, WEIGHTS = np.polynomial.hermite.hermgauss(_QUAD_NODES)
WEIGHTS = WEIGHTS * np.exp(NODES**2) * np.sqrt(2.0)  # integrate f itself, in z
NODES = NODES * np.sqrt(2.0)  # in units of the Laplace scale s


def item_quadrature(p: NDArray, stats: ItemStats) -> tuple[NDArray, NDArray, NDArray]:
    """Nodes z (U, G, K), log integrand at the nodes (U, G, K) and log L_i(p) (U, G).

    Gauss-Hermite centred on the mode z* with the Laplace scale s = (-g''(z*))^(-1/2): the
    integrand is log-concave in z, near Gaussian for large p, so 20 nodes suffice.
    """
    p2, st2 = p[None, :], stats.at(np.s_[:, None])
    zs, gzz = integrand_mode(p2, st2, True)
    half = 1.0 / np.sqrt(np.maximum(-gzz, 1e-12))
    z = zs[..., None] + half[..., None] * NODES
    f = log_integrand(z, p2[..., None], st2.at(np.s_[..., None]), True)
    top = f.max(axis=-1, keepdims=True)
    logl = top[..., 0] + np.log(np.exp(f - top) @ WEIGHTS) + np.log(half)
    logl += st2.n * special.gammaln(p2)
    return z, f, logl


def grid_chunks(u_count: int, g_count: int) -> list[slice]:
    size = max(1, int(3_000_000 // (g_count * _QUAD_NODES)))
    return [slice(i, min(i + size, u_count)) for i in range(0, u_count, size)]


def log_marginal(
    p: NDArray, stats: ItemStats, counts: NDArray, keep: list[NDArray] | None = None
) -> NDArray:
    """sum_i counts_i log L_i(p) for a vector of p, shape (G,); ``keep`` (a list) receives the
    (U, G) matrix of the log L_i."""
    total = np.zeros(p.shape)
    for sl in grid_chunks(stats.n.size, p.size):
        _, _, logl = item_quadrature(p, stats.at(sl))
        total += counts[sl] @ logl
        if keep is not None:
            keep.append(logl)
    return total


# --------------------------------------------------------------------------- HPD helpers


def hpd_of_density(
    t: NDArray, logd: NDArray, dens: NDArray, level: float = LEVEL, iters: int = 45
) -> tuple[NDArray, NDArray]:
    """HPD by its defining property, rowwise: the set where the density is above a threshold,
    the threshold bisected until that set holds ``level`` of the mass.

    t : (R, M) increasing grid coordinate; logd : (R, M) log density in the target variable
    (any monotone function of t) at t; dens : (R, M) density in t (any scale). Returns the end
    points in t, shapes (R,). Equal densities at both ends make this well conditioned, unlike a
    search over the shortest interval. For a multimodal density it is the hull of the HPD set.
    """
    r, m = t.shape
    rows = np.arange(r)
    cdf = cumtrapz(dens, t)
    dens = dens / _trapz_total(dens, t)
    lo_l = np.min(np.where(np.isfinite(logd), logd, np.inf), axis=1) - 1.0
    hi_l = np.max(logd, axis=1)
    for _ in range(iters):
        level_l = 0.5 * (lo_l + hi_l)
        ta, tb = _crossings(t, logd, level_l, rows, m)
        mass = _cdf_at(tb, t, cdf, dens) - _cdf_at(ta, t, cdf, dens)
        big = mass > level
        lo_l = np.where(big, level_l, lo_l)
        hi_l = np.where(big, hi_l, level_l)
    return _crossings(t, logd, lo_l, rows, m)


def _trapz_total(dens: NDArray, t: NDArray) -> NDArray:
    return (0.5 * (dens[:, 1:] + dens[:, :-1]) * np.diff(t, axis=1)).sum(axis=1, keepdims=True)


def _crossings(
    t: NDArray, logd: NDArray, level_l: NDArray, rows: NDArray, m: int
) -> tuple[NDArray, NDArray]:
    """Where each row's log density crosses its threshold: first and last crossing in t."""
    above = logd >= level_l[:, None]
    i0 = np.argmax(above, axis=1)
    i1 = m - 1 - np.argmax(above[:, ::-1], axis=1)

    def cross(i_in: NDArray, i_out: NDArray) -> NDArray:
        out_ok = (i_out >= 0) & (i_out < m)
        j = np.clip(i_out, 0, m - 1)
        d_in, d_out = logd[rows, i_in], logd[rows, j]
        den = np.where(d_in - d_out > 0, d_in - d_out, 1.0)
        frac = np.clip(np.where(d_in - d_out > 0, (d_in - level_l) / den, 0.0), 0.0, 1.0)
        pos = t[rows, i_in] + frac * (t[rows, j] - t[rows, i_in])
        return np.where(out_ok, pos, t[rows, i_in])

    return cross(i0, i0 - 1), cross(i1, i1 + 1)


def _cdf_at(x: NDArray, t: NDArray, cdf: NDArray, dens: NDArray) -> NDArray:
    """CDF at one point per row, integrating the linearly interpolated density (exact for the
    trapezoid CDF at the nodes, second order in between)."""
    r, m = t.shape
    j = np.clip((t < x[:, None]).sum(axis=1), 1, m - 1)
    rows = np.arange(r)
    t0, t1 = t[rows, j - 1], t[rows, j]
    h = np.where(t1 > t0, t1 - t0, 1.0)
    dx = np.clip(x - t0, 0.0, h)
    d0, d1 = dens[rows, j - 1], dens[rows, j]
    return cdf[rows, j - 1] + dx * (d0 + 0.5 * (d1 - d0) * dx / h)


def hpd_of_draws(draws: NDArray, level: float = LEVEL) -> tuple[float, float]:
    """Shortest interval holding ``level`` of the draws (the usual sample HPD)."""
    s = np.sort(np.asarray(draws, dtype=float).ravel())
    k = int(np.floor(level * s.size))
    widths = s[k:] - s[: s.size - k]
    i = int(np.argmin(widths))
    return float(s[i]), float(s[i + k])


def cumtrapz(y: NDArray, x: NDArray) -> NDArray:
    """Normalised cumulative trapezoid along the last axis."""
    inc = 0.5 * (y[..., 1:] + y[..., :-1]) * np.diff(x, axis=-1)
    c = np.concatenate([np.zeros((*y.shape[:-1], 1)), np.cumsum(inc, axis=-1)], axis=-1)
    return c / c[..., -1:]
