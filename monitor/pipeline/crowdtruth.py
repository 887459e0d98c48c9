"""CrowdTruth in a run: the whole iteration, or a local update on the units that got new
judgments.

A full run iterates from all ones; an incremental run from the last run's scores
(:func:`monitor.metrics.crowdtruth.crowdtruth`), or, when the last run kept its per-worker
sums (state ``crowdtruth``), only over the units with new judgments
(:func:`monitor.metrics.crowdtruth.crowdtruth_local`): the other units keep their UQS and UAS,
the annotations their AQS. That leaves out how the other units respond to the moves of the
workers' scores, so each local run adds its largest WQS move to the state's ``drift``, and the
run that would take it beyond the ``crowdtruth_drift`` setting iterates over every unit
instead (and resets it). docs/operations.md states the tolerance.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from monitor.metrics.crowdtruth import (
    CrowdTruthResult,
    CrowdTruthScores,
    crowdtruth,
    crowdtruth_local,
)
from monitor.pipeline.collect import Collector, WarmStart, digest
from monitor.results import Column, State, Value
from monitor.settings import Settings
from monitor.store.arrays import CampaignArrays

STATE = "crowdtruth"
"""(W, 4): each worker's sums behind WWA and WUA (:attr:`CrowdTruthResult.worker_sums`)."""
MAX_BLOCK = 0.25
"""A local update only when the units with new judgments hold at most this share of all
judgments (beyond it, a pass over every unit costs about as much)."""


def run_crowdtruth(
    out: Collector,
    *,
    workers: NDArray[np.int64],
    units: NDArray[np.int64],
    annotations: sparse.csr_array,
    worker_ids: Sequence[str],
    unit_ids: Sequence[str],
    unit_scope: str,
    annotation_names: Sequence[str],
    closed: bool,
    settings: Settings,
    warm: WarmStart | None,
    parameters: dict[str, Any],
    arrays: CampaignArrays | None = None,
) -> CrowdTruthResult:
    """CrowdTruth 2.0 on one campaign, warm-started from the last run (or updated on the units
    with new judgments: ``arrays`` gives their judgment ids and the codes' database ids);
    stores WQS/WWA/WUA per worker, UQS and UAS per unit, AQS per annotation (closed tasks)."""
    names = [str(x) for x in annotation_names]
    meta = {
        "variant": "package",
        "closed": bool(closed),
        "annotations": names,
        "scope": unit_scope,
        "n_workers": len(worker_ids),
        "n_units": len(unit_ids),
        "workers": None if arrays is None else digest(arrays.worker_db_ids),
        "units": None if arrays is None else digest(_unit_db_ids(arrays, unit_scope)),
    }
    local = _local(out, workers, units, annotations, worker_ids, unit_ids, unit_scope, names,
                   closed, settings, warm, arrays, meta)  # fmt: skip
    drift, block = 0.0, None
    if local is not None:
        result, drift, block = local
    start = None
    if local is None and warm is not None:
        w = warm.aligned("worker", "wqs", worker_ids)
        u = warm.aligned(unit_scope, "uqs", unit_ids)
        a = warm.aligned("annotation", "aqs", annotation_names) if closed else None
        if w is not None and u is not None:
            start = CrowdTruthScores(uqs=u, wqs=w, aqs=a)
    if local is None or drift > settings.crowdtruth_drift:
        if local is not None:  # the drift is spent: every unit, from the updated scores
            start, drift, block = result.scores, 0.0, None
        result = crowdtruth(
            workers,
            units,
            annotations,
            closed=closed,
            n_workers=len(worker_ids),
            n_units=len(unit_ids),
            max_iter=settings.crowdtruth_max_iter,
            tol=settings.crowdtruth_tol,
            warm_start=start,
            initial=start is None,  # a warm run stores no first-iteration values: skip that sweep
        )
    if result.worker_sums is not None:
        out.states[STATE] = State({**meta, "drift": drift}, result.worker_sums)
    parameters["crowdtruth"]["iterations"] = result.iterations
    parameters["crowdtruth"]["local_units"] = None if block is None else int(block)
    detail: dict[str, Any] = {
        "converged": bool(result.converged),
        "warm_start": start is not None or block is not None,
    }
    if block is not None:
        detail.update(local_units=int(block), drift=round(drift, 12))
    out.campaign_value("crowdtruth_iterations", result.iterations, detail=detail)
    _store(out, result, worker_ids, unit_ids, unit_scope, names, closed)
    return result


