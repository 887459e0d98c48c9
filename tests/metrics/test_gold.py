"""Gold accuracy: share correct / distance credit per worker, Wilson interval."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.metrics.labels.gold import gold_accuracy, wilson_interval

Z = 1.959963984540054


def test_nominal_by_hand() -> None:
    # worker 0: 3 wrong answers; worker 1: 1 right; worker 2: no gold answered
    r = gold_accuracy([0, 0, 0, 1], [1, 1, 1, 0], [0, 0, 0, 0], n_workers=3, level="nominal")
    assert r.n.tolist() == [3, 1, 0]
    assert r.accuracy[:2].tolist() == [0.0, 1.0]
    assert np.isnan(r.accuracy[2])
    # Wilson for 0 of n: [0, z^2 / (n + z^2)]; for n of n: [n / (n + z^2), 1]
    assert r.low[0] == 0.0
    assert r.high[0] == pytest.approx(Z**2 / (3 + Z**2))
    assert r.low[1] == pytest.approx(1 / (1 + Z**2))
    assert r.high[1] == 1.0
    assert np.isnan(r.low[2])
    assert np.isnan(r.high[2])
    assert r.mae is None
    assert r.level == "nominal"
    # three wrong gold answers never push the upper end below one half
    assert r.high[0] > 0.5


def test_wilson_matches_formula() -> None:
    p, n = 0.7, 40.0
    centre = (p + Z**2 / (2 * n)) / (1 + Z**2 / n)
    half = Z / (1 + Z**2 / n) * np.sqrt(p * (1 - p) / n + Z**2 / (4 * n * n))
    low, high = wilson_interval(np.array([p]), np.array([n]))
    assert low[0] == pytest.approx(centre - half)
    assert high[0] == pytest.approx(centre + half)


def test_interval_distance_credit_and_mae() -> None:
    # scale 0..100: errors 10 and 30 -> credits 0.9 and 0.7, mae 20
    r = gold_accuracy([0, 0, 1], [60, 20, 50], [50, 50, 50], n_workers=2, level="interval",
                      scale=(0, 100))  # fmt: skip
    assert r.accuracy.tolist() == pytest.approx([0.8, 1.0])
    assert r.mae is not None
    assert r.mae.tolist() == pytest.approx([20.0, 0.0])
    low, high = wilson_interval(np.array([0.8]), np.array([2.0]))
    assert r.low[0] == pytest.approx(low[0])
    assert r.high[0] == pytest.approx(high[0])


def test_ordinal_needs_scale_and_bad_input_raises() -> None:
    with pytest.raises(ValueError, match="scale"):
        gold_accuracy([0], [1], [2], n_workers=1, level="ordinal")
    with pytest.raises(ValueError, match="worker codes"):
        gold_accuracy([3], [1], [1], n_workers=2, level="nominal")
    with pytest.raises(ValueError, match="level"):
        gold_accuracy([0], [1], [1], n_workers=1, level="ratio")  # type: ignore[arg-type]


def test_interval_shrinks_with_n() -> None:
    widths = []
    for n in (3, 30, 300):
        r = gold_accuracy(np.zeros(n, int), np.ones(n), np.ones(n), n_workers=1, level="nominal")
        widths.append(r.high[0] - r.low[0])
    assert widths[0] > widths[1] > widths[2]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 4), st.floats(0, 10), st.floats(0, 10)), min_size=1, max_size=40
    ),
    st.sampled_from(["nominal", "ordinal", "interval"]),
)
def test_properties(rows: list[tuple[int, float, float]], level: str) -> None:
    w = np.array([r[0] for r in rows])
    x = np.round(np.array([r[1] for r in rows]))
    g = np.round(np.array([r[2] for r in rows]))
    r = gold_accuracy(w, x, g, n_workers=5, level=level, scale=(0, 10))  # type: ignore[arg-type]
    seen = r.n > 0
    assert r.n.sum() == len(rows)
    assert np.all((r.accuracy[seen] >= 0) & (r.accuracy[seen] <= 1))
    assert np.all(r.low[seen] <= r.accuracy[seen] + 1e-12)
    assert np.all(r.accuracy[seen] <= r.high[seen] + 1e-12)
    assert np.isnan(r.accuracy[~seen]).all()
    # the order of the judgments does not matter
    perm = np.random.default_rng(0).permutation(len(rows))
    r2 = gold_accuracy(w[perm], x[perm], g[perm], n_workers=5, level=level, scale=(0, 10))  # type: ignore[arg-type]
    assert np.allclose(r.accuracy, r2.accuracy, equal_nan=True)
