"""Small helpers shared by the document and the item table: JSON-safe values and the natural
order of ids."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.core.results import Value

_split_digits = re.compile(r"(\d+)").split
_prefix_number = re.compile(r"(\D*)\d{1,18}").fullmatch


def num(x: Any) -> float | None:
    """A finite float, or None (undefined is null, never NaN)."""
    if x is None or isinstance(x, bool):
        return None
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def value_number(value: Value | None) -> float | None:
    """A stored value's number, or None (no value, or undefined)."""
    return num(value.value) if value is not None else None


def value_count(value: Value | None) -> int | None:
    """A stored count (``n_judgments``, iterations) as an int, or None."""
    v = value_number(value)
    return int(v) if v is not None else None


def value_interval(value: Value | None) -> list[float] | None:
    """A stored value's ``[low, high]``, or None where either end is undefined."""
    if value is None:
        return None
    lo, hi = num(value.low), num(value.high)
    return [lo, hi] if lo is not None and hi is not None else None


def clean(obj: Any) -> Any:
    """JSON-safe copy: non-finite floats become None, keys strings, tuples lists."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [clean(v) for v in obj]
    if obj is None or isinstance(obj, str | int | bool):
        return obj
    return str(obj)


def natural_key(s: str) -> tuple:
    """Sort ``w2`` before ``w10``: the text and digit runs of ``s``, the digits as numbers.

    Splitting on digit runs always alternates text (even places, maybe empty) and digits (odd
    places), so two keys compare text with text and number with number."""
    parts: list[Any] = _split_digits(s)
    if len(parts) == 3:  # the common id: a prefix, a number, a suffix
        return (parts[0], int(parts[1]), parts[2])
    parts[1::2] = map(int, parts[1::2])
    return tuple(parts)


def natural_order(ids: list[str]) -> NDArray[np.int64]:
    """The positions of ``ids`` sorted by :func:`natural_key` (stable). Ids that are all one
    prefix and a number (``i0`` ... ``i199999``) are ordered as numbers, without a key each."""
    if ids and (m := _prefix_number(ids[0])) is not None and "\n" not in m.group(1):
        prefix = m.group(1)
        joined = "\n".join(ids)
        line = re.escape(prefix) + r"\d{1,18}"
        if re.fullmatch(f"(?:{line}\n)*{line}", joined) is not None:
            numbers = joined[len(prefix) :].split("\n" + prefix) if prefix else joined.split()
            if len(numbers) == len(ids):  # no id held a line break
                return np.argsort(np.array(numbers, dtype=np.int64), kind="stable")
    return np.array(sorted(range(len(ids)), key=lambda i: natural_key(ids[i])), dtype=np.int64)


__all__ = ["clean", "natural_key", "natural_order", "num"]
