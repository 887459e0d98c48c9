"""Krippendorff's alpha over set-valued answers (multi-label judgments).

Krippendorff, K. (2011). *Computing Krippendorff's alpha-reliability*, with a distance between
sets: MASI (Passonneau, R. 2006, "Measuring agreement on set-valued items (MASI) for semantic
and pragmatic annotation", LREC) or Jaccard. For sets ``A``, ``B``::

    jaccard(A, B) = 1 - |A & B| / |A | B|
    masi(A, B)    = 1 - |A & B| / |A | B| * M,  M = 1 if A = B, 2/3 if one holds the other,
                                                    1/3 if they overlap, 0 otherwise

(Passonneau rounds the weights to 0.67 and 0.33; NLTK's ``masi_distance``, the reference of
the tests, uses 2/3 and 1/3, as here); two empty sets are at distance 0. With singletons both distances are the nominal one, so alpha is nominal
alpha.

Every distinct set is coded once (:class:`SetCounts`); items hold counts of set codes, so the
observed disagreement sums, per item, over the pairs of distinct sets it holds, and the expected
disagreement over the pairs of distinct sets of the pooled pairable values, in blocks:
``D_o = sum_u sum_{s,t} c_us c_ut d(s, t) / (m_u - 1) / n`` and
``D_e = sum_{s,t} n_s n_t d(s, t) / (n (n - 1))``. Items with fewer than two judgments count
nowhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import sparse

from monitor.metrics.agreement.krippendorff import as_codes, pairs_within_groups
from monitor.metrics.common import check_same_length, count_matrix

SetDistance = Literal["masi", "jaccard"]
SET_DISTANCES: tuple[SetDistance, ...] = ("masi", "jaccard")

#: Largest number of distinct pairable sets (the expected disagreement visits every pair).
MAX_SETS = 20_000
#: Up to this many distinct sets, the bootstrap keeps their S x S distances in memory.
MAX_GRID_SETS = 5_000
_BLOCK = 4_000_000
_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.int64)


def check_distance(distance: str) -> SetDistance:
    if distance not in SET_DISTANCES:
        raise ValueError(f"distance must be one of {', '.join(SET_DISTANCES)}, got {distance!r}.")
    return distance


def set_distance(
    inter: NDArray, size_a: NDArray, size_b: NDArray, distance: SetDistance
) -> NDArray[np.float64]:
    """The distance of sets with ``inter`` options in common and sizes ``size_a``,
    ``size_b`` (arrays of one shape, or broadcastable)."""
    inter = np.asarray(inter, dtype=np.float64)
    a = np.asarray(size_a, dtype=np.float64)
    b = np.asarray(size_b, dtype=np.float64)
    union = a + b - inter
    share = np.divide(inter, union, out=np.ones(np.broadcast(inter, union).shape), where=union > 0)
    if distance == "masi":
        m = np.where(
            (a == b) & (inter == a),
            1.0,
            np.where(inter == np.minimum(a, b), 2.0 / 3.0, np.where(inter > 0, 1.0 / 3.0, 0.0)),
        )
        return 1.0 - share * m
    return 1.0 - share


@dataclass(frozen=True, eq=False)
class SetCounts:
    """Per item, how many judgments gave each distinct set: the sufficient statistic of alpha
    over sets.

    Attributes
    ----------
    counts : scipy.sparse.csr_array, shape (N, S)
        ``counts[u, s]`` judgments of item u whose set is distinct set s.
    packed : ndarray of uint8, shape (S, ceil(O / 8))
        Each distinct set as a bit row over the O options (``numpy.packbits`` order).
    sizes : ndarray, shape (S,)
        The number of options in each distinct set.
    n : ndarray, shape (N,)
        Judgments per item.
    """

    counts: sparse.csr_array
    packed: NDArray[np.uint8]
    sizes: NDArray[np.int64]
    n: NDArray[np.int64]

    @property
    def n_items(self) -> int:
        return int(self.counts.shape[0])

    @property
    def n_sets(self) -> int:
        return int(self.packed.shape[0])

    @classmethod
    def from_annotations(
        cls,
        judgment_items: ArrayLike,
        ann_judgment: ArrayLike,
        ann_option: ArrayLike,
        *,
        n_items: int | None = None,
        n_options: int | None = None,
    ) -> SetCounts:
        """From one item code per judgment (shape (J,)) and one row per chosen option:
        its judgment (a position in ``judgment_items``) and option code (shapes (K,)). A
        judgment without a row chose the empty set; repeated rows count once.

        >>> sc = SetCounts.from_annotations([0, 0, 1], [0, 0, 1, 2], [0, 1, 1, 0])
        >>> sc.counts.toarray().tolist(), sc.sizes.tolist()
        ([[1, 0, 1], [0, 1, 0]], [1, 1, 2])
        """
        items = as_codes("judgment_items", judgment_items, n_items)
        jud = as_codes("ann_judgment", ann_judgment, items.size)
        opt = as_codes("ann_option", ann_option, n_options)
        check_same_length(ann_judgment=jud, ann_option=opt)
        n_opt = n_options if n_options is not None else (int(opt.max()) + 1 if opt.size else 0)
        width = max(1, -(-n_opt // 8))
        packed = np.zeros((items.size, width), dtype=np.uint8)
        np.bitwise_or.at(packed, (jud, opt // 8), (1 << (7 - opt % 8)).astype(np.uint8))
        rows = np.ascontiguousarray(packed).view(np.dtype((np.void, width))).reshape(-1)
        uniq, code = np.unique(rows, return_inverse=True)
        distinct = uniq.view(np.uint8).reshape(-1, width)
        n_rows = n_items if n_items is not None else (int(items.max()) + 1 if items.size else 0)
        mat = count_matrix(items, code.reshape(-1), (n_rows, distinct.shape[0]))
        return cls(
            counts=mat,
            packed=distinct,
            sizes=_POPCOUNT[distinct].sum(axis=1),
            n=np.bincount(items, minlength=n_rows).astype(np.int64),
        )

    def distances(
        self, s: NDArray[np.int64], t: NDArray[np.int64], distance: SetDistance
    ) -> NDArray[np.float64]:
        """``d(s[k], t[k])`` for distinct-set codes ``s``, ``t`` of one shape."""
        inter = _POPCOUNT[self.packed[s] & self.packed[t]].sum(axis=-1)
        return set_distance(inter, self.sizes[s], self.sizes[t], distance)

    def take(self, rows: NDArray[np.int64]) -> SetCounts:
        """The statistic of the items ``rows`` alone (item k of the result is ``rows[k]``)."""
        return SetCounts(self.counts[rows], self.packed, self.sizes, self.n[rows])


@dataclass(frozen=True)
class SetAlphaResult:
    """Krippendorff's alpha over sets: ``1 - D_o / D_e`` at a set ``distance``; None (with
    ``reason``) when no item has two judgments or every pairable judgment gave one set."""

    distance: SetDistance
    alpha: float | None
    observed_disagreement: float | None
    expected_disagreement: float | None
    n_pairable: int
    n_items_pairable: int
    n_sets: int
    reason: str | None = None


def item_observed_sets(sc: SetCounts, distance: SetDistance) -> NDArray[np.float64]:
    """Per item ``sum_{s,t} c_us c_ut d(s, t) / (m_u - 1)``, shape (N,); 0 where unpairable.
    Only the pairs of distinct sets within each item are visited."""
    mat = sc.counts
    sizes = np.diff(mat.indptr)
    left, right = pairs_within_groups(sizes)
    rows = np.repeat(np.arange(sc.n_items), sizes)[left]
    c = mat.data.astype(np.float64)
    d = sc.distances(mat.indices[left], mat.indices[right], distance)
    total = np.bincount(rows, weights=2.0 * c[left] * c[right] * d, minlength=sc.n_items)
    m = sc.n.astype(np.float64)
    return np.where(m >= 2, total / np.where(m >= 2, m - 1.0, 1.0), 0.0)


def distance_grid(
    sc: SetCounts, distance: SetDistance, rows: NDArray[np.int64], cols: NDArray[np.int64]
) -> NDArray[np.float64]:
    """``d(rows[i], cols[j])``, shape (len(rows), len(cols)): the intersections from one
    product of the sets' 0/1 rows over the options."""
    ones = np.unpackbits(sc.packed, axis=1).astype(np.float64)
    inter = np.rint(ones[rows] @ ones[cols].T)
    return set_distance(inter, sc.sizes[rows][:, None], sc.sizes[cols][None, :], distance)


