"""CrowdTruth 2.0 in a run: the scores of :func:`~monitor.incremental.crowdtruth.crowdtruth_run`
(a full iteration or a local update) stored as WQS/WWA/WUA per worker, UQS and UAS per unit,
AQS per annotation (closed tasks)."""

from __future__ import annotations

import numpy as np

from monitor.core.results import Column, Value
from monitor.incremental.crowdtruth import STATE, CrowdTruthTask, crowdtruth_run
from monitor.metrics.crowdtruth.scores import CrowdTruthResult
from monitor.pipeline.collect import Values
from monitor.pipeline.params import Params


def crowdtruth_values(campaign: str, task: CrowdTruthTask, params: Params) -> Values:
    """CrowdTruth's scores of ``task`` (its state for the next run, its iterations)."""
    out = params.values(campaign)
    run = crowdtruth_run(task, params.crowdtruth, params.warm)
    if run.state is not None:
        out.states[STATE] = run.state
    out.parameters["crowdtruth"] = {
        "max_iter": params.crowdtruth.crowdtruth_max_iter,
        "tol": params.crowdtruth.crowdtruth_tol,
        "warm_start": params.warm is not None,
        **run.parameters,
    }
    out.campaign_value("crowdtruth_iterations", run.result.iterations, detail=run.detail)
    _store(out, run.result, task)
    return out


def _store(out: Values, result: CrowdTruthResult, task: CrowdTruthTask) -> None:
    worker_ids, unit_ids, unit_scope = task.worker_ids, task.unit_ids, task.unit_scope
    names, closed = task.names, task.closed
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
        for u in np.flatnonzero(result.unit_kept).tolist():
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
