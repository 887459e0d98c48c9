"""The automatic policy and the manual actions: decisions, audit trail, no overrides."""

from __future__ import annotations

from sqlalchemy import Engine, select

from monitor.cli import main
from monitor.core.settings import Settings
from monitor.pipeline.decisions import apply_policy
from monitor.rules import PolicyOptions
from monitor.rules.decision import WorkerDecision as WorkerDecisionRow
from monitor.rules.policy import decide
from monitor.store.engine import transaction
from monitor.store.models import Worker, WorkerDecision
from monitor.store.runs import FlagRecord, latest_run
from monitor.store.workers import WorkerState, append_decision, decisions
from tests.report.fixtures import rating_campaign

FLAG = FlagRecord(
    "worker", "w6", "low_quality", 0.12, 0.44, {"message": "WQS 0.12 is below 0.6 x 0.74", "n": 8}
)


def _state(engine: Engine, campaign_id: int, worker: str) -> tuple[str, float]:
    with transaction(engine) as s:
        w = s.scalars(
            select(Worker).where(Worker.campaign_id == campaign_id, Worker.external_id == worker)
        ).one()
        return w.status, w.weight


def _apply(engine: Engine, c, settings: Settings, flags=(FLAG,)):  # noqa: ANN001
    with transaction(engine) as s:
        run = latest_run(s, c.id)
        assert run is not None
        return apply_policy(s, c.id, run.id, list(flags), PolicyOptions.of(settings))


def test_decide_is_pure_and_ignores_non_worker_flags() -> None:
    states = {"w6": WorkerState(1, "w6", "ok", 1.0)}
    item_flag = FlagRecord("item", "i3", "ambiguous", 0.3, 0.5, {})
    out = decide([FLAG, item_flag], states, {}, policy="block", down_weight=0.5, run_id=3)
    assert [(d.worker, d.action, d.rules) for d in out] == [("w6", "block", ("low_quality",))]
    assert out[0].reason == "flagged: low quality"  # short: the block lists show it
    assert "WQS 0.12" in out[0].evidence["detail"]
    assert out[0].evidence["run_id"] == 3
    assert out[0].evidence["flags"][0]["n"] == 8
    assert decide([FLAG], {}, {}, policy="block", down_weight=0.5) == []  # unknown worker


def test_block_and_down_weight_record_the_decisions_one_line_reason() -> None:
    states = {"w6": WorkerState(1, "w6", "ok", 1.0)}
    advice = [
        WorkerDecisionRow("w6", "down_weight", "right about 55% of the time over 8 questions",
                          0.4, {}),
        WorkerDecisionRow("w7", "ok", "", None, {}),
    ]  # fmt: skip
    for policy in ("block", "down_weight", "suggest"):
        out = decide([FLAG], states, {}, policy=policy, down_weight=0.5, advice=advice)
        assert [d.reason for d in out] == ["right about 55% of the time over 8 questions"]
        assert "WQS 0.12" in out[0].evidence["detail"]


def test_suggest_writes_the_trail_once_and_keeps_the_status(engine: Engine) -> None:
    c = rating_campaign(engine)
    settings = Settings(policy="suggest")
    assert [d.action for d in _apply(engine, c, settings)] == ["suggest"]
    assert _apply(engine, c, settings) == []  # same flags: no duplicate suggestion
    assert _state(engine, c.id, "w6") == ("ok", 1.0)
    with transaction(engine) as s:
        trail = decisions(s, c.id)
    assert len(trail) == 1
    assert trail[0].automatic
    assert trail[0].actor == "policy:suggest"
    assert trail[0].run_id == trail[0].evidence["run_id"]
    assert trail[0].evidence["rules"] == ["low_quality"]


def test_block_policy_blocks_once(engine: Engine) -> None:
    c = rating_campaign(engine)
    settings = Settings(policy="block")
    assert [d.action for d in _apply(engine, c, settings)] == ["block"]
    assert _state(engine, c.id, "w6") == ("blocked", 1.0)
    assert _apply(engine, c, settings) == []  # already blocked
    assert _apply(engine, c, Settings(policy="down_weight")) == []  # never loosened


def test_down_weight_policy(engine: Engine) -> None:
    c = rating_campaign(engine)
    out = _apply(engine, c, Settings(policy="down_weight", down_weight=0.25))
    assert [(d.action, d.weight) for d in out] == [("down_weight", 0.25)]
    assert _state(engine, c.id, "w6") == ("down_weighted", 0.25)
    assert _apply(engine, c, Settings(policy="down_weight", down_weight=0.25)) == []
    assert [
        d.weight for d in _apply(engine, c, Settings(policy="down_weight", down_weight=0.1))
    ] == [0.1]


def test_a_manual_decision_is_never_overridden(engine: Engine) -> None:
    c = rating_campaign(engine)
    with transaction(engine) as s:
        append_decision(s, c.id, "w6", "clear", reason="checked by hand: fine", actor="alice")
    assert _apply(engine, c, Settings(policy="block")) == []
    assert _state(engine, c.id, "w6") == ("ok", 1.0)
    with transaction(engine) as s:
        append_decision(s, c.id, "w6", "down_weight", weight=0.7, reason="meh", actor="bob")
    assert _apply(engine, c, Settings(policy="block")) == []
    assert _state(engine, c.id, "w6") == ("down_weighted", 0.7)


def test_the_trail_is_append_only(engine: Engine) -> None:
    import pytest

    c = rating_campaign(engine)
    with transaction(engine) as s:
        append_decision(s, c.id, "w6", "block", reason="spam", actor="alice")
    with pytest.raises(ValueError, match="audit trail"), transaction(engine) as s:
        s.scalars(select(WorkerDecision)).one().reason = "rewritten"


def test_cli_actions_and_listing(engine: Engine, db_url: str, capsys) -> None:  # noqa: ANN001
    c = rating_campaign(engine)
    base = ["--db", db_url, "--campaign", "quality"]
    assert main(["block", "w6", *base, "--reason", "spammer", "--by", "alice"]) == 0
    assert "w6: blocked in quality by alice (spammer)" in capsys.readouterr().out
    assert _state(engine, c.id, "w6") == ("blocked", 1.0)
    assert main(["down-weight", "w5", *base, "--weight", "0.4", "--reason", "sloppy"]) == 0
    assert _state(engine, c.id, "w5") == ("down_weighted", 0.4)
    assert main(["down-weight", "w5", *base, "--weight", "1.5", "--reason", "x"]) == 2
    assert "weight in [0, 1]" in capsys.readouterr().err
    assert main(["clear", "w5", *base]) == 0
    assert _state(engine, c.id, "w5") == ("ok", 1.0)
    assert main(["block", "nobody", *base, "--reason", "x"]) == 2
    assert "no worker 'nobody'" in capsys.readouterr().err
    capsys.readouterr()
    assert main(["workers", *base, "--flagged"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == [
        "worker", "status", "decision", "weight", "judgments", "model", "noise", "sd", "gold",
        "wqs", "history", "flags", "reason",
    ]  # fmt: skip
    assert out[1].split()[:2] == ["w6", "blocked"]
    assert out[-1] == "1 of 6 workers"
    with transaction(engine) as s:
        trail = decisions(s, c.id)
    assert [d.action for d in trail] == ["clear", "down_weight", "block"]
    assert trail[-1].evidence["flags"][0]["rule"] == "low_quality"
    assert not trail[-1].automatic
