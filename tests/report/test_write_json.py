"""The JSON report written as it is encoded: the same text as the document's JSON."""

from __future__ import annotations

import io
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


@pytest.mark.parametrize("buffer", [1, 7, 1 << 16])
def test_pieces_of_any_size_make_the_same_text(buffer: int) -> None:
    doc = {
        "a": [1, 2.5, None, {"é": "x\ny"}],
        "b": [],
        "c": {},
        "items": [{"k": i} for i in range(50)],
    }
    f = io.StringIO()
    write_json(doc, f, buffer=buffer)
    assert f.getvalue() == to_json(doc)
    with pytest.raises(ValueError):
        write_json({"x": float("nan")}, io.StringIO())
