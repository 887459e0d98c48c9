"""Dynamic overlap (monitor.metrics.overlap): settled items want nothing, the caps hold, the
judgments wanted lift a typical worker's answer to the confidence, and the typical worker's
posterior is the vote margin's; the same for the pairs of a preference campaign, whose ties
are judgments but no evidence."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from monitor.metrics.overlap import (
    Overlap,
    label_need,
    pair_need,
    pair_posterior,
    typical_posterior,
)

OPTS = Overlap(confidence=0.95, min_overlap=3, max_overlap=10)


def test_settled_items_want_nothing_and_unsettled_ones_what_lifts_them_to_the_confidence() -> None:
    p = np.array([0.97, 0.97, 0.6, 0.5, 1.0])
    n = np.array([3, 2, 3, 0, 1])
    gold = np.array([False, False, False, False, True])
    need = label_need(p, n, gold, 0.8, 2, OPTS)
    # odds 0.6/0.4 = 1.5; each agreeing answer x4; 1.5 x 4^2 = 24 > 19 (0.95): two more
    assert list(need) == [0, 1, 2, 3, 2]


@given(
    st.lists(st.tuples(st.floats(0.0, 1.0), st.integers(0, 15), st.booleans()), min_size=1),
    st.floats(0.3, 0.99),
)
def test_the_caps_hold(rows: list, typical: float) -> None:
    p = np.array([r[0] for r in rows])
    n = np.array([r[1] for r in rows])
    gold = np.array([r[2] for r in rows])
    need = label_need(p, n, gold, typical, 2, OPTS)
    assert (need >= 0).all()
    assert (n + need <= np.maximum(n, 10)).all()
    short = n < 3
    assert (need[short] >= 3 - n[short]).all()
    assert (need[gold] == np.clip(3 - n[gold], 0, None)).all()
    assert (need[(p >= 0.95) & (n >= 3)] == 0).all()


def test_the_typical_posterior_is_the_vote_margins() -> None:
    counts = np.array([[3.0, 1.0], [2.0, 2.0], [0.0, 0.0], [5.0, 0.0]])
    post = typical_posterior(counts, np.array([0.5, 0.5]), 0.8)
    # binary: odds of the leader = 4^(margin)
    assert math.isclose(post[0, 0] / post[0, 1], 16.0)
    np.testing.assert_allclose(post[1], [0.5, 0.5])
    np.testing.assert_allclose(post[2], [0.5, 0.5])
    assert math.isclose(post[3, 0] / post[3, 1], 4.0**5)
    # three classes: the wrong answers spread over two
    post = typical_posterior(np.array([[2.0, 1.0, 0.0]]), np.ones(3) / 3, 0.7)
    assert math.isclose(post[0, 0] / post[0, 2], (0.7 / 0.15) ** 2)


# --- pairs ------------------------------------------------------------------------------------

RULE = Overlap(confidence=0.99, min_overlap=3, max_overlap=10)


def test_a_pair_judged_once_by_a_typical_annotator_is_not_settled() -> None:
    # one strict answer at 0.8: odds 4, a posterior of 0.8, far from 0.99
    assert math.isclose(float(pair_posterior(np.array([1]), np.array([0]), 0.8)[0]), 0.8)
    one = Overlap(confidence=0.99, min_overlap=1, max_overlap=10)
    need = pair_need(np.array([1]), np.array([0]), np.array([1]), np.array([False]), 0.8, one)
    # 4^k >= 99 at k = 4 (odds 256): three more agreeing answers
    assert need.tolist() == [3]
    # three agreeing at 0.9 (odds 729 > 99) with min_overlap 3: settled; a tie adds nothing
    need = pair_need(np.array([3, 3]), np.array([0, 0]), np.array([3, 4]),
                     np.array([False, False]), 0.9, RULE)  # fmt: skip
    assert need.tolist() == [0, 0]
    # the order undefined (equal scores): one half, whatever was answered
    assert float(pair_posterior(np.array([0]), np.array([0]), 0.9)[0]) == 0.5


def test_ties_are_judgments_not_evidence_and_gold_pairs_want_only_min_overlap() -> None:
    need = pair_need(np.array([0, 0, 0]), np.array([0, 0, 0]), np.array([4, 9, 1]),
                     np.array([False, False, True]), 0.85, RULE)  # fmt: skip
    # all ties: never settled, each round wants what three agreeing answers would give (5.7^3
    # > 99), up to max_overlap in all; gold: up to min_overlap
    assert need.tolist() == [3, 1, 2]


def test_at_or_below_chance_only_the_caps_end_a_pair() -> None:
    need = pair_need(np.array([5]), np.array([0]), np.array([5]), np.array([False]), 0.5, RULE)
    assert need.tolist() == [5]


_pairs = st.lists(
    st.tuples(st.integers(0, 8), st.integers(0, 8), st.integers(0, 4), st.booleans()),
    min_size=1,
    max_size=30,
)


def _arrays(rows: list) -> tuple[np.ndarray, ...]:
    along = np.array([r[0] for r in rows])
    against = np.array([r[1] for r in rows])
    n = along + against + np.array([r[2] for r in rows])  # ties count as judgments
    gold = np.array([r[3] for r in rows])
    return along, against, n, gold


@given(_pairs, st.floats(0.3, 0.99), st.integers(1, 5), st.integers(0, 12))
def test_need_never_pushes_a_pair_past_max_overlap(
    rows: list, typical: float, least: int, extra: int
) -> None:
    rule = Overlap(confidence=0.95, min_overlap=least, max_overlap=least + extra)
    along, against, n, gold = _arrays(rows)
    need = pair_need(along, against, n, gold, typical, rule)
    assert (need >= 0).all()
    assert (n + need <= np.maximum(n, rule.max_overlap)).all()
    assert (need[gold] == np.clip(np.minimum(least, rule.max_overlap) - n[gold], 0, None)).all()


@given(_pairs, st.floats(0.3, 0.99))
def test_an_agreeing_answer_never_raises_need(rows: list, typical: float) -> None:
    along, against, n, gold = _arrays(rows)
    before = pair_need(along, against, n, gold, typical, RULE)
    after = pair_need(along + 1, against, n + 1, gold, typical, RULE)
    assert (after <= before).all()


@given(_pairs, st.floats(0.3, 0.99), st.integers(1, 4))
def test_leaving_out_a_stopped_annotators_answers_never_lowers_need(
    rows: list, typical: float, k: int
) -> None:
    """Repair: taking out answers that went along the exported order (those it rested on),
    or ties, never lowers need; taking out answers against it lowers it by at most one each
    (each dissent cost one agreeing answer)."""
    along, against, n, gold = _arrays(rows)
    before = pair_need(along, against, n, gold, typical, RULE)
    gone = np.minimum(along, k)
    assert (pair_need(along - gone, against, n - gone, gold, typical, RULE) >= before).all()
    ties = n - along - against
    gone = np.minimum(ties, k)
    assert (pair_need(along, against, n - gone, gold, typical, RULE) >= before).all()
    gone = np.minimum(against, k)
    lower = pair_need(along, against - gone, n - gone, gold, typical, RULE)
    assert (lower >= before - gone).all()
