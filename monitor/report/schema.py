"""The JSON Schema of the document (``docs/report.schema.json``), generated from its
``TypedDict`` s (:mod:`monitor.report.shape`) and the catalog's worker and item measures.

``python -m monitor.report.schema docs/report.schema.json`` rewrites the file;
``tests/report/test_schema.py`` fails when it is stale. Every object's keys are those named
(``additionalProperties`` false, but for :data:`~monitor.report.shape.OPEN`); a key that is
not ``NotRequired`` is required.
"""

from __future__ import annotations

import json
import sys
import types
from typing import Annotated, Any, Literal, NotRequired, Union, get_args, get_origin, get_type_hints

from monitor.report import shape

ID = "https://monitor.invalid/report.schema.json"
NUMBER: dict[str, Any] = {"type": ["number", "null"]}
INTERVAL: dict[str, Any] = {"anyOf": [{"$ref": "#/$defs/Interval"}, {"type": "null"}]}


def _is_typeddict(tp: Any) -> bool:  # noqa: ANN401 - any annotation
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__total__")


def _type(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:  # noqa: ANN401, C901, PLR0911
    """The schema of one annotation; a TypedDict goes in ``defs`` and is referred to."""
    origin, args = get_origin(tp), get_args(tp)
    if tp is Any:
        return {}
    if tp is type(None):
        return {"type": "null"}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if tp is str:
        return {"type": "string"}
    if origin is Annotated:
        if shape.Pair in args[1:]:
            _object_def("Interval", defs)
            return {"$ref": "#/$defs/Interval"}
        return _type(args[0], defs)
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (Union, types.UnionType):
        options = [_type(a, defs) for a in args]
        if {"type": "null"} in options and len(options) == 2:
            [other] = [o for o in options if o != {"type": "null"}]
            if set(other) == {"type"} and isinstance(other["type"], str):
                return {"type": [other["type"], "null"]}
        return {"anyOf": options}
    if origin is list:
        return {"type": "array", "items": _type(args[0], defs)}
    if origin is dict:
        return {"type": "object", "additionalProperties": _type(args[1], defs)}
    if _is_typeddict(tp):
        _object_def(tp.__name__, defs, tp)
        return {"$ref": f"#/$defs/{tp.__name__}"}
    raise TypeError(f"no JSON Schema for the annotation {tp!r}")


def _object_def(name: str, defs: dict[str, Any], tp: Any = None) -> None:  # noqa: ANN401
    if name in defs:
        return
    if name == "Interval":
        defs[name] = {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}
        return
    defs[name] = {}  # taken before its fields, for the types that refer to themselves
    properties: dict[str, Any] = {}
    required = []
    for key, annotation in get_type_hints(tp, include_extras=True).items():
        if get_origin(annotation) is NotRequired:
            [annotation] = get_args(annotation)
        else:
            required.append(key)
        properties[key] = _type(annotation, defs)
    out: dict[str, Any] = {"type": "object"}
    if tp.__doc__:
        out["description"] = " ".join(tp.__doc__.split())
    out.update(properties=properties, required=required)
    out["additionalProperties"] = name in shape.OPEN
    defs[name] = out


def _measures(defs: dict[str, Any]) -> None:
    """The catalog's measures in the worker and item rows: a number (or null) each, with its
    interval where the measure shows one; every worker row has them all, an item row only
    those of its campaign's kind."""
    from monitor.report.items import ROW_MEASURES
    from monitor.report.workerrows import WORKER_KEYS

    for name, keys in (("WorkerRow", WORKER_KEYS), ("ItemRow", ROW_MEASURES)):
        properties, required = defs[name]["properties"], defs[name]["required"]
        for _, key, interval in keys:
            names = [key, f"{key}_interval"] if interval else [key]
            for k in names:
                properties.setdefault(k, dict(INTERVAL if k != key else NUMBER))
                if name == "WorkerRow" and k not in required:
                    required.append(k)


def json_schema() -> dict[str, Any]:
    """The document's JSON Schema (draft 2020-12)."""
    defs: dict[str, Any] = {}
    root = _type(shape.Document, defs)
    _measures(defs)
    document = defs.pop("Document")
    assert root == {"$ref": "#/$defs/Document"}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": ID,
        "title": "monitor's JSON document",
        **document,
        "$defs": dict(sorted(defs.items())),
    }


def schema_text() -> str:
    """:func:`json_schema` as the text of ``docs/report.schema.json``."""
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


def write(path: str) -> bool:
    """Rewrite ``path`` with the schema; True when it changed."""
    text = schema_text()
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return False
    except FileNotFoundError:
        pass
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return True


if __name__ == "__main__":  # pragma: no cover - python -m monitor.report.schema PATH
    if len(sys.argv) != 2:
        sys.exit("usage: python -m monitor.report.schema docs/report.schema.json")
    print(("wrote " if write(sys.argv[1]) else "unchanged: ") + sys.argv[1])
