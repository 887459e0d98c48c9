"""The worker rules at and around their thresholds, on hand-built runs (``build.T``)."""

from __future__ import annotations

import pytest

from monitor.rules import worker as rules
from tests.rules.build import T, campaign, counts, model, run, thresholds, worker

BELOW, AT, ABOVE = -0.001, 0.0, 0.001


def _accuracy(high: float, n: int = 20, **more: float) -> list:
    return [worker("model_accuracy", "w1", high - 0.1, high - 0.2, high, n, **more)]


# low_quality, labels: the interval's upper end below chance + margin x (1 - chance)
# chance 0.5, margin 0.25: the floor is 0.625


@pytest.mark.parametrize(("delta", "flagged"), [(BELOW, True), (AT, False), (ABOVE, False)])
def test_low_quality_flags_an_accuracy_interval_below_the_floor(
    delta: float, flagged: bool
) -> None:
    flags = rules.low_quality(run("label", model(0.5), _accuracy(0.625 + delta)), T)
    assert [f.subject for f in flags] == (["w1"] if flagged else [])
    if flagged:
        [f] = flags
        assert f.rule == "low_quality"
        assert f.threshold == 0.625
        assert f.evidence["floor"] == 0.625
        assert f.evidence["chance"] == 0.5
        assert f.evidence["interval"] == [0.625 + delta - 0.2, 0.625 + delta]
        assert f.evidence["n"] == 20
        assert f.evidence["metric"] == "model_accuracy"


@pytest.mark.parametrize(("n", "flagged"), [(9, False), (10, True), (11, True)])
def test_low_quality_needs_min_judgments(n: int, flagged: bool) -> None:
    flags = rules.low_quality(run("label", model(0.5), _accuracy(0.6, n=n)), T)
    assert bool(flags) is flagged


def test_low_quality_is_withheld_while_the_model_has_not_converged() -> None:
    assert rules.low_quality(run("label", model(0.5, converged=False), _accuracy(0.5)), T) == []
    assert rules.low_quality(run("label", _accuracy(0.5)), T) == []  # no model at all


@pytest.mark.parametrize(("chance", "own", "floor"), [
    (0.75, 0.5, 0.8125),  # not skewed (0.75 is not above skewed_prior): the campaign's chance
    (0.875, 0.5, 0.625),  # skewed: the worker's own chance
    (0.875, None, 0.90625),  # skewed, no own chance: the campaign's
])  # fmt: skip
def test_low_quality_on_skewed_classes_reads_the_workers_own_chance(
    chance: float, own: float | None, floor: float
) -> None:
    own_value = [] if own is None else [worker("model_worker_chance", "w1", own)]
    at = run("label", model(chance), own_value, _accuracy(floor))
    below = run("label", model(chance), own_value, _accuracy(floor - 0.001))
    assert rules.low_quality(at, T) == []
    [f] = rules.low_quality(below, T)
    assert f.threshold == floor


# low_quality, ratings: the noise sd interval's lower end above (1 - margin) x chance sd
# chance sd 2: the floor is 1.5


@pytest.mark.parametrize(("delta", "flagged"), [(BELOW, False), (AT, False), (ABOVE, True)])
def test_low_quality_flags_a_noise_sd_interval_above_the_floor(delta: float, flagged: bool) -> None:
    low = 1.5 + delta
    noise = worker("model_noise_sd", "w1", low + 0.5, low, low + 1, 20)
    flags = rules.low_quality(run("rating", model(2.0, measure="noise_sd", name="rating_model"),
                                  noise), T)  # fmt: skip
    assert bool(flags) is flagged
    if flagged:
        [f] = flags
        assert f.threshold == 1.5
        assert f.evidence["chance"] == 2.0
        assert f.evidence["metric"] == "model_noise_sd"
        assert "rating model" in f.evidence["message"]


def test_low_quality_of_a_rater_reads_their_own_chance_sd() -> None:
    noise = worker("model_noise_sd", "w1", 1.5, 1.25, 1.75, 20)
    own = worker("model_chance_sd", "w1", 1.5)  # floor 1.125 (campaign's 2.0 would give 1.5)
    [f] = rules.low_quality(run("rating", model(2.0, measure="noise_sd"), noise, own), T)
    assert f.threshold == 1.125


# low_quality, preferences: the interval's upper end below the worker's own chance, no margin


@pytest.mark.parametrize(("delta", "flagged"), [(BELOW, True), (AT, False), (ABOVE, False)])
def test_low_quality_of_an_annotator_compares_with_their_chance(
    delta: float, flagged: bool
) -> None:
    values = [*model(0.5, name="preference_model"), *_accuracy(0.5 + delta),
              worker("model_worker_chance", "w1", 0.5)]  # fmt: skip
    flags = rules.low_quality(run("pairwise", values), T)
    assert bool(flags) is flagged
    if flagged:
        assert flags[0].evidence["floor"] == 0.5
        assert flags[0].threshold == 0.5


