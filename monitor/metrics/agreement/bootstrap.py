"""Bootstrap intervals of the agreement measures, resampling items.

Efron's percentile interval: items are drawn with replacement, B times; each replicate is a
vector of item multiplicities, and because every measure here is built from sums over items, a
replicate's value comes from ``multiplicities @ per-item statistics``: vectorised over
replicates in blocks, no Python loop over items or judgments. Replicates where the measure is not
defined (e.g. all resampled values equal) are dropped and counted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple, TypedDict, Unpack

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import sparse

from monitor.metrics.agreement.kappa import (
    Weights,
    check_weights,
    cohen_kappa,
    disagreement_weight,
    expected_disagreement,
    fleiss_kappa,
    scott_pi,
)
from monitor.metrics.agreement.krippendorff import (
    Level,
    ValueCounts,
    as_codes,
    expected_total,
    item_observed,
    krippendorff_alpha,
    mid_ranks,
)
from monitor.metrics.agreement.sets import (
    MAX_GRID_SETS,
    SetCounts,
    SetDistance,
    distance_grid,
    expected_total_sets,
    item_observed_sets,
    set_alpha,
)
from monitor.metrics.common import Interval, check_keywords, check_same_length

__all__ = [
    "BootstrapCI",
    "BootstrapOptions",
    "bootstrap_alpha",
    "bootstrap_fleiss",
    "bootstrap_kappa",
    "bootstrap_set_alpha",
]

_BLOCK = 4_000_000


@dataclass(frozen=True)
class BootstrapCI:
    """A point estimate with its bootstrap percentile interval.

    ``interval`` is None (with ``reason``) when the estimate itself is not defined or no
    replicate is; ``n_defined`` counts the replicates where the measure was defined."""

    estimate: float | None
    interval: Interval | None
    n_boot: int
    n_defined: int
    reason: str | None = None


class BootstrapOptions(TypedDict, total=False):
    """The keyword arguments every bootstrap here (``bootstrap_*``) takes: ``n_boot``
    replicates (1000), the interval's ``confidence`` (0.95) and the ``seed`` of the draws (0;
    or a ``numpy.random.Generator``)."""

    n_boot: int
    confidence: float
    seed: int | np.random.Generator


def _rng(seed: int | np.random.Generator) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, int | np.integer) and not isinstance(seed, bool):
        return np.random.default_rng(int(seed))
    raise ValueError(f"seed must be an int or a numpy.random.Generator, got {seed!r}.")


class _Bootstrap(NamedTuple):
    """One bootstrap's settings, checked, and its random draws."""

    n_boot: int
    confidence: float
    rng: np.random.Generator

    @classmethod
    def of(cls, options: BootstrapOptions) -> _Bootstrap:
        """The settings of ``options`` (TypeError on an unknown one, ValueError on one out of
        range), the defaults filled in."""
        check_keywords(options, (), BootstrapOptions.__optional_keys__)
        n_boot, confidence = options.get("n_boot", 1000), options.get("confidence", 0.95)
        if not isinstance(n_boot, int | np.integer) or n_boot < 1:
            raise ValueError(f"n_boot must be a positive integer, got {n_boot!r}.")
        if not 0.0 < confidence < 1.0:
            raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}.")
        return cls(n_boot, confidence, _rng(options.get("seed", 0)))

    def undefined(self, reason: str | None) -> BootstrapCI:
        """No estimate, so no interval (``reason``: why)."""
        return _summarise(None, np.empty(0), self.n_boot, self.confidence, reason)

    def interval(
        self,
        estimate: float,
        k: int,
        width: int,
        stat: Callable[[NDArray[np.float64]], NDArray[np.float64]],
    ) -> BootstrapCI:
        """The ``estimate`` with the percentile interval of ``stat`` over the replicates of
        ``k`` items (:func:`_replicates`)."""
        reps = _replicates(self.rng, k, self.n_boot, width, stat)
        return _summarise(estimate, reps, self.n_boot, self.confidence, None)


