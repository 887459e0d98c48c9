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


Judged = tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]
"""Items, workers and category codes of the judgments the model saw (the latest of each pair)."""


def label_stop(
    out: Values, options: ModelOptions, arrays: CampaignArrays, judged: Judged, res: Any
) -> None:
    """``stop_line`` (campaign), ``stop_evidence`` and ``stop_after`` (workers) of the
    ``judged`` and the Dawid-Skene fit ``res`` (a ``LabelModel``). Nothing where fewer than :data:`MIN_TYPICAL` workers have
    ``model_min_judgments`` judgments, or the typical one is no better than chance."""
    items, workers, codes = judged
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
    scores, nulls = label_scores(res.posterior[items], codes, own, line)
    order = arrays.order[arrays.latest] if arrays.latest.size == items.size else arrays.order
    test = stop_test(workers, order, scores, nulls, n_workers=len(arrays.worker_ids),
                     alpha=options.stop_alpha)  # fmt: skip
    ids = arrays.worker_ids
    out.per_subject("worker", "stop_evidence", ids, test.evalue, n=test.n, mask=test.n > 0)
    out.per_subject("worker", "stop_after", ids, test.stopped_after.astype(np.float64),
                    n=test.n, mask=test.stopped)  # fmt: skip
