"""Run numbers count per campaign (issue 29): a campaign's first run is #1 in what users see
(recompute lines, the report, the JSON document), the database ids stay internal; migration
0009 numbers the runs already there, on both backends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import Engine, text

from monitor.cli import main
from monitor.store.engine import make_engine
from monitor.store.migrate import alembic_config, upgrade

ROWS = [(f"w{w}", f"i{i}", str(1 + (w * i) % 5)) for w in range(1, 5) for i in range(1, 6)]


def _csv(path: Path, rows: list[tuple[str, str, str]]) -> Path:
    path.write_text("worker,item,value\n" + "".join(f"{w},{i},{v}\n" for w, i, v in rows))
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_each_campaign_counts_its_own_runs(
    db_url: str, tmp_path: Path, monkeypatch, capsys
) -> None:  # noqa: ANN001
    monkeypatch.setenv("MONITOR_BOOTSTRAP_SAMPLES", "0")
    monkeypatch.setenv("MONITOR_PHI", "off")
    monkeypatch.setenv("MONITOR_CACHE_DIR", "")
    db = ["--db", db_url]
    for name in ("a", "b"):
        assert _run(capsys, "campaign", "create", name, "--kind", "rating", "--min", "1",
                    "--max", "5", *db)[0] == 0  # fmt: skip
        assert _run(capsys, "ingest", str(_csv(tmp_path / f"{name}.csv", ROWS[:12])),
                    "--campaign", name, *db)[0] == 0  # fmt: skip
    code, out, _ = _run(capsys, "recompute", *db)
    assert code == 0
    assert [line.split(",")[0] for line in out.splitlines()] == ["a: run 1", "b: run 1"]
    _run(capsys, "ingest", str(_csv(tmp_path / "b2.csv", ROWS[12:])), "--campaign", "b", *db)
    code, out, _ = _run(capsys, "recompute", *db)
    assert out.splitlines()[0] == "a: nothing new since run 1: nothing to do"
    assert out.splitlines()[1].startswith("b: run 2, 8 new of 20 judgments")
    code, out, _ = _run(capsys, "report", "--campaign", "b", "--json", *db)
    doc = json.loads(out)
    assert doc["run"]["number"] == 2
    assert doc["run"]["id"] == 3
    assert [h["number"] for h in doc["history"]] == [1, 2]
    html = tmp_path / "b.html"
    assert _run(capsys, "report", "--campaign", "b", "--out", str(html), *db)[0] == 0
    page = html.read_text()
    assert "run #2 finished" in page
    assert "run #3" not in page


def _at_0008(url: str) -> Engine:
    engine = make_engine(url)
    upgrade(engine, "0008")
    with engine.begin() as c:
        for name in ("a", "b"):
            c.execute(
                text(
                    "INSERT INTO campaigns (name, kind, level, open, strict, settings, "
                    "created_at) VALUES (:n, 'rating', 'interval', false, false, '{}', "
                    "CURRENT_TIMESTAMP)"
                ),
                {"n": name},
            )
        ids = dict(c.execute(text("SELECT name, id FROM campaigns")).all())
        for name in ("a", "b", "a", "a", "b"):  # interleaved: ids 1..5
            c.execute(
                text(
                    'INSERT INTO metric_runs (campaign_id, watermark, "full", status, '
                    "started_at, parameters, code_version, n_judgments, n_new) VALUES "
                    "(:c, 0, true, 'ok', CURRENT_TIMESTAMP, '{}', 't', 0, 0)"
                ),
                {"c": ids[name]},
            )
    return engine


def test_migration_numbers_the_runs_already_there(empty_db_url: str) -> None:
    engine = _at_0008(empty_db_url)
    try:
        upgrade(engine)
        with engine.begin() as c:
            rows = c.execute(
                text(
                    "SELECT c.name, r.id, r.number FROM metric_runs r JOIN campaigns c "
                    "ON c.id = r.campaign_id ORDER BY r.id"
                )
            ).all()
        ids = [r[1] for r in rows]
        assert [(name, number) for name, _, number in rows] == [
            ("a", 1), ("b", 1), ("a", 2), ("a", 3), ("b", 2)
        ]  # fmt: skip
        assert ids == sorted(ids)
        from monitor.store.engine import transaction
        from monitor.store.models import MetricRun

        with transaction(engine) as s:  # a new run takes the next number of its campaign
            run = MetricRun(campaign_id=_campaign_id(s, "b"), watermark=0, code_version="t")
            s.add(run)
            s.flush()
            assert run.number == 3
        command.downgrade(alembic_config(engine), "0008")
        upgrade(engine)
    finally:
        engine.dispose()


def _campaign_id(session, name: str) -> int:  # noqa: ANN001
    from sqlalchemy import select

    from monitor.store.models import Campaign

    return session.scalars(select(Campaign.id).where(Campaign.name == name)).one()


def test_two_runs_of_one_campaign_never_share_a_number(engine: Engine) -> None:
    from sqlalchemy.exc import IntegrityError

    from monitor.store.campaigns import CampaignSpec, create_campaign
    from monitor.store.engine import transaction
    from monitor.store.models import MetricRun

    with transaction(engine) as s:
        c = create_campaign(s, CampaignSpec("x", "rating", scale_min=1, scale_max=5))
    with pytest.raises(IntegrityError), transaction(engine) as s:
        s.add_all([MetricRun(campaign_id=c.id, watermark=0, code_version="t") for _ in range(2)])