def _replicates(
    rng: np.random.Generator,
    k: int,
    n_boot: int,
    width: int,
    stat: Callable[[NDArray[np.float64]], NDArray[np.float64]],
) -> NDArray[np.float64]:
    """Apply ``stat`` to blocks of multiplicity vectors, shape (b, k); concatenate (n_boot,)."""
    out = []
    step = max(1, _BLOCK // max(k, width, 1))
    for lo in range(0, n_boot, step):
        b = min(step, n_boot - lo)
        draws = rng.integers(0, k, size=(b, k)) + (np.arange(b) * k)[:, None]
        mult = np.bincount(draws.reshape(-1), minlength=b * k).reshape(b, k).astype(np.float64)
        out.append(stat(mult))
    return np.concatenate(out)


def _dense_if_small(mat: sparse.csr_array) -> NDArray[np.float64] | sparse.csr_array:
    """Dense (K, V) when it fits: BLAS products beat sparse x dense by far."""
    k, v = mat.shape
    return mat.toarray().astype(np.float64) if k * v <= 20_000_000 else mat


def _times(mult: NDArray[np.float64], mat: NDArray | sparse.csr_array) -> NDArray[np.float64]:
    """``mult @ mat`` for (b, K) multiplicities and a dense or sparse (K, V) matrix."""
    if sparse.issparse(mat):
        return np.asarray((mat.T @ mult.T).T)
    return mult @ mat


def _summarise(
    estimate: float | None, reps: NDArray, n_boot: int, confidence: float, reason: str | None
) -> BootstrapCI:
    if estimate is None:
        return BootstrapCI(None, None, n_boot, 0, reason)
    ok = reps[np.isfinite(reps)]
    if ok.size == 0:
        return BootstrapCI(estimate, None, n_boot, 0, "not defined in any bootstrap replicate")
    lo, hi = np.quantile(ok, [(1 - confidence) / 2, (1 + confidence) / 2])
    return BootstrapCI(estimate, Interval(float(lo), float(hi), confidence), n_boot, int(ok.size))


def bootstrap_alpha(
    vc: ValueCounts,
    level: Level = "nominal",
    **options: Unpack[BootstrapOptions],
) -> BootstrapCI:
    """Percentile bootstrap interval of Krippendorff's alpha, resampling pairable items.

    Per replicate: n = w @ m, D_o numerator = w @ (per-item observed disagreement), and D_e
    from the replicate's marginals (interval: from w @ sums and w @ sums of squares, so it stays
    O(items) for continuous data). Shapes: w (B, K) over the K pairable items.
    """
    boot = _Bootstrap.of(options)
    est = krippendorff_alpha(vc, level)
    if est.alpha is None:
        return boot.undefined(est.reason)
    keep = np.flatnonzero(vc.n >= 2)
    sub = ValueCounts(
        vc.counts[keep], vc.value_domain, vc.n[keep], vc.s1[keep], vc.s2[keep], vc.origin
    )
    k, v = sub.n_items, sub.n_values
    m = sub.n.astype(np.float64)
    cm = _dense_if_small(sub.counts.astype(np.float64))
    rows = np.repeat(np.arange(k), np.diff(sub.counts.indptr))
    lo_code = np.full(k, v, dtype=np.int64)
    np.minimum.at(lo_code, rows, sub.counts.indices)
    hi_code = np.full(k, -1, dtype=np.int64)
    np.maximum.at(hi_code, rows, sub.counts.indices)
    mixed = (hi_code > lo_code).astype(np.float64)
    g = None if level == "ordinal" else item_observed(sub, level)

    def varied(mult: NDArray[np.float64]) -> NDArray[np.bool_]:
        """Replicates holding two distinct values (else D_e = 0 exactly)."""
        out = mult @ mixed > 0
        for r in np.flatnonzero(~out):  # rare: only single-valued items were drawn
            chosen = mult[r] > 0
            out[r] = hi_code[chosen].max() > lo_code[chosen].min()
        return out

    def stat(mult: NDArray[np.float64]) -> NDArray[np.float64]:
        n = mult @ m
        if level == "interval":
            t1, t2 = mult @ sub.s1, mult @ sub.s2
            exp = 2.0 * n * (t2 - t1 * t1 / n)
            assert g is not None
            obs = mult @ g
        else:
            n_v = _times(mult, cm)  # (b, V)
            exp = expected_total(n_v, sub.value_domain, level)
            if level == "ordinal":
                r = mid_ranks(n_v)
                r = (r - r.mean(axis=1, keepdims=True)).T  # (V, b)
                s1, s2 = np.asarray(cm @ r), np.asarray(cm @ (r * r))  # (K, b)
                within = 2.0 * m[:, None] * (s2 - s1 * s1 / m[:, None]) / (m[:, None] - 1.0)
                obs = np.einsum("bk,kb->b", mult, within)
            else:
                assert g is not None
                obs = mult @ g
        out = np.full(mult.shape[0], np.nan)
        ok = varied(mult) & (exp > 0)
        out[ok] = 1.0 - obs[ok] * (n[ok] - 1.0) / exp[ok]
        return out

    return boot.interval(est.alpha, k, v if level != "interval" else 1, stat)


def bootstrap_set_alpha(
    sc: SetCounts,
    distance: SetDistance = "masi",
    **options: Unpack[BootstrapOptions],
) -> BootstrapCI:
    """Percentile bootstrap interval of alpha over sets (:func:`set_alpha`), resampling the
    pairable items: per replicate, ``n = w @ m``, the observed total ``w @ (per-item observed)``
    and the expected total from the replicate's marginals ``w @ counts`` (shape (B, S))."""
    boot = _Bootstrap.of(options)
    est = set_alpha(sc, distance)
    if est.alpha is None:
        return boot.undefined(est.reason)
    sub = sc.take(np.flatnonzero(sc.n >= 2))
    m = sub.n.astype(np.float64)
    g = item_observed_sets(sub, distance)
    cm = _dense_if_small(sub.counts.astype(np.float64))
    every = np.arange(sub.n_sets)
    grid = distance_grid(sub, distance, every, every) if sub.n_sets <= MAX_GRID_SETS else None

    def stat(mult: NDArray[np.float64]) -> NDArray[np.float64]:
        n = mult @ m
        exp = expected_total_sets(_times(mult, cm), sub, distance, grid)
        out = np.full(mult.shape[0], np.nan)
        ok = exp > 1e-12 * n * n
        out[ok] = 1.0 - (mult @ g)[ok] * (n[ok] - 1.0) / exp[ok]
        return out

    return boot.interval(est.alpha, sub.n_items, sub.n_sets, stat)


def bootstrap_kappa(
    a: ArrayLike,
    b: ArrayLike,
    n_values: int,
    *,
    weights: Weights = None,
    pooled: bool = False,
    **options: Unpack[BootstrapOptions],
) -> BootstrapCI:
    """Percentile bootstrap interval of Cohen's kappa (``pooled=False``) or Scott's pi
    (``pooled=True``) for two workers' codes ``a``, ``b`` (shape (n,)), resampling items."""
    boot = _Bootstrap.of(options)
    check_weights(weights)
    est = (scott_pi if pooled else cohen_kappa)(a, b, n_values, weights)
    if est.kappa is None:
        return boot.undefined(est.reason)
    a = as_codes("a", a, n_values)
    b = as_codes("b", b, n_values)
    n = check_same_length(a=a, b=b)
    d = disagreement_weight(a, b, n_values, weights)
    rows = np.arange(n)
    one_a = _dense_if_small(sparse.csr_array((np.ones(n), (rows, a)), shape=(n, n_values)))
    one_b = _dense_if_small(sparse.csr_array((np.ones(n), (rows, b)), shape=(n, n_values)))

    def stat(mult: NDArray[np.float64]) -> NDArray[np.float64]:
        pa = _times(mult, one_a) / n
        pb = _times(mult, one_b) / n
        if pooled:
            pa = pb = (pa + pb) / 2.0
        exp = expected_disagreement(pa, pb, weights)
        obs = mult @ d / n
        out = np.full(mult.shape[0], np.nan)
        ok = exp > 1e-12
        out[ok] = 1.0 - obs[ok] / exp[ok]
        return out

    return boot.interval(est.kappa, n, n_values, stat)


def bootstrap_fleiss(
    vc: ValueCounts,
    **options: Unpack[BootstrapOptions],
) -> BootstrapCI:
    """Percentile bootstrap interval of Fleiss' kappa, resampling the judged items."""
    boot = _Bootstrap.of(options)
    est = fleiss_kappa(vc)
    if est.kappa is None or est.raters_per_item is None:
        return boot.undefined(est.reason)
    keep = np.flatnonzero(vc.n > 0)
    cm = vc.counts[keep].astype(np.float64)
    m = float(est.raters_per_item)
    k = keep.size
    p_i = (np.asarray(cm.multiply(cm).sum(1)).reshape(-1) - m) / (m * (m - 1.0))
    cmc = _dense_if_small(cm.tocsr())

    def stat(mult: NDArray[np.float64]) -> NDArray[np.float64]:
        p_bar = mult @ p_i / k
        p_j = _times(mult, cmc) / (k * m)
        p_e = (p_j * p_j).sum(1)
        out = np.full(mult.shape[0], np.nan)
        ok = p_e < 1.0 - 1e-12
        out[ok] = (p_bar[ok] - p_e[ok]) / (1.0 - p_e[ok])
        return out

    return boot.interval(est.kappa, k, vc.n_values, stat)
