"""CrowdTruth 2.0 properties on random campaigns, against a literal loop version of the
reference package's iteration (dictionaries, one worker pair at a time, as CrowdTruth-core
2.1 does it) written here for the tests only."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import scipy.sparse as sp
from hypothesis import example, given, settings
from hypothesis import strategies as st

from monitor.metrics.crowdtruth.scores import crowdtruth
from tests.hypothesis_profiles import examples

FLOOR = 1e-8


LITERAL_CAP = 200


def literal(rows, n_ann, closed, tol=1e-3):
    """rows: (worker, unit, {annotation: count}); one judgment per worker and unit."""
    rows = [r for r in rows if sum(r[2].values()) > 0]
    per_unit = defaultdict(int)
    for _, u, _ in rows:
        per_unit[u] += 1
    rows = [r for r in rows if per_unit[r[1]] > 1]
    anns = range(n_ann)
    vec = {(w, u): [v.get(a, 0) for a in anns] for w, u, v in rows}
    unit_workers = defaultdict(list)
    worker_units = defaultdict(list)
    for w, u, _ in rows:
        unit_workers[u].append(w)
        worker_units[w].append(u)
    uqs = {u: 1.0 for u in unit_workers}
    wqs = {w: 1.0 for w in worker_units}
    aqs = [1.0] * n_ann

    def wcos(x, y, aq):
        num = sum(aq[a] * x[a] * y[a] for a in anns)
        return num / math.sqrt(
            sum(aq[a] * x[a] ** 2 for a in anns) * sum(aq[a] * y[a] ** 2 for a in anns)
        )

    history = []
    if not unit_workers:
        return history, {}
    while True:
        new_aqs = list(aqs)
        if closed:
            top, bottom = [0.0] * n_ann, [0.0] * n_ann
            for i in worker_units:
                for j in worker_units:
                    shared = set(worker_units[i]) & set(worker_units[j])
                    if i == j or not shared:
                        continue
                    for a in anns:
                        n = sum(uqs[u] * vec[i, u][a] * vec[j, u][a] for u in shared)
                        d = sum(uqs[u] * vec[j, u][a] for u in shared)
                        if d > 0:
                            top[a] += wqs[i] * wqs[j] * n / d
                            bottom[a] += wqs[i] * wqs[j]
            new_aqs = [max(top[a] / bottom[a], FLOOR) if bottom[a] > FLOOR else FLOOR for a in anns]
        new_uqs = {}
        for u, ws in unit_workers.items():
            n = d = 0.0
            for k, i in enumerate(ws):
                for j in ws[k + 1 :]:
                    n += wcos(vec[i, u], vec[j, u], aqs) * wqs[i] * wqs[j]
                    d += wqs[i] * wqs[j]
            new_uqs[u] = n / max(d, FLOOR)
        wwa, wua = {}, {}
        for i, us in worker_units.items():
            n = d = 0.0
            for u in us:
                for j in unit_workers[u]:
                    if j != i:
                        n += wcos(vec[i, u], vec[j, u], aqs) * wqs[j] * uqs[u]
                        d += wqs[j] * uqs[u]
            wwa[i] = n / max(d, FLOOR)
            n = d = 0.0
            for u in us:
                own = [wqs[i] * x for x in vec[i, u]]
                unit = [sum(wqs[j] * vec[j, u][a] for j in unit_workers[u]) for a in anns]
                rest = [unit[a] - own[a] for a in anns]
                dw = sum(aqs[a] * own[a] ** 2 for a in anns)
                ds = sum(aqs[a] * rest[a] ** 2 for a in anns)
                root = math.sqrt(dw * ds)
                c = FLOOR if root < FLOOR else sum(aqs[a] * own[a] * rest[a] for a in anns) / root
                n += c * uqs[u]
                d += uqs[u]
            wua[i] = n / max(d, FLOOR)
        new_wqs = {i: wwa[i] * wua[i] for i in worker_units}
        change = max(
            [abs(new_uqs[u] - uqs[u]) for u in uqs]
            + [abs(new_wqs[w] - wqs[w]) for w in wqs]
            + ([abs(new_aqs[a] - aqs[a]) for a in anns] if closed else [])
        )
        uqs, wqs, aqs = new_uqs, new_wqs, new_aqs
        history.append((uqs, wqs, wwa, wua, aqs))
        if change < tol or len(history) >= LITERAL_CAP:
            break
    uas = {
        (u, a): sum(vec[w, u][a] * wqs[w] for w in ws) / max(sum(wqs[w] for w in ws), FLOOR)
        for u, ws in unit_workers.items()
        for a in anns
    }
    return history, uas


@st.composite
def campaigns(draw):
    n_w = draw(st.integers(2, 5))
    n_u = draw(st.integers(1, 5))
    n_ann = draw(st.integers(1, 4))
    rows = []
    for u in range(n_u):
        for w in range(n_w):
            if draw(st.booleans()):
                counts = draw(st.lists(st.integers(0, 2), min_size=n_ann, max_size=n_ann))
                rows.append((w, u, {a: c for a, c in enumerate(counts) if c}))
    return n_w, n_u, n_ann, rows


def arrays(rows, n_ann):
    workers = np.array([r[0] for r in rows], dtype=np.int64)
    units = np.array([r[1] for r in rows], dtype=np.int64)
    dense = np.zeros((len(rows), n_ann))
    for k, (_, _, v) in enumerate(rows):
        for a, c in v.items():
            dense[k, a] = c
    return workers, units, sp.csr_array(dense)


@settings(max_examples=examples(50), deadline=None)
@given(campaigns(), st.booleans())
@example(
    campaign=(
        4,
        4,
        4,
        [(1, 1, {2: 2, 3: 1}), (3, 1, {0: 1, 3: 1}), (0, 3, {0: 2}), (3, 3, {0: 2, 3: 1})],
    ),
    closed=True,
)  # scores that never settle: both loops stop at the cap
def test_matches_literal_package_iteration(campaign, closed):
    n_w, n_u, n_ann, rows = campaign
    workers, units, counts = arrays(rows, n_ann)
    # the same cap on iterations as the literal loop: on a campaign whose scores never settle
    # (found by random draws) both stop there, and the numbers must still be the same
    r = crowdtruth(
        workers, units, counts, closed=closed, n_workers=n_w, n_units=n_u, max_iter=LITERAL_CAP
    )
    history, uas = literal(rows, n_ann, closed)
    kept_units = set(history[0][0]) if history else set()
    assert set(np.flatnonzero(r.unit_kept)) == kept_units
    if not kept_units:
        assert r.iterations == 0
        return
    assert r.iterations == len(history)
    for got_final, got_first, k in (
        (r.uqs, r.initial.uqs, 0),
        (r.wqs, r.initial.wqs, 1),
        (r.wwa, r.initial.wwa, 2),
        (r.wua, r.initial.wua, 3),
    ):
        for key, value in history[-1][k].items():
            assert abs(got_final[key] - value) < 1e-9
        for key, value in history[0][k].items():
            assert abs(got_first[key] - value) < 1e-9
    if closed:
        np.testing.assert_allclose(r.aqs, history[-1][4], atol=1e-9)
        np.testing.assert_allclose(r.initial.aqs, history[0][4], atol=1e-9)
    dense = r.uas.toarray()
    for (u, a), value in uas.items():
        assert abs(dense[u, a] - value) < 1e-9


@settings(max_examples=examples(50), deadline=None)
@given(campaigns(), st.booleans())
def test_scores_are_bounded_and_masks_consistent(campaign, closed):
    n_w, n_u, n_ann, rows = campaign
    binary = [(w, u, {a: 1 for a in v}) for w, u, v in rows]
    workers, units, counts = arrays(binary, n_ann)
    r = crowdtruth(workers, units, counts, closed=closed, n_workers=n_w, n_units=n_u)
    for values, kept in ((r.uqs, r.unit_kept), (r.wqs, r.worker_kept), (r.wwa, r.worker_kept)):
        assert np.isnan(values[~kept]).all()
        assert np.all((values[kept] >= -1e-12) & (values[kept] <= 1 + 1e-12))
    assert np.all((r.uas.data >= -1e-12) & (r.uas.data <= 1 + 1e-12))
    if closed and r.unit_kept.any():
        assert np.all((r.aqs >= FLOOR) & (r.aqs <= 1 + 1e-12))
    assert r.converged == (r.max_change < 1e-3)


@settings(max_examples=examples(50), deadline=None)
@given(campaigns(), st.booleans(), st.randoms(use_true_random=False))
def test_judgment_order_does_not_matter(campaign, closed, rnd):
    n_w, n_u, n_ann, rows = campaign
    workers, units, counts = arrays(rows, n_ann)
    order = np.arange(len(rows))
    rnd.shuffle(order)
    a = crowdtruth(workers, units, counts, closed=closed, n_workers=n_w, n_units=n_u)
    b = crowdtruth(
        workers[order], units[order], counts[order], closed=closed, n_workers=n_w, n_units=n_u
    )
    np.testing.assert_allclose(a.wqs, b.wqs, atol=1e-12, equal_nan=True)
    np.testing.assert_allclose(a.uqs, b.uqs, atol=1e-12, equal_nan=True)
    assert a.iterations == b.iterations
