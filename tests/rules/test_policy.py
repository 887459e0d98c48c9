"""The automatic policy (``rules.policy.decide``) on hand-built flags, states and trails."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from monitor.core.results import FlagRecord
from monitor.rules.decision import WorkerDecision
from monitor.rules.policy import decide


@dataclass
class State:
    status: str = "ok"
    weight: float = 1.0


@dataclass
class Past:
    id: int
    action: str
    automatic: bool = True
    evidence: dict[str, Any] | None = field(default_factory=dict)


LOW = FlagRecord("worker", "w1", "low_quality", 0.5, 0.625, {"message": "below the floor"})
BIASED = FlagRecord("worker", "w1", "biased", 1.0, 0.5, {})  # the catalog: acts=False


def test_an_unknown_policy_is_refused() -> None:
    with pytest.raises(ValueError, match="Unknown policy"):
        decide([LOW], {"w1": State()}, {}, policy="ban", down_weight=0.5)


@pytest.mark.parametrize(("policy", "action", "weight"), [
    ("suggest", "suggest", None), ("block", "block", None), ("down_weight", "down_weight", 0.5),
])  # fmt: skip
def test_each_policy_on_a_flag_it_acts_on(policy: str, action: str, weight: float | None) -> None:
    [d] = decide([LOW, BIASED], {"w1": State()}, {}, policy=policy, down_weight=0.5, run_id=7)
    assert (d.worker, d.action, d.weight, d.rules) == ("w1", action, weight, ("low_quality",))
    assert d.evidence["run_id"] == 7
    assert d.evidence["flags"][0]["threshold"] == 0.625
    assert d.reason == "flagged: low quality"  # no decision's reason given: the flags' names
    assert "low_quality: below the floor" in d.evidence["detail"]


def test_flags_the_policy_does_not_act_on_decide_nothing() -> None:
    assert decide([BIASED], {"w1": State()}, {}, policy="block", down_weight=0.5) == []


def test_a_persons_decision_stands() -> None:
    history = {"w1": [Past(3, "clear", automatic=False)]}
    assert decide([LOW], {"w1": State()}, history, policy="block", down_weight=0.5) == []


@pytest.mark.parametrize(("state", "policy", "acts"), [
    (State("blocked", 0.0), "block", False),
    (State("blocked", 0.0), "down_weight", False),  # never loosened
    (State("down_weighted", 0.5), "down_weight", False),  # already so
    (State("down_weighted", 0.5 + 1e-9), "down_weight", True),  # another weight
    (State("down_weighted", 0.5), "block", True),
    (State("down_weighted", 0.5), "suggest", False),
])  # fmt: skip
def test_a_state_is_never_loosened_nor_repeated(state: State, policy: str, acts: bool) -> None:
    out = decide([LOW], {"w1": state}, {}, policy=policy, down_weight=0.5)
    assert bool(out) is acts


def test_the_same_suggestion_is_not_repeated() -> None:
    same = {"w1": [Past(4, "suggest", evidence={"rules": ["low_quality"]})]}
    other = {"w1": [Past(4, "suggest", evidence={"rules": ["gold_accuracy"]})]}
    assert decide([LOW], {"w1": State()}, same, policy="suggest", down_weight=0.5) == []
    assert len(decide([LOW], {"w1": State()}, other, policy="suggest", down_weight=0.5)) == 1


def test_advice_puts_the_workers_decisions_in_force() -> None:
    advice = [
        WorkerDecision("w1", "block", "answers at chance", evidence={"rules": ["low_quality"]}),
        WorkerDecision("w2", "down_weight", "noisy", 0.25),
        WorkerDecision("w3", "watch", "speeds"),
        WorkerDecision("w4", "down_weight", "noisy", 0.25),
    ]
    states = {"w1": State(), "w2": State(), "w3": State(), "w4": State("down_weighted", 0.25)}
    out = decide([], states, {}, policy="advice", down_weight=0.5, advice=advice, run_id=2)
    assert [(d.worker, d.action, d.weight) for d in out] == [("w1", "block", None),
                                                               ("w2", "down_weight", 0.25)]  # fmt: skip
    assert out[0].reason == "answers at chance"
    assert out[0].rules == ("low_quality",)
    assert out[0].evidence["decision"] == "block"


def test_advice_puts_a_stop_in_force_as_its_down_weight() -> None:
    advice = [WorkerDecision("w1", "stop", "right less than 80%", 0.3)]
    out = decide([], {"w1": State()}, {}, policy="advice", down_weight=0.5, advice=advice)
    assert [(d.worker, d.action, d.weight) for d in out] == [("w1", "down_weight", 0.3)]
    assert out[0].evidence["decision"] == "stop"
    again = {"w1": State("down_weighted", 0.3)}
    assert decide([], again, {}, policy="advice", down_weight=0.5, advice=advice) == []
