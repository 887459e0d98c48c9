"""The index of campaigns: every report and JSON document in one folder, index.html linking to
each by a relative link, with what changed since the last index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import Engine

from monitor.cli import main
from monitor.pipeline import recompute
from monitor.report import render
from monitor.report.index import changes, read_state, write_all
from monitor.report.render import report_filename
from tests.pipeline.cases import store_case
from tests.pipeline.test_quality import SETTINGS, label_case
from tests.report.fixtures import XSS_ATTR, pairwise_campaign, rating_campaign
from tests.report.pages import tables
from tests.report.test_html import parse


def test_every_report_and_its_document_linked_from_the_index(
    engine: Engine, tmp_path: Path
) -> None:
    rating_campaign(engine, "a/b")
    pairwise_campaign(engine)
    written = write_all(engine, tmp_path / "out")
    names = {report_filename(n, f) for n in ("a/b", "prefs") for f in ("html", "json")}
    assert {p.name for p in (tmp_path / "out").iterdir()} == names | {"index.html", "index.json"}
    assert sorted(p.name for p in written.reports) == sorted(
        report_filename(n) for n in ("a/b", "prefs")
    )
    html = written.index.read_text(encoding="utf-8")
    page = parse(html)
    hrefs = [a["href"] for t, a in page.tags if t == "a" and a.get("href")]
    assert sorted(hrefs) == sorted(names)  # relative links to files that exist
    index = tables(html)["index-table"]
    assert [a["data-campaign"] for a in index.attrs] == ["a/b", "prefs"]
    assert all(c == "first report" for c in index.column("What changed since the last report"))
    # each report links to its JSON document for the full lists
    report = (tmp_path / "out" / report_filename("a/b")).read_text(encoding="utf-8")
    assert f'href="{report_filename("a/b", "json")}"' in report
    doc = json.loads((tmp_path / "out" / report_filename("a/b", "json")).read_text())
    assert doc["campaign"]["name"] == "a/b"
    assert doc["items"]


def test_what_changed_since_the_last_index(engine: Engine, tmp_path: Path) -> None:
    case, _ = label_case(n_items=60, seed=8)
    honest = [r for r in case["judgments"] if r["worker"] != "rnd"]
    case["judgments"] = honest + [r for r in case["judgments"] if r["worker"] == "rnd"]
    store_case(engine, case, upto=len(honest))
    recompute(engine, SETTINGS)
    write_all(engine, tmp_path)
    before = read_state(tmp_path)["golden"]
    store_case(engine, case, start=len(honest))  # the random answerer arrives
    recompute(engine, SETTINGS)
    write_all(engine, tmp_path)
    now = read_state(tmp_path)["golden"]
    said = changes(now, before)
    assert f"run #{before['run']} → #{now['run']}" in said
    assert f"+{now['n_judgments'] - before['n_judgments']:,} judgments" in said
    assert any(s.startswith("newly flagged: ") and "rnd" in s for s in said)
    html = (tmp_path / "index.html").read_text(encoding="utf-8")
    assert "newly flagged: " in html
    assert changes(now, now) == ["no change"]


def test_a_failed_report_is_listed_and_the_others_written(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rating_campaign(engine, "good")
    rating_campaign(engine, XSS_ATTR)
    write_all(engine, tmp_path)
    pair = render.write_pair

    def failing(engine: Engine, campaign: str, html: Path, document: Path) -> dict:
        if campaign == "good":
            raise RuntimeError("disk on fire")
        return pair(engine, campaign, html, document)

    monkeypatch.setattr(render, "write_pair", failing)
    written = write_all(engine, tmp_path)
    assert written.failed == {"good": "disk on fire"}
    assert [p.name for p in written.reports] == [report_filename(XSS_ATTR)]
    html = written.index.read_text(encoding="utf-8")
    assert "report failed" in html
    assert "disk on fire" in html
    assert XSS_ATTR not in html  # the hostile name escaped
    assert "good" in read_state(tmp_path)  # kept for the next comparison


def test_cli_report_all(db_url: str, engine: Engine, tmp_path: Path, capsys) -> None:  # noqa: ANN001
    rating_campaign(engine)
    out = tmp_path / "reports"
    assert main(["report", "--all", "--db", db_url, "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out / "index.html")
    assert (out / "quality.html").is_file()
    assert (out / "quality.json").is_file()
    assert main(["report", "--db", db_url]) == 2
    assert "name a campaign with --campaign NAME" in capsys.readouterr().err
    assert (
        main(["report", "--all", "--campaign", "quality", "--db", db_url, "--out", str(out)]) == 2
    )
    capsys.readouterr()
    (tmp_path / "file").write_text("x")
    assert main(["report", "--all", "--db", db_url, "--out", str(tmp_path / "file")]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err
