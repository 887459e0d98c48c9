"""Hypothesis properties of transitivity: weak orders, relabelling, reversal, incremental counts."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.metrics.preferences.intraobserver import implied_pairs, transitivity, triangle_state

SETTINGS = settings(max_examples=50, deadline=None)


@st.composite
def judgments(draw, max_n: int = 60, n_workers: int = 3, n_items: int = 7):
    n = draw(st.integers(0, max_n))
    ints = st.lists(st.integers(0, 10**6), min_size=n, max_size=n)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    w = rng.integers(0, n_workers, n)
    a = rng.integers(0, n_items, n)
    b = (a + rng.integers(1, n_items, n)) % n_items
    o = rng.integers(-1, 2, n).astype(np.int8)
    t = np.asarray(draw(ints), dtype=float) % draw(st.sampled_from([3, 1000]))
    return w, a, b, o, t


@st.composite
def weak_orders(draw):
    """One annotator judging a random subset of pairs of items ranked with ties."""
    k = draw(st.integers(2, 9))
    levels = np.asarray(draw(st.lists(st.integers(0, 3), min_size=k, max_size=k)))
    pairs = list(itertools.combinations(range(k), 2))
    keep = draw(st.lists(st.booleans(), min_size=len(pairs), max_size=len(pairs)))
    flip = draw(st.lists(st.booleans(), min_size=len(pairs), max_size=len(pairs)))
    left, right = [], []
    for (x, y), kept, f in zip(pairs, keep, flip, strict=True):
        if kept:
            left.append(y if f else x)
            right.append(x if f else y)
    left, right = np.asarray(left, dtype=np.int64), np.asarray(right, dtype=np.int64)
    outcome = np.sign(levels[left] - levels[right]).astype(np.int8) if len(left) else left
    return levels, left, right, outcome


def brute_force(w, a, b, o, t):
    """Triplet counts per worker by enumeration, latest judgment of a pair counting."""
    rel = {}
    for i in np.lexsort((np.arange(len(w)), t)):
        x, y, r = a[i], b[i], o[i]
        if x > y:
            x, y, r = y, x, -r
        rel[(w[i], x, y)] = r
    out = {}
    for wk in set(w.tolist()):
        items = sorted({i for (ww, x, y) in rel if ww == wk for i in (x, y)})
        total = ok = 0
        for x, y, z in itertools.combinations(items, 3):
            if all((wk, p, q) in rel for p, q in ((x, y), (y, z), (x, z))):
                total += 1
                pattern = (rel[(wk, x, y)], rel[(wk, y, z)], rel[(wk, x, z)])
                ok += any(
                    pattern == (np.sign(p - q), np.sign(q - r), np.sign(p - r))
                    for p, q, r in itertools.product(range(3), repeat=3)
                )
        out[wk] = (total, ok)
    return out


def records(res):
    return [
        (r.worker, r.n_pairs_judged, r.n_triplets, r.n_transitive, r.p_a, r.kappa, r.has_ties)
        for r in res.annotators
    ]


@SETTINGS
@given(judgments(), st.lists(st.floats(0, 1), min_size=0, max_size=3))
def test_incremental_equals_recount(data, cuts) -> None:
    w, a, b, o, t = data
    bounds = sorted({0, len(w), *(int(c * len(w)) for c in cuts)})
    state = triangle_state(w[:0], a[:0], b[:0], o[:0], t[:0])
    for lo, hi in itertools.pairwise(bounds):
        state = state.update(w[lo:hi], a[lo:hi], b[lo:hi], o[lo:hi], t[lo:hi])
    full = triangle_state(w, a, b, o, t)
    for field in ("keys", "rel", "order", "ids", "counts", "n_judgments", "n_ties"):
        assert np.array_equal(getattr(state, field), getattr(full, field)), field
    nw = full.n_workers
    assert np.array_equal(state.n_triplets[:nw], full.n_triplets)
    assert np.array_equal(state.n_transitive[:nw], full.n_transitive)

    def as_set(s):
        return {(int(x), *map(int, y)) for x, y in zip(s.cycle_workers, s.cycle_items, strict=True)}

    assert as_set(state) == as_set(full)
    assert len(state.cycle_workers) == len(as_set(state))
    for wk, (total, ok) in brute_force(w, a, b, o, t).items():
        assert (full.n_triplets[wk], full.n_transitive[wk]) == (total, ok)


@SETTINGS
@given(weak_orders())
def test_weak_order_is_fully_transitive(data) -> None:
    levels, left, right, outcome = data
    workers = np.zeros(len(left), dtype=np.int64)
    if not len(left):
        return
    rec = transitivity(workers, left, right, outcome).annotator(0)
    assert rec.n_transitive == rec.n_triplets
    if rec.n_triplets:
        assert rec.kappa == 1.0
    # whatever transitivity implies agrees with the order
    ip = implied_pairs(workers, left, right, outcome)
    judged = {(min(x, y), max(x, y)) for x, y in zip(left.tolist(), right.tolist(), strict=True)}
    for (x, y), r in zip(ip.items.tolist(), ip.relations.tolist(), strict=True):
        assert (x, y) not in judged
        assert r == np.sign(levels[x] - levels[y])


@SETTINGS
@given(judgments(), st.integers(0, 2**32 - 1))
def test_relabelling_items_changes_nothing(data, seed) -> None:
    w, a, b, o, t = data
    perm = np.random.default_rng(seed).permutation(20)
    assert records(transitivity(w, a, b, o, t)) == records(transitivity(w, perm[a], perm[b], o, t))


@SETTINGS
@given(judgments())
def test_reversing_every_preference_keeps_kappa(data) -> None:
    w, a, b, o, t = data
    neg = (-o).astype(np.int8)
    assert records(transitivity(w, a, b, o, t)) == records(transitivity(w, a, b, neg, t))


@SETTINGS
@given(judgments(max_n=40))
def test_implied_pairs_are_unjudged_and_consistent(data) -> None:
    w, a, b, o, t = data
    ip = implied_pairs(w, a, b, o, t)
    judged = {
        (int(x), min(int(p), int(q)), max(int(p), int(q))) for x, p, q in zip(w, a, b, strict=True)
    }
    got = {(int(x), int(p), int(q)) for x, (p, q) in zip(ip.workers, ip.items, strict=True)}
    assert not got & judged
    assert len(got) == len(ip.workers) == int(ip.count.sum())
