"""Percent agreement, Cohen's kappa, Scott's pi, Fleiss' kappa and worker-by-worker matrices.

- Percent agreement: per item, agreeing unordered pairs of judgments over C(m, 2); the campaign
  value is the unweighted mean over items with m >= 2, the pooled value sums pairs over items.
- Cohen (1960) kappa and Cohen (1968) weighted kappa, ``kappa = (p_o - p_e) / (1 - p_e)``, each
  worker with their own marginals; Scott (1955) pi with the pooled marginals. Weights are over
  the *scale positions*, i.e. the value codes: ``|i - j| / (V - 1)`` (linear) and
  ``(i - j)**2 / (V - 1)**2`` (quadratic). Expected disagreement is computed from the marginals
  in O(V) (cumulative distributions for linear, moments for quadratic), never from a V x V table.
- Fleiss (1971) kappa, ``(P_bar - P_e) / (1 - P_e)``, defined only where every item has the
  same number of raters; otherwise undefined, and Krippendorff's alpha (nominal) is the
  generalisation to offer (any number of raters per item, missing data).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from monitor.metrics.agreement.krippendorff import (
    LEVELS,
    ValueCounts,
    as_codes,
    check_domain,
    expected_total,
    mid_ranks,
    pairs_within_groups,
    ratio_delta,
)
from monitor.metrics.common import check_same_length

Weights = Literal["linear", "quadratic"] | None
_EPS = 1e-12  # expected disagreement at or below this is p_e = 1


# ---------------------------------------------------------------- percent agreement


@dataclass(frozen=True, eq=False)
class PercentAgreement:
    """Pairwise percent agreement.

    Attributes
    ----------
    mean : float or None
        Unweighted mean of ``per_item`` over pairable items (m >= 2).
    pooled : float or None
        Agreeing pairs over all pairs, summed over items.
    per_item : ndarray, shape (N,)
        Agreeing pairs / C(m, 2); NaN exactly where ``pairable`` is False (fewer than two
        judgments: not defined).
    pairable : ndarray of bool, shape (N,)
    """

    mean: float | None
    pooled: float | None
    per_item: NDArray[np.float64] = field(repr=False)
    pairable: NDArray[np.bool_] = field(repr=False)
    n_items_pairable: int
    n_pairs: int
    n_agreeing_pairs: int
    reason: str | None = None


def percent_agreement(vc: ValueCounts) -> PercentAgreement:
    """Percent agreement from value counts (exact equality of values).

    Lecture example (5 items, 4 workers): AAAA, AAAB, AABB, AABC, BBBB give 6/6, 3/6, 2/6,
    1/6, 6/6.

    >>> items = [0] * 4 + [1] * 4 + [2] * 4 + [3] * 4 + [4] * 4
    >>> codes = [0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 2, 1, 1, 1, 1]
    >>> r = percent_agreement(ValueCounts.from_judgments(items, codes))
    >>> (r.per_item * 6).round().astype(int).tolist(), r.n_pairs
    ([6, 3, 2, 1, 6], 30)
    """
    mat = vc.counts
    c = mat.data.astype(np.int64)
    rows = np.repeat(np.arange(vc.n_items), np.diff(mat.indptr))
    agree = np.bincount(rows, weights=c * (c - 1) // 2, minlength=vc.n_items).astype(np.int64)
    pairs = vc.n * (vc.n - 1) // 2
    pairable = vc.n >= 2
    per_item = np.full(vc.n_items, np.nan)
    per_item[pairable] = agree[pairable] / pairs[pairable]
    n_pairs, n_agree = int(pairs.sum()), int(agree.sum())
    if not pairable.any():
        return PercentAgreement(
            None, None, per_item, pairable, 0, 0, 0,
            "not defined: no item has two judgments",
        )  # fmt: skip
    return PercentAgreement(
        float(per_item[pairable].mean()), n_agree / n_pairs, per_item, pairable,
        int(pairable.sum()), n_pairs, n_agree,
    )  # fmt: skip


# ---------------------------------------------------------------- Fleiss


@dataclass(frozen=True, eq=False)
class FleissKappa:
    """Fleiss' kappa with its parts; ``category_proportions`` p_j has shape (V,)."""

    kappa: float | None
    p_bar: float | None
    p_e: float | None
    raters_per_item: int | None
    n_items: int
    category_proportions: NDArray[np.float64] | None = field(repr=False)
    reason: str | None = None