def test_low_quality_of_an_annotator_without_their_chance_says_nothing() -> None:
    values = [*model(0.5, name="preference_model"), *_accuracy(0.25)]
    assert rules.low_quality(run("pairwise", values), T) == []


# biased: the bias interval beyond +- max_bias x the scale's width (4 x 0.125 = 0.5)


@pytest.mark.parametrize(("low", "flagged"), [(0.499, False), (0.5, False), (0.501, True)])
def test_biased_flags_an_interval_beyond_the_limit(low: float, flagged: bool) -> None:
    values = [*model(2.0, measure="noise_sd"), campaign("model_scale_width", 4.0),
              worker("model_bias", "w1", low + 0.25, low, low + 0.5, 20)]  # fmt: skip
    flags = rules.biased(run("rating", values), T)
    assert bool(flags) is flagged
    if flagged:
        assert flags[0].threshold == 0.5
        assert flags[0].evidence["floor"] == 0.5
        assert "above" in flags[0].evidence["message"]


def test_biased_below_has_a_negative_threshold() -> None:
    values = [*model(2.0, measure="noise_sd"), campaign("model_scale_width", 4.0),
              worker("model_bias", "w1", -0.75, -1.0, -0.501, 20)]  # fmt: skip
    [f] = rules.biased(run("rating", values), T)
    assert f.threshold == -0.5
    assert "below" in f.evidence["message"]


def test_biased_needs_a_rating_model_and_a_width() -> None:
    bias = worker("model_bias", "w1", 1.5, 1.0, 2.0, 20)
    assert rules.biased(run("rating", model(2.0, measure="noise_sd"), bias), T) == []
    assert rules.biased(run("label", model(0.5), campaign("model_scale_width", 4.0), bias), T) == []


# gold_accuracy: the gold interval's upper end below chance + margin x (1 - chance)


@pytest.mark.parametrize(("delta", "flagged"), [(BELOW, True), (AT, False), (ABOVE, False)])
def test_gold_accuracy_flags_an_interval_below_the_floor(delta: float, flagged: bool) -> None:
    high = 0.625 + delta
    gold = worker("gold_accuracy", "w1", high - 0.1, high - 0.2, high, 5)
    flags = rules.gold_accuracy(run("label", campaign("gold_chance", 0.5), gold), T)
    assert bool(flags) is flagged
    if flagged:
        assert flags[0].threshold == 0.625
        assert flags[0].evidence["chance"] == 0.5
        assert flags[0].evidence["metric"] == "gold_accuracy"


@pytest.mark.parametrize(("n", "flagged"), [(4, False), (5, True), (6, True)])
def test_gold_accuracy_needs_min_gold_judgments(n: int, flagged: bool) -> None:
    gold = worker("gold_accuracy", "w1", 0.25, 0.125, 0.5, n)
    assert bool(rules.gold_accuracy(run("label", campaign("gold_chance", 0.5), gold), T)) is flagged


def test_gold_floor_setting_replaces_the_chance_floor() -> None:
    gold = worker("gold_accuracy", "w1", 0.75, 0.625, 0.875, 10)
    at_chance = run("label", campaign("gold_chance", 0.5), gold)
    assert rules.gold_accuracy(at_chance, T) == []
    [f] = rules.gold_accuracy(at_chance, thresholds(gold_floor=0.9))
    assert f.threshold == 0.9
    assert "gold_floor" in f.evidence["message"]
    assert rules.gold_accuracy(run("label", gold), T) == []  # no gold chance, no floor set


# low_agreement and speeder: below ratio x the median of the judged workers


def _peers(metric: str, value: float, n: int = 20) -> list:
    others = [worker(metric, f"w{k}", 1.0) for k in (2, 3, 4)]
    return [*others, worker(metric, "w1", value), *counts({"w1": n, "w2": 20, "w3": 20, "w4": 20})]


@pytest.mark.parametrize(("value", "flagged"), [(0.749, True), (0.75, False), (0.751, False)])
def test_low_agreement_flags_below_the_ratio_of_the_median(value: float, flagged: bool) -> None:
    flags = rules.low_agreement(run("label", _peers("agreement_loo", value)), T)
    assert [f.subject for f in flags] == (["w1"] if flagged else [])
    if flagged:
        assert flags[0].threshold == 0.75
        assert flags[0].evidence["campaign_median"] == 1.0
        assert flags[0].evidence["n"] == 20


def test_low_agreement_leaves_out_workers_below_min_judgments_and_needs_three_peers() -> None:
    assert rules.low_agreement(run("label", _peers("agreement_loo", 0.5, n=9)), T) == []
    few = [worker("agreement_loo", w, x) for w, x in (("w1", 0.25), ("w2", 1.0))]
    assert rules.low_agreement(run("label", few, counts({"w1": 20, "w2": 20})), T) == []


