"""The stop test of a label campaign's workers, from the run's Dawid-Skene fit
(:mod:`monitor.metrics.stopping`): each worker's judgments in order of arrival, scored against
the posterior of the others' answers (or the gold), tested against the stop line."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.metrics.stopping import label_scores, stop_line, stop_test
from monitor.pipeline.collect import Values
from monitor.pipeline.params import ModelOptions
from monitor.store.coded import CampaignArrays

MIN_TYPICAL = 3
"""Workers with ``model_min_judgments`` it takes to say what the typical worker reaches."""


def label_stop(
    out: Values,
    options: ModelOptions,
    arrays: CampaignArrays,
    items: NDArray[np.int64],
    workers: NDArray[np.int64],
    codes: NDArray[np.int64],
    res: Any,  # noqa: ANN401 - a LabelModel (Dawid-Skene, with confusion matrices)
) -> None:
    """``stop_line`` (campaign), ``stop_evidence`` and ``stop_after`` (workers) of the judgments
    ``items``, ``workers``, ``codes`` (the latest of each worker and item, as the model saw
    them). Nothing where fewer than :data:`MIN_TYPICAL` workers have
    ``model_min_judgments`` judgments, or the typical one is no better than chance."""
    K = res.posterior.shape[1]
    enough = res.n >= max(options.model_min_judgments, 1)
    if int(enough.sum()) < MIN_TYPICAL or K < 2:
        return
    typical = float(np.median(res.accuracy[enough]))
    line = stop_line(typical, K, share=options.stop_share, margin=options.stop_margin)
    if not np.isfinite(line):
        return
    out.campaign_value(
        "stop_line", line,
        detail={"typical": typical, "alpha": options.stop_alpha, "share": options.stop_share,
                "margin": options.stop_margin, "classes": K},
    )  # fmt: skip
    own = res.confusion[workers, :, codes]
    scores, nulls = label_scores(items, codes, res.posterior, own, line)
    order = arrays.order[arrays.latest] if arrays.latest.size == items.size else arrays.order
    test = stop_test(workers, order, scores, nulls, n_workers=len(arrays.worker_ids),
                     alpha=options.stop_alpha)  # fmt: skip
    ids = arrays.worker_ids
    out.per_subject("worker", "stop_evidence", ids, test.evalue, n=test.n, mask=test.n > 0)
    out.per_subject("worker", "stop_after", ids, test.stopped_after.astype(np.float64),
                    n=test.n, mask=test.stopped)  # fmt: skip
