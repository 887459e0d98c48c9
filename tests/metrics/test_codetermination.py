"""Co-determination converges, or says it did not (issue 16, item 7).

The plain rounds contract slowly on rating campaigns: 100 of them stopped short of the fixed
point, and a warm start from another run's weights could end at another fixed point.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.metrics.agreement.aggregate import codetermination

N_ITEMS, N_WORKERS, PER_ITEM, V = 40, 8, 3, 5
DOMAIN = np.arange(V, dtype=np.float64)
KW = {"kind": "rating", "value_domain": DOMAIN, "n_workers": N_WORKERS, "n_items": N_ITEMS}


def noisy_ratings(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """40 items, 3 of 8 workers each, ratings 0..4 at random (no consensus: the hard case)."""
    rng = np.random.default_rng(seed)
    items = np.repeat(np.arange(N_ITEMS), PER_ITEM)
    workers = np.concatenate(
        [rng.choice(N_WORKERS, PER_ITEM, replace=False) for _ in range(N_ITEMS)]
    )
    values = rng.integers(0, V, items.size)
    order = rng.permutation(items.size)
    return items[order], workers[order], values[order]


def plain_rounds(items, workers, codes, rounds: int) -> np.ndarray:  # noqa: ANN001
    q = np.ones(N_WORKERS)
    for _ in range(rounds):
        q = codetermination(items, workers, codes, initial_weights=q, max_iter=1, **KW).weights
    return q


def test_a_slow_case_converges_to_the_plain_fixed_point() -> None:
    i, w, c = noisy_ratings(125)  # 100 plain rounds left it moving (change 1e-4)
    r = codetermination(i, w, c, max_iter=100, **KW)
    assert r.converged
    assert r.iterations < 100
    assert r.max_change < 1e-6
    # a fixed point: one more plain round does not move it
    again = codetermination(i, w, c, initial_weights=r.weights, max_iter=1, **KW)
    assert again.max_change < 1e-6
    # the one thousands of plain rounds reach
    assert np.max(np.abs(plain_rounds(i, w, c, 3000) - r.weights)) < 1e-5


def test_warm_starts_can_end_elsewhere_so_the_start_is_part_of_the_definition() -> None:
    i, w, c = noisy_ratings(42)
    cut = int(i.size * 0.6)
    part = codetermination(i[:cut], w[:cut], c[:cut], **KW)
    cold = codetermination(i, w, c, **KW)
    warm = codetermination(i, w, c, initial_weights=part.weights, **KW)
    assert cold.converged
    assert warm.converged
    # two fixed points: this is why the pipeline always starts from equal weights
    assert np.max(np.abs(cold.weights - warm.weights)) > 0.5
    assert np.array_equal(codetermination(i, w, c, **KW).weights, cold.weights)


def test_a_cycle_stops_early_and_says_so() -> None:
    # two judges an item; one worker's weight jumps between 0 and 0.034: the map is not
    # continuous at 0 (an item whose judges all weigh 0 falls back to the plain mean)
    rng = np.random.default_rng(78)
    n_items, n_w, per = int(rng.integers(5, 200)), int(rng.integers(5, 30)), int(rng.integers(2, 5))
    items = np.repeat(np.arange(n_items), per)
    workers = np.concatenate([rng.choice(n_w, per, replace=False) for _ in range(n_items)])
    for _ in range(2):
        v = int(rng.integers(2, 6))
        truth = rng.integers(0, v, n_items)
        good = rng.random(n_w) < 0.6
        keep = good[workers] & (rng.random(items.size) < 0.7)
        codes = np.where(keep, truth[items], rng.integers(0, v, items.size))
    kw = {"kind": "rating", "value_domain": np.arange(v, dtype=float), "n_workers": n_w}
    r = codetermination(items, workers, codes, max_iter=1000, **kw)
    assert not r.converged
    assert r.iterations < 1000
    assert r.max_change > 0.01
    again = codetermination(items, workers, codes, max_iter=1000, **kw)
    assert again.iterations == r.iterations
    assert np.array_equal(again.weights, r.weights)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(2, 4),
    st.sampled_from(["label", "rating"]),
)
def test_converged_means_a_fixed_point(seed: int, per: int, kind: str) -> None:
    rng = np.random.default_rng(seed)
    n_items, n_w, v = 30, 6, 4
    items = np.repeat(np.arange(n_items), per)
    workers = np.concatenate([rng.choice(n_w, per, replace=False) for _ in range(n_items)])
    truth = rng.integers(0, v, n_items)
    good = rng.random(n_w) < 0.6
    codes = np.where(
        good[workers] & (rng.random(items.size) < 0.8), truth[items], rng.integers(0, v, items.size)
    )
    kw = {"kind": kind, "n_workers": n_w, "n_items": n_items}
    kw |= {"n_values": v} if kind == "label" else {"value_domain": np.arange(v, dtype=float)}
    r = codetermination(items, workers, codes, max_iter=500, tol=1e-8, **kw)
    assert np.all((r.weights >= 0) & (r.weights <= 1))
    assert 1 <= r.iterations <= 500
    assert r.converged == (r.max_change < 1e-8)
    if r.converged:
        again = codetermination(items, workers, codes, initial_weights=r.weights, max_iter=1, **kw)
        assert again.max_change < 1e-6
    same = codetermination(items, workers, codes, max_iter=500, tol=1e-8, **kw)
    assert np.array_equal(same.weights, r.weights)
    assert same.iterations == r.iterations
