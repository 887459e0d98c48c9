"""CrowdTruth 2.0 (Dumitrache et al. 2018): unit, worker and annotation quality scores, the
annotation vectors they are computed from, and the local update after new judgments."""

from monitor.metrics.crowdtruth.layout import label_counts, multilabel_counts, pairwise_outcomes
from monitor.metrics.crowdtruth.scores import crowdtruth, crowdtruth_local

__all__ = [
    "crowdtruth",
    "crowdtruth_local",
    "label_counts",
    "multilabel_counts",
    "pairwise_outcomes",
]
