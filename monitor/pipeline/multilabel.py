"""Multi-label campaigns (a set of annotations per judgment): Krippendorff's alpha over the
sets (MASI or Jaccard distance, on the latest judgment of each worker and item) with its
bootstrap interval, CrowdTruth with the options as annotations and one binary Dawid-Skene per
option; the coefficients of single answers (percent agreement, the kappas) are not defined for
sets, and the run says so."""

from __future__ import annotations

import numpy as np

from monitor.incremental.crowdtruth import CrowdTruthTask
from monitor.metrics.agreement.bootstrap import bootstrap_set_alpha
from monitor.metrics.agreement.sets import SetCounts, check_distance, set_alpha
from monitor.metrics.crowdtruth.scores import multilabel_counts
from monitor.pipeline.collect import Values, answers_detail, bootstrap_interval, num
from monitor.pipeline.crowdtruth import crowdtruth_values
from monitor.pipeline.params import Coded, Params
from monitor.pipeline.reliability import multilabel_reliability

UNDEFINED = ("percent_agreement", "fleiss_kappa", "cohen_kappa", "scott_pi")
"""The agreement coefficients of single answers, undefined for sets of annotations."""


def set_agreement(coded: Coded, params: Params) -> Values:
    """Krippendorff's alpha over the sets of the latest judgment of each worker and item, at
    the ``set_distance`` setting, with its bootstrap interval over items."""
    arrays = coded.arrays
    out = params.values(coded.info.name)
    distance = check_distance(params.agreement.set_distance)
    ann_judgment, ann_code, _ = arrays.annotations
    latest = arrays.latest
    position = np.full(arrays.n, -1, dtype=np.int64)
    position[latest] = np.arange(latest.size)
    keep = position[ann_judgment] >= 0
    sc = SetCounts.from_annotations(
        arrays.items[latest], position[ann_judgment[keep]], ann_code[keep],
        n_items=len(arrays.item_ids), n_options=len(arrays.annotation_names),
    )  # fmt: skip
    res = set_alpha(sc, distance)
    ci = bootstrap_interval(
        params.bootstrap, res.alpha,
        lambda b, s: bootstrap_set_alpha(sc, distance, n_boot=b, seed=s),
    )  # fmt: skip
    detail = {
        "level": distance,
        "D_o": num(res.observed_disagreement),
        "D_e": num(res.expected_disagreement),
        "sets": res.n_sets,
    }
    out.campaign_value("krippendorff_alpha", res.alpha, ci, res.n_pairable, detail, res.reason)
    return out


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
    reason = "not defined for multi-label sets: see alpha over the sets (MASI or Jaccard)"
    for metric in UNDEFINED:
        out.campaign_value(metric, None, reason=reason)
    task = CrowdTruthTask(
        arrays.workers, arrays.items, counts, arrays.worker_ids, arrays.item_ids, "item",
        [str(x) for x in names], not info.open, params.names, "item" in params.columnar, arrays,
    )  # fmt: skip
    out.add(crowdtruth_values(info.name, task, params))
    out.add(set_agreement(coded, params))
    return out.add(multilabel_reliability(coded, params))
