"""One decision per worker (``monitor.rules.decision``) and the tests of answering habits
(``constant``, ``position_bias`` on the worker's own answers): pure rules, at and around each
threshold."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from monitor.core.results import FlagRecord, Value
from monitor.core.thresholds import DecisionOptions
from monitor.rules import RunValues, Thresholds, evaluate
from monitor.rules.decision import DECISIONS, decide_workers
from monitor.rules.policy import decide
from monitor.rules.worker import constant, holm, position_bias
from monitor.store.workers import WorkerState

T = Thresholds()


def _label_run(
    accuracies: dict[str, tuple[float, float, float]],
    n: int = 100,
    chance: float = 0.5,
    weights: dict[str, float] | None = None,
    extra: list[Value] | None = None,
) -> list[Value]:
    """A converged label model: each worker's accuracy (value, low, high) over ``n``."""
    values = [
        Value("campaign", "c", "model_iterations", 10, detail={"converged": True,
                                                               "model": "dawid_skene"}),
        Value("campaign", "c", "model_chance", chance, detail={"measure": "accuracy"}),
    ]  # fmt: skip
    for w, (v, lo, hi) in accuracies.items():
        values.append(Value("worker", w, "n_judgments", n))
        values.append(Value("worker", w, "model_accuracy", v, lo, hi, n=n))
        if weights and w in weights:
            values.append(Value("worker", w, "model_weight", weights[w]))
    return values + (extra or [])


CROWD = {f"w{k}": (0.85, 0.8, 0.9) for k in range(6)}


def _decisions(values: list[Value], flags=(), kind: str = "label", **options) -> dict[str, object]:  # noqa: ANN001
    run = RunValues(kind, values)
    return {
        d.worker: d
        for d in decide_workers(
            run, list(flags), T, DecisionOptions(**options) if options else None
        )
    }


def test_the_crowd_is_ok_and_a_worker_at_chance_is_blocked() -> None:
    out = _decisions(_label_run({**CROWD, "bad": (0.45, 0.38, 0.5)}))
    assert {out[w].decision for w in CROWD} == {"ok"}
    assert out["bad"].decision == "block"
    assert out["bad"].reason == "answers no better than chance over 100 questions"
    assert out["bad"].applied_weight == 0.0
    assert out["bad"].evidence["chance"] == 0.5


@pytest.mark.parametrize(
    ("high", "decision"), [(0.49, "block"), (0.5, "block"), (0.51, "down_weight")]
)
def test_block_at_or_below_chance_only(high: float, decision: str) -> None:
    out = _decisions(_label_run({**CROWD, "x": (high - 0.05, high - 0.1, high)}))
    assert out["x"].decision == decision


def test_down_weight_below_the_typical_worker_with_the_models_weight() -> None:
    # chance 0.5, median 0.85: the line is 0.5 + 0.75 x 0.35 = 0.7625
    out = _decisions(
        _label_run(
            {**CROWD, "low": (0.6, 0.56, 0.63), "edge": (0.7, 0.65, 0.5 + 0.75 * (0.85 - 0.5)),
             "above": (0.7, 0.65, 0.77)},
            weights={"low": 0.2},
        )
    )  # fmt: skip
    assert out["low"].decision == "down_weight"
    assert out["low"].weight == 0.2
    assert out["low"].reason == (
        "right about 60% of the time over 100 questions, where most workers are right 85%"
    )
    assert out["edge"].decision == "ok"  # at the line: not below it
    assert out["above"].decision == "ok"
    # without a model weight in (0, 1) the setting's weight
    assert (
        _decisions(_label_run({**CROWD, "low": (0.6, 0.56, 0.63)}), down_weight=0.3)["low"].weight
        == 0.3
    )


def test_never_block_a_worker_at_the_crowds_middle() -> None:
    # a constant flag on a worker whose accuracy is the median: look, never block
    flag = FlagRecord("worker", "w0", "constant", 0.97, 0.95, {"answer": "a", "n": 100})
    out = _decisions(_label_run(CROWD), [flag])
    assert out["w0"].decision == "watch"


def test_cannot_tell_few_answers_wide_interval_or_no_measure() -> None:
    values = _label_run({**CROWD, "wide": (0.7, 0.45, 0.95)})
    values.append(Value("worker", "few", "n_judgments", 5))
    values.append(Value("worker", "none", "n_judgments", 50))
    out = _decisions(values)
    assert out["few"].decision == "cannot_tell"
    assert out["few"].reason == "too few answers to judge (5)"
    assert out["wide"].decision == "cannot_tell"
    assert out["none"].decision == "cannot_tell"