def fleiss_kappa(vc: ValueCounts) -> FleissKappa:
    """Fleiss (1971) kappa over the items that have judgments.

    ``P_i = (sum_j n_ij**2 - m) / (m (m - 1))``, ``P_bar = mean_i P_i``,
    ``p_j = sum_i n_ij / (N m)``, ``P_e = sum_j p_j**2``. Not defined (``kappa`` None, with the
    reason) unless every item has the same number m >= 2 of raters, or when P_e = 1.

    Lecture example (14 raters, 10 items, 5 categories): kappa 0.210.

    >>> table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0],
    ...          [2, 2, 8, 1, 1], [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2],
    ...          [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    >>> t = np.array(table)
    >>> u, v = np.nonzero(t)
    >>> r = fleiss_kappa(ValueCounts.from_grouped(u, v, t[u, v]))
    >>> round(r.kappa, 3), round(r.p_bar, 3), round(r.p_e, 3)
    (0.21, 0.378, 0.213)
    """
    judged = vc.n > 0
    n_items = int(judged.sum())
    if n_items == 0:
        return FleissKappa(None, None, None, None, 0, None, "not defined: no judgments")
    m_values = np.unique(vc.n[judged])
    if m_values.size > 1:
        return FleissKappa(
            None, None, None, None, n_items, None,
            f"not defined: items have between {m_values[0]} and {m_values[-1]} raters; Fleiss' "
            "kappa needs the same number on every item (use Krippendorff's alpha, nominal, "
            "which generalises it to any number of raters and missing judgments)",
        )  # fmt: skip
    m = int(m_values[0])
    if m < 2:
        return FleissKappa(
            None, None, None, m, n_items, None,
            "not defined: every item has a single rater",
        )  # fmt: skip
    mat = vc.counts
    c = mat.data.astype(np.float64)
    p_bar = float(((c * c).sum() - n_items * m) / (n_items * m * (m - 1.0)))
    p_j = np.bincount(mat.indices, weights=c, minlength=vc.n_values) / (n_items * m)
    p_e = float((p_j * p_j).sum())
    if p_e >= 1.0 - _EPS:
        return FleissKappa(
            None, p_bar, p_e, m, n_items, p_j,
            "not defined: every judgment has the same category, so P_e = 1",
        )  # fmt: skip
    return FleissKappa((p_bar - p_e) / (1.0 - p_e), p_bar, p_e, m, n_items, p_j)


# ---------------------------------------------------------------- two raters


@dataclass(frozen=True)
class TwoRaterKappa:
    """Cohen's kappa or Scott's pi: ``kappa = (p_o - p_e) / (1 - p_e)``.

    With weights, ``p_o`` and ``p_e`` are the weighted agreements ``1 - mean disagreement``
    (disagreement weights scaled to [0, 1])."""

    kappa: float | None
    p_o: float | None
    p_e: float | None
    n_items: int
    weights: str
    reason: str | None = None


def disagreement_weight(a: NDArray, b: NDArray, n_values: int, weights: Weights) -> NDArray:
    """Disagreement between scale positions a and b, in [0, 1]."""
    if weights is None:
        return (a != b).astype(np.float64)
    span = max(n_values - 1, 1)
    d = np.abs(a - b).astype(np.float64) / span
    return d if weights == "linear" else d * d


