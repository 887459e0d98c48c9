"""Agreement between workers on the same items: Krippendorff's alpha (over sets too, with the
MASI or Jaccard distance), percent agreement,
Cohen's and Fleiss' kappa, Scott's pi, each worker against the aggregate, and bootstrap
intervals (percentile over items, and the updatable Poisson bootstrap)::

    vc = ValueCounts.from_judgments(items, codes, value_domain=scale)   # or from_grouped(...)
    krippendorff_alpha(vc, "interval"); percent_agreement(vc); fleiss_kappa(vc)
    cohen_kappa(a, b, n_values, weights="linear"); scott_pi(a, b, n_values)
    pairwise_agreement(items, workers, codes, value_domain=scale, min_overlap=10)
    bootstrap_alpha(vc, "interval", seed=7); bootstrap_kappa(a, b, n_values, seed=7)
    worker_vs_aggregate(items, workers, codes, kind="rating", value_domain=scale)
    codetermination(items, workers, codes, kind="label", max_iter=100, tol=1e-6)
"""

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