def test_a_campaign_that_cannot_say_or_did_not_converge() -> None:
    values = _label_run(CROWD)
    values[0] = Value("campaign", "c", "model_iterations", 10, detail={"converged": False})
    assert {d.decision for d in _decisions(values).values()} == {"cannot_tell"}


def test_gold_at_chance_blocks() -> None:
    extra = [
        Value("campaign", "c", "gold_chance", 0.5),
        Value("worker", "g", "gold_accuracy", 0.45, 0.3, 0.5, n=40),
        Value("worker", "g", "n_judgments", 100),
    ]
    out = _decisions(_label_run(CROWD, extra=extra))
    assert out["g"].decision == "block"
    assert out["g"].reason == "answers at chance on 40 gold questions"


def test_position_bias_down_weights_and_always_left_blocks() -> None:
    values = _label_run(CROWD)
    biased = FlagRecord("worker", "w1", "position_bias", 0.9, 0.75, {"side": "left", "n": 80})
    always = FlagRecord("worker", "w2", "position_bias", 1.0, 0.75, {"side": "left", "n": 80})
    low = dict(CROWD, w1=(0.8, 0.7, 0.9), w2=(0.8, 0.7, 0.9))
    out = _decisions(_label_run(low), [biased, always], kind="pairwise")
    assert out["w1"].decision == "down_weight"
    assert out["w1"].reason == "picked the left option in 90% of 80 comparisons"
    assert out["w2"].decision == "block"
    assert _decisions(values, [biased])["w1"].decision == "down_weight"


def test_other_flags_ask_for_a_look() -> None:
    flag = FlagRecord("worker", "w3", "speeder", 1.0, 3.0, {})
    out = _decisions(_label_run(CROWD), [flag])
    assert out["w3"].decision == "watch"
    assert out["w3"].reason == "answers faster than the questions can be read"


def test_unanimous_campaign_flags_nobody_and_cannot_tell() -> None:
    values = _label_run({f"w{k}": (1.0, 1.0, 1.0) for k in range(6)}, chance=1.0)
    values.append(Value("campaign", "c", "distinct_answers", 1, n=360))
    for k in range(6):
        values.append(Value("worker", f"w{k}", "constant_answer", 1.0, n=60,
                            detail={"answer": "a", "count": 60, "p_value": 1e-9}))  # fmt: skip
    assert [f for f in evaluate(values, T, kind="label") if f.scope == "worker"] == []
    assert {d.decision for d in _decisions(values).values()} == {"cannot_tell"}


def test_ratings_noise_sd_block_and_down_weight() -> None:
    values = [
        Value("campaign", "c", "model_iterations", 10, detail={"converged": True}),
        Value("campaign", "c", "model_chance", 2.0, detail={"measure": "noise_sd"}),
    ]
    sds = {**{f"r{k}": (0.5, 0.45, 0.55) for k in range(5)}, "noisy": (1.5, 1.3, 1.7),
           "random": (2.1, 2.0, 2.3)}  # fmt: skip
    for w, (v, lo, hi) in sds.items():
        values += [
            Value("worker", w, "n_judgments", 100),
            Value("worker", w, "model_noise_sd", v, lo, hi, n=100),
            Value("worker", w, "model_chance_sd", 2.0),
        ]
    out = _decisions(values, kind="rating")
    assert out["random"].decision == "block"
    assert out["noisy"].decision == "down_weight"
    assert out["noisy"].reason == "ratings 3.0 times as noisy as most workers' over 100 ratings"
    assert out["r0"].decision == "ok"


def _habit(metric: str, workers: dict[str, tuple[float, int, float]]) -> list[Value]:
    return [
        Value("worker", w, metric, share, n=n,
              detail={"p_value": p, "answer": "left", "expected": n / 2, "expected_left": n / 2})
        for w, (share, n, p) in workers.items()
    ]  # fmt: skip


def test_holm() -> None:
    assert holm([0.01, 0.04, 0.03]).tolist() == pytest.approx([0.03, 0.06, 0.06])
    assert holm([]).size == 0


