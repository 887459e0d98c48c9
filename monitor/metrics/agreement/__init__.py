"""Agreement between workers on the same items: Krippendorff's alpha, percent agreement,
Cohen's and Fleiss' kappa, Scott's pi, each worker against the aggregate, and bootstrap
intervals (percentile over items, and the updatable Poisson bootstrap)."""

from monitor.metrics.agreement.aggregate import codetermination, worker_vs_aggregate
from monitor.metrics.agreement.bootstrap import bootstrap_alpha, bootstrap_fleiss, bootstrap_kappa
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

__all__ = [
    "ValueCounts",
    "bootstrap_alpha",
    "bootstrap_fleiss",
    "bootstrap_kappa",
    "codetermination",
    "cohen_kappa",
    "fleiss_kappa",
    "krippendorff_alpha",
    "krippendorff_alphas",
    "pairwise_agreement",
    "percent_agreement",
    "scott_pi",
    "worker_vs_aggregate",
]
