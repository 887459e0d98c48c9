"""Dynamic overlap (monitor.metrics.overlap): settled items want nothing, the caps hold, the
judgments wanted lift a typical worker's answer to the confidence, and the typical worker's
posterior is the vote margin's; the same for the pairs of a preference campaign, whose ties
are judgments but no evidence, for the options of a multi-label item (the item wants what its
least settled option wants), and for a rating item, settled once its truth surely lies within
the tolerance of the exported answer (agreeing ratings, a tighter spread and better raters
never raise need)."""

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
    rating_confidence,
    rating_need,
    set_need,
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


# --- multi-label sets -------------------------------------------------------------------------


def test_a_set_item_wants_what_its_least_settled_option_wants() -> None:
    # two options, prior 0.5 each, typical 0.8 (4:1 a net answer); three judgments
    present = np.array([[3, 0], [2, 0], [3, 3]])
    n = np.array([3, 3, 3])
    exported = np.array([[True, False], [True, False], [True, True]])
    prior = np.array([0.5, 0.5])
    gold = np.array([False, False, False])
    need = set_need(present, n, exported, prior, gold, 0.8, RULE)
    # option a of item 1: net 1 (odds 4), wants 4^k >= 99 / 4 ... k = 3 (odds 256 > 99)
    # every other option: net 3, odds 64 < 99: one more
    per_option = [
        label_need(np.array([post]), np.array([3]), np.array([False]), 0.8, 2, RULE)[0]
        for post in (64 / 65, 4 / 5, 64 / 65)
    ]
    assert per_option == [1, 3, 1]
    assert need.tolist() == [1, 3, 1]
    # at or below chance, no evidence: only the caps end an item
    assert set_need(present, n, exported, prior, gold, 0.5, RULE).tolist() == [7, 7, 7]


_sets = st.lists(
    st.tuples(st.integers(0, 8), st.lists(st.integers(0, 8), min_size=3, max_size=3),
              st.lists(st.booleans(), min_size=3, max_size=3), st.booleans()),
    min_size=1,
    max_size=20,
)  # fmt: skip


def _set_arrays(rows: list) -> tuple[np.ndarray, ...]:
    n = np.array([r[0] for r in rows])
    present = np.minimum(np.array([r[1] for r in rows]), n[:, None])
    exported = np.array([r[2] for r in rows])
    gold = np.array([r[3] for r in rows])
    return present, n, exported, gold


@given(_sets, st.floats(0.3, 0.99), st.integers(1, 5), st.integers(0, 12),
       st.lists(st.floats(0.01, 0.99), min_size=3, max_size=3))  # fmt: skip
def test_set_need_keeps_the_caps_and_gold_wants_only_min_overlap(
    rows: list, typical: float, least: int, extra: int, prior: list
) -> None:
    rule = Overlap(confidence=0.95, min_overlap=least, max_overlap=least + extra)
    present, n, exported, gold = _set_arrays(rows)
    need = set_need(present, n, exported, np.array(prior), gold, typical, rule)
    assert (need >= 0).all()
    assert (n + need <= np.maximum(n, rule.max_overlap)).all()
    short = ~gold & (n < least)
    assert (need[short] >= np.minimum(least, rule.max_overlap) - n[short]).all()
    assert (need[gold] == np.clip(np.minimum(least, rule.max_overlap) - n[gold], 0, None)).all()


@given(_sets, st.floats(0.3, 0.99), st.lists(st.floats(0.01, 0.99), min_size=3, max_size=3))
def test_a_set_answer_agreeing_with_the_export_never_raises_need(
    rows: list, typical: float, prior: list
) -> None:
    present, n, exported, gold = _set_arrays(rows)
    p = np.array(prior)
    before = set_need(present, n, exported, p, gold, typical, RULE)
    after = set_need(present + exported, n + 1, exported, p, gold, typical, RULE)
    assert (after <= before).all()
    # repair: leaving out a judgment that agreed with the export never lowers need
    had = (n > 0) & (present >= exported).all(axis=1)
    had &= ((n[:, None] - present) >= ~exported).all(axis=1)
    fewer = set_need(present - exported * had[:, None], n - had, exported, p, gold, typical, RULE)
    assert (fewer >= before).all()