@given(st.lists(st.floats(0, 1), min_size=1, max_size=30))
def test_holm_never_lowers_a_p_value_and_keeps_the_order(ps: list[float]) -> None:
    q = holm(ps)
    assert np.all(q >= np.asarray(ps) - 1e-12)
    assert np.all(q <= 1)
    order = np.argsort(ps, kind="stable")
    assert np.all(np.diff(q[order]) >= -1e-12)


def test_position_bias_on_the_workers_own_answers_with_holm() -> None:
    # Holm over 10 workers: 1e-6 x 10, 1e-5 x 9 flagged; 2e-4 x 8 = 1.6e-3: not flagged
    workers = {f"h{k}": (0.5, 80, 0.9) for k in range(7)}
    workers |= {"left90": (0.9, 80, 1e-5), "right80": (0.2, 80, 1e-6), "weak": (0.8, 80, 2e-4)}
    flags = position_bias(RunValues("pairwise", _habit("side_test", workers)), T)
    assert [(f.subject, f.evidence["side"]) for f in flags] == [
        ("left90", "left"),
        ("right80", "right"),
    ]
    assert flags[0].evidence["correction"] == "holm"
    assert flags[0].evidence["tested"] == 10
    assert flags[0].evidence["p_adjusted"] == pytest.approx(9e-5)  # second smallest: x 9
    # below the share: no flag whatever the p-value
    share = position_bias(RunValues("pairwise", _habit("side_test", {"x": (0.74, 500, 1e-20)})), T)
    assert share == []
    few = {"x": (1.0, 9, 1e-9)}  # fewer than min_judgments strict answers
    assert position_bias(RunValues("pairwise", _habit("side_test", few)), T) == []


def test_the_model_never_hides_what_the_test_finds() -> None:
    values = _habit("side_test", {"left": (0.9, 80, 1e-9)})
    values += [
        Value("campaign", "c", "model_iterations", 10, detail={"converged": True}),
        Value("campaign", "c", "model_chance", 0.5, detail={"measure": "accuracy"}),
        Value("worker", "left", "model_position_bias", 0.01, -0.09, 0.11, n=80),
    ]
    flags = position_bias(RunValues("pairwise", values), T)
    assert [f.subject for f in flags] == ["left"]


@pytest.mark.parametrize(("share", "flagged"), [(0.94, False), (0.95, True), (1.0, True)])
def test_constant_answering_from_the_share(share: float, flagged: bool) -> None:
    run = RunValues("label", _habit("constant_answer", {"c": (share, 100, 1e-9)}))
    assert bool(constant(run, T)) is flagged


def test_decisions_are_ordered_most_severe_first() -> None:
    assert DECISIONS == ("block", "stop", "down_weight", "watch", "cannot_tell", "ok")


def test_the_advice_policy_applies_block_and_down_weight() -> None:
    out = _decisions(_label_run({**CROWD, "bad": (0.45, 0.38, 0.5), "low": (0.6, 0.56, 0.63)},
                                weights={"low": 0.2}))  # fmt: skip
    states = {w: WorkerState(k, w, "ok", 1.0) for k, w in enumerate(out)}
    taken = decide([], states, {}, policy="advice", down_weight=0.5, advice=out.values())
    assert [(d.worker, d.action, d.weight) for d in taken] == [
        ("bad", "block", None),
        ("low", "down_weight", 0.2),
    ]
    assert taken[0].reason == "answers no better than chance over 100 questions"
    states["bad"] = WorkerState(0, "bad", "blocked", 1.0)
    states["low"] = WorkerState(1, "low", "down_weighted", 0.2)
    assert decide([], states, {}, policy="advice", down_weight=0.5, advice=out.values()) == []


