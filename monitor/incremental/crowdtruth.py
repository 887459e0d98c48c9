"""CrowdTruth in a run, behind one signature: the whole iteration, or a local update on the
units that got new judgments (:func:`crowdtruth_run`).

A full run iterates from all ones; an incremental run from the last run's scores
(:func:`monitor.metrics.crowdtruth.scores.crowdtruth`), or, when the last run kept its per-worker
sums (state ``crowdtruth``), only over the units with new judgments
(:func:`monitor.metrics.crowdtruth.scores.crowdtruth_local`): the other units keep their UQS and UAS,
the annotations their AQS. That leaves out how the other units respond to the moves of the
workers' scores, so each local run adds its largest WQS move to the state's ``drift``, and the
run that would take it beyond the ``crowdtruth_drift`` setting iterates over every unit
instead (and resets it). docs/operations.md states the tolerance.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from monitor.core.results import Column, Names, State
from monitor.incremental.warm import WarmStart, digest
from monitor.metrics.crowdtruth.scores import (
    CrowdTruthResult,
    CrowdTruthScores,
    crowdtruth,
    crowdtruth_local,
)
from monitor.store.arrays import CampaignArrays

STATE = "crowdtruth"
"""(W, 4): each worker's sums behind WWA and WUA (:attr:`CrowdTruthResult.worker_sums`)."""
MAX_BLOCK = 0.25
"""A local update only when the units with new judgments hold at most this share of all
judgments (beyond it, a pass over every unit costs about as much)."""


@dataclass(frozen=True)
class CrowdTruthTask:
    """CrowdTruth's input: per judgment the worker, the unit and its annotations (a row of
    ``annotations``); the subjects' names; whether the task is closed; ``arrays`` (the units
    are the campaign's items) for the local update; whether the unit scores are stored as
    columns; ``name``: the subjects at some positions as strings (shared within a run)."""

    workers: NDArray[np.int64]
    units: NDArray[np.int64]
    annotations: sparse.csr_array
    worker_ids: Names
    unit_ids: Names
    unit_scope: str
    names: list[str]
    closed: bool
    name: Callable[[Names, NDArray[np.int64]], list[str]]
    columnar: bool = False
    arrays: CampaignArrays | None = None


@dataclass(frozen=True)
class CrowdTruthRun:
    """The scores, the state the next run updates from, and how they were reached."""

    result: CrowdTruthResult
    state: State | None
    detail: dict[str, Any]
    parameters: dict[str, Any]


def crowdtruth_run(task: CrowdTruthTask, options: Any, warm: WarmStart | None) -> CrowdTruthRun:
    """CrowdTruth 2.0 from scratch (``warm`` None), warm-started from the last run, or updated
    on the units with new judgments (``options``:
    :class:`~monitor.pipeline.params.CrowdTruthOptions`)."""
    meta = {
        "variant": "package",
        "closed": bool(task.closed),
        "annotations": task.names,
        "scope": task.unit_scope,
        "n_workers": len(task.worker_ids),
        "n_units": len(task.unit_ids),
        "workers": None if task.arrays is None else digest(task.arrays.worker_db_ids),
        "units": None
        if task.arrays is None
        else digest(_unit_db_ids(task.arrays, task.unit_scope)),
    }
    local = _local(task, options, warm, meta)
    drift, block = 0.0, None
    if local is not None:
        result, drift, block = local
    start = None
    if local is None and warm is not None:
        w = warm.aligned("worker", "wqs", task.worker_ids)
        u = warm.aligned(task.unit_scope, "uqs", task.unit_ids)
        a = warm.aligned("annotation", "aqs", task.names) if task.closed else None
        if w is not None and u is not None:
            start = CrowdTruthScores(uqs=u, wqs=w, aqs=a)
    if local is None or drift > options.crowdtruth_drift:
        if local is not None:  # the drift is spent: every unit, from the updated scores
            start, drift, block = result.scores, 0.0, None
        result = crowdtruth(
            task.workers,
            task.units,
            task.annotations,
            closed=task.closed,
            n_workers=len(task.worker_ids),
            n_units=len(task.unit_ids),
            max_iter=options.crowdtruth_max_iter,
            tol=options.crowdtruth_tol,
            warm_start=start,
            initial=start is None,  # a warm run stores no first-iteration values: skip that sweep
        )
    state = None
    if result.worker_sums is not None:
        state = State({**meta, "drift": drift}, result.worker_sums)
    detail: dict[str, Any] = {
        "converged": bool(result.converged),
        "warm_start": start is not None or block is not None,
    }
    if block is not None:
        detail.update(local_units=int(block), drift=round(drift, 12))
    parameters = {"iterations": result.iterations,
                  "local_units": None if block is None else int(block)}  # fmt: skip
    return CrowdTruthRun(result, state, detail, parameters)


