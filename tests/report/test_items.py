"""The items of a report read as columns: the same rows as the per-Value builder the report
used before, the same JSON text as the encoder's, the same HTML as a page built from every
row, and never every item built for the HTML report."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine

from monitor.core.results import Column, FlagRecord
from monitor.core.settings import Settings
from monitor.pipeline import recompute
from monitor.report.data import load as load_data
from monitor.report.document import build_document
from monitor.report.itemrows import row_chunks
from monitor.report.items import METRICS, ItemTable
from monitor.report.jsonsafe import clean, natural_key, num
from monitor.report.render import (
    JSON_OPTIONS,
    render_html,
    report_text,
    to_json,
    write_json,
    write_report,
)
from monitor.store.campaigns import get_campaign
from monitor.store.engine import session_factory
from monitor.store.models import Item
from monitor.store.runs import flag_chain, latest_run, run_flags, run_values
from tests.golden import GOLDEN, load
from tests.pipeline.cases import store_case
from tests.pipeline.test_quality import rating_case
from tests.report.fixtures import pairwise_campaign, rating_campaign
from tests.report.pages import pictures, without_pictures
from tests.report.pages import tables as page_tables
from tests.report.test_html import parse

# Loose item rules, so that small cases have ambiguous items (as in test_columns).
SETTINGS = Settings(
    bootstrap_samples=0,
    phi="map",
    min_item_judgments=2,
    ambiguous_p=0.9,
    ambiguous_posterior=0.9999,
    cache_dir="",
)
CASES = [
    "rating_small_complete",
    "label_small_complete_5_adversarial",
    "ct_closed_small",
    "ct_open_small",
    "pairwise_small_weak",
]


def reference_items(engine: Engine, name: str) -> list[dict[str, Any]]:
    """The item rows as the report built them from one Value per item and measure."""
    with session_factory(engine)() as s:
        campaign = get_campaign(s, name)
        run = latest_run(s, campaign.id)
        values: dict[tuple[str, str], Any] = {}
        for v in run_values(s, run.id) if run else []:
            if v.scope == "item":
                values[(v.metric, v.subject)] = v
        flags: dict[str, set[str]] = {}
        for f in run_flags(s, run.id) if run else []:
            if f.scope == "item":
                flags.setdefault(f.subject, set()).add(f.rule)
        info = {
            e: (t, g)
            for e, t, g in s.query(Item.external_id, Item.text, Item.gold).filter(
                Item.campaign_id == campaign.id
            )
        }
    kind = campaign.kind

    def v(x: Any) -> float | None:
        return num(x.value) if x is not None else None

    def interval(x: Any) -> list[float] | None:
        if x is None:
            return None
        lo, hi = num(x.low), num(x.high)
        return [lo, hi] if lo is not None and hi is not None else None

    rows = []
    for i in sorted(set(info) | {s for _, s in values}, key=natural_key):

        def get(m: str, i: str = i) -> Any:
            return values.get((m, i))

        nj, score, uas, phi_mu = get("n_judgments"), get("score"), get("uas"), get("phi_mu")
        n = int(v(nj)) if v(nj) is not None else None
        if n is None and score is not None and score.n is not None:
            n = int(score.n)
        text, gold = info.get(i, (None, None))
        mean = get("model_mean")
        row = {
            "item": i,
            "n_judgments": n,
            "uqs": v(get("uqs")),
            "percent_agreement": v(get("percent_agreement")),
            "phi_mu": v(phi_mu),
            "phi_mu_interval": interval(phi_mu),
            "score": v(score),
            "score_interval": interval(score),
            **(
                {
                    "model_mean": v(mean),
                    "model_mean_interval": interval(mean),
                    "sd": v(get("model_sd")),
                    "spread": v(get("model_spread")),
                    "expected_spread": v(get("model_expected_spread")),
                    "spread_p": v(get("model_spread_p")),
                }
                if kind == "rating"
                else {}
            ),
            "uas": clean((uas.detail or {}).get("scores")) if uas is not None else None,
            "answers": clean((nj.detail or {}).get("answers")) if nj is not None else None,
            "flags": sorted(flags.get(i, ())),
            "text": text,
            "gold": gold,
            "count_score": num((score.detail or {}).get("count_score")) if score else None,
        }
        label = get("model_label")
        if label is not None:
            post = (label.detail or {}).get("posterior") or {}
            if kind == "multilabel":
                answer: Any = "|".join(sorted(k for k, p in post.items() if p > 0.5))
            else:
                answer = max(post, key=post.get) if post else None
            row.update(model_label=answer, posterior=v(label), posteriors=clean(post))
        rows.append(row)
    return rows


def document(engine: Engine, name: str) -> dict[str, Any]:
    with session_factory(engine)() as s:
        return build_document(s, name)


def without_time(html: str) -> str:
    return re.sub(r"report generated \d{4}-\d\d-\d\d \d\d:\d\d UTC", "", html)


def check_report(engine: Engine, name: str, tmp_path: Path) -> dict[str, Any]:
    """The three ways of building a report agree with each other and with the reference."""
    doc = document(engine, name)
    assert doc["items"] == reference_items(engine, name)
    assert [list(i) for i in doc["items"]] == [list(i) for i in reference_items(engine, name)]
    out = write_report(engine, name, tmp_path / "r.json", "json")
    assert out.read_text(encoding="utf-8") == to_json(doc)
    page = report_text(engine, name)
    # the pictures of the workers' answers come from the judgments, which a document lacks
    assert without_pictures(without_time(page)) == without_pictures(without_time(render_html(doc)))
    assert set(pictures(render_html(doc))) <= set(pictures(page))
    return doc


@pytest.mark.parametrize("make", [rating_campaign, pairwise_campaign])
def test_fixture_campaigns(engine: Engine, tmp_path: Path, make: Any) -> None:
    name = make(engine).name
    doc = check_report(engine, name, tmp_path)
    assert doc["items"]


def test_fixture_with_payloads(engine: Engine, tmp_path: Path) -> None:
    rating_campaign(engine, evil=True)
    doc = check_report(engine, "quality", tmp_path)
    assert any("<script>" in (i["text"] or "") for i in doc["items"])


@pytest.mark.parametrize("case", CASES)
def test_golden_campaigns(engine: Engine, tmp_path: Path, case: str) -> None:
    store_case(engine, load(GOLDEN / "cases" / f"{case}.json"))
    [outcome] = recompute(engine, SETTINGS)
    assert outcome.status == "ok"
    doc = check_report(engine, "golden", tmp_path)
    assert doc["items"]
    if case.startswith("ct_open"):
        assert doc["annotations"]
        assert "aqs" not in doc["annotations"][0]


@pytest.fixture
def large(engine: Engine) -> Engine:
    """3,000 rated items: a full run, then an incremental one (its flags a delta)."""
    case = rating_case(n_items=3000, seed=5)
    case["judgments"].sort(key=lambda r: (int(r["item"][1:]), r["worker"]))
    k = len(case["judgments"]) * 9 // 10
    settings = SETTINGS.replace(phi="off")
    store_case(engine, case, upto=k)
    assert recompute(engine, settings, full=True)[0].status == "ok"
    store_case(engine, case, start=k)
    assert recompute(engine, settings)[0].status == "ok"
    return engine


@pytest.mark.slow
def test_a_large_campaign_reads_columns_and_cuts_the_list(
    large: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with session_factory(large)() as s:
        run = latest_run(s, get_campaign(s, "golden").id)
        assert run is not None
        assert len(flag_chain(s, run.id)) == 2  # flags read from a delta
    built: list[int] = []
    rows = ItemTable.rows

    def counting(self: ItemTable, positions: Any) -> list[dict[str, Any]]:
        out = rows(self, positions)
        built.append(len(out))
        return out

    monkeypatch.setattr(ItemTable, "rows", counting)
    html = report_text(large, "golden")
    assert 0 < sum(built) <= 200 + 50  # the listed and the ambiguous items, never all
    monkeypatch.undo()

    doc = check_report(large, "golden", tmp_path)
    items = doc["items"]
    assert len(items) == 3000
    assert any("ambiguous" in i["flags"] for i in items)
    assert all(i["model_mean"] is not None for i in items)
    text = " ".join(" ".join(parse(html).text).split())
    assert "Showing 200 of 3,000 items; the other 2,800 are in the JSON document" in text
    shown = [a["data-subject"] for a in page_tables(html)["items-table"].attrs]
    lowest = sorted(items, key=lambda i: (i["uqs"] is None, i["uqs"] or 0.0))[:200]
    assert shown == [i["item"] for i in lowest]
    n_ambiguous = sum("ambiguous" in i["flags"] for i in items)
    assert f"{n_ambiguous:,} items on which" in text
    with session_factory(large)() as s:
        data = load_data(s, "golden")
    assert data.items.columnar
    assert len(data.items) == 3000  # the JSON from the arrays


# --- the arrays' JSON text against the encoder's ------------------------------------------

ids = st.text(st.sampled_from('ab1"\\\n é0'), min_size=1, max_size=4)
numbers = st.floats(-1e200, 1e200) | st.sampled_from([np.nan, np.inf, -np.inf, 1e-7, 1e16])


@st.composite
def tables(draw: st.DrawFn) -> ItemTable:
    universe = draw(st.lists(ids, min_size=0, max_size=12, unique=True))
    kind = draw(st.sampled_from(["rating", "label", "multilabel"]))
    names = tuple(draw(st.lists(ids, min_size=1, max_size=3, unique=True)))
    columns = []
    for metric in draw(st.lists(st.sampled_from(METRICS), unique=True)):
        subjects = draw(st.lists(st.sampled_from(universe), unique=True)) if universe else []
        k = len(subjects)

        def floats(size: int = k) -> np.ndarray:
            return np.array(draw(st.lists(numbers, min_size=size, max_size=size)), dtype=float)

        detail = {"uas": "scores", "n_judgments": "answers", "model_label": "posterior"}
        key = draw(st.sampled_from([None, detail.get(metric, "scores"), "other"]))
        csr: dict[str, Any] = {}
        if key is not None:
            per_row = draw(st.lists(st.integers(0, len(names)), min_size=k, max_size=k))
            integral = draw(st.booleans())
            indices = np.concatenate(
                [draw(st.permutations(range(len(names))))[:c] for c in per_row] or [[]]
            ).astype(np.int64)
            data = (
                np.array(
                    draw(st.lists(st.integers(0, 9), min_size=indices.size, max_size=indices.size)),
                    dtype=float,
                )
                if integral
                else floats(indices.size)
            )
            csr = dict(detail_key=key, names=names, indptr=np.r_[0, np.cumsum(per_row)].astype(int),
                       indices=indices, data=data, integral=integral)  # fmt: skip
        interval = draw(st.booleans())
        counts = st.integers(0, 10**9).map(float) | st.sampled_from([np.nan, np.inf])
        values = (
            np.array(draw(st.lists(counts, min_size=k, max_size=k)), dtype=float)
            if metric == "n_judgments"  # a count (JSON integers are 64-bit)
            else floats()
        )
        columns.append(
            Column(
                "item",
                metric,
                subjects,
                values,
                floats() if interval else None,
                floats() if interval else None,
                np.array(draw(st.lists(st.integers(0, 50), min_size=k, max_size=k)), np.int64)
                if draw(st.booleans())
                else None,
                **csr,
            )
        )
    flagged = draw(st.lists(st.sampled_from(universe), unique=True)) if universe else []
    rules = st.sampled_from(["ambiguous", "odd", 'q"uote'])
    flags = [FlagRecord("item", s, draw(rules), None, None) for s in flagged]
    texts = [(s, draw(st.none() | ids), draw(st.none() | ids)) for s in universe]
    known = draw(st.lists(st.sampled_from(universe), unique=True)) if universe else []
    return ItemTable(kind, known, columns, (), flags, texts)


@settings(max_examples=150, deadline=None)
@given(table=tables(), chunk=st.integers(1, 5))
def test_rows_from_the_arrays_are_the_plain_ones(table: ItemTable, chunk: int) -> None:
    """The rows built a column at a time are those built an item at a time, as JSON (where
    NaN is null), chunk by chunk, and the writer streams them as the document's text."""
    assert table.columnar
    rows = table.rows(range(len(table)))
    fast = [r for part in row_chunks(table, chunk) for r in part]
    assert orjson.loads(orjson.dumps(fast, option=JSON_OPTIONS)) == orjson.loads(
        orjson.dumps(rows, option=JSON_OPTIONS)
    )
    assert [list(r) for r in fast] == [list(r) for r in rows]
    out = io.StringIO()
    write_json({"a": 1, "items": [], "b": [2]}, out, items=table)
    assert out.getvalue() == to_json({"a": 1, "items": fast, "b": [2]})
