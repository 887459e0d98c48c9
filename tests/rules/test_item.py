"""The item and pair rules (``ambiguous``) at and around their thresholds."""

from __future__ import annotations

import pytest

from monitor.core.results import FlagRecord
from monitor.rules import item as rules
from tests.rules.build import T, item, model, run

# labels: the posterior of the most likely label below 1/K + ambiguous_posterior x (1 - 1/K);
# K = 2, ambiguous_posterior 0.75: 0.875


def _label(p: float, n: int = 3, subject: str = "i1") -> list:
    return [item("item", "model_label", subject, p, n, posterior={"a": p, "b": 1 - p})]


@pytest.mark.parametrize(("p", "flagged"), [(0.874, True), (0.875, False), (0.876, False)])
def test_ambiguous_item_below_the_posterior_level(p: float, flagged: bool) -> None:
    flags = rules.ambiguous_item(run("label", model(0.5), _label(p)), T)
    assert bool(flags) is flagged
    if flagged:
        [f] = flags
        assert (f.scope, f.subject, f.rule) == ("item", "i1", "ambiguous")
        assert f.threshold == 0.875
        assert f.evidence["floor"] == 0.875
        assert f.evidence["posterior"] == {"a": p, "b": 1 - p}
        assert f.evidence["majority_disputed"] is False
        assert "'a'" in f.evidence["message"]


@pytest.mark.parametrize(("n", "flagged"), [(2, False), (3, True), (4, True)])
def test_ambiguous_item_needs_min_item_judgments(n: int, flagged: bool) -> None:
    assert bool(rules.ambiguous_item(run("label", model(0.5), _label(0.5, n)), T)) is flagged


def test_ambiguous_item_with_three_classes_has_its_level() -> None:
    """1/3 + 0.75 x 2/3 = 0.8333..."""
    [f] = rules.ambiguous_item(run("label", model(0.4, classes=3), _label(0.83)), T)
    assert f.threshold == pytest.approx(1 / 3 + 0.75 * 2 / 3)
    assert rules.ambiguous_item(run("label", model(0.4, classes=3), _label(0.84)), T) == []


def test_a_disputed_majority_is_ambiguous_whatever_the_posterior() -> None:
    disputed = item("item", "majority_disputed", "i1", 1.0)
    [f] = rules.ambiguous_item(run("label", model(0.5), _label(0.99), disputed), T)
    assert f.evidence["majority_disputed"] is True
    assert "plain vote" in f.evidence["message"]


def test_ambiguous_item_is_withheld_without_a_converged_model() -> None:
    assert rules.ambiguous_item(run("label", model(0.5, converged=False), _label(0.5)), T) == []
    assert rules.ambiguous_item(run("label", _label(0.5)), T) == []


# ratings: the spread test's p below ambiguous_p (0.01)


def _spread(p: float, n: int = 3) -> list:
    return [
        item("item", "model_spread", "i1", 1.5, n),
        item("item", "model_spread_p", "i1", p, n),
        item("item", "model_expected_spread", "i1", 0.5, n),
    ]


@pytest.mark.parametrize(("p", "n", "flagged"), [
    (0.0099, 3, True), (0.01, 3, False), (0.0101, 3, False), (0.0099, 2, False),
])  # fmt: skip
def test_ambiguous_rating_item_below_ambiguous_p(p: float, n: int, flagged: bool) -> None:
    flags = rules.ambiguous_item(run("rating", model(2.0, measure="noise_sd"), _spread(p, n)), T)
    assert bool(flags) is flagged
    if flagged:
        [f] = flags
        assert f.value == p
        assert f.threshold == 0.01
        assert f.evidence["spread"] == 1.5
        assert f.evidence["expected_spread"] == 0.5
        assert f.evidence["metric"] == "model_spread_p"


# pairs: the split test's q below ambiguous_p, and no clear majority


def _pair(q: float, interval: list[float] | None, n: int = 10) -> list:
    return [item("pair", "model_split_p", "a\tb", q / 2, n, q_value=q, first_interval=interval,
                 against=4, expected_against=1.0, left="a")]  # fmt: skip


@pytest.mark.parametrize(("q", "interval", "n", "flagged"), [
    (0.0099, [0.25, 0.75], 10, True),
    (0.01, [0.25, 0.75], 10, False),
    (0.0099, [0.5, 0.75], 10, True),  # the interval holds one half at its end
    (0.0099, [0.501, 0.75], 10, False),  # a clear majority
    (0.0099, None, 10, True),
    (0.0099, [0.25, 0.75], 2, False),
])  # fmt: skip
def test_ambiguous_pair_at_its_thresholds(
    q: float, interval: list[float] | None, n: int, flagged: bool
) -> None:
    flags = rules.ambiguous_pair(run("pairwise", model(0.5, name="preference_model"),
                                     _pair(q, interval, n)), T)  # fmt: skip
    assert bool(flags) is flagged
    if flagged:
        [f] = flags
        assert (f.scope, f.subject, f.value, f.threshold) == ("pair", "a\tb", q, 0.01)
        assert f.evidence["first_interval"] == interval
        assert f.evidence["n"] == n


def test_ambiguous_pair_is_withheld_without_a_converged_model() -> None:
    values = [*model(0.5, converged=False), *_pair(0.001, [0.25, 0.75])]
    assert rules.ambiguous_pair(run("pairwise", values), T) == []


def test_without_gold_drops_the_items_and_pairs_whose_answer_is_known() -> None:
    flags = [
        FlagRecord("item", "i1", "ambiguous", 0.5, 0.875),
        FlagRecord("item", "i2", "ambiguous", 0.5, 0.875),
        FlagRecord("pair", "i1\ti3", "ambiguous", 0.001, 0.01),
        FlagRecord("pair", "i1\ti2", "ambiguous", 0.001, 0.01),
        FlagRecord("worker", "i1", "low_quality", 0.5, 0.6),
    ]
    kept = rules.without_gold(flags, {"i1", "i2"})
    assert [(f.scope, f.subject) for f in kept] == [("pair", "i1\ti3"), ("worker", "i1")]
