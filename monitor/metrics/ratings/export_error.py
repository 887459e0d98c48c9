"""The expected mean absolute error of the exported ratings.

Each item's exported value is its posterior mean under the reliability model, with posterior
sd ``sd_i`` (:mod:`monitor.metrics.ratings.model`). Its error against the true value is then
normal with mean 0 and sd ``sd_i``, so ``E|e_i| = sd_i sqrt(2 / pi)`` and ``Var|e_i| = sd_i^2
(1 - 2 / pi)``. The expected MAE over ``N`` items is ``mean_i sd_i sqrt(2 / pi)``; the items'
errors being independent draws, its sd is ``sqrt(sum_i sd_i^2 (1 - 2 / pi)) / N``; the
interval is ``E +- z`` times it (at least 0).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import ndtri

from monitor.metrics.labels.export_accuracy import ExpectedAccuracy


def expected_mae(sd: ArrayLike, *, confidence: float = 0.95) -> ExpectedAccuracy:
    """Expected mean absolute error of posterior means of posterior sd ``sd`` (module
    docstring); items whose sd is not finite are left out.

    >>> r = expected_mae([1.0, 1.0, 1.0, 1.0])
    >>> round(r.value, 3), round(r.items_sd, 3)
    (0.798, 0.301)
    """
    s = np.asarray(sd, dtype=np.float64)
    s = s[np.isfinite(s)]
    N = s.size
    if N == 0:
        nan = float("nan")
        return ExpectedAccuracy(nan, nan, nan, 0, nan, nan)
    value = float(s.mean() * math.sqrt(2.0 / math.pi))
    items_sd = float(math.sqrt(float((s**2).sum()) * (1.0 - 2.0 / math.pi)) / N)
    half = float(ndtri(0.5 + confidence / 2.0)) * items_sd
    return ExpectedAccuracy(value, max(0.0, value - half), value + half, N, 0.0, items_sd)


__all__ = ["expected_mae"]
