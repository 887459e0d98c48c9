"""Transitivity intraobserver kappa: golden cases, edge cases, cycles, implied pairs."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from monitor.metrics.common import encode
from monitor.metrics.preferences.intraobserver import (
    P_E_STRICT,
    P_E_WEAK,
    implied_pairs,
    summarize,
    transitivity,
    triangle_state,
)
from monitor.metrics.preferences.judgments import parse_outcomes
from tests.golden import load, params

CASES = params("seed_transitivity_*.json") + params("pairwise_*.json")
FIELDS = ("n_pairs_judged", "n_triplets", "n_transitive", "p_a", "kappa_weak", "kappa_strict")


def arrays(case: dict) -> dict:
    js = case["judgments"]
    w, worker_names = encode([j["worker"] for j in js])
    codes, _ = encode([j["left"] for j in js] + [j["right"] for j in js])
    return dict(
        workers=w,
        left=codes[: len(js)],
        right=codes[len(js) :],
        outcome=parse_outcomes([j["preference"] for j in js]),
        order=np.array([j["t"] for j in js], dtype=float),
        names=worker_names,
    )


def run(a: dict, **kw):
    return transitivity(a["workers"], a["left"], a["right"], a["outcome"], a["order"], **kw)


@pytest.mark.parametrize("path", CASES)
def test_golden(path: Path) -> None:
    case = load(path)
    a = arrays(case)
    res = run(a, ties_allowed=case["scale"]["ties_allowed"])
    expected = case["expected"]["transitivity"]
    tol = case["tolerance"]
    assert {a["names"][r.worker] for r in res.annotators} == set(expected)
    for rec in res.annotators:
        exp = expected[a["names"][rec.worker]]
        for key in FIELDS:
            got, want = getattr(rec, key), exp[key]
            if want is None:
                assert got is None, (rec.worker, key)
            else:
                assert got == pytest.approx(want, abs=tol), (rec.worker, key)
        assert rec.has_ties == exp["has_ties"]
        p_e = P_E_WEAK if case["scale"]["ties_allowed"] else P_E_STRICT
        assert rec.p_e == p_e
        assert (rec.kappa is None) == (rec.p_a is None)


@pytest.mark.parametrize("path", CASES)
def test_golden_reversed_orientation(path: Path) -> None:
    """Presenting a pair the other way round (and flipping the answer) changes nothing."""
    case = load(path)
    a = arrays(case)
    flip = np.random.default_rng(0).random(len(a["left"])) < 0.5
    b = dict(a)
    b["left"] = np.where(flip, a["right"], a["left"])
    b["right"] = np.where(flip, a["left"], a["right"])
    b["outcome"] = np.where(flip, -a["outcome"], a["outcome"]).astype(np.int8)
    ties = case["scale"]["ties_allowed"]
    assert run(a, ties_allowed=ties).annotators == run(b, ties_allowed=ties).annotators


def test_no_full_triplet_is_undefined_not_zero() -> None:
    res = transitivity([0, 0], [0, 1], [1, 2], [1, 1])
    rec = res.annotator(0)
    assert rec.n_triplets == 0
    assert rec.n_pairs_judged == 2
    assert rec.p_a is None
    assert rec.kappa is None
    assert rec.kappa_weak is None
    assert "triplet" in rec.undefined.reason


def test_latest_wins_across_orientations() -> None:
    # 0>1, 1>2, 2>0 is a cycle; the later judgment (0 vs 2 shown as 2 vs 0, right preferred)
    # says 0 > 2 and repairs it; an older re-judgment does not count.
    w = [0, 0, 0, 0, 0]
    left, right = [0, 1, 2, 2, 0], [1, 2, 0, 0, 2]
    outcome = [1, 1, 1, -1, -1]
    order = [0, 1, 2, 5, 3]
    rec = transitivity(w, left, right, outcome, order).annotator(0)
    assert (rec.n_pairs_judged, rec.n_triplets, rec.n_transitive) == (3, 1, 1)
    # equal order: the later position wins
    rec = transitivity(w[:4], left[:4], right[:4], outcome[:4], [0, 1, 2, 2]).annotator(0)
    assert rec.n_transitive == 1


def test_strict_campaign_rejects_ties() -> None:
    with pytest.raises(ValueError, match="allows no ties"):
        transitivity([0, 0], [0, 1], [1, 2], [0, 1], ties_allowed=False)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (([0], [1], [1], [1]), "with itself"),
        (([0], [1], [2], [2]), r"\+1"),
        (([0, 1], [1], [2], [1]), "equal length"),
        (([0], [1.5], [2], [1]), "integer codes"),
        (([-1], [1], [2], [1]), "non-negative"),
    ],
)
def test_validation(args, message) -> None:
    with pytest.raises(ValueError, match=message):
        transitivity(*args)


def test_cycles_carry_their_judgments() -> None:
    path = params("pairwise_small_weak.json")[0].values[0]
    a = arrays(load(path))
    res = run(a)
    cyc = res.cycles
    assert len(cyc.workers) == sum(r.n_triplets - r.n_transitive for r in res.annotators)
    for wk, items, rels, ids in zip(
        cyc.workers, cyc.items, cyc.relations, cyc.judgment_ids, strict=True
    ):
        x, y, z = items
        assert x < y < z
        for (p, q), rel, jid in zip(((x, y), (y, z), (x, z)), rels, ids, strict=True):
            assert a["workers"][jid] == wk
            assert {a["left"][jid], a["right"][jid]} == {p, q}
            sign = 1 if a["left"][jid] == p else -1
            assert sign * a["outcome"][jid] == rel
        assert not _weak_order(rels)


def _weak_order(rels) -> bool:
    r_xy, r_yz, r_xz = rels
    for lv in itertools.product(range(3), repeat=3):
        x, y, z = lv
        if (np.sign(x - y), np.sign(y - z), np.sign(x - z)) == (r_xy, r_yz, r_xz):
            return True
    return False


def test_weak_order_table_counts() -> None:
    pats = list(itertools.product((-1, 0, 1), repeat=3))
    assert sum(_weak_order(p) for p in pats) == 13
    strict = [p for p in pats if 0 not in p]
    assert sum(_weak_order(p) for p in strict) == 6


def test_test_retest() -> None:
    # pair (0,1) judged 3 times: >, >, = (1 agreeing pair of 3); pair (1,2) twice, same
    w = [0] * 5
    res = transitivity(w, [0, 1, 0, 1, 2], [1, 0, 1, 2, 1], [1, -1, 0, 1, -1])
    rec = res.annotator(0)
    assert rec.n_judgments == 5
    assert rec.n_pairs_judged == 2
    assert rec.n_repeated_pairs == 2
    assert rec.retest_agreement == pytest.approx((1 + 1) / (3 + 1))
    assert transitivity([0], [0], [1], [1]).annotator(0).retest_agreement is None


def test_update_reports_like_a_recount() -> None:
    path = params("pairwise_small_weak.json")[0].values[0]
    a = arrays(load(path))
    cut = len(a["workers"]) // 2
    keys = ("workers", "left", "right", "outcome", "order")
    first = triangle_state(*[a[k][:cut] for k in keys])
    updated = first.update(*[a[k][cut:] for k in keys])
    got, want = summarize(updated), run(a)
    assert got.annotators == want.annotators
    for field in ("workers", "items", "relations", "judgment_ids"):
        assert np.array_equal(getattr(got.cycles, field), getattr(want.cycles, field))


def test_implied_pairs_example() -> None:
    # worker 0: 0 > 1 > 2 implies 0 > 2; worker 1: 0 = 1 = 2 implies 0 = 2;
    # worker 2: 0 > 1 = 2 implies 0 > 2; worker 3: 0 > 1 < 2 implies nothing;
    # worker 4: 3 < 2 < 1 implies 1 > 3; worker 5: a cycle implies nothing new
    w = [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 5]
    left = [0, 1, 0, 1, 0, 2, 0, 2, 3, 2, 0, 1, 2]
    right = [1, 2, 1, 2, 1, 1, 1, 1, 2, 1, 1, 2, 0]
    outcome = [1, 1, 0, 0, 1, 0, 1, 1, -1, -1, 1, 1, 1]
    ip = implied_pairs(w, left, right, outcome)
    assert ip.workers.tolist() == [0, 1, 2, 4]
    assert ip.items.tolist() == [[0, 2], [0, 2], [0, 2], [1, 3]]
    assert ip.relations.tolist() == [1, 0, 1, 1]
    assert ip.count.tolist() == [1, 1, 1, 0, 1, 0]


def test_implied_pairs_conflicting_chains_are_not_implied() -> None:
    # 0 > 1 > 2 and 2 > 3 > 0: the chains disagree about {0, 2} and {1, 3}
    ip = implied_pairs([0] * 4, [0, 1, 2, 3], [1, 2, 3, 0], [1, 1, 1, 1])
    assert ip.count.tolist() == [0]
