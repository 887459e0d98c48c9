"""Shared conventions of the metric modules: undefined values and integer coding."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import sparse

Chance = TypeVar("Chance", float, NDArray[np.float64])


@dataclass(frozen=True)
class Undefined:
    """Why a measure has no value (one value in the whole campaign, p_e = 1, ...)."""

    reason: str


@dataclass(frozen=True)
class Interval:
    """A two-sided interval, for instance a bootstrap 95% interval or an HPD."""

    low: float
    high: float
    level: float = 0.95


def accuracy_floor(chance: Chance, margin: float) -> Chance:
    """The accuracy a worker must be able to exceed to be told from a random or constant
    answerer: ``chance + margin x (1 - chance)`` (the flags' floor of every model)."""
    return chance + margin * (1.0 - chance)


def noise_sd_floor(chance_sd: Chance, margin: float) -> Chance:
    """The noise sd a rater must be able to stay under to be told from a random or constant
    answerer: ``(1 - margin) x chance_sd``."""
    return (1.0 - margin) * chance_sd


def encode(labels: ArrayLike) -> tuple[NDArray[np.int64], NDArray]:
    """Map arbitrary labels to codes 0..k-1.

    Returns ``(codes, uniques)`` with ``uniques[codes] == labels``; ``uniques`` is sorted.
    """
    uniques, codes = np.unique(np.asarray(labels), return_inverse=True)
    return codes.astype(np.int64).reshape(-1), uniques


def bounded_codes(name: str, x: ArrayLike, upper: int) -> NDArray[np.int64]:
    """``x`` as integer codes in ``0..upper - 1`` (whole floats accepted), else a ValueError
    naming ``name``."""
    a = np.asarray(x).reshape(-1)
    if (
        a.size
        and not np.issubdtype(a.dtype, np.integer)
        and (not np.all(np.isfinite(a)) or np.any(a != np.round(a)))
    ):
        raise ValueError(f"{name} must be integer codes.")
    a = a.astype(np.int64)
    if a.size and (a.min() < 0 or a.max() >= upper):
        raise ValueError(f"{name} must lie in 0..{upper - 1}, got {a.min()}..{a.max()}.")
    return a


def check_keywords(
    options: Mapping[str, object], required: Collection[str], optional: Collection[str]
) -> None:
    """Raise TypeError, as a call would, when ``options`` (the ``**options`` of a function typed
    by a TypedDict) lacks a ``required`` name or holds one neither required nor ``optional``."""
    missing = sorted(set(required) - options.keys())
    unknown = sorted(options.keys() - set(required) - set(optional))
    if missing:
        raise TypeError(f"missing keyword arguments: {', '.join(missing)}.")
    if unknown:
        raise TypeError(f"unexpected keyword arguments: {', '.join(unknown)}.")


def check_same_length(**arrays: NDArray) -> int:
    """Raise ValueError unless all arrays are one-dimensional with the same length."""
    lengths = {name: np.shape(a) for name, a in arrays.items()}
    shapes = set(lengths.values())
    if len(shapes) != 1 or len(next(iter(shapes))) != 1:
        described = ", ".join(f"{k} {v}" for k, v in lengths.items())
        raise ValueError(f"Expected one-dimensional arrays of equal length, got {described}.")
    return next(iter(shapes))[0]


def count_matrix(
    rows: NDArray[np.int64],
    cols: NDArray[np.int64],
    shape: tuple[int, int],
    weights: NDArray | None = None,
) -> sparse.csr_array:
    """The (rows, cols) matrix of the number (or summed ``weights``) of pairs ``(rows[k],
    cols[k])``, in canonical CSR form (sorted indices, no duplicates, no stored zeros).

    When the matrix has few cells for the pairs (an item by value table), the counts are one
    ``bincount`` of ``rows * n_cols + cols`` read back as CSR: no sort, a few times faster
    than converting from COO, which is the fallback for wide matrices."""
    n, v = shape
    if n * v > max(2 * rows.size, 1 << 16):  # the table would outweigh the pairs
        mat = sparse.coo_array((np.ones(rows.size, dtype=np.int64) if weights is None else weights,
                                (rows, cols)), shape=shape).tocsr()  # fmt: skip
        mat.sum_duplicates()
        mat.eliminate_zeros()
        return mat
    dense = np.bincount(rows * v + cols, weights=weights, minlength=n * v)
    if weights is not None and np.issubdtype(np.asarray(weights).dtype, np.integer):
        dense = dense.astype(np.int64)
    flat = np.flatnonzero(dense)
    small = np.int32 if n * v < 2**31 else np.int64
    row, col = np.divmod(flat.astype(small, copy=False), small(v))
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(row, minlength=n), out=indptr[1:])
    return sparse.csr_array((dense[flat], col, indptr), shape=shape)


def group_mean(
    groups: NDArray[np.int64], values: NDArray[np.float64], n_groups: int
) -> NDArray[np.float64]:
    """The plain mean of ``values`` in each of ``n_groups`` groups (``groups``: a code per
    value), NaN for a group without values."""
    count = np.bincount(groups, minlength=n_groups)
    total = np.bincount(groups, weights=values, minlength=n_groups)
    return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def squarem_jump(
    t0: NDArray[np.float64], t1: NDArray[np.float64], t2: NDArray[np.float64]
) -> NDArray[np.float64] | None:
    """The SQUAREM extrapolation (Varadhan & Roland 2008, *Scand. J. Statist.* 35:335, scheme
    S3) from a point and two plain steps of a fixed-point map, ``t1 = F(t0)``, ``t2 = F(t1)``:
    ``t0 - 2 a r + a^2 v`` with ``r = t1 - t0``, ``v = t2 - 2 t1 + t0`` and ``a = -|r| / |v|``;
    None when ``a`` would be -1 (the jump is the two plain steps themselves)."""
    r = t1 - t0
    v = t2 - 2 * t1 + t0
    nv = float(np.linalg.norm(v))
    alpha = min(-float(np.linalg.norm(r)) / nv, -1.0) if nv > 0 else -1.0
    if alpha >= -1.0:
        return None
    return t0 - 2 * alpha * r + alpha * alpha * v
