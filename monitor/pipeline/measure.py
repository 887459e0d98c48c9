"""From a campaign's coded arrays to the values of a run (names in docs/store-values.md).

Every measure that applies to the campaign's kind is computed by its kind's module, from the
integer-coded arrays of :mod:`monitor.store.arrays`; the measures themselves live in
:mod:`monitor.metrics`, their incremental updates in :mod:`monitor.incremental`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from monitor.core.catalog import Kind
from monitor.pipeline import behaviour, multilabel, pairwise, scalar
from monitor.pipeline.collect import Values
from monitor.pipeline.params import Coded, Params

MEASURES: dict[Kind, Callable[[Coded, Params], Values]] = {
    Kind.RATING: scalar.measure,
    Kind.LABEL: scalar.measure,
    Kind.MULTILABEL: multilabel.measure,
    Kind.PAIRWISE: pairwise.measure,
}
"""Each kind's measures."""


def measure(coded: Coded, params: Params) -> Values:
    """All values of a run (single values and columns), the states it keeps for the next run
    and the parameters that produced them."""
    arrays = coded.arrays
    out = params.values(coded.info.name)
    out.parameters.update(
        seed=params.bootstrap.seed, bootstrap_samples=params.bootstrap.bootstrap_samples
    )
    W, N = len(arrays.worker_ids), len(arrays.item_ids)
    n_by_worker = np.bincount(arrays.workers, minlength=W)
    active = n_by_worker > 0
    out.campaign_value("n_workers", int(np.count_nonzero(active)))
    judged = np.zeros(N, dtype=bool)
    judged[arrays.items] = True
    if arrays.right is not None:
        judged[arrays.right] = True
    out.campaign_value("n_items", int(np.count_nonzero(judged)))
    out.campaign_value("n_judgments", arrays.n)
    out.per_subject("worker", "n_judgments", arrays.worker_ids, n_by_worker, mask=active)
    has_d = np.isfinite(arrays.duration_s)
    if has_d.any():
        d_n = np.bincount(arrays.workers[has_d], minlength=W)
        d_sum = np.bincount(arrays.workers[has_d], weights=arrays.duration_s[has_d], minlength=W)
        with np.errstate(invalid="ignore", divide="ignore"):
            out.per_subject(
                "worker", "mean_duration_s", arrays.worker_ids, d_sum / d_n, n=d_n, mask=d_n > 0
            )
    out.add(behaviour.measure(coded, params))
    return out.add(MEASURES[coded.kind](coded, params))
