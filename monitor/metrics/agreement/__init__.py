"""Agreement between workers on the same items: Krippendorff's alpha (over sets too, with the
MASI or Jaccard distance), percent agreement,
Cohen's and Fleiss' kappa, Scott's pi, each worker against the aggregate, and bootstrap
intervals (percentile over items, and the updatable Poisson bootstrap)."""

from monitor.metrics.agreement.aggregate import codetermination, worker_vs_aggregate
from monitor.metrics.agreement.bootstrap import (
    bootstrap_alpha,
    bootstrap_fleiss,
    bootstrap_kappa,
    bootstrap_set_alpha,
)
from monitor.metrics.agreement.kappa import (
    cohen_kappa,
    fleiss_kappa,
    pairwise_agreement,
    percent_agreement,
    scott_pi,
)
from monitor.metrics.agreement.krippendorff import (
    ValueCounts,
    krippendorff_alpha,
    krippendorff_alphas,
)
from monitor.metrics.agreement.sets import SetCounts, set_alpha

__all__ = [
    "SetCounts",
    "ValueCounts",
    "bootstrap_alpha",
    "bootstrap_fleiss",
    "bootstrap_kappa",
    "bootstrap_set_alpha",
    "codetermination",
    "cohen_kappa",
    "fleiss_kappa",
    "krippendorff_alpha",
    "krippendorff_alphas",
    "pairwise_agreement",
    "percent_agreement",
    "scott_pi",
    "set_alpha",
    "worker_vs_aggregate",
]