def test_low_agreement_counts_the_judgments_others_answered_too() -> None:
    # w1 made 23 judgments but shares 2 questions with anyone: agreement on 2 is no evidence
    others = [worker("agreement_loo", f"w{k}", 1.0, n=20) for k in (2, 3, 4)]
    n = counts({"w1": 23, "w2": 20, "w3": 20, "w4": 20})
    alone = worker("agreement_loo", "w1", 0.25, n=2)
    assert rules.low_agreement(run("label", *others, alone, *n), T) == []
    shared = worker("agreement_loo", "w1", 0.25, n=12)
    [f] = rules.low_agreement(run("label", *others, shared, *n), T)
    assert f.evidence["n"] == 12
    assert "over 12 judgments on questions others answered too" in f.evidence["message"]


@pytest.mark.parametrize(("value", "flagged"), [(0.249, True), (0.25, False), (0.251, False)])
def test_speeder_flags_below_the_ratio_of_the_median(value: float, flagged: bool) -> None:
    flags = rules.speeder(run("label", _peers("mean_duration_s", value)), T)
    assert bool(flags) is flagged
    if flagged:
        assert flags[0].threshold == 0.25
        assert flags[0].evidence["campaign_median"] == 1.0


# intransitive: the kappa interval's upper end below low_transitivity_kappa, over min_triplets


@pytest.mark.parametrize(("high", "triplets", "flagged"), [
    (0.499, 5, True), (0.5, 5, False), (0.501, 5, False), (0.499, 4, False),
])  # fmt: skip
def test_intransitive_at_its_thresholds(high: float, triplets: int, flagged: bool) -> None:
    kappa = worker("transitivity_kappa", "w1", high - 0.25, high - 0.5, high, triplets,
                   transitive=3, p_a=0.6, p_e=0.48)  # fmt: skip
    flags = rules.intransitive(run("pairwise", kappa), T)
    assert bool(flags) is flagged
    if flagged:
        assert flags[0].threshold == 0.5
        assert flags[0].evidence["n"] == triplets
        assert flags[0].evidence["interval"] == [high - 0.5, high]


# constant and position_bias: a share at least the threshold and a Holm-adjusted p below
# position_bias_p


@pytest.mark.parametrize(("share", "p", "flagged"), [
    (0.875, 0.0009, True), (0.874, 0.0009, False), (0.875, 0.001, False), (1.0, 0.00099, True),
])  # fmt: skip
def test_constant_at_its_thresholds(share: float, p: float, flagged: bool) -> None:
    v = worker("constant_answer", "w1", share, n=20, p_value=p, answer="a", count=18)
    flags = rules.constant(run("label", v), T)
    assert bool(flags) is flagged
    if flagged:
        assert flags[0].threshold == 0.875
        assert flags[0].evidence["p_adjusted"] == p
        assert flags[0].evidence["tested"] == 1


def test_constant_corrects_for_every_worker_tested() -> None:
    one = worker("constant_answer", "w1", 1.0, n=20, p_value=0.0006)
    two = worker("constant_answer", "w2", 1.0, n=20, p_value=0.0006)
    few = worker("constant_answer", "w3", 1.0, n=9, p_value=0.0006)  # not tested: too few
    assert len(rules.constant(run("label", one, few), T)) == 1
    assert rules.constant(run("label", one, two), T) == []  # Holm: 0.0012 each


def test_holm_adjusts_step_down() -> None:
    assert rules.holm([0.01, 0.04, 0.03]).tolist() == pytest.approx([0.03, 0.06, 0.06])
    assert rules.holm([]).size == 0


@pytest.mark.parametrize(("left_share", "p", "flagged"), [
    (0.25, 0.0009, True), (0.75, 0.0009, True), (0.251, 0.0009, False), (0.25, 0.001, False),
])  # fmt: skip
def test_position_bias_at_its_thresholds(left_share: float, p: float, flagged: bool) -> None:
    v = worker("side_test", "w1", left_share, n=40, p_value=p, expected_left=20)
    flags = rules.position_bias(run("pairwise", v), T)
    assert bool(flags) is flagged
    if flagged:
        [f] = flags
        assert f.value == 0.75
        assert f.threshold == 0.75
        assert f.evidence["side"] == ("left" if left_share > 0.5 else "right")


@pytest.mark.parametrize(("bias", "flagged"), [(1.0, False), (1.2, True)])
def test_position_bias_of_the_model_beyond_the_share(bias: float, flagged: bool) -> None:
    """log(0.75 / 0.25) = 1.0986: a bias of 1.0 pulls two equal items 73% to one side."""
    v = worker("model_position_bias", "w1", bias, bias - 0.25, bias + 0.25, 40)
    flags = rules.position_bias(run("pairwise", model(0.5, name="preference_model"), v), T)
    assert bool(flags) is flagged
    if flagged:
        assert flags[0].evidence["metric"] == "model_position_bias"
        assert flags[0].evidence["p_value"] < T.position_bias_p
