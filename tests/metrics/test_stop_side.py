"""The position bettor of the preference stop test (monitor.metrics.stop_side): the vectorised
payoffs are the plain loop's, a payoff depends on the answers before it alone, and in
simulation an annotator with a pull toward one side at the margin is stopped at most alpha of
the time, one who follows the items in a campaign that shows the better item on the left is
not stopped, and a 90%-left annotator is stopped within few comparisons."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.metrics.stop_side import LEFT, RIGHT, TIE, side_payoffs, side_payoffs_plain
from monitor.metrics.stopping import StopTest, either, stop_test

ALPHA = 0.01


def _campaign(
    rng: np.random.Generator,
    n: int,
    left_of: dict[int, float],
    honest: float,
    workers: int = 20,
    better_left: float = 0.5,
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` strict answers in order of arrival by ``workers`` annotators:
    annotator ``w`` in ``left_of`` picks the left item with that probability, whatever the
    items; the others follow the true order with probability ``honest``. The better item is
    shown on the left with probability ``better_left``."""
    w = rng.integers(0, workers, n)
    better_shown_left = rng.random(n) < better_left
    along = rng.random(n) < honest
    left = np.where(along, better_shown_left, ~better_shown_left)
    for who, p in left_of.items():
        mine = w == who
        left[mine] = rng.random(int(mine.sum())) < p
    shown = np.where(left, LEFT, RIGHT)
    return w, shown


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.sampled_from([LEFT, TIE, RIGHT])),
        min_size=1,
        max_size=60,
    ),
    st.sampled_from([0.0, 0.1, 0.3]),
)
def test_vectorised_payoffs_are_the_plain_loops(rows: list, margin: float) -> None:
    w, s = (list(c) for c in zip(*rows, strict=True))
    fast = side_payoffs(np.array(w), np.array(s), margin=margin)
    plain = side_payoffs_plain(w, s, margin)
    np.testing.assert_allclose(fast, plain, rtol=0, atol=1e-12)
    assert all(math.isnan(p) for p, x in zip(plain, s, strict=True) if x == TIE)
    assert all(p >= -1.0 for p in plain if not math.isnan(p))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31), st.integers(2, 40))
def test_a_payoff_depends_on_the_answers_before_it_alone(seed: int, cut: int) -> None:
    rng = np.random.default_rng(seed)
    w, s = _campaign(rng, 40, {0: 0.9}, 0.8, workers=4)
    whole = side_payoffs(w, s, margin=0.1)
    head = side_payoffs(w[:cut], s[:cut], margin=0.1)
    np.testing.assert_array_equal(whole[:cut], head)


def _test(w: np.ndarray, payoffs: np.ndarray, workers: int) -> StopTest:
    return stop_test(w, np.arange(w.size), payoffs, n_workers=workers, alpha=ALPHA / 2)


def test_annotators_with_a_pull_at_the_margin_are_stopped_at_most_alpha_of_the_time() -> None:
    """400 annotators who pick the left item 60% of the time (the margin 0.1 beyond a fair
    coin), 500 answers each: the test at alpha / 2 stops at most that
    share of them, with room for the simulation's own error."""
    rng = np.random.default_rng(7)
    stopped = 0
    for _ in range(20):
        W = 20
        w, s = _campaign(rng, W * 500, {k: 0.6 for k in range(W)}, 0.8, W)
        stopped += int(_test(w, side_payoffs(w, s, margin=0.1), W).stopped.sum())
    assert stopped <= 400 * ALPHA / 2 + 4  # 2 expected at the most; 6 has p < 0.02


def test_an_annotator_who_follows_the_items_is_not_stopped_where_the_better_item_is_left() -> None:
    """A campaign that shows the better item on the left 85% of the time: the annotators pick
    the left item about 80% of the time, and the test reads that from the others (the
    campaign's share), so none of them is stopped, even at a margin of 0."""
    rng = np.random.default_rng(3)
    W = 30
    w, s = _campaign(rng, 9000, {}, 0.95, W, better_left=0.85)
    test = _test(w, side_payoffs(w, s, margin=0.0), W)
    assert not test.stopped.any()


def test_a_left_clicker_is_stopped_within_few_comparisons() -> None:
    """An annotator who picks the left item 90% of the time among 20 who follow the items, the
    sides shown at random: stopped by the test at alpha / 2 after a median of 33 comparisons
    over 100 campaigns (p90 58; the plain rate of 0.9 against a null of 0.6 wants 20 even to
    the best bettor, who knows the rate); one who always picks the left after 19; the honest
    ones never."""
    rng = np.random.default_rng(11)
    after: dict[float, list[int]] = {0.9: [], 1.0: []}
    honest_stops = 0
    for _ in range(40):
        for rate, got in after.items():
            W = 21
            w, s = _campaign(rng, 6000, {20: rate}, 0.75, W)
            test = _test(w, side_payoffs(w, s, margin=0.1), W)
            got.append(test.stopped_after[20] if test.stopped[20] else 10**6)
            honest_stops += int(test.stopped[:20].sum())
    assert np.median(after[0.9]) <= 36
    assert np.percentile(after[0.9], 90) <= 65
    assert np.median(after[1.0]) <= 21
    assert honest_stops == 0


def test_either_test_stops_a_worker_first_at_the_fewest_judgments() -> None:
    one = StopTest(np.array([10, 5, 0]), np.array([200.0, 3.0, 1.0]), np.array([8, 0, 0]), 0.005)
    two = StopTest(np.array([12, 6, 0]), np.array([300.0, 400.0, 1.0]), np.array([9, 4, 0]), 0.005)
    both = either(one, two)
    assert both.alpha == 0.01
    assert both.stopped_after.tolist() == [8, 4, 0]
    assert both.n.tolist() == [12, 6, 0]
    assert both.evalue.tolist() == [150.0, 200.0, 1.0]  # the largest over two: 1 / alpha at most
