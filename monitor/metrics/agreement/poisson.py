"""Poisson bootstrap of Krippendorff's alpha and Fleiss' kappa, updatable as judgments arrive.

The percentile bootstrap of :mod:`monitor.metrics.agreement.bootstrap` draws B multinomial resamples of
the items: every replicate changes when one item is added, so it is recomputed from scratch.
The Poisson bootstrap (Hanley & MacGibbon 2006; Chamandy et al. 2012, "Estimating uncertainty
for massive data streams") gives item ``i`` in replicate ``b`` an independent weight
``w_bi ~ Poisson(1)``: the multinomial's large-sample limit, with the same percentile interval.
Here ``w_bi`` depends only on ``(seed, i, b)``, so an item keeps its weights whatever else
arrives.

Both measures are ratios of sums over items of per-item features ``f_i`` (the pairable values
``m_i``, the observed disagreement ``g_i``, the value counts ``n_iv``, ...), so a replicate is
the row ``S_b = sum_i w_bi f_i`` of ``S = W F``. When the judgments of some items change, only
their rows of ``F`` change and ``S += W[:, touched] (F_new - F_old)[touched]``: the same
replicates as recomputing, for the cost of the items touched.

Weights: item codes in blocks of 4,096, each block's (B, 4096) uniform 16-bit integers from
``PCG64(SeedSequence([seed, block]))`` mapped through the Poisson(1) quantile function (so the
weights are Poisson(1) to a resolution of 2**-16 in probability).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from monitor.metrics.agreement.krippendorff import ValueCounts, expected_total, item_observed

WIDE = 256
"""Above this many values (categories) the per-item features are a sparse matrix: the value
counts of 10,000 items over 8,000 categories are 20,000 cells, not 80 million."""
BLOCK_BITS = 12
_BLOCK = 1 << BLOCK_BITS


def _poisson_one_quantiles(levels: int) -> NDArray[np.float64]:
    """The Poisson(1) quantile at the middle of each of ``levels`` equal probability steps:
    the smallest k with ``P(W <= k) = sum_{j <= k} e^-1 / j!`` at least the level."""
    cdf = np.cumsum(np.exp(-1.0) / np.cumprod(np.r_[1.0, np.arange(1.0, 20.0)]))
    return np.searchsorted(cdf, (np.arange(levels) + 0.5) / levels).astype(np.float64)


# Poisson(1) quantile of each 16-bit uniform: P(W <= k) rounded to 1/65536.
_QUANTILE = _poisson_one_quantiles(1 << 16)

PoissonLevel = Literal["nominal", "interval", "ratio"]
LEVELS: tuple[str, ...] = ("nominal", "interval", "ratio")


def block_weights(seed: int, block: int, n_boot: int) -> NDArray[np.float64]:
    """Poisson(1) weights of the items ``block * 4096 ... + 4095`` in each replicate,
    shape (n_boot, 4096)."""
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(seed), int(block)])))
    return _QUANTILE[rng.integers(0, 1 << 16, size=(n_boot, _BLOCK), dtype=np.uint16)]


def replicate_sums(
    items: NDArray[np.int64], features: NDArray[np.float64], *, n_boot: int, seed: int
) -> NDArray[np.float64]:
    """``S[b] = sum_k w_{b, items[k]} features[k]``, shape (n_boot, F), for item codes
    ``items`` (K,) and their features (K, F)."""
    items = np.asarray(items, dtype=np.int64)
    wide = sparse.issparse(features)  # many values: the features' nonzero cells only
    features = (
        sparse.csr_array(features, dtype=np.float64)
        if wide
        else (np.asarray(features, dtype=np.float64))
    )
    out = np.zeros((n_boot, features.shape[1]))
    if items.size == 0:
        return out
    order = np.argsort(items, kind="stable")
    items, features = items[order], features[order]
    blocks = items >> BLOCK_BITS
    starts = np.flatnonzero(np.r_[True, blocks[1:] != blocks[:-1]])
    block_features = np.zeros((_BLOCK, features.shape[1]))
    for lo, hi in zip(starts, np.r_[starts[1:], items.size], strict=True):
        w = block_weights(seed, int(blocks[lo]), n_boot)
        cols = items[lo:hi] & (_BLOCK - 1)
        if wide:
            out += np.asarray(features[lo:hi].T @ w[:, cols].T).T
        elif hi - lo > _BLOCK // 4:  # dense enough: one product over the whole block
            block_features[:] = 0.0
            block_features[cols] = features[lo:hi]
            out += w @ block_features
        else:
            out += w[:, cols] @ features[lo:hi]
    return out


# ------------------------------------------------------------------------ features


def alpha_features(vc: ValueCounts, level: PoissonLevel) -> NDArray[np.float64]:
    """Per item: pairable values ``m``, observed disagreement ``g``, then the value counts
    (nominal, ratio) or the sum and sum of squares of the values (interval); zero rows for
    items with fewer than two values. Shape (N, 2 + V) or (N, 4)."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}.")
    pairable = (vc.n >= 2).astype(np.float64)
    m = vc.n * pairable
    g = item_observed(vc, level)
    if level == "interval":
        return np.column_stack([m, g, vc.s1 * pairable, vc.s2 * pairable])
    counts = vc.counts.multiply(pairable[:, None])
    if vc.n_values > WIDE:  # sparse, as replicate_sums takes it: never N x V dense
        return sparse.hstack([m[:, None], g[:, None], counts], format="csr")
    return np.column_stack([m, g, counts.toarray()])


