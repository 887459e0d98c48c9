"""A campaign's judgments as integer-coded NumPy arrays (:class:`CampaignArrays`: what the
metrics take), and the latest judgment of each worker and item among them.

Workers and items are coded 0..W-1 and 0..N-1 in the order of their database ids (so codes are
stable as a campaign grows: new workers get new, larger codes); :mod:`monitor.store.arrays`
loads them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from monitor.core.catalog import Kind


@dataclass
class LatestPairs:
    """Each (worker, item) pair's key (:func:`_pair_keys`), sorted, the index of its latest
    judgment, and those indices rising (:attr:`CampaignArrays.latest`): worked out once per
    arrays, and brought up to date for their extension (:func:`extend_arrays`) or kept with a
    snapshot, instead of sorting every judgment again."""

    keys: NDArray[np.int64] | None = None
    who: NDArray[np.int64] | None = None
    rising: NDArray[np.int64] | None = None


@dataclass(frozen=True)
class CampaignArrays:
    """Judgments of one campaign up to a watermark.

    ``workers``, ``items`` : ndarray (n,) int64 codes into ``worker_ids`` / ``item_ids``.
    ``values`` : ndarray (n,) float64 — the rating, or the category code for labels (index into
    ``categories``); NaN for multilabel and pairwise.
    ``ann_judgment``, ``ann_code``, ``ann_count`` : ndarray (m,) — multilabel annotations: the
    judgment (index into the n judgments), the annotation (index into ``annotation_names``), and
    how many times the answer held it.
    ``left``, ``right`` : ndarray (n,) item codes and ``outcome`` (n,) int8 (+1 left preferred,
    -1 right, 0 tie) for pairwise campaigns; ``items`` is then ``left``.
    ``duration_s`` : ndarray (n,) float64, NaN where unknown. ``ids`` : database ids (time order
    of arrival; pairwise "latest wins" uses ``created_at`` then this order). ``created_s`` :
    ndarray (n,) float64, ``created_at`` in seconds since the epoch (NaN where unknown), from
    which ``order`` is ranked.
    """

    kind: Kind
    ids: NDArray[np.int64]
    workers: NDArray[np.int64]
    items: NDArray[np.int64]
    values: NDArray[np.float64]
    duration_s: NDArray[np.float64]
    order: NDArray[np.int64]
    worker_ids: NDArray[np.object_]
    worker_db_ids: NDArray[np.int64]
    item_ids: NDArray[np.object_]
    item_db_ids: NDArray[np.int64]
    item_gold: NDArray[np.object_]
    categories: tuple[str, ...] = ()
    ann_judgment: NDArray[np.int64] | None = None
    ann_code: NDArray[np.int64] | None = None
    ann_count: NDArray[np.int64] | None = None
    annotation_names: tuple[str, ...] = ()
    left: NDArray[np.int64] | None = None
    right: NDArray[np.int64] | None = None
    outcome: NDArray[np.int8] | None = None
    created_s: NDArray[np.float64] | None = None
    pairs: LatestPairs = field(default_factory=LatestPairs, init=False, repr=False, compare=False)

    @property
    def n(self) -> int:
        return int(self.ids.size)

    @property
    def comparisons(self) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int8]]:
        """``(left, right, outcome)`` of a pairwise campaign."""
        if self.left is None or self.right is None or self.outcome is None:
            raise ValueError(f"a {self.kind} campaign has no comparisons")
        return self.left, self.right, self.outcome

    @property
    def annotations(self) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
        """``(ann_judgment, ann_code, ann_count)`` of a multi-label campaign."""
        if self.ann_judgment is None or self.ann_code is None or self.ann_count is None:
            raise ValueError(f"a {self.kind} campaign has no annotations")
        return self.ann_judgment, self.ann_code, self.ann_count

    @property
    def watermark(self) -> int:
        return int(self.ids.max()) if self.ids.size else 0

    @property
    def latest(self) -> NDArray[np.int64]:
        """Indices of the latest judgment of each (worker, item), rising: what agreement and
        the models count (a worker counts once per item); see :class:`LatestPairs`."""
        if self.pairs.rising is None:
            rising, keys, who = _latest(self.workers, self.items, self.order)
            self.pairs.keys, self.pairs.who, self.pairs.rising = keys, who, _frozen(rising)
        return self.pairs.rising


def kept_pairs(arrays: CampaignArrays) -> tuple[NDArray[np.int64], NDArray[np.int64]] | None:
    """Each (worker, item) pair's key, sorted, and its latest judgment, when the arrays know
    them (:attr:`CampaignArrays.latest` was asked for): what a snapshot keeps of them."""
    p = arrays.pairs
    return None if p.keys is None or p.who is None else (p.keys, p.who)


def keep_pairs(arrays: CampaignArrays, keys: NDArray[np.int64], latest: NDArray[np.int64]) -> None:
    """Give arrays read from a snapshot their pairs (:func:`kept_pairs`), so that their
    extension brings the latest judgment per pair up to date instead of sorting afresh."""
    arrays.pairs.keys, arrays.pairs.who = keys, latest


def _pair_keys(workers: NDArray[np.int64], items: NDArray[np.int64]) -> NDArray[np.int64]:
    """One number per (worker, item) pair, ordered as the pairs are (codes below 2**31)."""
    return (workers.astype(np.int64) << 32) | items.astype(np.int64)


def _frozen(a: NDArray) -> NDArray:
    a.flags.writeable = False
    return a


def carry_latest(base: CampaignArrays, out: CampaignArrays) -> None:
    """``out``'s latest judgment per pair from ``base``'s and the judgments ``out`` adds: a
    new pair's latest is its latest new judgment; a known pair's the later (by ``out.order``)
    of that and the one it had. Costs a search per new judgment and a pass over the pairs,
    where computing afresh sorts every judgment."""
    kept = kept_pairs(base)
    if kept is None:
        return
    keys, who = kept
    n0 = base.n
    _, new_keys, new_who = _latest(out.workers[n0:], out.items[n0:], out.order[n0:])
    new_who = new_who + n0
    at = np.searchsorted(keys, new_keys)
    known = np.zeros(new_keys.size, dtype=bool)
    inside = at < keys.size
    known[inside] = keys[at[inside]] == new_keys[inside]
    latest = np.zeros(out.n, dtype=bool)
    latest[who] = True
    # a known pair: the later of its latest and the new one
    at_k, new_k = at[known], new_who[known]
    later = out.order[new_k] > out.order[who[at_k]]
    latest[who[at_k[later]]] = False
    latest[new_k[later]] = True
    who = who.copy()
    who[at_k[later]] = new_k[later]
    # a new pair: its latest new judgment
    fresh = ~known
    latest[new_who[fresh]] = True
    out.pairs.keys = np.insert(keys, at[fresh], new_keys[fresh])
    out.pairs.who = np.insert(who, at[fresh], new_who[fresh])
    out.pairs.rising = _frozen(np.flatnonzero(latest))


def latest_per_pair(workers: NDArray, items: NDArray, order: NDArray) -> NDArray[np.int64]:
    """Indices of the latest judgment (by ``order``) of each (worker, item), rising."""
    return _latest(workers, items, order)[0]


def _latest(
    workers: NDArray, items: NDArray, order: NDArray
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """:func:`latest_per_pair`, the pairs' keys (sorted) and their latest judgments."""
    idx = np.lexsort((order, items, workers))
    keys = _pair_keys(workers[idx], items[idx])
    last = np.ones(idx.size, dtype=bool)
    last[:-1] = keys[1:] != keys[:-1]
    who = idx[last]
    return np.sort(who), keys[last], who