def _unit_db_ids(arrays: CampaignArrays, unit_scope: str) -> NDArray[np.int64]:
    return arrays.item_db_ids if unit_scope == "item" else np.empty(0, dtype=np.int64)


def _local(
    out: Collector,
    workers: NDArray[np.int64],
    units: NDArray[np.int64],
    annotations: sparse.csr_array,
    worker_ids: Sequence[str],
    unit_ids: Sequence[str],
    unit_scope: str,
    names: list[str],
    closed: bool,
    settings: Settings,
    warm: WarmStart | None,
    arrays: CampaignArrays | None,
    meta: dict[str, Any],
) -> tuple[CrowdTruthResult, float, int] | None:
    """The local update when the last run allows it: (result with every unit's UAS, the
    drift since the last full iteration, units updated); None otherwise."""
    if (
        warm is None
        or arrays is None
        or unit_scope != "item"
        or unit_scope not in out.columnar
        or settings.crowdtruth_drift <= 0
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
    rows = np.flatnonzero(touched[units])
    if rows.size == 0 or rows.size > MAX_BLOCK * units.size:
        return None
    uqs0 = warm.aligned(unit_scope, "uqs", unit_ids, default=np.nan)
    wqs0 = warm.aligned("worker", "wqs", worker_ids, default=np.nan)
    aqs0 = warm.aligned("annotation", "aqs", names, default=np.nan) if closed else None
    uas0 = warm.columns.get((unit_scope, "uas"))
    if uqs0 is None or wqs0 is None or uas0 is None or (closed and aqs0 is None):
        return None
    if aqs0 is not None and not np.all(np.isfinite(aqs0)):
        return None
    kept0 = np.flatnonzero(np.isfinite(uqs0))
    if (
        uas0.indptr is None
        or len(uas0) != kept0.size
        or uas0.subjects != out.names(unit_ids, kept0)
    ):
        return None
    result = crowdtruth_local(
        workers[rows],
        units[rows],
        annotations[rows],
        seen[rows],
        previous=CrowdTruthScores(uqs=uqs0, wqs=wqs0, aqs=aqs0),
        worker_sums=state.array,
        n_workers=len(worker_ids),
        n_units=n_u,
        closed=closed,
        max_iter=settings.crowdtruth_max_iter,
        tol=settings.crowdtruth_tol,
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


def _store(
    out: Collector,
    result: CrowdTruthResult,
    worker_ids: Sequence[str],
    unit_ids: Sequence[str],
    unit_scope: str,
    names: list[str],
    closed: bool,
) -> None:
    kept_w = result.worker_kept
    for metric in ("wqs", "wwa", "wua"):
        out.per_subject("worker", metric, worker_ids, getattr(result, metric), mask=kept_w)
    out.per_subject(unit_scope, "uqs", unit_ids, result.uqs, mask=result.unit_kept)
    uas = result.uas.tocsr()
    if unit_scope in out.columnar:
        kept = np.flatnonzero(result.unit_kept)
        rows = uas[kept]
        out.columns.append(
            Column(
                unit_scope,
                "uas",
                out.names(unit_ids, kept),
                np.full(kept.size, np.nan),
                detail_key="scores",
                names=tuple(names),
                indptr=rows.indptr.astype(np.int64),
                indices=rows.indices.astype(np.int64),
                data=rows.data.astype(np.float64),
            )
        )
    else:
        for u in np.flatnonzero(result.unit_kept):
            lo, hi = uas.indptr[u], uas.indptr[u + 1]
            scores = {
                names[a]: round(float(s), 12)
                for a, s in zip(uas.indices[lo:hi], uas.data[lo:hi], strict=True)
            }
            out.values.append(
                Value(unit_scope, str(unit_ids[u]), "uas", None, detail={"scores": scores})
            )
    if closed and result.aqs is not None:
        out.per_subject("annotation", "aqs", names, result.aqs)