def alpha_replicates(
    sums: NDArray[np.float64], level: PoissonLevel, value_domain: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Alpha of each replicate from its sums (:func:`alpha_features`); NaN where the
    replicate holds fewer than two distinct values or no pairable item."""
    n, obs = sums[:, 0], sums[:, 1]
    if level == "interval":
        t1, t2 = sums[:, 2], sums[:, 3]
        safe = np.where(n > 0, n, 1.0)
        exp = 2.0 * n * (t2 - t1 * t1 / safe)
        varied = exp > 1e-9 * 2.0 * n * t2  # a single repeated value leaves rounding only
    else:
        n_v = sums[:, 2:]
        exp = expected_total(n_v, value_domain, level)
        varied = (n_v > 0).sum(axis=1) >= 2
    out = np.full(sums.shape[0], np.nan)
    ok = varied & (exp > 0) & (n > 1)
    out[ok] = 1.0 - obs[ok] * (n[ok] - 1.0) / exp[ok]
    return out


def fleiss_features(vc: ValueCounts) -> NDArray[np.float64]:
    """Per judged item: 1, ``sum_j n_ij**2`` and the value counts ``n_ij``; shape (N, 2 + V)."""
    judged = (vc.n > 0).astype(np.float64)
    if vc.n_values > WIDE:  # sparse, as replicate_sums takes it: never N x V dense
        counts = sparse.csr_array(vc.counts, dtype=np.float64)
        squares = np.asarray(counts.multiply(counts).sum(axis=1)).reshape(-1)
        return sparse.hstack([judged[:, None], squares[:, None], counts], format="csr")
    counts = vc.counts.toarray().astype(np.float64)
    return np.column_stack([judged, (counts * counts).sum(axis=1), counts])


def fleiss_replicates(sums: NDArray[np.float64], raters: int) -> NDArray[np.float64]:
    """Fleiss' kappa of each replicate (``raters`` m per item, as in the estimate):
    ``P_bar = (sum w sum_j n_ij^2 - m sum w) / (m (m - 1) sum w)``,
    ``p_j = sum w n_ij / (m sum w)``; NaN where ``P_e = 1`` or no item was drawn."""
    k, squares, counts = sums[:, 0], sums[:, 1], sums[:, 2:]
    m = float(raters)
    safe = np.where(k > 0, k, 1.0)
    p_bar = (squares - m * k) / (m * (m - 1.0) * safe)
    p_j = counts / (m * safe)[:, None]
    p_e = (p_j * p_j).sum(axis=1)
    out = np.full(sums.shape[0], np.nan)
    ok = (k > 0) & (p_e < 1.0 - 1e-12)
    out[ok] = (p_bar[ok] - p_e[ok]) / (1.0 - p_e[ok])
    return out


@dataclass(frozen=True)
class Update:
    """The items whose features changed, with their features before and after."""

    items: NDArray[np.int64]
    before: NDArray[np.float64]
    after: NDArray[np.float64]

    def apply(self, sums: NDArray[np.float64], *, seed: int) -> NDArray[np.float64]:
        """The replicate sums after the change (``sums`` as of before)."""
        return sums + replicate_sums(
            self.items, self.after - self.before, n_boot=sums.shape[0], seed=seed
        )
