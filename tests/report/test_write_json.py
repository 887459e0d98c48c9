"""The JSON report written as it is encoded: the same text as the document's JSON."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from sqlalchemy import Engine

from monitor.report.render import report_text, to_json, write_json, write_report
from tests.report.fixtures import pairwise_campaign, rating_campaign


@pytest.mark.parametrize("make", [rating_campaign, pairwise_campaign])
def test_written_json_is_the_documents_text(engine: Engine, tmp_path: Path, make) -> None:  # noqa: ANN001
    name = make(engine).name
    out = write_report(engine, name, tmp_path / "r.json", "json")
    assert out.read_text(encoding="utf-8") == report_text(engine, name, "json")


def test_undefined_numbers_are_null() -> None:
    doc = {"a": [1, 2.5, None, {"é": "x\ny"}], "b": [], "c": {}, "x": float("nan")}
    f = io.StringIO()
    write_json(doc, f)
    assert f.getvalue() == to_json(doc)
    assert json.loads(f.getvalue()) == {**doc, "x": None}
    assert "é" in f.getvalue()
    assert "NaN" not in f.getvalue()
