"""Krippendorff's alpha from per-item value counts, the statistic that adds up.

Krippendorff, K. (2011). *Computing Krippendorff's alpha-reliability*; Appendix A of
Checco et al. (2017), "Let's agree to disagree" (the D(u) / D_o / D_e notation used below).

The coincidence matrix is a sum over items, so everything here is computed from
:class:`ValueCounts`: per item and value, how many judgments carry that value (one ``GROUP BY
item, value`` in the database), plus per item the count, sum and sum of squares of the values.
Adding judgments adds counts (:meth:`ValueCounts.update`, ``+``); nothing is recomputed from
scratch. No level needs the V x V coincidence matrix except ratio, and that one only for the
expected disagreement:

- nominal: ``D_o = 1 - sum_u sum_v c_uv (c_uv - 1) / (m_u - 1) / n`` and
  ``D_e = (n**2 - sum_v n_v**2) / (n (n - 1))``;
- interval: ``sum_{i != j in u} (x_i - x_j)**2 = 2 (m S2 - S1**2)`` per item, the same over the
  pooled values for ``D_e``: O(n) whatever the number of distinct values;
- ordinal: Krippendorff's ordinal distance ``(sum_{g=c}^{k} n_g - (n_c + n_k) / 2)**2`` equals
  ``(R_k - R_c)**2`` with the mid-ranks ``R_v = sum_{g<=v} n_g - n_v / 2``, so ordinal alpha is
  interval alpha on mid-ranks of the pooled pairable values;
- ratio: ``((c - k) / (c + k))**2`` does not separate; observed disagreement sums over the
  distinct values within each item, expected over the V x V grid in blocks.

Items with fewer than two judgments are not pairable and count nowhere (as in the reference
``krippendorff`` package).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import sparse

from monitor.metrics.common import check_same_length, count_matrix

Level = Literal["nominal", "ordinal", "interval", "ratio"]
LEVELS: tuple[Level, ...] = ("nominal", "ordinal", "interval", "ratio")

#: Largest number of distinct pairable values for ratio alpha (its D_e needs the V x V grid).
MAX_RATIO_VALUES = 20_000
_BLOCK = 4_000_000  # array cells per block in blocked computations
_DENSE_VALUES = 32  # up to this many values, per-item sums over value pairs use the dense table


def as_codes(name: str, array: ArrayLike, upper: int | None = None) -> NDArray[np.int64]:
    """Validate a one-dimensional array of integer codes in ``0..upper-1``."""
    a = np.asarray(array)
    if a.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {a.shape}.")
    if a.size == 0:
        return a.astype(np.int64)
    if not np.issubdtype(a.dtype, np.integer):
        if (
            np.issubdtype(a.dtype, np.floating)
            and np.all(np.isfinite(a))
            and np.all(a == np.round(a))
        ):
            a = a.astype(np.int64)
        else:
            raise ValueError(f"{name} must hold integer codes, got dtype {a.dtype}.")
    a = a.astype(np.int64, copy=False)
    if a.min() < 0:
        raise ValueError(f"{name} must hold non-negative codes, got {a.min()}.")
    if upper is not None and a.max() >= upper:
        raise ValueError(f"{name} holds code {a.max()}, outside 0..{upper - 1}.")
    return a


def check_domain(value_domain: ArrayLike) -> NDArray[np.float64]:
    """A value domain must be finite and strictly increasing (codes are its positions)."""
    d = np.asarray(value_domain, dtype=np.float64)
    if d.ndim != 1 or d.size == 0:
        raise ValueError(
            f"value_domain must be a non-empty one-dimensional array, got shape {d.shape}."
        )
    if not np.all(np.isfinite(d)):
        raise ValueError("value_domain must hold finite numbers.")
    if d.size > 1 and not np.all(np.diff(d) > 0):
        raise ValueError(
            "value_domain must be strictly increasing: code k is the k-th smallest value."
        )
    return d


@dataclass(frozen=True, eq=False)
class ValueCounts:
    """Per-item value counts and moments: the sufficient statistic of alpha, Fleiss and percent
    agreement.

    Attributes
    ----------
    counts : scipy.sparse.csr_array, shape (N, V)
        ``counts[u, v]`` judgments of item u with value code v.
    value_domain : ndarray, shape (V,)
        The number behind each code, strictly increasing (``arange(V)`` for categories).
    n, s1, s2 : ndarray, shape (N,)
        Per item: number of judgments, sum and sum of squares of ``value_domain[code] - origin``.
    origin : float
        Shift applied before summing (the middle of the domain), for numerical stability.
    """

    counts: sparse.csr_array
    value_domain: NDArray[np.float64]
    n: NDArray[np.int64]
    s1: NDArray[np.float64]
    s2: NDArray[np.float64]
    origin: float

    @property
    def n_items(self) -> int:
        return int(self.counts.shape[0])

    @property
    def n_values(self) -> int:
        return int(self.counts.shape[1])

    @property
    def n_judgments(self) -> int:
        return int(self.n.sum())

    @classmethod
    def from_grouped(
        cls,
        items: ArrayLike,
        codes: ArrayLike,
        counts: ArrayLike | None,
        *,
        n_items: int | None = None,
        n_values: int | None = None,
        value_domain: ArrayLike | None = None,
    ) -> ValueCounts:
        """Build from ``GROUP BY item, value`` rows: ``counts[k]`` judgments of item
        ``items[k]`` with code ``codes[k]`` (repeated rows add up; None: one judgment per
        row). Arrays of shape (K,)."""
        if value_domain is not None:
            domain = check_domain(value_domain)
            if n_values is not None and n_values != domain.size:
                raise ValueError(
                    f"n_values={n_values} differs from len(value_domain)={domain.size}."
                )
        else:
            domain = None
        i = as_codes("items", items, n_items)
        c = as_codes("codes", codes, domain.size if domain is not None else n_values)
        w = None if counts is None else np.asarray(counts)
        if w is not None:
            check_same_length(items=i, codes=c, counts=w)
            if w.size and (not np.issubdtype(w.dtype, np.integer) or w.min() < 0):
                raise ValueError("counts must be non-negative integers.")
            w = w.astype(np.int64, copy=False)
        else:
            check_same_length(items=i, codes=c)
        if domain is None:
            v = n_values if n_values is not None else (int(c.max()) + 1 if c.size else 1)
            domain = np.arange(v, dtype=np.float64)
        n_rows = n_items if n_items is not None else (int(i.max()) + 1 if i.size else 0)
        mat = count_matrix(i, c, (n_rows, domain.size), w)
        origin = float((domain[0] + domain[-1]) / 2)
        x = domain - origin
        return cls(
            counts=mat,
            value_domain=domain,
            n=np.asarray(mat @ np.ones(domain.size, dtype=np.int64), dtype=np.int64),
            s1=mat @ x,
            s2=mat @ (x * x),
            origin=origin,
        )

    @classmethod
    def from_judgments(
        cls,
        items: ArrayLike,
        codes: ArrayLike,
        *,
        n_items: int | None = None,
        n_values: int | None = None,
        value_domain: ArrayLike | None = None,
    ) -> ValueCounts:
        """Build from one row per judgment: item code and value code, arrays of shape (n,).

        >>> vc = ValueCounts.from_judgments([0, 0, 0, 0, 0, 1, 1, 1, 1, 1],
        ...                                 [0, 0, 0, 0, 1, 1, 1, 1, 1, 0])
        >>> vc.counts.toarray().tolist()
        [[4, 1], [1, 4]]
        """
        return cls.from_grouped(
            items, codes, None, n_items=n_items, n_values=n_values, value_domain=value_domain
        )

    @classmethod
    def from_values(
        cls, items: ArrayLike, values: ArrayLike, *, n_items: int | None = None
    ) -> ValueCounts:
        """Build from numeric values (ratings, continuous measurements), coding them by
        ``numpy.unique``; ``values`` shape (n,)."""
        x = np.asarray(values, dtype=np.float64)
        if x.ndim != 1 or not np.all(np.isfinite(x)):
            raise ValueError("values must be a one-dimensional array of finite numbers.")
        domain, codes = np.unique(x, return_inverse=True)
        return cls.from_judgments(items, codes.reshape(-1), n_items=n_items, value_domain=domain)

    def take(self, rows: NDArray[np.int64]) -> ValueCounts:
        """The statistic of the items ``rows`` alone (item k of the result is ``rows[k]``)."""
        return ValueCounts(
            self.counts[rows], self.value_domain, self.n[rows], self.s1[rows], self.s2[rows],
            self.origin,
        )  # fmt: skip

    def update(
        self, items: ArrayLike, codes: ArrayLike, *, n_items: int | None = None
    ) -> ValueCounts:
        """The statistic with new judgments added (items may be new; the value domain is fixed).

        Equals the statistic rebuilt from all judgments; costs O(new + N + nnz)."""
        i = np.asarray(items)
        new_rows = max(self.n_items, n_items or 0, int(i.max()) + 1 if i.size else 0)
        delta = ValueCounts.from_judgments(
            i, codes, n_items=new_rows, value_domain=self.value_domain
        )
        return self + delta

    def __add__(self, other: ValueCounts) -> ValueCounts:
        if not isinstance(other, ValueCounts):
            return NotImplemented
        if self.value_domain.shape != other.value_domain.shape or not np.array_equal(
            self.value_domain, other.value_domain
        ):
            raise ValueError("Cannot add value counts over different value domains.")
        rows = max(self.n_items, other.n_items)

        def pad(vc: ValueCounts) -> tuple:
            extra = rows - vc.n_items
            mat = vc.counts
            if extra:
                mat = sparse.vstack(
                    [mat, sparse.csr_array((extra, vc.n_values), dtype=np.int64)], format="csr"
                )
            return (
                mat,
                np.pad(vc.n, (0, extra)),
                np.pad(vc.s1, (0, extra)),
                np.pad(vc.s2, (0, extra)),
            )

        a, b = pad(self), pad(other)
        mat = (a[0] + b[0]).tocsr()
        mat.sum_duplicates()
        return ValueCounts(
            mat, self.value_domain, a[1] + b[1], a[2] + b[2], a[3] + b[3], self.origin
        )


@dataclass(frozen=True)
class AlphaResult:
    """Krippendorff's alpha at one level of measurement.

    ``alpha = 1 - D_o / D_e`` with ``D_o = sum(o * delta) / n`` and ``D_e = sum(e * delta) / n``
    (o, e the observed and chance coincidence matrices, n the number of pairable values).
    ``alpha`` is None, with ``reason``, when no item has two judgments or D_e = 0.
    """

    level: Level
    alpha: float | None
    observed_disagreement: float | None
    expected_disagreement: float | None
    n_pairable: int
    n_items_pairable: int
    reason: str | None = None

    @property
    def observed_agreement(self) -> float | None:
        """``1 - D_o``: at nominal level the coincidence-weighted percent agreement."""
        return None if self.observed_disagreement is None else 1.0 - self.observed_disagreement


def _nnz_rows(mat: sparse.csr_array) -> NDArray[np.int64]:
    return np.repeat(np.arange(mat.shape[0]), np.diff(mat.indptr))


def pairs_within_groups(sizes: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Positions (left, right), left < right, of all unordered pairs inside consecutive groups
    of the given sizes (elements sorted by group). Shapes (sum C(s, 2),)."""
    sizes = np.asarray(sizes, dtype=np.int64)
    total = int(sizes.sum())
    starts = np.cumsum(sizes) - sizes
    local = np.arange(total) - np.repeat(starts, sizes)
    k = np.repeat(sizes, sizes) - 1 - local  # partners after each element
    left = np.repeat(np.arange(total), k)
    first = np.cumsum(k) - k
    right = left + 1 + (np.arange(left.size) - np.repeat(first, k))
    return left, right