def expected_disagreement(
    pa: NDArray[np.float64], pb: NDArray[np.float64], weights: Weights
) -> NDArray[np.float64]:
    """Chance disagreement of independent raters with marginal distributions ``pa``, ``pb``
    (shape (..., V), rows summing to 1), in O(V) per row."""
    v = pa.shape[-1]
    if weights is None:
        return 1.0 - (pa * pb).sum(-1)
    span = max(v - 1, 1)
    if weights == "linear":
        # E|A - B| = sum_t F_A(t) (1 - F_B(t)) + F_B(t) (1 - F_A(t)) for integer positions
        fa = np.cumsum(pa, axis=-1)[..., :-1]
        fb = np.cumsum(pb, axis=-1)[..., :-1]
        return (fa * (1.0 - fb) + fb * (1.0 - fa)).sum(-1) / span
    pos = np.arange(v, dtype=np.float64) - (v - 1) / 2.0
    ma, mb = (pa * pos).sum(-1), (pb * pos).sum(-1)
    va, vb = (pa * pos * pos).sum(-1), (pb * pos * pos).sum(-1)
    return (va + vb - 2.0 * ma * mb) / (span * span)


def check_weights(weights: Weights) -> None:
    if weights not in (None, "linear", "quadratic"):
        raise ValueError(f"weights must be None, 'linear' or 'quadratic', got {weights!r}.")


def _two_rater(
    a: ArrayLike, b: ArrayLike, n_values: int, weights: Weights, pooled: bool
) -> TwoRaterKappa:
    check_weights(weights)
    if not isinstance(n_values, int | np.integer) or n_values < 1:
        raise ValueError(f"n_values must be a positive integer, got {n_values!r}.")
    a = as_codes("a", a, n_values)
    b = as_codes("b", b, n_values)
    n = check_same_length(a=a, b=b)
    label = weights or "unweighted"
    if n == 0:
        return TwoRaterKappa(None, None, None, 0, label, "not defined: no item judged by both")
    obs = float(disagreement_weight(a, b, n_values, weights).mean())
    pa = np.bincount(a, minlength=n_values) / n
    pb = np.bincount(b, minlength=n_values) / n
    if pooled:
        pa = pb = (pa + pb) / 2.0
    exp = float(expected_disagreement(pa, pb, weights))
    if exp <= _EPS:
        return TwoRaterKappa(
            None, 1.0 - obs, 1.0, n, label,
            "not defined: chance agreement p_e = 1 (a single value on the shared items)",
        )  # fmt: skip
    return TwoRaterKappa(1.0 - obs / exp, 1.0 - obs, 1.0 - exp, n, label)


def cohen_kappa(
    a: ArrayLike, b: ArrayLike, n_values: int, weights: Weights = None
) -> TwoRaterKappa:
    """Cohen's kappa (1960; weighted, 1968) of two workers on the items both judged.

    ``a``, ``b`` : int arrays, shape (n,), the two workers' codes (scale positions
    0..n_values-1) item by item.

    Lecture example: 50 photos, 20 YY, 5 YN, 10 NY, 15 NN: p_o = 0.7, p_e = 0.5, kappa = 0.4.

    >>> a = [0] * 25 + [1] * 25
    >>> b = [0] * 20 + [1] * 5 + [0] * 10 + [1] * 15
    >>> r = cohen_kappa(a, b, n_values=2)
    >>> round(r.p_o, 10), round(r.p_e, 10), round(r.kappa, 10)
    (0.7, 0.5, 0.4)
    """
    return _two_rater(a, b, n_values, weights, pooled=False)


def scott_pi(a: ArrayLike, b: ArrayLike, n_values: int, weights: Weights = None) -> TwoRaterKappa:
    """Scott's (1955) pi: like Cohen's kappa, chance agreement from the pooled marginals.

    >>> a = [0] * 25 + [1] * 25
    >>> b = [0] * 20 + [1] * 5 + [0] * 10 + [1] * 15
    >>> round(scott_pi(a, b, n_values=2).kappa, 6)
    0.393939
    """
    return _two_rater(a, b, n_values, weights, pooled=True)