def test_the_campaign_state() -> None:
    from monitor.report.verdict import state

    def rows(*decisions: tuple[str, int]) -> list[dict]:
        return [{"decision": d, "n_judgments": n} for d, n in decisions]

    good = rows(("ok", 100), ("ok", 100), ("cannot_tell", 5))
    kw = {"has_run": True, "kind": "label", "name": "c"}
    assert state("reliable", good, **kw)["state"] == "reliable"
    assert state("reliable", good + rows(("down_weight", 50)), **kw)["state"] == (
        "usable_with_care"
    )
    tentative = state("tentative", good, **kw)
    assert tentative["state"] == "usable_with_care"
    assert tentative["state_text"] == (
        "Usable with care: agreement is only tentative or undetermined."
    )
    both = state("tentative", good + rows(("block", 50)), **kw)["state_text"]
    assert both == (
        "Usable with care: 1 worker to block or down-weight, and agreement is only tentative "
        "or undetermined."
    )
    assert state("unreliable", good, **kw)["state"] == "unreliable"
    no_run = state("reliable", good, **{**kw, "has_run": False})
    assert no_run["state"] == "cannot_tell"
    assert "recompute" in no_run["to_tell"][0]
    # half the judgments by workers nobody can judge
    assert state("reliable", rows(("ok", 100), ("cannot_tell", 100)), **kw)["state"] == (
        "cannot_tell"
    )
    # nothing judged twice and no gold (face-age): cannot tell, and what would tell
    once = state("undetermined", good, **{**kw, "kind": "pairwise"})
    assert once["state"] == "cannot_tell"
    assert "--retest" in once["to_tell"][0]
    assert state("undetermined", good, **kw, gold=True)["state"] == "usable_with_care"
    assert state("undetermined", good, **{**kw, "kind": "multilabel"})["state"] == (
        "usable_with_care"
    )


def test_the_campaign_state_speaks_of_the_export_first() -> None:
    """Low agreement with an export expected good is usable with care (rte: alpha 0.24, the
    export right on 93% of the items), never red; an export expected poor is unreliable
    whatever the agreement; without an expectation alpha decides as before."""
    from monitor.report.verdict import EXPORT_USABLE, state

    good = [{"decision": "ok", "n_judgments": 100}] * 3
    kw = {"has_run": True, "kind": "label", "name": "c"}

    def exported(value: float, measure: str = "accuracy") -> dict:
        return {"measure": measure, "value": value}

    care = state("unreliable", good, **kw, export=exported(0.98))
    assert care["state"] == "usable_with_care"
    assert "single answers agree little" in care["state_text"]
    assert "right on at most 98% of its items" in care["state_text"]
    assert "an upper bound: check a sample" in care["state_text"]
    assert state("unreliable", good, **kw, export=exported(EXPORT_USABLE))["state"] == (
        "usable_with_care"
    )
    poor = state("reliable", good, **kw, export=exported(0.7))
    assert poor["state"] == "unreliable"
    assert "right on at most 70% of its items" in poor["state_text"]
    assert state("unreliable", good, **kw, export=None)["state"] == "unreliable"
    assert state("reliable", good, **kw, export=exported(0.95))["state"] == "reliable"
    pairs = state("unreliable", good, **{**kw, "kind": "pairwise"},
                  export=exported(0.83, "pair_accuracy"))  # fmt: skip
    assert pairs["state"] == "usable_with_care"
    assert "83% of its pairs of items" in pairs["state_text"]
    rating = {**kw, "kind": "rating"}
    assert (
        state("unreliable", good, **rating, export=exported(4.7, "mae"), width=100.0)["state"]
        == "usable_with_care"
    )
    off = state("tentative", good, **rating, export=exported(14.0, "mae"), width=100.0)
    assert off["state"] == "unreliable"
    assert "off by at least 14 on average" in off["state_text"]
    # no width (an open scale): nothing to weigh the error against, alpha decides
    assert state("unreliable", good, **rating, export=exported(4.7, "mae"))["state"] == (
        "unreliable"
    )
    # a campaign that cannot tell stays so, whatever its export
    assert state("reliable", [{"decision": "cannot_tell", "n_judgments": 100}], **kw,
                 export=exported(0.99))["state"] == "cannot_tell"  # fmt: skip


def test_chance_is_the_workers_own() -> None:
    # four classes, the commonest at 0.67: a worker right 58% who gives the rarer classes more
    # often (their answers shuffled reach 0.34) carries information: down-weight, not block
    crowd = {f"w{k}": (0.8, 0.75, 0.85) for k in range(6)}
    values = _label_run({**crowd, "rare": (0.58, 0.52, 0.64)}, chance=0.67)
    values.append(Value("worker", "rare", "model_worker_chance", 0.34))
    assert _decisions(values)["rare"].decision == "down_weight"
    values.append(Value("worker", "w0", "model_worker_chance", 0.9))  # their own chance: 0.9
    assert _decisions(values)["w0"].decision == "watch"  # at the median: a look, never a block
