"""Dynamic overlap (monitor.metrics.overlap): settled items want nothing, the caps hold, the
judgments wanted lift a typical worker's answer to the confidence, and dropping a worker's
answers is the posterior of the others'."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from monitor.metrics.overlap import label_need, without

OPTS = {"confidence": 0.95, "min_overlap": 3, "max_overlap": 10}


def test_settled_items_want_nothing_and_unsettled_ones_what_lifts_them_to_the_confidence() -> None:
    post = np.array([[0.97, 0.03], [0.97, 0.03], [0.6, 0.4], [0.5, 0.5], [1.0, 0.0]])
    n = np.array([3, 2, 3, 0, 1])
    gold = np.array([False, False, False, False, True])
    need = label_need(post, n, gold, 0.8, **OPTS)
    # odds 0.6/0.4 = 1.5; each agreeing answer x4; 1.5 x 4^2 = 24 > 19 (0.95): two more
    assert list(need) == [0, 1, 2, 3, 2]


@given(
    st.lists(st.tuples(st.floats(0.5, 1.0), st.integers(0, 15), st.booleans()), min_size=1),
    st.floats(0.55, 0.99),
)
def test_the_caps_hold(rows: list, typical: float) -> None:
    p = np.array([r[0] for r in rows])
    post = np.stack([p, 1 - p], axis=1)
    n = np.array([r[1] for r in rows])
    gold = np.array([r[2] for r in rows])
    need = label_need(post, n, gold, typical, **OPTS)
    assert (need >= 0).all()
    assert (n + need <= np.maximum(n, 10)).all()
    assert (need[(n < 3) & (n + need <= 10)] >= 3 - n[(n < 3) & (n + need <= 10)]).all()
    assert (need[gold] == np.clip(3 - n[gold], 0, None)).all()
    settled = (p >= 0.95) & (n >= 3)
    assert (need[settled] == 0).all()


def test_without_a_worker_the_posterior_is_that_of_the_others() -> None:
    prior = np.array([0.5, 0.5])
    # two workers, one item: their likelihoods of their answers under each class
    own = np.array([[0.9, 0.1], [0.3, 0.7]])
    post = prior * own.prod(axis=0)
    post = (post / post.sum())[None, :]
    items = np.array([0, 0])
    alone = without(post, items, own, np.array([False, True]))
    np.testing.assert_allclose(alone[0], [0.9, 0.1])
    assert without(post, items, own, np.array([False, False])) is post
    gold = np.array([[1.0, 0.0]])
    np.testing.assert_array_equal(without(gold, items, own, np.array([True, True])), gold)