def _unit_db_ids(arrays: CampaignArrays, unit_scope: str) -> NDArray[np.int64]:
    return arrays.item_db_ids if unit_scope == "item" else np.empty(0, dtype=np.int64)


def _local(
    task: CrowdTruthTask, options: Any, warm: WarmStart | None, meta: dict[str, Any]
) -> tuple[CrowdTruthResult, float, int] | None:
    """The local update when the last run allows it: (result with every unit's UAS, the
    drift since the last full iteration, units updated); None otherwise."""
    arrays, unit_scope, unit_ids, names = task.arrays, task.unit_scope, task.unit_ids, task.names
    if (
        warm is None
        or arrays is None
        or unit_scope != "item"
        or not task.columnar
        or options.crowdtruth_drift <= 0
    ):
        return None
    state = warm.states.get(STATE)
    if state is None or not _extends(state.meta, meta, arrays):
        return None
    arrived = warm.arrived(arrays)  # the units are the items
    if arrived is None:
        return None  # judgments below the last watermark changed since
    n_u = len(unit_ids)
    seen, touched = arrived.seen, arrived.touched
    rows = np.flatnonzero(touched[task.units])
    if rows.size == 0 or rows.size > MAX_BLOCK * task.units.size:
        return None
    uqs0 = warm.aligned(unit_scope, "uqs", unit_ids, default=np.nan)
    wqs0 = warm.aligned("worker", "wqs", task.worker_ids, default=np.nan)
    aqs0 = warm.aligned("annotation", "aqs", names, default=np.nan) if task.closed else None
    uas0 = warm.columns.get((unit_scope, "uas"))
    if uqs0 is None or wqs0 is None or uas0 is None or (task.closed and aqs0 is None):
        return None
    if aqs0 is not None and not np.all(np.isfinite(aqs0)):
        return None
    kept0 = np.flatnonzero(np.isfinite(uqs0))
    if (
        uas0.indptr is None
        or len(uas0) != kept0.size
        or uas0.subjects != task.name(unit_ids, kept0)
    ):
        return None
    result = crowdtruth_local(
        task.workers[rows],
        task.units[rows],
        task.annotations[rows],
        seen[rows],
        previous=CrowdTruthScores(uqs=uqs0, wqs=wqs0, aqs=aqs0),
        worker_sums=state.array,
        n_workers=len(task.worker_ids),
        n_units=n_u,
        closed=task.closed,
        max_iter=options.crowdtruth_max_iter,
        tol=options.crowdtruth_tol,
    )
    moved = np.abs(result.wqs - wqs0)
    step = float(np.max(moved[np.isfinite(moved)], initial=0.0))
    drift = float(state.meta.get("drift", 0.0)) + step
    uas = _merged_uas(uas0, kept0, result.uas, touched & result.unit_kept, n_u, len(names))
    return replace(result, uas=uas), drift, int(np.count_nonzero(touched))


def _extends(old: dict[str, Any], new: dict[str, Any], arrays: CampaignArrays) -> bool:
    """The last run's state fits this run: same task and annotations, and the codes it knew
    still name the same workers and units."""
    same = ("variant", "closed", "annotations", "scope")
    if any(old.get(k) != new[k] for k in same):
        return False
    n_w, n_u = old.get("n_workers"), old.get("n_units")
    if not isinstance(n_w, int) or not isinstance(n_u, int):
        return False
    if not (0 <= n_w <= new["n_workers"] and 0 <= n_u <= new["n_units"]):
        return False
    return old.get("workers") == digest(arrays.worker_db_ids[:n_w]) and old.get("units") == digest(
        arrays.item_db_ids[:n_u]
    )


def _merged_uas(
    before: Column,
    kept: NDArray[np.int64],
    block: sparse.csr_array,
    updated: NDArray[np.bool_],
    n_units: int,
    n_ann: int,
) -> sparse.csr_array:
    """Every unit's UAS rows: the ``updated`` units' from ``block``, the others' as the last
    run's column ``before`` holds them (its rows are the units ``kept``, in code order)."""
    assert before.indptr is not None and before.indices is not None and before.data is not None
    lengths = np.diff(before.indptr)
    row = np.repeat(kept, lengths)
    stay = ~updated[row]
    block = sparse.csr_array(block)
    b_rows = np.repeat(np.arange(block.shape[0]), np.diff(block.indptr))
    b_take = updated[b_rows]
    rows = np.r_[row[stay], b_rows[b_take]]
    cols = np.r_[before.indices[stay], block.indices[b_take]]
    data = np.r_[before.data[stay], block.data[b_take]]
    order = np.lexsort((cols, rows))
    indptr = np.r_[0, np.cumsum(np.bincount(rows, minlength=n_units))].astype(np.int64)
    return sparse.csr_array((data[order], cols[order], indptr), shape=(n_units, n_ann))
