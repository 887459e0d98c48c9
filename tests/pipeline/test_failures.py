"""One campaign that fails does not stop the others (issue 16, item 2): its run records the
error, `monitor recompute` goes on and exits 1 naming it, the scheduler goes on. Times read
from SQLite are UTC, and the year 1 loads on both backends."""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import Engine, select, update

from monitor.cli import main
from monitor.core.settings import Settings
from monitor.pipeline import recompute
from monitor.pipeline import run as run_module
from monitor.store.arrays import _judgment_numbers, load_arrays
from monitor.store.campaigns import get_campaign
from monitor.store.engine import transaction
from monitor.store.models import Campaign, Judgment, MetricRun, Preference
from tests.golden import GOLDEN, load
from tests.pipeline.cases import store_case

SETTINGS = Settings(bootstrap_samples=0, phi="off")
LABELS = GOLDEN / "cases" / "label_small_complete_3.json"
PAIRS = GOLDEN / "cases" / "pairwise_small_weak.json"


def _fail_for(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    real = run_module.measure

    def compute(coded, params):  # noqa: ANN001, ANN202
        if coded.info.name == name:
            raise ValueError("year 0 is out of range")
        return real(coded, params)

    monkeypatch.setattr(run_module, "measure", compute)


def _runs(engine: Engine) -> list[tuple[str, str, str | None]]:
    with transaction(engine) as s:
        rows = s.execute(
            select(Campaign.name, MetricRun.status, MetricRun.error)
            .join(Campaign, Campaign.id == MetricRun.campaign_id)
            .order_by(MetricRun.id)
        ).all()
    return [tuple(r) for r in rows]


def _three_campaigns(engine: Engine) -> None:
    store_case(engine, load(LABELS), name="first")
    store_case(engine, load(LABELS), name="broken")
    store_case(engine, load(PAIRS), name="last")


def test_a_failing_campaign_is_recorded_and_the_others_run(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    _three_campaigns(engine)
    _fail_for(monkeypatch, "broken")
    outcomes = recompute(engine, SETTINGS)
    by_name = {o.campaign: o for o in outcomes}
    assert {name: o.status for name, o in by_name.items()} == {
        "first": "ok",
        "broken": "failed",
        "last": "ok",
    }
    assert by_name["broken"].line() == "broken: failed: ValueError: year 0 is out of range"
    runs = _runs(engine)
    assert ("broken", "failed", "ValueError: year 0 is out of range") in runs
    assert sorted(r[:2] for r in runs if r[1] == "ok") == [("first", "ok"), ("last", "ok")]
    with transaction(engine) as s:
        failed = s.scalars(select(MetricRun).where(MetricRun.status == "failed")).one()
        assert failed.watermark > 0
        assert failed.finished_at is not None
    # fixed: the next incremental recompute runs it (a failed run is never the latest)
    monkeypatch.undo()
    outcomes = recompute(engine, SETTINGS)
    assert {o.campaign: o.status for o in outcomes} == {
        "first": "up_to_date",
        "broken": "ok",
        "last": "up_to_date",
    }


def test_recompute_command_goes_on_and_exits_1(
    db_url: str, engine: Engine, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:  # noqa: ANN001
    _three_campaigns(engine)
    _fail_for(monkeypatch, "broken")
    monkeypatch.setenv("MONITOR_BOOTSTRAP_SAMPLES", "0")
    monkeypatch.setenv("MONITOR_PHI", "off")
    assert main(["--db", db_url, "recompute"]) == 1
    out, err = capsys.readouterr()
    lines = sorted(out.splitlines())
    assert lines[0] == "broken: failed: ValueError: year 0 is out of range"
    assert lines[1].startswith("first: run ")
    assert lines[2].startswith("last: run ")
    assert err.splitlines() == [
        "monitor: error: 1 of 3 campaigns failed: broken (the other campaigns were recomputed)",
        "hint: each failure is recorded on the campaign's run; fix the cause and run "
        "monitor recompute again",
    ]
    assert "Traceback" not in out + err


def test_scheduler_job_goes_on(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from monitor.runtime.scheduler import incremental_job

    _three_campaigns(engine)
    _fail_for(monkeypatch, "broken")
    with caplog.at_level(logging.INFO, logger="monitor.scheduler"):
        incremental_job(engine, SETTINGS)
    mine = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "monitor.scheduler"]
    assert ("WARNING", "incremental broken: failed: ValueError: year 0 is out of range") in mine
    assert sum(m.startswith("incremental first: run") for _, m in mine) == 1
    assert sum(m.startswith("incremental last: run") for _, m in mine) == 1


def test_scheduler_job_survives_a_lost_database(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from monitor.runtime.scheduler import incremental_job
    from monitor.store.engine import make_engine

    (tmp_path / "not-a-db").write_text("plain text\n" * 100)
    engine = make_engine(f"sqlite:///{tmp_path / 'not-a-db'}")
    with caplog.at_level(logging.INFO, logger="monitor.scheduler"):
        incremental_job(engine, SETTINGS)  # no exception escapes into APScheduler
    [record] = [r for r in caplog.records if r.name == "monitor.scheduler"]
    assert record.levelname == "ERROR"
    assert record.getMessage() == (
        "incremental recompute failed: DatabaseError: file is not a database"
    )
    engine.dispose()


def test_year_one_and_offsets_load_on_both_backends(engine: Engine) -> None:
    store_case(engine, load(LABELS), name="labels")
    store_case(engine, load(PAIRS), name="prefs")
    year_one = datetime(1, 1, 1, tzinfo=UTC)
    late = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
    with transaction(engine) as s:
        first = s.scalars(select(Judgment.id).order_by(Judgment.id)).first()
        s.execute(update(Judgment).where(Judgment.id == first).values(created_at=year_one))
        s.execute(update(Judgment).where(Judgment.id == first + 1).values(created_at=late))
        pref = s.scalars(select(Preference.id).order_by(Preference.id)).first()
        s.execute(update(Preference).where(Preference.id == pref).values(created_at=year_one))
    outcomes = recompute(engine, SETTINGS)
    assert [o.status for o in outcomes] == ["ok", "ok"]
    with transaction(engine) as s:
        epochs = _judgment_numbers(s, get_campaign(s, "labels").id, None)["epoch"]
        prefs = load_arrays(s, get_campaign(s, "prefs"))
    assert epochs[0] == -62135596800.0
    assert epochs[1] == 253402300799.0
    assert prefs.order[0] == 0  # the year 1 comes first in time


@pytest.mark.parametrize("zone", ["Asia/Tokyo", "America/New_York"])
def test_times_are_utc_whatever_the_local_zone(
    engine: Engine, zone: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store_case(engine, load(LABELS), name="labels")
    moment = datetime(2026, 1, 1, 9, 0, tzinfo=timezone(timedelta(hours=9)))  # 00:00 UTC
    with transaction(engine) as s:
        first = s.scalars(select(Judgment.id).order_by(Judgment.id)).first()
        s.execute(update(Judgment).where(Judgment.id == first).values(created_at=moment))
    monkeypatch.setenv("TZ", zone)
    time.tzset()
    try:
        with transaction(engine) as s:
            epochs = _judgment_numbers(s, get_campaign(s, "labels").id, None)["epoch"]
            stored = s.scalars(select(Judgment.created_at).where(Judgment.id == first)).one()
    finally:
        monkeypatch.undo()
        time.tzset()
    assert epochs[0] == datetime(2026, 1, 1, tzinfo=UTC).timestamp() == 1767225600.0
    assert stored == moment
    assert stored.utcoffset() == timedelta(0)


@pytest.mark.parametrize("part", ["codetermination", "model"])
def test_an_error_in_the_second_thread_fails_the_run(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, part: str
) -> None:
    """Co-determination and, in an incremental run, the reliability model run in a second
    thread: their errors fail the run as any other (recorded, the last good run kept)."""
    from monitor.ingest.api import create_campaign, ingest_file
    from monitor.pipeline import agreement, scalar
    from monitor.store.campaigns import CampaignSpec

    create_campaign(engine, CampaignSpec("r", "rating", None, 1, 5))
    rows = [(w, i, 1 + (i + w) % 5) for i in range(40) for w in range(4)]
    text = "".join(f"w{w},i{i},{v},j{k}\n" for k, (w, i, v) in enumerate(rows))
    (tmp_path / "a.csv").write_text("worker,item,value,judgment_id\n" + text, encoding="utf-8")
    ingest_file(engine, tmp_path / "a.csv", "r")
    assert recompute(engine, SETTINGS)[0].status == "ok"
    (tmp_path / "b.csv").write_text(
        "worker,item,value,judgment_id\nw0,i99,3,j999\nw1,i99,4,j1000\n", encoding="utf-8"
    )
    ingest_file(engine, tmp_path / "b.csv", "r")

    def broken(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise FloatingPointError(f"{part} broke")

    if part == "model":
        monkeypatch.setattr(scalar, "reliability", broken)
    else:
        monkeypatch.setattr(agreement.aggregate, "codetermination", broken)
    [outcome] = recompute(engine, SETTINGS)
    assert outcome.status == "failed"
    assert f"{part} broke" in outcome.message
    assert _runs(engine)[-1] == ("r", "failed", f"FloatingPointError: {part} broke")
    with transaction(engine) as s:
        assert run_module.latest_run(s, get_campaign(s, "r").id).n_judgments == len(rows)


def test_the_hint_says_where_a_failure_is_kept(capsys: pytest.CaptureFixture[str]) -> None:
    from monitor.cli.recompute import _summary

    assert _summary([], 3) == 0
    assert _summary(["a"], 3) == 1
    assert "each failure is recorded on the campaign's run" in capsys.readouterr().err
    assert _summary(["a", "b"], 3, unrecorded=1) == 1
    err = capsys.readouterr().err
    assert "2 of 3 campaigns failed: a, b" in err
    assert "a job refused or lost is only in the lines above" in err