def expected_total_sets(
    n_v: NDArray[np.float64],
    sc: SetCounts,
    distance: SetDistance,
    grid: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """``sum_{s,t} n_s n_t d(s, t)`` over the last axis of the marginals ``n_v`` (shape
    (..., S)): with ``grid`` (the S x S distances, :func:`distance_grid`) one product, else in
    blocks of rows of the distances over the sets with a positive marginal."""
    if grid is not None:
        return (n_v * (n_v @ grid)).sum(-1)
    used = np.flatnonzero(n_v.reshape(-1, n_v.shape[-1]).sum(0) > 0)
    if used.size > MAX_SETS:
        raise ValueError(
            f"alpha over sets visits every pair of distinct sets; {used.size} exceed the limit "
            f"of {MAX_SETS}."
        )
    nu = n_v[..., used]
    out = np.zeros(n_v.shape[:-1])
    step = max(1, _BLOCK // max(1, used.size))
    for lo in range(0, used.size, step):
        d = distance_grid(sc, distance, used[lo : lo + step], used)  # (b, U)
        out = out + (nu[..., lo : lo + step] * (nu @ d.T)).sum(-1)
    return out


def set_alpha(sc: SetCounts, distance: SetDistance = "masi") -> SetAlphaResult:
    """Krippendorff's alpha over set-valued answers at the MASI or Jaccard distance.

    >>> sc = SetCounts.from_annotations([0, 0, 1, 1], [0, 1, 1, 2, 3], [0, 0, 1, 1, 1])
    >>> round(set_alpha(sc, "jaccard").alpha, 6), round(set_alpha(sc, "masi").alpha, 6)
    (0.571429, 0.5)
    """
    distance = check_distance(distance)
    pairable = sc.n >= 2
    n_items_pairable = int(pairable.sum())
    n = float(sc.n[pairable].sum())
    n_v = np.asarray(sc.counts[np.flatnonzero(pairable)].sum(axis=0), dtype=np.float64).reshape(-1)
    n_sets = int(np.count_nonzero(n_v))

    def undefined(reason: str) -> SetAlphaResult:
        return SetAlphaResult(distance, None, None, None, int(n), n_items_pairable, n_sets, reason)

    if n_items_pairable == 0:
        return undefined("no item has two judgments")
    expected = float(expected_total_sets(n_v, sc, distance)) if n_sets > 1 else 0.0
    if expected <= 0:
        return undefined("every pairable judgment gave the same set: no variation to compare")
    observed = float(item_observed_sets(sc, distance).sum())
    d_o = observed / n
    d_e = expected / (n * (n - 1.0))
    return SetAlphaResult(distance, 1.0 - d_o / d_e, d_o, d_e, int(n), n_items_pairable, n_sets)


__all__ = [
    "MAX_SETS",
    "SET_DISTANCES",
    "SetAlphaResult",
    "SetCounts",
    "SetDistance",
    "check_distance",
    "distance_grid",
    "expected_total_sets",
    "item_observed_sets",
    "set_alpha",
    "set_distance",
]
