"""Dynamic overlap (monitor.metrics.overlap): settled items want nothing, the caps hold, the
judgments wanted lift a typical worker's answer to the confidence, and the typical worker's
posterior is the vote margin's."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from monitor.metrics.overlap import Overlap, label_need, typical_posterior

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