# --- ratings ----------------------------------------------------------------------------------


def test_a_rating_item_is_settled_once_its_truth_surely_lies_within_the_tolerance() -> None:
    # typical error sd 10, tolerance 5 at 0.95 (z = 1.96): precision (1.96 / 5)^2 = 0.154,
    # 15.4 typical ratings' worth (n / 100)
    rule = Overlap(confidence=0.95, min_overlap=3, max_overlap=20)
    n = np.array([16, 10, 10, 0, 2])
    ss = np.array([0.0, 0.0, 10 * 400.0, 0.0, 0.0])  # item 2: ratings 20 off on average
    gold = np.array([False, False, False, False, True])
    need = rating_need(ss, n, gold, 100.0, 5.0, rule)
    # 10 typical ratings want 6 more; spread as 20 (v = 400) they are worth 2.5: 13 more,
    # capped at 20 in all (10); none: 16 (15.4 rounded up); gold: up to min_overlap
    assert need.tolist() == [0, 6, 10, 16, 1]
    conf = rating_confidence(ss[:2], n[:2], 100.0, 5.0)
    assert conf[0] >= 0.95 > conf[1]
    assert math.isclose(conf[1], math.erf(5.0 / math.sqrt(10.0) / math.sqrt(2.0)))
    # the run cannot tell what the typical rater reaches: only the caps end an item
    assert rating_need(ss, n, gold, math.inf, 5.0, rule).tolist() == [4, 10, 10, 20, 1]


_ratings = st.lists(
    st.tuples(st.integers(0, 12), st.floats(0.0, 2000.0), st.booleans()), min_size=1, max_size=30
)


def _rating_arrays(rows: list) -> tuple[np.ndarray, ...]:
    n = np.array([r[0] for r in rows])
    ss = np.where(n > 0, np.array([r[1] for r in rows]), 0.0)
    gold = np.array([r[2] for r in rows])
    return ss, n, gold


@given(_ratings, st.floats(1.0, 900.0), st.floats(1.0, 20.0), st.integers(1, 5),
       st.integers(0, 12), st.floats(0.5, 0.999))  # fmt: skip
def test_rating_need_keeps_the_caps_and_gold_wants_only_min_overlap(
    rows: list, sigma2: float, tolerance: float, least: int, extra: int, confidence: float
) -> None:
    rule = Overlap(confidence=confidence, min_overlap=least, max_overlap=least + extra)
    ss, n, gold = _rating_arrays(rows)
    need = rating_need(ss, n, gold, sigma2, tolerance, rule)
    assert (need >= 0).all()
    assert (n + need <= np.maximum(n, rule.max_overlap)).all()
    short = ~gold & (n < least)
    assert (need[short] >= np.minimum(least, rule.max_overlap) - n[short]).all()
    assert (need[gold] == np.clip(np.minimum(least, rule.max_overlap) - n[gold], 0, None)).all()
    settled = (rating_confidence(ss, n, sigma2, tolerance) >= confidence + 1e-9) & (n >= least)
    assert (need[settled] == 0).all()


@given(_ratings, st.floats(1.0, 900.0), st.floats(1.0, 20.0), st.floats(0.0, 1.0))
def test_agreeing_ratings_a_tighter_spread_or_typical_raters_never_raise_need(
    rows: list, sigma2: float, tolerance: float, shrink: float
) -> None:
    ss, n, gold = _rating_arrays(rows)
    before = rating_need(ss, n, gold, sigma2, tolerance, RULE)
    # one more rating at the exported answer
    assert (rating_need(ss, n + 1, gold, sigma2, tolerance, RULE) <= before).all()
    # the same ratings closer to it
    assert (rating_need(ss * shrink, n, gold, sigma2, tolerance, RULE) <= before).all()
    # a typical rater with a smaller error
    assert (rating_need(ss, n, gold, sigma2 * shrink + 1e-3, tolerance, RULE) <= before).all()
    # repair: leaving out a rating at the exported answer never lowers need
    had = n > 0
    assert (rating_need(ss, n - had, gold, sigma2, tolerance, RULE) >= before).all()
