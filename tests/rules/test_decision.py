"""Each worker's decision (``rules.decision``) at and around its thresholds."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from monitor.core.results import FlagRecord
from monitor.core.thresholds import DecisionOptions
from monitor.rules.decision import WorkerDecision, decide_workers, unanimous_campaign
from monitor.rules.stop import Stop, live_stop, stop_reason
from tests.rules.build import T, campaign, counts, model, run, worker

OPTIONS = DecisionOptions(down_weight_below=0.75, down_weight=0.5)
PEERS = {"w2": 0.875, "w3": 0.875, "w4": 0.875}
"""Three workers at 0.875: the crowd's median; chance 0.5, so the down-weight line is
0.5 + 0.75 x (0.875 - 0.5) = 0.78125."""


def _workers(w1: tuple[float, float, float], n: int = 20, **more: float) -> list:
    value, low, high = w1
    rows = [worker("model_accuracy", w, x, x - 0.0625, x + 0.0625, 20) for w, x in PEERS.items()]
    rows.append(worker("model_accuracy", "w1", value, low, high, n))
    return [*rows, *counts({"w1": n, **dict.fromkeys(PEERS, 20)})]


def _decision(
    values: list, flags: Sequence[FlagRecord] = (), kind: str = "label"
) -> WorkerDecision:
    decisions = {d.worker: d for d in decide_workers(run(kind, values), flags, T, OPTIONS)}
    return decisions["w1"]


@pytest.mark.parametrize(
    ("high", "decision"), [(0.499, "block"), (0.5, "block"), (0.501, "down_weight")]
)
def test_block_at_chance(high: float, decision: str) -> None:
    d = _decision([*model(0.5), *_workers((high - 0.0625, high - 0.125, high))])
    assert d.decision == decision
    assert d.evidence["chance"] == 0.5
    assert d.evidence["typical"] == 0.875


@pytest.mark.parametrize(("high", "decision"), [
    (0.78, "down_weight"), (0.78125, "ok"), (0.782, "ok"),
])  # fmt: skip
def test_down_weight_below_the_line(high: float, decision: str) -> None:
    d = _decision([*model(0.5), *_workers((high - 0.01, high - 0.02, high))])
    assert d.decision == decision
    if decision == "down_weight":
        assert d.weight == 0.5  # no model weight: the setting's
        assert "most workers are right 88%" in d.reason


def test_down_weight_takes_the_model_weight_in_zero_one() -> None:
    values = [*model(0.5), *_workers((0.7, 0.65, 0.75)), worker("model_weight", "w1", 0.25)]
    assert _decision(values).weight == 0.25
    values[-1] = worker("model_weight", "w1", 1.5)
    assert _decision(values).weight == 0.5


@pytest.mark.parametrize(("n", "decision"), [(9, "cannot_tell"), (10, "block"), (11, "block")])
def test_too_few_answers_cannot_tell(n: int, decision: str) -> None:
    d = _decision([*model(0.5), *_workers((0.375, 0.25, 0.5), n=n)])
    assert d.decision == decision
    assert d.evidence["n"] == n


def test_an_interval_spanning_chance_and_the_median_cannot_tell() -> None:
    d = _decision([*model(0.5), *_workers((0.75, 0.5, 0.9))])
    assert d.decision == "cannot_tell"
    assert d.reason.startswith("too little evidence")


@pytest.mark.parametrize(("share", "decision"), [
    (0.874, "down_weight"), (0.875, "block"), (0.876, "block"),
])  # fmt: skip
def test_position_bias_blocks_from_constant_share(share: float, decision: str) -> None:
    flag = FlagRecord("worker", "w1", "position_bias", share, 0.75, {"side": "left", "n": 40})
    d = _decision([*counts({"w1": 40})], [flag], kind="pairwise")
    assert d.decision == decision
    assert "left option" in d.reason


def test_a_constant_worker_is_blocked_unless_at_the_crowds_middle() -> None:
    flag = FlagRecord("worker", "w1", "constant", 0.95, 0.875, {"answer": "a", "n": 20})
    assert _decision(counts({"w1": 20}), [flag]).decision == "block"
    middle = _decision([*model(0.5), *_workers((0.875, 0.8125, 0.9375))], [flag])
    assert middle.decision == "watch"


@pytest.mark.parametrize(("rule", "decision"), [
    ("low_agreement", "watch"), ("speeder", "watch"), ("intransitive", "watch"),
    ("biased", "watch"), ("low_quality", "down_weight"),
])  # fmt: skip
def test_the_other_flags(rule: str, decision: str) -> None:
    flag = FlagRecord("worker", "w1", rule, 0.5, 0.75, {"n": 20})
    d = _decision(counts({"w1": 20}), [flag])
    assert d.decision == decision
    assert d.evidence["rules"] == [rule]


@pytest.mark.parametrize(("n", "decision"), [(4, "cannot_tell"), (5, "block"), (6, "block")])
def test_gold_at_chance_needs_min_gold_judgments(n: int, decision: str) -> None:
    values = [campaign("gold_chance", 0.5), worker("gold_accuracy", "w1", 0.375, 0.25, 0.5, n),
              *counts({"w1": 20})]  # fmt: skip
    assert _decision(values).decision == decision


def test_nothing_measured_cannot_tell_and_unanimous_campaigns_tell_nobody_apart() -> None:
    assert _decision(counts({"w1": 20})).decision == "cannot_tell"
    values = [campaign("distinct_answers", 1), *model(0.5), *_workers((0.375, 0.25, 0.5))]
    assert unanimous_campaign(run("label", values))
    assert _decision(values).decision == "cannot_tell"


def test_a_noise_sd_is_read_smaller_is_better() -> None:
    values = [*model(2.0, measure="noise_sd", name="rating_model"), *counts(
        {"w1": 20, "w2": 20, "w3": 20, "w4": 20})]  # fmt: skip
    values += [worker("model_noise_sd", w, 1.0, 0.875, 1.125, 20) for w in ("w2", "w3", "w4")]
    at_chance = [*values, worker("model_noise_sd", "w1", 2.5, 2.0, 3.0, 20)]
    d = _decision(at_chance, kind="rating")
    assert d.decision == "block"
    assert d.evidence["interval"] == [2.0, 3.0]
    assert d.evidence["chance"] == 2.0
    noisy = [*values, worker("model_noise_sd", "w1", 1.75, 1.5, 1.9, 20)]
    assert _decision(noisy, kind="rating").decision == "down_weight"
    assert "times as noisy" in _decision(noisy, kind="rating").reason


def _stopped(after: int = 12, line: float = 0.825) -> list:
    return [
        campaign("stop_line", line, typical=0.875, alpha=0.01, share=0.75, margin=0.05),
        worker("stop_after", "w1", float(after), n=after),
        worker("stop_evidence", "w1", 150.0, n=after),
    ]


def test_a_stop_test_that_reached_its_evidence_stops_the_worker_even_on_few_answers() -> None:
    # 8 answers: too few for the other decisions, not for an anytime-valid test
    d = _decision([*model(0.5), *_workers((0.6, 0.4, 0.8), n=8), *_stopped(8)])
    assert d.decision == "stop"
    assert d.reason.startswith("right less than 82% of the time, where most workers are right 88%")
    assert "shown after 8 questions" in d.reason
    assert "at most 1% of the time" in d.reason
    assert d.evidence["stop"]["after"] == 8
    assert d.weight == 0.5
    assert d.applied_weight == 0.5
    assert d.value().detail["decision"] == "stop"  # type: ignore[index]


def test_block_outranks_stop_and_the_crowds_middle_is_never_stopped() -> None:
    d = _decision([*model(0.5), *_workers((0.4375, 0.375, 0.5)), *_stopped()])
    assert d.decision == "block"
    d = _decision([*model(0.5), *_workers((0.875, 0.8, 0.95)), *_stopped()])
    assert d.decision != "stop"
    # no stop line in the run (too few workers to say what is typical): no stop
    d = _decision([*model(0.5), *_workers((0.7, 0.65, 0.75)), *_stopped()[1:]])
    assert d.decision == "down_weight"


def _raters(w1: tuple[float, float, float], bias: tuple[float, float, float]) -> list:
    """Three raters of noise sd 1 and no bias (the crowd's median error 1), and w1."""
    values = [*model(4.0, measure="noise_sd", name="rating_model"),
              *counts({"w1": 20, "w2": 20, "w3": 20, "w4": 20})]  # fmt: skip
    for w in ("w2", "w3", "w4"):
        values += [worker("model_noise_sd", w, 1.0, 0.875, 1.125, 20),
                   worker("model_bias", w, 0.0, -0.5, 0.5, 20)]  # fmt: skip
    return [*values, worker("model_noise_sd", "w1", *w1, 20), worker("model_bias", "w1", *bias, 20)]


def _rating_stop(after: int = 9) -> list:
    return [
        campaign(
            "stop_line", 4.0 / 3.0, typical=1.0, alpha=0.01, share=0.75, margin=0.05, measure="mse"
        ),
        worker("stop_after", "w1", float(after), n=after),
        worker("stop_evidence", "w1", 150.0, n=after),
    ]


def test_a_rater_is_stopped_on_their_error_bias_included_and_not_within_the_crowds() -> None:
    # little noise, a large bias: the error the test reads (sqrt(b^2 + s^2) = 2.2) is well
    # above the crowd's median (1), though the noise alone is below it
    d = _decision([*_raters((1.0, 0.9, 1.1), (2.0, 1.75, 2.25)), *_rating_stop()], kind="rating")
    assert d.decision == "stop"
    assert d.reason.startswith("ratings off by more than 1.15 on average (root mean square), "
                               "where most raters are off by 1: shown after 9 ratings")  # fmt: skip
    assert d.evidence["error"]["typical"] == 1.0
    assert d.evidence["error"]["interval"][0] > 1.0
    # an interval of the error that reaches the crowd's median: the run's model does not agree
    d = _decision([*_raters((1.0, 0.9, 1.1), (1.0, -0.25, 2.25)), *_rating_stop()], kind="rating")
    assert d.decision != "stop"


def test_a_live_stop_stands_unless_the_runs_model_puts_the_worker_at_the_crowds_median() -> None:
    stop = Stop(9, 150.0, 4.0 / 3.0, 1.0, 0.01, "mse")
    below = {"decision": "ok", "evidence": {"error": {"value": 2.2, "interval": [1.9, 2.5],
                                                      "typical": 1.0}}}  # fmt: skip
    made = live_stop(below, stop, 0.5)
    assert made is not None
    assert made["decision"] == "stop"
    assert made["reason"].startswith("ratings off by more than 1.15")
    reaches = {"decision": "ok", "evidence": {"error": {"value": 1.5, "interval": [0.9, 2.5],
                                                        "typical": 1.0}}}  # fmt: skip
    assert live_stop(reaches, stop, 0.5) is None
    # labels: the accuracy, larger is better
    label = Stop(9, 150.0, 0.825, 0.875, 0.01)
    assert live_stop({"evidence": {"value": 0.6, "interval": [0.5, 0.7], "typical": 0.875}},
                     label, 0.5) is not None  # fmt: skip
    assert live_stop({"evidence": {"value": 0.6, "interval": [0.5, 0.9], "typical": 0.875}},
                     label, 0.5) is None  # fmt: skip
    assert live_stop({"decision": "block"}, label, 0.5) is None
    assert live_stop(None, label, 0.5) is not None  # a worker the run has not seen


def test_a_side_stop_says_which_side_and_how_far_beyond_the_others() -> None:
    """An annotator the side's test stopped: the reason names the side, the share and the
    margin, and holds without a line on accuracy (a campaign of pairs judged once)."""
    left = Stop(30, 120.0, float("nan"), float("nan"), 0.01, side=(0.9, 0.1))
    assert stop_reason(left, "comparisons") == (
        "picks the left item in 90% of their first 30 strict answers, whatever the items: more "
        "than 10 points above the other annotators' share (an annotator within 10 points is "
        "stopped so at most 1% of the time)"
    )
    right = Stop(25, 120.0, 0.7, 0.75, 0.01, side=(0.08, 0.1))
    assert stop_reason(right).startswith("picks the right item in 92% of their first 25 ")
