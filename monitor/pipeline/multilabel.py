"""Multi-label campaigns (a set of annotations per judgment): CrowdTruth with the options as
annotations and one binary Dawid-Skene per option; the agreement coefficients are not defined
for sets, and the run says so."""

from __future__ import annotations

import numpy as np

from monitor.incremental.crowdtruth import CrowdTruthTask
from monitor.metrics.crowdtruth.scores import multilabel_counts
from monitor.pipeline.collect import Values, answers_detail
from monitor.pipeline.crowdtruth import crowdtruth_values
from monitor.pipeline.params import Coded, Params
from monitor.pipeline.reliability import multilabel_reliability

UNDEFINED = ("percent_agreement", "krippendorff_alpha", "fleiss_kappa", "cohen_kappa", "scott_pi")
"""The agreement coefficients, undefined for sets of annotations."""


def measure(coded: Coded, params: Params) -> Values:
    """Every measure of a multi-label campaign."""
    info, arrays = coded.info, coded.arrays
    out = params.values(info.name)
    names = arrays.annotation_names
    ann_judgment, ann_code, ann_count = arrays.annotations
    jud = np.repeat(ann_judgment, ann_count)
    ann = np.repeat(ann_code, ann_count)
    counts = multilabel_counts(jud, ann, arrays.n, len(names))
    answers_detail(out, "item", arrays.item_ids, arrays.items[jud], ann, names, arrays.items)
    reason = "not defined for multi-label sets: see the CrowdTruth unit and annotation scores"
    for metric in UNDEFINED:
        out.campaign_value(metric, None, reason=reason)
    task = CrowdTruthTask(
        arrays.workers, arrays.items, counts, arrays.worker_ids, arrays.item_ids, "item",
        [str(x) for x in names], not info.open, params.names, "item" in params.columnar, arrays,
    )  # fmt: skip
    out.add(crowdtruth_values(info.name, task, params))
    return out.add(multilabel_reliability(coded, params))