def align_pair(
    items: ArrayLike, workers: ArrayLike, codes: ArrayLike, a: int, b: int
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """The items both workers ``a`` and ``b`` judged, with their two codes (each shape (k,)),
    ready for :func:`cohen_kappa` and :func:`scott_pi`."""
    i = as_codes("items", items)
    w = as_codes("workers", workers)
    c = as_codes("codes", codes)
    check_same_length(items=i, workers=w, codes=c)
    ia, ib = i[w == a], i[w == b]
    if np.unique(ia).size != ia.size or np.unique(ib).size != ib.size:
        raise ValueError("A worker judged the same item more than once; keep one judgment each.")
    common, xa, xb = np.intersect1d(ia, ib, assume_unique=True, return_indices=True)
    return common, c[w == a][xa], c[w == b][xb]


# ---------------------------------------------------------------- worker by worker


_PAIR_FIELDS = (
    "percent_agreement",
    "cohen_kappa",
    "cohen_kappa_linear",
    "cohen_kappa_quadratic",
    "scott_pi",
    "krippendorff_alpha_nominal",
    "krippendorff_alpha_ordinal",
    "krippendorff_alpha_interval",
    "krippendorff_alpha_ratio",
)


@dataclass(frozen=True, eq=False)
class PairwiseAgreement:
    """Two-rater measures for every pair of workers with at least ``min_overlap`` shared items.

    Arrays have shape (P,), one entry per pair ``worker_a[p] < worker_b[p]``. In the measure
    arrays NaN means *not defined* for that pair (p_e = 1 or D_e = 0: one value on the shared
    items); :meth:`pair` returns None with the reason instead. Kappas use scale positions
    (codes); alpha uses ``value_domain`` (interval, ratio) or mid-ranks (ordinal).
    """

    n_workers: int
    min_overlap: int
    worker_a: NDArray[np.int64] = field(repr=False)
    worker_b: NDArray[np.int64] = field(repr=False)
    n_items: NDArray[np.int64] = field(repr=False)
    measures: dict[str, NDArray[np.float64]] = field(repr=False)

    @property
    def n_pairs(self) -> int:
        return int(self.worker_a.size)

    def pair(self, a: int, b: int) -> dict[str, float | int | str | None] | None:
        """The measures of one pair (either order), None if the pair has too little overlap."""
        a, b = min(a, b), max(a, b)
        hit = np.flatnonzero((self.worker_a == a) & (self.worker_b == b))
        if hit.size == 0:
            return None
        p = int(hit[0])
        out: dict[str, float | int | str | None] = {"n_items": int(self.n_items[p])}
        undefined = []
        for name, arr in self.measures.items():
            val = float(arr[p])
            out[name] = None if np.isnan(val) else val
            if np.isnan(val):
                undefined.append(name)
        out["reason"] = (
            f"not defined ({', '.join(undefined)}): one value on the shared items"
            if undefined
            else None
        )
        return out

    def matrix(self, measure: str = "cohen_kappa") -> NDArray[np.float64]:
        """Symmetric worker-by-worker matrix, shape (W, W); NaN on the diagonal, for pairs below
        ``min_overlap`` and where the measure is not defined."""
        if measure not in self.measures and measure != "n_items":
            raise ValueError(f"Unknown measure {measure!r}; choose from {sorted(self.measures)}.")
        vals = self.n_items.astype(np.float64) if measure == "n_items" else self.measures[measure]
        out = np.full((self.n_workers, self.n_workers), np.nan)
        out[self.worker_a, self.worker_b] = vals
        out[self.worker_b, self.worker_a] = vals
        return out


def pairwise_agreement(
    # alike in shape to runtime/server.build_app's arguments: nothing in common
    items: ArrayLike,
    workers: ArrayLike,
    codes: ArrayLike,
    *,
    n_values: int | None = None,
    value_domain: ArrayLike | None = None,
    n_workers: int | None = None,
    min_overlap: int = 10,
) -> PairwiseAgreement:
    """Percent agreement, Cohen's kappa (unweighted, linear, quadratic), Scott's pi and
    two-rater Krippendorff alpha (all levels) for every pair of workers sharing at least
    ``min_overlap`` items; vectorised over the co-judgment pairs (sum over items of C(m, 2)).

    ``items``, ``workers``, ``codes`` : int arrays, shape (n,), one judgment each; a worker may
    judge an item once. ``value_domain`` (shape (V,)) gives the value behind each code
    (default ``arange(V)``).
    """
    if not isinstance(min_overlap, int | np.integer) or min_overlap < 1:
        raise ValueError(f"min_overlap must be a positive integer, got {min_overlap!r}.")
    if value_domain is not None:
        domain = check_domain(value_domain)
    c = as_codes("codes", codes, domain.size if value_domain is not None else n_values)
    if value_domain is None:
        domain = np.arange(n_values if n_values is not None else (int(c.max()) + 1 if c.size else 1),
                           dtype=np.float64)  # fmt: skip
    v = domain.size
    i = as_codes("items", items)
    w = as_codes("workers", workers, n_workers)
    check_same_length(items=i, workers=w, codes=c)
    n_w = n_workers if n_workers is not None else (int(w.max()) + 1 if w.size else 0)
    order = np.lexsort((w, i))
    i, w, c = i[order], w[order], c[order]
    if i.size and np.any((np.diff(i) == 0) & (np.diff(w) == 0)):
        raise ValueError("A worker judged the same item more than once; keep one judgment each.")
    _, sizes = np.unique(i, return_counts=True)
    left, right = pairs_within_groups(sizes)
    pid = w[left] * max(n_w, 1) + w[right]
    uniq, inv, cnt = np.unique(pid, return_inverse=True, return_counts=True)
    keep = cnt >= min_overlap
    sel = keep[inv]
    remap = np.cumsum(keep) - 1
    inv = remap[inv[sel]]
    ca, cb = c[left][sel], c[right][sel]
    uniq, cnt = uniq[keep], cnt[keep]
    p = uniq.size
    if p * v > 50_000_000:
        raise ValueError(
            f"{p} worker pairs x {v} values is too large for the pairwise table; raise "
            "min_overlap or bin the values."
        )
    n = cnt.astype(np.float64)
    ma = np.bincount(inv * v + ca, minlength=p * v).reshape(p, v).astype(np.float64)
    mb = np.bincount(inv * v + cb, minlength=p * v).reshape(p, v).astype(np.float64)
    pa, pb = ma / np.maximum(n, 1)[:, None], mb / np.maximum(n, 1)[:, None]
    measures: dict[str, NDArray[np.float64]] = {}
    measures["percent_agreement"] = np.bincount(inv, weights=(ca == cb), minlength=p) / n

    def ratio(obs: NDArray, exp: NDArray, ok: NDArray | None = None) -> NDArray:
        out = np.full(p, np.nan)
        ok = exp > _EPS if ok is None else ok & (exp > 0)
        out[ok] = 1.0 - obs[ok] / exp[ok]
        return out

    variants: tuple[tuple[str, Weights], ...] = (
        ("cohen_kappa", None), ("cohen_kappa_linear", "linear"),
        ("cohen_kappa_quadratic", "quadratic"),
    )  # fmt: skip
    for name, wt in variants:
        obs = np.bincount(inv, weights=disagreement_weight(ca, cb, v, wt), minlength=p) / n
        measures[name] = ratio(obs, expected_disagreement(pa, pb, wt))
        if wt is None:
            pooled = (pa + pb) / 2.0
            measures["scott_pi"] = ratio(obs, expected_disagreement(pooled, pooled, None))
    # two-rater alpha: every shared item has m = 2, so o = table + table.T and n = 2 * shared
    n_v = ma + mb
    tot = 2.0 * n
    two_values = np.count_nonzero(n_v, axis=1) >= 2
    for level in LEVELS:
        if level == "nominal":
            delta = (ca != cb).astype(np.float64)
        elif level == "interval":
            delta = (domain[ca] - domain[cb]) ** 2
        elif level == "ratio":
            delta = ratio_delta(domain[ca], domain[cb])
        else:
            r = mid_ranks(n_v)
            delta = (r[inv, ca] - r[inv, cb]) ** 2
        obs = 2.0 * np.bincount(inv, weights=delta, minlength=p) / tot
        exp = expected_total(n_v, domain, level) / (tot * (tot - 1.0))
        measures[f"krippendorff_alpha_{level}"] = ratio(obs, exp, two_values)
    return PairwiseAgreement(
        n_workers=n_w,
        min_overlap=int(min_overlap),
        worker_a=(uniq // max(n_w, 1)).astype(np.int64),
        worker_b=(uniq % max(n_w, 1)).astype(np.int64),
        n_items=cnt.astype(np.int64),
        measures=measures,
    )
