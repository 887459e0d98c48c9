"""Accuracy of each worker on gold items, with an interval that shrinks with the evidence.

Nominal labels: a judgment is correct when it equals the gold code; the worker's accuracy is the
share correct, ``p = c / n``. Ordinal and interval ratings: a judgment earns the distance credit
``1 - |x - g| / (max - min)`` (1 on the gold value, 0 at the far end of the scale), the accuracy
is the mean credit, and ``mae`` the mean absolute error ``mean |x - g|`` on the scale's units.

The interval is the Wilson score interval (Wilson 1927, *JASA* 22:209-212; Brown, Cai & DasGupta
2001, *Statistical Science* 16:101-133) on ``p`` with ``n`` trials::

    centre = (p + z^2 / 2n) / (1 + z^2 / n)
    half   = z / (1 + z^2 / n) * sqrt(p (1 - p) / n + z^2 / 4n^2)

with ``z`` the two-sided normal quantile of ``confidence``. For the distance credit (values in
[0, 1]) the same formula is used on the mean credit, as if the credit sum were a count of
successes: a variable in [0, 1] with mean ``p`` has variance at most ``p (1 - p)`` (the Bernoulli
case), so the interval is conservative (never narrower than the data warrant) and, like the
nominal one, stays wide for a worker with few gold answers: with 3 answers all wrong the upper
end is still 0.56, so a ``gold_floor`` of 0.5 never condemns anyone on 3 gold answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from monitor.metrics.common import check_same_length

Level = Literal["nominal", "ordinal", "interval"]


@dataclass(frozen=True, eq=False)
class GoldAccuracy:
    """Per worker, on the gold items they answered (arrays of shape (W,))."""

    n: NDArray[np.int64] = field(repr=False)
    accuracy: NDArray[np.float64] = field(repr=False)
    low: NDArray[np.float64] = field(repr=False)
    high: NDArray[np.float64] = field(repr=False)
    mae: NDArray[np.float64] | None = field(repr=False)
    level: str
    confidence: float


def wilson_interval(
    p: NDArray[np.float64], n: NDArray[np.float64] | NDArray[np.int64], confidence: float = 0.95
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Wilson score interval on proportions ``p`` out of ``n`` trials (NaN where ``n == 0``)."""
    p = np.asarray(p, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    z = float(special.ndtri(0.5 + confidence / 2.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        z2n = z * z / n
        centre = (p + z2n / 2.0) / (1.0 + z2n)
        half = z / (1.0 + z2n) * np.sqrt(np.maximum(p * (1.0 - p), 0.0) / n + z2n / (4.0 * n))
    low = np.where(n > 0, np.clip(centre - half, 0.0, 1.0), np.nan)
    high = np.where(n > 0, np.clip(centre + half, 0.0, 1.0), np.nan)
    return low, high


def gold_accuracy(
    workers: ArrayLike,
    values: ArrayLike,
    gold: ArrayLike,
    *,
    n_workers: int,
    level: Level,
    scale: tuple[float, float] | None = None,
    confidence: float = 0.95,
) -> GoldAccuracy:
    """Per-worker accuracy on gold items: share correct or mean distance credit, Wilson interval.

    ``workers``, ``values`` and ``gold`` describe the judgments on gold items only: the worker
    code, the answer and the gold value of the judgment's item. ``scale = (min, max)`` is needed
    for ordinal and interval levels (the credit is ``1 - |x - g| / (max - min)``, clipped to
    [0, 1]). Workers without gold answers get ``n = 0`` and NaN everywhere.
    """
    if level not in ("nominal", "ordinal", "interval"):
        raise ValueError(f"level must be 'nominal', 'ordinal' or 'interval', got {level!r}.")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}.")
    w = np.asarray(workers, dtype=np.int64).reshape(-1)
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    g = np.asarray(gold, dtype=np.float64).reshape(-1)
    check_same_length(workers=w, values=x, gold=g)
    if w.size and (w.min() < 0 or w.max() >= n_workers):
        raise ValueError(f"worker codes must lie in 0..{n_workers - 1}.")
    if np.isnan(x).any() or np.isnan(g).any():
        raise ValueError(
            "values and gold must not contain NaN (pass judgments on gold items only)."
        )
    n = np.bincount(w, minlength=n_workers).astype(np.int64)
    mae = None
    if level == "nominal":
        credit = (x == g).astype(np.float64)
    else:
        if scale is None or not scale[1] > scale[0]:
            raise ValueError(f"{level} gold accuracy needs scale=(min, max) with max > min.")
        err = np.abs(x - g)
        credit = np.clip(1.0 - err / (scale[1] - scale[0]), 0.0, 1.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            mae = np.bincount(w, weights=err, minlength=n_workers) / n
    with np.errstate(invalid="ignore", divide="ignore"):
        acc = np.bincount(w, weights=credit, minlength=n_workers) / n
    low, high = wilson_interval(acc, n, confidence)
    return GoldAccuracy(
        n=n, accuracy=acc, low=low, high=high, mae=mae, level=level, confidence=confidence
    )
