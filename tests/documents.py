"""The JSON document checked against ``docs/report.schema.json`` (generated from
:mod:`monitor.report.shape`): every document the tests build or write is checked so
(``tests/conftest.py``), and the tests that read one from the command line check it here."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import orjson
from jsonschema import Draft202012Validator

SCHEMA = Path(__file__).resolve().parent.parent / "docs" / "report.schema.json"
MAX_ITEMS = 2000
"""The item rows checked of one document (a scale test's hundreds of thousands are all built
by the same code)."""


@cache
def validator(definition: str | None = None) -> Draft202012Validator:
    """The schema's validator, of the whole document or of one of its ``$defs``."""
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    if definition is not None:
        schema = {"$ref": f"#/$defs/{definition}", "$defs": schema["$defs"]}
    return Draft202012Validator(schema)


def _as_json(obj: Any) -> Any:
    """What a reader of the JSON gets (NaN null, tuples lists, NumPy numbers plain)."""
    return orjson.loads(
        orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY)
    )


def _check(obj: Any, definition: str | None) -> None:
    errors = sorted(validator(definition).iter_errors(obj), key=lambda e: list(e.path))
    if errors:
        lines = [f"{'/'.join(map(str, e.path)) or '(root)'}: {e.message}" for e in errors[:10]]
        raise AssertionError("not the shape of docs/report.schema.json:\n" + "\n".join(lines))


def check_document(doc: Any) -> None:
    """Fail unless ``doc`` (a built document, or one read back from JSON) has the schema's
    shape (its first :data:`MAX_ITEMS` item rows)."""
    doc = _as_json(doc)
    if isinstance(doc, dict) and isinstance(doc.get("items"), list):
        doc["items"] = doc["items"][:MAX_ITEMS]
    _check(doc, None)


def check_rows(rows: Any, definition: str) -> None:
    """Fail unless each of ``rows`` has the shape of ``$defs/definition`` (``WorkerRow``...)."""
    for row in _as_json(rows):
        _check(row, definition)
