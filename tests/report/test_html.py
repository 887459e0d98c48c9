"""The HTML report: parsed, with the flagged workers and their reasons; payloads inert."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from sqlalchemy import Engine

from monitor.cli import main
from monitor.report.render import render_html, report_text
from monitor.store.engine import make_engine, session_factory
from monitor.store.migrate import upgrade
from tests.report.fixtures import XSS, XSS_ATTR, pairwise_campaign, rating_campaign


class Page(HTMLParser):
    """Tags with attributes, text per element with an id or class of interest."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.cards: dict[str, list[str]] = {}
        self._card: str | None = None
        self._depth = 0
        self.scripts: list[str] = []
        self._in_script = False
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == "script":
            self._in_script = True
            self.scripts.append("")
        if self._card is not None and tag == "div":
            self._depth += 1
        if tag == "div" and "flagged-worker" in (a.get("class") or ""):
            self._card = a.get("data-worker") or ""
            self.cards[self._card] = []
            self._depth = 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False
        if self._card is not None and tag == "div":
            self._depth -= 1
            if self._depth == 0:
                self._card = None

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data
        self.text.append(data)
        if self._card is not None:
            self.cards[self._card].append(data)


def parse(html: str) -> Page:
    page = Page()
    page.feed(html)
    page.close()
    return page


@pytest.fixture
def sqlite_engine(tmp_path: Path) -> Engine:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    engine = make_engine(url)
    upgrade(engine)
    return engine


def test_flagged_workers_appear_first_with_their_reasons(sqlite_engine: Engine) -> None:
    rating_campaign(sqlite_engine)
    page = parse(report_text(sqlite_engine, "quality"))
    assert list(page.cards) == ["w6"]
    card = " ".join(" ".join(page.cards["w6"]).split())
    assert "low_quality" in card
    assert "WQS 0.12 is below 0.6 x the campaign median 0.74" in card
    assert "threshold 0.440" in card
    assert "n = 8" in card
    assert "campaign median 0.740" in card
    ids = {a.get("id") for _, a in page.tags}
    assert {"verdict", "agreement", "workers", "ambiguous", "items", "decisions"} <= ids
    text = " ".join(" ".join(page.text).split())
    assert "Unreliable" in text
    assert "Phi and alpha tell different stories" in text
    # the ambiguous item with its text and answer split; svg charts inline
    assert "Text of item 3" in text
    assert sum(1 for t, _ in page.tags if t == "svg") >= 2
    # the worker table lists the flagged worker first
    rows = [a.get("class") for t, a in page.tags if t == "td" and a.get("class") == "id"]
    assert rows
    assert not any(t in ("link", "img", "iframe") for t, _ in page.tags)  # self-contained


def test_pairwise_report_has_the_audit(sqlite_engine: Engine) -> None:
    pairwise_campaign(sqlite_engine)
    html = report_text(sqlite_engine, "prefs")
    page = parse(html)
    ids = {a.get("id") for _, a in page.tags}
    assert {"audit", "scores", "audit-table"} <= ids
    text = " ".join(" ".join(page.text).split())
    assert "a · b · c a < b, b < c, a > c (judgments #7, #9, #8)" in text
    assert list(page.cards) == ["p3"]
    # which signals the design supports, as the run worked it out
    assert "What this design can measure: reliability: agreement with the consensus order" in text
    assert "annotators closed a triangle" in text


def test_payloads_render_inert(sqlite_engine: Engine) -> None:
    rating_campaign(sqlite_engine, "evil", evil=True)
    html = report_text(sqlite_engine, "evil")
    assert XSS not in html
    assert XSS_ATTR not in html
    page = parse(html)
    scripts = [a for t, a in page.tags if t == "script"]
    assert len(scripts) == 1
    assert "alert" not in page.scripts[0]
    assert not any(t == "img" for t, _ in page.tags)
    for _, attrs in page.tags:
        assert not any(k.startswith("on") for k in attrs), attrs
        href = (attrs.get("href") or "").strip().lower()
        assert not href.startswith("javascript:")
        assert not href or href.startswith("#")
    text = "".join(page.text)
    assert XSS in text  # shown as text, worker card included
    assert XSS in page.cards


def test_strict_undefined_and_autoescape() -> None:
    from jinja2 import StrictUndefined

    from monitor.report.render import environment

    env = environment()
    assert env.undefined is StrictUndefined
    assert env.from_string("{{ x }}").render(x="<b>") == "&lt;b&gt;"
    assert env.autoescape("report.html") is True  # type: ignore[operator]


def test_cli_report_html_and_json(sqlite_engine: Engine, tmp_path: Path, capsys) -> None:  # noqa: ANN001
    rating_campaign(sqlite_engine)
    db = str(sqlite_engine.url)
    out = tmp_path / "out" / "q.html"
    assert main(["report", "--db", db, "--campaign", "quality", "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    assert out.read_text().startswith("<!doctype html>")
    assert main(["report", "--db", db, "--campaign", "quality", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["campaign"]["name"] == "quality"
    assert main(["report", "--db", db, "--campaign", "nope"]) == 2
    err = capsys.readouterr().err
    assert "no campaign named 'nope'" in err
    assert "campaigns: quality" in err


def test_render_handles_a_document_without_run(sqlite_engine: Engine) -> None:
    from monitor.store.campaigns import CampaignSpec, create_campaign
    from monitor.store.engine import transaction

    with transaction(sqlite_engine) as s:
        create_campaign(s, CampaignSpec("fresh", "multilabel", open=True))
    from monitor.report.document import build_document

    with session_factory(sqlite_engine)() as s:
        html = render_html(build_document(s, "fresh"))
    assert "No metric run yet" in html
    assert "Undetermined" in html


def test_a_long_item_list_is_cut_and_says_so(
    sqlite_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    from monitor.report import view

    rating_campaign(sqlite_engine)
    monkeypatch.setattr(view, "MAX_ITEMS", 2)
    text = " ".join(" ".join(parse(report_text(sqlite_engine, "quality")).text).split())
    shown = json.loads(report_text(sqlite_engine, "quality", "json"))
    assert f"Showing 2 of {len(shown['items'])} items" in text
    assert len(shown["items"]) > 2
