"""Transitivity in a run, behind one signature (:func:`transitivity_run`): every annotator's
triangles counted from scratch, or the last run's counts brought up to date with the judgments
that arrived since (:meth:`monitor.metrics.preferences.intraobserver.TriangleState.update`, which touches
only the triangles through the pairs those judgments set or changed).

The counts live in the memory of the process that made them (the run cache's ``memory`` of
the campaign: they are as large as the judgments and are not stored); they are used only for
the same workers and items (digests of their database ids), when no judgment was committed
below the last run's watermark since. The judgments' time order is ranked afresh with every
run, so the kept judgments take their current ranks (their relative order never changes)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from monitor.incremental.warm import WarmStart, digest
from monitor.metrics.preferences.intraobserver import Transitivity, summarize
from monitor.metrics.preferences.triangles import TriangleState, triangle_state
from monitor.store.arrays import CampaignArrays

MEMORY = "triangles"


@dataclass(frozen=True)
class KeptTriangles:
    """The triangle counts of a run, and the workers and items their codes name."""

    state: TriangleState
    meta: dict[str, Any]


def _meta(arrays: CampaignArrays, n_workers: int, n_items: int) -> dict[str, Any]:
    return {
        "n_workers": n_workers,
        "n_items": n_items,
        "workers": digest(arrays.worker_db_ids[:n_workers]),
        "items": digest(arrays.item_db_ids[:n_items]),
    }


def transitivity_run(
    arrays: CampaignArrays, *, ties_allowed: bool, warm: WarmStart | None
) -> tuple[Transitivity, KeptTriangles, str]:
    """Every annotator's transitivity, what to keep for the next run, and how it was reached
    (``counted`` from scratch, or ``updated`` with the judgments that arrived)."""
    a = arrays
    W, N = len(a.worker_ids), len(a.item_ids)
    state, how = _updated(a, warm), "updated"
    if state is None:
        state, how = triangle_state(
            a.workers, *a.comparisons, a.order, a.ids, n_workers=W, n_items=N
        ), "counted"  # fmt: skip
    kept = KeptTriangles(state, _meta(a, state.n_workers, state.n_items))
    return summarize(state, ties_allowed=ties_allowed), kept, how


def _updated(arrays: CampaignArrays, warm: WarmStart | None) -> TriangleState | None:
    """The last run's counts with the judgments that arrived since; None when they cannot be
    brought up to date (none kept, other workers or items, judgments committed late)."""
    kept = warm.memory.get(MEMORY) if warm is not None else None
    if warm is None or not isinstance(kept, KeptTriangles):
        return None
    old = kept.state
    W, N = len(arrays.worker_ids), len(arrays.item_ids)
    if (
        old.n_workers > W
        or old.n_items > N
        or kept.meta != _meta(arrays, old.n_workers, old.n_items)
    ):
        return None
    arrived = warm.arrived(arrays)
    if arrived is None:
        return None
    left, right, outcome = arrays.comparisons
    position = np.searchsorted(arrays.ids, old.ids)
    inside = position < arrays.ids.size
    if not np.all(inside) or not np.array_equal(arrays.ids[position], old.ids):
        return None  # a kept judgment is gone
    state = replace(old, order=arrays.order[position].astype(np.float64))
    new = np.flatnonzero(~arrived.seen)
    if not new.size:
        return state
    return state.update(
        arrays.workers[new], left[new], right[new], outcome[new],
        arrays.order[new], arrays.ids[new],
    )  # fmt: skip
