"""The shared conventions of the metric modules."""

from __future__ import annotations

import numpy as np
import pytest

from monitor.metrics.common import group_mean


@pytest.mark.parametrize("seed", range(20))
def test_group_mean_matches_the_plain_expressions(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    groups = rng.integers(0, n, size=int(rng.integers(0, 200)))
    values = rng.normal(size=groups.size) * 10.0 ** rng.integers(-3, 4)
    got = group_mean(groups, values, n)
    count = np.bincount(groups, minlength=n)
    total = np.bincount(groups, weights=values, minlength=n)
    with np.errstate(invalid="ignore", divide="ignore"):
        nan_empty = total / count  # the gold export's and the warm start's plain means
    zero_empty = total / np.maximum(count, 1)  # the held-out check's and the local update's
    np.testing.assert_array_equal(got, nan_empty)
    assert np.array_equal(got[count > 0], zero_empty[count > 0])
    assert got.dtype == np.float64
    assert got.shape == (n,)
