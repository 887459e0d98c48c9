"""Phi's data: ratings rescaled into (0, 1) and reduced to each item's statistics
(``n_i``, ``sum log y``, ``sum log(1 - y)``, its gold prior), items with equal statistics grouped
(:mod:`monitor.metrics.ratings.phi_measure`, Checco et al. 2017)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from monitor.metrics.ratings.phi_posterior import ItemStats

Mapping = Literal["bin_centres", "authors"]
#: Default sd of a gold prior on the (0, 1) scale.
DEFAULT_GOLD_SD01 = 0.1

# --------------------------------------------------------------------------- data preparation


@dataclass(frozen=True)
class PhiData:
    """Per-item statistics on the (0, 1) scale; the unique rows are what the engines integrate."""

    n: NDArray[np.int64]  # (N,) ratings per item
    s1: NDArray[np.float64]  # (N,) sum log y
    s2: NDArray[np.float64]  # (N,) sum log(1 - y)
    gold: NDArray[np.float64]  # (N,) gold on (0, 1), NaN where none
    gold_sd: NDArray[np.float64]  # (N,) sd of the gold prior on (0, 1)
    to_rating: tuple[NDArray[np.float64], NDArray[np.float64]]  # x = a + b * mu, each (N,)
    n_judgments: int

    def item_stats(self, rows: NDArray[np.int64]) -> ItemStats:
        """The statistics of the items ``rows`` that their integrals take, the gold prior's sd as
        a precision."""
        return ItemStats(
            self.n[rows],
            self.s1[rows],
            self.s2[rows],
            self.gold[rows],
            1.0 / self.gold_sd[rows] ** 2,
        )


def prepare(
    items: ArrayLike,
    values: ArrayLike,
    scale_min: float,
    scale_max: float,
    n_items: int | None,
    mapping: Mapping,
    gold: ArrayLike | None,
    gold_sd: float | None,
) -> PhiData:
    items = np.asarray(items)
    values = np.asarray(values, dtype=float)
    if items.ndim != 1 or values.ndim != 1 or items.shape != values.shape:
        raise ValueError(
            f"items and values must be one-dimensional of equal length, got {items.shape} and "
            f"{values.shape}."
        )
    if items.size and not np.issubdtype(items.dtype, np.integer):
        raise ValueError("items must be integer codes 0..N-1.")
    if items.size and items.min() < 0:
        raise ValueError("items must be non-negative integer codes.")
    if not (np.isfinite(scale_min) and np.isfinite(scale_max) and scale_max > scale_min):
        raise ValueError(f"The scale needs scale_min < scale_max, got {scale_min} and {scale_max}.")
    if not np.all(np.isfinite(values)):
        raise ValueError("values must be finite; drop missing ratings before calling phi.")
    if values.size and (values.min() < scale_min or values.max() > scale_max):
        raise ValueError(
            f"values must lie on the scale [{scale_min}, {scale_max}], got "
            f"[{values.min()}, {values.max()}]."
        )
    if mapping not in ("bin_centres", "authors"):
        raise ValueError(f"mapping must be 'bin_centres' or 'authors', got {mapping!r}.")
    seen = int(items.max()) + 1 if items.size else 0
    if n_items is None:
        n_items = seen
    elif n_items < seen:
        raise ValueError(f"n_items is {n_items} but items holds codes up to {seen - 1}.")
    items = items.astype(np.int64)
    n = np.bincount(items, minlength=n_items).astype(np.int64)
    width = scale_max - scale_min
    if mapping == "bin_centres":
        # Bin centres of the scale points: point k of K = max - min + 1 goes to (k + 0.5)/K.
        y = (values - scale_min + 0.5) / (width + 1.0)
        b = np.full(n_items, width + 1.0)
        a = np.full(n_items, scale_min - 0.5)
    else:
        # agreement-phi: t in [0, 1], then y = (t (l - 1) + 0.5)/l with l = ratings of the item.
        lj = n[items].astype(float)
        y = ((values - scale_min) / width * (lj - 1.0) + 0.5) / lj
        l_item = np.maximum(n, 2).astype(float)  # back-transform; l = 1 items have y = 0.5 only
        b = width * l_item / (l_item - 1.0)
        a = scale_min - 0.5 * width / (l_item - 1.0)
    s1 = np.bincount(items, weights=np.log(y), minlength=n_items).astype(np.float64, copy=False)
    s2 = np.bincount(items, weights=np.log1p(-y), minlength=n_items).astype(np.float64, copy=False)
    gold01 = np.full(n_items, np.nan)
    sd01 = np.full(n_items, DEFAULT_GOLD_SD01 if gold_sd is None else 0.0)
    if gold is not None:
        g = np.asarray(gold, dtype=float)
        if g.shape != (n_items,):
            raise ValueError(
                f"gold must have shape ({n_items},) with NaN for no gold, got {g.shape}."
            )
        has = ~np.isnan(g)
        if np.any((g[has] < scale_min) | (g[has] > scale_max)):
            raise ValueError(f"gold values must lie on the scale [{scale_min}, {scale_max}].")
        gold01 = np.where(has, (g - a) / b, np.nan)
        if gold_sd is not None:
            if not (np.isfinite(gold_sd) and gold_sd > 0):
                raise ValueError(
                    f"gold_sd must be a positive number of rating points, got {gold_sd}."
                )
            sd01 = gold_sd / b
    elif gold_sd is not None and not (np.isfinite(gold_sd) and gold_sd > 0):
        raise ValueError(f"gold_sd must be a positive number of rating points, got {gold_sd}.")
    return PhiData(n, s1, s2, gold01, sd01, (a, b), int(values.size))


def _unique_rows(d: PhiData, rows: NDArray[np.int64]) -> tuple[NDArray, NDArray, NDArray, NDArray]:
    """Indices of one representative per distinct (n, s1, s2, gold, sd), the inverse map, counts
    and the distinct keys (G, 5)."""
    full = key = np.column_stack(
        [
            d.n[rows],
            np.round(d.s1[rows], 9),
            np.round(d.s2[rows], 9),
            np.nan_to_num(d.gold[rows], nan=-1.0),
            d.gold_sd[rows],
        ]
    )
    # np.unique(key, axis=0) by one stable lexsort (several times faster on float rows): the
    # same distinct rows in the same order, each represented by its first occurrence. A column
    # equal throughout (no gold, one gold sd) changes neither and is left out of the sort.
    varied = np.flatnonzero(np.any(key != key[:1], axis=0)) if rows.size else np.empty(0, int)
    key = key[:, varied] if len(varied) else key[:, :1]
    order = np.lexsort(key.T[::-1])
    ordered = key[order]
    new = np.ones(order.size, dtype=bool)
    new[1:] = np.any(ordered[1:] != ordered[:-1], axis=1)
    inverse = np.empty(order.size, dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    counts = np.diff(np.r_[starts, order.size])
    return rows[order[starts]], inverse, counts, full[order[starts]]


@dataclass(frozen=True)
class ItemGroups:
    """The rated items grouped by their sufficient statistics (:func:`_unique_rows`), once for
    the joint mode, the posterior of p and the item means: one representative per group
    (``rep``), each rated item's group (``inverse``) and the groups' sizes."""

    rated: NDArray[np.int64]
    rep: NDArray[np.int64]
    inverse: NDArray[np.int64]
    counts: NDArray[np.int64]
    keys: NDArray[np.float64]

    @classmethod
    def of(cls, d: PhiData) -> ItemGroups:
        rated = np.flatnonzero(d.n >= 1)
        return cls(rated, *_unique_rows(d, rated))

    def informative(self, d: PhiData) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """The groups of items with two or more ratings (n is part of the key: whole groups),
        in the order :func:`_unique_rows` gives them, and their sizes."""
        keep = d.n[self.rep] >= 2
        return self.rep[keep], self.counts[keep]

    def informative_keys(self, d: PhiData) -> NDArray[np.float64]:
        """The keys of :meth:`informative`'s groups."""
        return self.keys[d.n[self.rep] >= 2]
