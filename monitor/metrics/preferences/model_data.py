"""Input preparation and parameter layout of the preference model
(:mod:`monitor.metrics.preferences.model`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from monitor.metrics.preferences.judgments import validate


def gold_order(left: ArrayLike, right: ArrayLike, item_gold: ArrayLike) -> NDArray[np.float64]:
    """The gold order of each comparison from the items' gold values ``item_gold : (I,)`` (NaN:
    none): +1 when the left item's gold is higher, -1 lower, 0 equal, NaN when either has none."""
    g = np.asarray(item_gold, dtype=np.float64)
    a, b = g[np.asarray(left, dtype=np.int64)], g[np.asarray(right, dtype=np.int64)]
    return np.where(np.isnan(a) | np.isnan(b), np.nan, np.sign(a - b))


@dataclass(frozen=True)
class PreferenceData:
    """Comparisons in four contiguous blocks: strict off gold ``[0, a)``, strict on gold
    ``[a, b)``, tie on gold ``[b, c)``, tie off gold ``[c, n)``. So gold rows are ``[a, c)``,
    strict ``[0, b)``, ties ``[b, n)``. ``y`` +1 left / -1 right / 0 tie; ``o`` the gold order
    (+-1 on gold rows, else 0); ``order`` the input position of each row."""

    w: NDArray[np.int64]
    left: NDArray[np.int64]
    right: NDArray[np.int64]
    y: NDArray[np.float64]
    o: NDArray[np.float64]
    order: NDArray[np.int64]
    pair: NDArray[np.int64]
    pairs: NDArray[np.int64]
    edges: tuple[NDArray[np.int64], ...]
    a: int
    b: int
    c: int
    n_items: int
    n_workers: int


def prepare(
    workers: ArrayLike,
    left: ArrayLike,
    right: ArrayLike,
    outcome: ArrayLike,
    gold: ArrayLike | None = None,
    n_workers: int | None = None,
    n_items: int | None = None,
) -> PreferenceData:
    """Validate (:func:`monitor.metrics.preferences.judgments.validate`) and sort into blocks."""
    j = validate(workers, left, right, outcome, n_workers=n_workers, n_items=n_items)
    n = len(j.workers)
    y = np.asarray(outcome).astype(np.float64).reshape(-1)
    o = np.zeros(n)
    if gold is not None:
        g = np.asarray(gold, dtype=np.float64).reshape(-1)
        if g.shape != (n,):
            raise ValueError(f"gold must have one entry per comparison ({n}), got {g.shape}.")
        o = np.sign(np.nan_to_num(g, nan=0.0))
    cat = np.where(y != 0, np.where(o != 0, 1, 0), np.where(o != 0, 2, 3))
    idx = np.argsort(cat, kind="stable")
    a, b, c = (int(v) for v in np.cumsum(np.bincount(cat, minlength=4))[:3])
    lft = np.asarray(left).astype(np.int64).reshape(-1)
    rgt = np.asarray(right).astype(np.int64).reshape(-1)
    n_i = max(j.n_items, 1)
    keys, pair = np.unique(j.lo[idx] * n_i + j.hi[idx], return_inverse=True)
    pairs = np.stack([keys // n_i, keys % n_i], axis=1)
    return PreferenceData(j.workers[idx], lft[idx], rgt[idx], y[idx], o[idx], idx, pair.reshape(-1), pairs,
                 directed_edges(pairs), a, b, c, j.n_items, j.n_workers)  # fmt: skip


@dataclass(frozen=True)
class Layout:
    """The parameter vector: scores (I), logit eta (W), bias (W, if modelled), log nu (W, if
    ties are modelled), the crowd's mean log nu (if ties)."""

    n_items: int
    n_workers: int
    bias: bool
    ties: bool

    @property
    def g(self) -> int:
        return self.n_items

    @property
    def b(self) -> int:
        return self.g + self.n_workers

    @property
    def t(self) -> int:
        return self.b + self.n_workers * self.bias

    @property
    def size(self) -> int:
        return self.t + (self.n_workers + 1) * self.ties

    def unpack(self, x: NDArray[np.float64]) -> tuple[Any, ...]:
        """(s, logit eta, bias or None, log nu or None, mu_t)."""
        b = x[self.b : self.t] if self.bias else None
        lam = x[self.t : self.size - 1] if self.ties else None
        return x[: self.g], x[self.g : self.b], b, lam, (x[-1] if self.ties else 0.0)


def directed_edges(pairs: NDArray[np.int64]) -> tuple[NDArray[np.int64], ...]:
    """Both directions of each pair ``(P, 2)``: source, destination and the position of the
    reverse direction, each (2P,)."""
    p = len(pairs)
    src = np.concatenate([pairs[:, 0], pairs[:, 1]])
    dst = np.concatenate([pairs[:, 1], pairs[:, 0]])
    twin = np.concatenate([np.arange(p, 2 * p), np.arange(p)])
    return src, dst, twin
