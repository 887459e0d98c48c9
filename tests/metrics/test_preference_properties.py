"""Hypothesis properties of the preference model and its flag statistics: bounds, swapping
sides, relabelling annotators and items."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.metrics.preferences.flags import (
    ambiguous_pairs,
    kappa_interval,
    poisson_binomial_sf,
)
from monitor.metrics.preferences.intraobserver import P_E_WEAK, triangle_state
from monitor.metrics.preferences.model import preference_model
from monitor.metrics.preferences.triangles import triplets_per_pair

SETTINGS = settings(max_examples=25, deadline=None)


@st.composite
def campaigns(draw, max_workers: int = 4, max_items: int = 8):
    """Small campaigns: random pairs, answers mostly along a random order, some ties."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    k = draw(st.integers(1, max_workers))
    n_items = draw(st.integers(2, max_items))
    n = draw(st.integers(1, 60))
    s = rng.normal(size=n_items) * 2
    w = rng.integers(0, k, n)
    a = rng.integers(0, n_items, n)
    b = (a + rng.integers(1, n_items, n)) % n_items
    p = 1 / (1 + np.exp(-(s[a] - s[b])))
    y = np.where(rng.random(n) < p, 1, -1)
    y = np.where(rng.random(n) < draw(st.sampled_from([0.0, 0.2])), 0, y).astype(np.int8)
    return w, a, b, y


@SETTINGS
@given(campaigns())
def test_outputs_stay_in_their_ranges(c) -> None:
    w, a, b, y = c
    m = preference_model(w, a, b, y)
    seen = m.n_judgments > 0
    for lo, mid, hi in (
        (m.accuracy_low, m.accuracy, m.accuracy_high),
        (m.score_low, m.score, m.score_high),
        (m.position_bias_low, m.position_bias, m.position_bias_high),
    ):
        assert np.all(lo <= mid + 1e-12)
        assert np.all(mid <= hi + 1e-12)
    assert np.all((m.accuracy > 0) & (m.accuracy < 1))
    for v in (m.agreement_low, m.agreement, m.agreement_high, m.agreement_floor):
        assert np.all((v[seen] >= 0) & (v[seen] <= 1))
    assert np.all(m.agreement_low[seen] <= m.agreement_high[seen] + 1e-12)
    assert np.all((m.tie_propensity >= 0) & (m.tie_propensity <= 1))
    assert np.all(np.isfinite(m.score))
    assert np.all(m.score_se > 0)
    assert m.n_judgments.sum() == len(w)
    assert (m.n_strict + m.n_ties == m.n_judgments).all()


@SETTINGS
@given(campaigns())
def test_swapping_sides_with_flipped_answers_only_negates_bias(c) -> None:
    w, a, b, y = c
    m = preference_model(w, a, b, y)
    s = preference_model(w, b, a, -y)
    np.testing.assert_allclose(s.score, m.score, atol=5e-3)
    np.testing.assert_allclose(s.accuracy, m.accuracy, atol=5e-3)
    np.testing.assert_allclose(s.position_bias, -m.position_bias, atol=5e-3)
    amb, swapped = ambiguous_pairs(m.accuracy, w, a, b, y), ambiguous_pairs(m.accuracy, w, b, a, -y)
    np.testing.assert_array_equal(amb.pairs, swapped.pairs)
    np.testing.assert_allclose(amb.p_value, swapped.p_value)


@SETTINGS
@given(campaigns(), st.integers(0, 2**32 - 1))
def test_relabelling_annotators_and_items_permutes_everything(c, seed) -> None:
    w, a, b, y = c
    rng = np.random.default_rng(seed)
    k, n_items = int(w.max()) + 1, int(max(a.max(), b.max())) + 1
    pw, pi = rng.permutation(k), rng.permutation(n_items)
    m = preference_model(w, a, b, y, n_workers=k, n_items=n_items)
    r = preference_model(pw[w], pi[a], pi[b], y, n_workers=k, n_items=n_items)
    np.testing.assert_allclose(r.score[pi], m.score, atol=5e-3)
    np.testing.assert_allclose(r.accuracy[pw], m.accuracy, atol=5e-3)
    amb = ambiguous_pairs(m.accuracy, w, a, b, y)
    ramb = ambiguous_pairs(r.accuracy, pw[w], pi[a], pi[b], y)
    key = {tuple(p): v for p, v in zip(amb.pairs.tolist(), amb.p_value, strict=True)}
    for (x, z), v in zip(ramb.pairs.tolist(), ramb.p_value, strict=True):
        inv = np.argsort(pi)
        assert abs(key[tuple(sorted((int(inv[x]), int(inv[z]))))] - v) < 0.05


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=0, max_size=7), st.integers(-1, 8))
def test_poisson_binomial_tail_matches_enumeration(probs, k) -> None:
    p = np.asarray(probs, dtype=float)
    group = np.zeros(len(p), dtype=np.int64)
    got = poisson_binomial_sf(group, p, np.array([k]), 1)[0]
    want = 0.0
    for bits in itertools.product([0, 1], repeat=len(p)):
        if sum(bits) >= k:
            want += float(np.prod([q if x else 1 - q for x, q in zip(bits, p, strict=True)]))
    assert abs(got - min(want, 1.0)) < 1e-9


@SETTINGS
@given(campaigns(max_workers=2, max_items=6))
def test_kappa_interval_brackets_kappa(c) -> None:
    w, a, b, y = c
    state = triangle_state(w, a, b, y)
    sq = triplets_per_pair(state)
    ki = kappa_interval(state.n_triplets, state.n_transitive, sq, P_E_WEAK)
    has = state.n_triplets > 0
    assert np.all(ki.low[has] <= ki.kappa[has] + 1e-12)
    assert np.all(ki.kappa[has] <= ki.high[has] + 1e-12)
    assert np.all(ki.high[has] <= 1 + 1e-12)
    assert np.all(ki.low[has] >= -P_E_WEAK / (1 - P_E_WEAK))
    assert np.all(ki.n_effective[has] <= state.n_triplets[has])
    assert np.all(ki.n_effective[has] >= 1 - 1e-12)
    assert np.all(np.isnan(ki.kappa[~has]))
