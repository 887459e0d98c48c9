"""Data in hand as the records of a JSON Lines file: a DataFrame (read by duck typing: polars'
``to_dicts``, pandas' ``to_dict("records")``), a list of records, a mapping of columns or a
tuple of arrays; NumPy values as plain JSON."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from datetime import date, datetime
from pathlib import Path
from typing import Any

import orjson

from monitor.core.errors import UsageError

__all__ = ["data_source", "write_jsonl"]


def data_source(data: Any, kind: str) -> Path | tuple[str, list[Any]]:  # noqa: ANN401
    """A path, or (how to name it in a message, its records)."""
    if isinstance(data, str | os.PathLike):
        return Path(data)
    if hasattr(data, "to_dicts"):  # polars
        return "DataFrame", list(data.to_dicts())
    if hasattr(data, "to_dict") and hasattr(data, "columns"):  # pandas
        return "DataFrame", list(data.to_dict("records"))
    if isinstance(data, Mapping):
        return "arrays", _from_columns(dict(data))
    if isinstance(data, tuple) and data and all(_is_column(c) for c in data):
        names = (
            ("worker", "left", "right", "preference")
            if kind == "pairwise"
            else ("worker", "item", "value")
        )
        if len(data) != len(names):
            raise UsageError(
                f"arrays for a {kind} campaign are {len(names)}: {', '.join(names)}",
                hint="or give a mapping of column names to arrays",
            )
        return "arrays", _from_columns(dict(zip(names, data, strict=True)))
    if isinstance(data, list | tuple) and all(isinstance(r, Mapping) for r in data):
        return "records", [dict(r) for r in data]
    raise UsageError(
        f"cannot analyze a {type(data).__name__}",
        hint="give a DataFrame, a list of records (dicts), arrays or a path",
    )


def _is_column(value: Any) -> bool:  # noqa: ANN401
    return hasattr(value, "__len__") and not isinstance(value, str | bytes | Mapping)


def _from_columns(columns: dict[str, Any]) -> list[dict[str, Any]]:
    lengths = {len(v) for v in columns.values()}
    if len(lengths) > 1:
        raise UsageError(
            "the arrays differ in length: "
            + ", ".join(f"{k} {len(v)}" for k, v in columns.items()),
            hint="give one value a judgment in each",
        )
    values = [list(_as_us(v).tolist() if hasattr(v, "tolist") else v) for v in columns.values()]
    return [dict(zip(columns, row, strict=True)) for row in zip(*values, strict=True)]


def _as_us(value: Any) -> Any:  # noqa: ANN401
    """NumPy times in microseconds, whose ``tolist`` gives datetimes (nanoseconds give ints)."""
    dtype = getattr(value, "dtype", None)
    return value.astype("datetime64[us]") if getattr(dtype, "kind", None) == "M" else value


def _plain(value: Any) -> Any:  # noqa: ANN401
    """A value JSON can hold: NumPy scalars and arrays as Python's, times in ISO 8601, a
    missing value (NaN, NaT, None) as null."""
    if hasattr(value, "tolist") and not isinstance(value, str | bytes):
        value = _as_us(value).tolist()  # NumPy scalar or array
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if type(value).__name__ in ("NaTType", "NAType"):
        return None
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def write_jsonl(records: list[Any], path: Path) -> None:
    """The records as a JSON Lines file, one object a line, missing values left out."""
    with path.open("wb") as f:
        for record in records:
            row = {str(k): _plain(v) for k, v in record.items()}
            f.write(orjson.dumps({k: v for k, v in row.items() if v is not None}) + b"\n")
