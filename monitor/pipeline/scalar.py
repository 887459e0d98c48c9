"""Rating and label campaigns (one answer per judgment): the agreement family, CrowdTruth with
the scale values or categories as annotations, Phi (ratings), gold accuracy and the
reliability model, and the co-determination of truths and worker weights."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import numpy as np

from monitor.core.catalog import Kind
from monitor.incremental.crowdtruth import CrowdTruthTask
from monitor.incremental.phi import STATE as PHI_STATE
from monitor.incremental.phi import phi_run
from monitor.metrics.crowdtruth.scores import label_counts
from monitor.pipeline.agreement import Latest, agreement, codetermination
from monitor.pipeline.collect import Values, answers_detail, num, scale_codes
from monitor.pipeline.crowdtruth import crowdtruth_values
from monitor.pipeline.params import Coded, Params
from monitor.pipeline.reliability import gold_values, reliability


def measure(coded: Coded, params: Params) -> Values:
    """Every measure of a rating or label campaign.

    In an incremental run a second thread takes co-determination and the reliability model
    while this one takes the other measures (their NumPy and SciPy passes release the GIL); a
    full run takes them in turn, its peak memory that of its largest measure. Their values come
    after Phi's either way."""
    info, arrays = coded.info, coded.arrays
    out = params.values(info.name)
    codes, domain, names = scale_codes(info, arrays)
    answers_detail(out, "item", arrays.item_ids, arrays.items, codes, names)
    keep = arrays.latest
    if keep.size == arrays.n:  # no repeated judgment: the arrays themselves, not copies
        keep = slice(None)  # type: ignore[assignment]
    answers = codes[keep] if arrays.kind == Kind.LABEL else arrays.values[keep]
    latest = Latest(arrays.items[keep], arrays.workers[keep], codes[keep], answers, domain)
    out.parameters["repeated_judgments"] = "latest per worker and item counts for agreement"
    pool = ThreadPoolExecutor(1, thread_name_prefix="monitor-measures")

    def later(fn: Callable[[], Values]) -> Callable[[], Values]:
        return pool.submit(fn).result if params.warm is not None else fn

    try:
        co = later(partial(codetermination, coded, params, latest))
        model = later(partial(reliability, coded, params, latest.items, latest.workers, answers))
        out.add(agreement(coded, params, latest, codes))
        task = CrowdTruthTask(
            arrays.workers, arrays.items, label_counts(codes, len(domain)), arrays.worker_ids,
            arrays.item_ids, "item", [str(x) for x in names], True, params.names,
            "item" in params.columnar, arrays,
        )  # fmt: skip
        out.add(crowdtruth_values(info.name, task, params))
        del task  # its annotation counts (a row per judgment) are not kept for the others
        if arrays.kind == Kind.RATING and params.phi.phi != "off":
            out.add(_phi(coded, params, latest))
        out.add(model())
        out.add(co())
    finally:  # after an error, the part not started yet never starts
        pool.shutdown(cancel_futures=True)
    return out


def _phi(coded: Coded, params: Params, latest: Latest) -> Values:
    """Phi with its HPD interval, and each item's posterior mean (Checco et al. 2017)."""
    info, arrays = coded.info, coded.arrays
    out = params.values(info.name)
    scale = (float(info.scale_min), float(info.scale_max))  # type: ignore[arg-type]
    res, state = phi_run(
        latest.items, latest.answers, scale=scale, n_items=len(arrays.item_ids),
        gold=gold_values(info, arrays), options=params.phi, warm=params.warm,
    )  # fmt: skip
    if state is not None:
        out.states[PHI_STATE] = state
    engine = {"map": "map", "full": "exact", "nuts": "nuts"}[params.phi.phi]
    out.parameters["phi"] = {"engine": engine, "prior": res.prior, "mapping": res.mapping}
    detail: dict[str, Any] = {
        "map": num(res.map),
        "median": num(res.median),
        "method": res.method,
        "reading": res.reading,
        "rhat": num(res.rhat),
        "ess": num(res.ess),
        "divergences": res.divergences,
        "prior": res.prior,
        "mapping": res.mapping,
    }
    value = res.mean if engine != "map" else res.map
    out.campaign_value("phi", value, res.hpd, n=res.n_items, detail=detail, reason=res.reason)
    mask = np.isfinite(res.item_mean)
    out.per_subject("item", "phi_mu", arrays.item_ids, res.item_mean,
                    low=res.item_hpd[:, 0], high=res.item_hpd[:, 1], mask=mask)  # fmt: skip
    return out