def ratio_delta(a: NDArray, b: NDArray) -> NDArray[np.float64]:
    """Krippendorff's ratio distance ((a - b) / (a + b))**2, 0 where a + b == 0."""
    s = a + b
    return np.divide(a - b, s, out=np.zeros(np.broadcast(a, b).shape), where=s != 0) ** 2


def mid_ranks(n_v: NDArray[np.float64]) -> NDArray[np.float64]:
    """Ordinal positions ``R_v = sum_{g<=v} n_g - n_v/2`` over the last axis, shape (..., V)."""
    return np.cumsum(n_v, axis=-1) - n_v / 2.0


def expected_total(
    n_v: NDArray[np.float64], values: NDArray[np.float64], level: Level
) -> NDArray[np.float64]:
    """``sum_{c,k} n_c n_k delta(c, k)`` over the last axis of the marginals ``n_v``
    (shape (..., V)); ``values`` shape (V,). Divide by n (n - 1) for D_e."""
    n_v = np.asarray(n_v, dtype=np.float64)
    tot = n_v.sum(-1)
    if level == "nominal":
        return tot * tot - (n_v * n_v).sum(-1)
    if level in ("interval", "ordinal"):
        x = mid_ranks(n_v) if level == "ordinal" else np.broadcast_to(values, n_v.shape)
        safe = np.where(tot > 0, tot, 1.0)
        mean = (n_v * x).sum(-1) / safe
        xc = x - mean[..., None]
        return 2.0 * tot * (n_v * xc * xc).sum(-1)
    # ratio: only values with a positive marginal somewhere matter
    used = np.flatnonzero(n_v.reshape(-1, n_v.shape[-1]).sum(0) > 0)
    if used.size > MAX_RATIO_VALUES:
        raise ValueError(
            f"Ratio alpha needs a V x V distance grid; {used.size} distinct values exceed the "
            f"limit of {MAX_RATIO_VALUES}. Bin the values or use the interval level."
        )
    nu = n_v[..., used]
    vu = values[used]
    out = np.zeros(n_v.shape[:-1])
    step = max(1, _BLOCK // max(1, used.size))
    for lo in range(0, used.size, step):
        d = ratio_delta(vu[lo : lo + step, None], vu[None, :])  # (b, U)
        out = out + (nu[..., lo : lo + step] * (nu @ d.T)).sum(-1)
    return out


def item_observed(vc: ValueCounts, level: Level, ranks: NDArray | None = None) -> NDArray:
    """Per item ``sum_{c,k} o_u[c, k] delta(c, k)``, shape (N,); 0 for unpairable items.

    For ordinal, ``ranks`` (shape (V,) or (V, B)) are the mid-ranks to use; with shape (V, B)
    the result has shape (N, B)."""
    m = vc.n.astype(np.float64)
    pairable = vc.n >= 2
    denom = np.where(pairable, m - 1.0, 1.0)
    mat = vc.counts
    if level == "nominal":
        c = mat.data.astype(np.float64)
        same = np.bincount(_nnz_rows(mat), weights=c * (c - 1.0), minlength=vc.n_items)
        return np.where(pairable, m - same / denom, 0.0)
    if level == "interval":
        within = vc.s2 - np.divide(vc.s1 * vc.s1, m, out=np.zeros_like(m), where=m > 0)
        return np.where(pairable, 2.0 * m * within / denom, 0.0)
    if level == "ordinal":
        if ranks is None:
            raise ValueError("Ordinal observed disagreement needs the mid-ranks.")
        r = ranks if ranks.ndim == 2 else ranks[:, None]
        r = r - r.mean(axis=0, keepdims=True)
        s1 = mat @ r
        s2 = mat @ (r * r)
        within = s2 - s1 * s1 / np.where(m > 0, m, 1.0)[:, None]
        out = np.where(pairable[:, None], 2.0 * m[:, None] * within / denom[:, None], 0.0)
        return out if ranks.ndim == 2 else out[:, 0]
    # ratio: pairs of distinct values within each row
    if vc.n_values <= _DENSE_VALUES:  # a few values: sum_{c,k} n_c n_k delta(c, k) per row
        dom = vc.value_domain
        counts = mat.toarray().astype(np.float64)
        total = ((counts @ ratio_delta(dom[:, None], dom[None, :])) * counts).sum(axis=1)
        return np.where(pairable, total / denom, 0.0)
    sizes = np.diff(mat.indptr)
    left, right = pairs_within_groups(sizes)
    vals = vc.value_domain[mat.indices]
    c = mat.data.astype(np.float64)
    w = 2.0 * c[left] * c[right] * ratio_delta(vals[left], vals[right])
    total = np.bincount(_nnz_rows(mat)[left], weights=w, minlength=vc.n_items)
    return np.where(pairable, total / denom, 0.0)


def pairable_marginals(vc: ValueCounts) -> NDArray[np.float64]:
    """``n_v``: pairable values per code, shape (V,)."""
    mat = vc.counts
    rows = _nnz_rows(mat)
    keep = vc.n[rows] >= 2
    return np.bincount(
        mat.indices[keep], weights=mat.data[keep].astype(np.float64), minlength=vc.n_values
    ).astype(np.float64, copy=False)


def alpha_from_totals(
    level: Level,
    observed: float,
    expected: float,
    n: float,
    n_items_pairable: int,
    n_distinct: int,
) -> AlphaResult:
    """Assemble an :class:`AlphaResult` from ``sum o*delta``, ``sum n_c n_k delta``, n and the
    number of distinct pairable values (D_e = 0 exactly when it is below 2)."""
    if n_items_pairable == 0 or n < 2:
        return AlphaResult(
            level, None, None, None, int(n), n_items_pairable,
            "not defined: no item has two judgments (nothing is pairable)",
        )  # fmt: skip
    d_o = observed / n
    d_e = expected / (n * (n - 1.0))
    if n_distinct < 2 or d_e <= 0.0:
        return AlphaResult(
            level, None, float(d_o), 0.0, int(n), n_items_pairable,
            "not defined: all pairable judgments carry one value, so the expected "
            "disagreement D_e is 0",
        )  # fmt: skip
    return AlphaResult(
        level, float(1.0 - d_o / d_e), float(d_o), float(d_e), int(n), n_items_pairable
    )


def _expected(
    vc: ValueCounts,
    level: Level,
    pairable: NDArray[np.bool_],
    n: float,
    n_v: NDArray[np.float64],
    n_distinct: int,
) -> float:
    """The expected disagreement's total over the pairable values: interval from the items'
    moments alone, the other levels from the pooled marginals ``n_v``."""
    if level == "interval":
        t1 = vc.s1[pairable].sum()
        t2 = vc.s2[pairable].sum()
        return float(2.0 * n * (t2 - t1 * t1 / n))
    return float(expected_total(n_v, vc.value_domain, level)) if n_distinct > 1 else 0.0


def krippendorff_alpha(vc: ValueCounts, level: Level = "nominal") -> AlphaResult:
    """Krippendorff's alpha (nominal, ordinal, interval or ratio) from value counts.

    Interval alpha uses only the per-item moments ``n, s1, s2`` (O(N), any number of distinct
    values). Ordinal uses the mid-ranks of the pooled pairable value frequencies.

    Worked example of Appendix A (Checco et al. 2017), items {0,0,0,0,1} and {1,1,1,1,0}:

    >>> vc = ValueCounts.from_judgments([0] * 5 + [1] * 5, [0, 0, 0, 0, 1, 1, 1, 1, 1, 0])
    >>> r = krippendorff_alpha(vc, "nominal")
    >>> round(r.alpha, 6), round(r.observed_disagreement, 6), round(r.expected_disagreement, 6)
    (0.28, 0.4, 0.555556)
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}.")
    pairable = vc.n >= 2
    n_items_pairable = int(pairable.sum())
    n = float(vc.n[pairable].sum())
    if n_items_pairable == 0:
        return alpha_from_totals(level, 0.0, 0.0, n, 0, 0)
    n_v = pairable_marginals(vc)
    n_distinct = int(np.count_nonzero(n_v))
    expected = _expected(vc, level, pairable, n, n_v, n_distinct)
    ranks = mid_ranks(n_v) if level == "ordinal" else None
    observed = item_observed(vc, level, ranks).sum()
    return alpha_from_totals(level, float(observed), expected, n, n_items_pairable, n_distinct)


def krippendorff_alphas(vc: ValueCounts, levels: Sequence[Level]) -> dict[Level, AlphaResult]:
    """:func:`krippendorff_alpha` at each of ``levels``. With a few values (at most
    ``_DENSE_VALUES``) the observed disagreement of every level comes from one coincidence
    matrix ``o[c, k] = sum_u (n_uc n_uk - [c = k] n_uc) / (m_u - 1)`` over the pairable items
    (Krippendorff 2011, section 3): ``D_o = sum o[c, k] delta(c, k) / n``."""
    for level in levels:
        if level not in LEVELS:
            raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}.")
    pairable = vc.n >= 2
    if vc.n_values > _DENSE_VALUES or not pairable.any():
        return {level: krippendorff_alpha(vc, level) for level in levels}
    n_items_pairable = int(pairable.sum())
    n = float(vc.n[pairable].sum())
    table = vc.counts.toarray().astype(np.float64)
    weight = np.where(pairable, 1.0 / np.where(pairable, vc.n - 1.0, 1.0), 0.0)
    o = (table * weight[:, None]).T @ table
    o[np.diag_indices_from(o)] -= weight @ table
    n_v = pairable_marginals(vc)
    n_distinct = int(np.count_nonzero(n_v))
    dom = vc.value_domain
    out: dict[Level, AlphaResult] = {}
    for level in levels:
        if level == "nominal":
            delta = 1.0 - np.eye(dom.size)
        elif level == "ratio":
            delta = ratio_delta(dom[:, None], dom[None, :])
        else:
            x = mid_ranks(n_v) if level == "ordinal" else dom
            delta = (x[:, None] - x[None, :]) ** 2
        expected = _expected(vc, level, pairable, n, n_v, n_distinct)
        observed = float((o * delta).sum())
        out[level] = alpha_from_totals(level, observed, expected, n, n_items_pairable, n_distinct)
    return out
