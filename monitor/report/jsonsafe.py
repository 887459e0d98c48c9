"""Small helpers shared by the document and the item table: JSON-safe values and the natural
order of ids."""

from __future__ import annotations

import math
import re
from typing import Any

_split_digits = re.compile(r"(\d+)").split


def num(x: Any) -> float | None:
    """A finite float, or None (undefined is null, never NaN)."""
    if x is None or isinstance(x, bool):
        return None
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


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


__all__ = ["clean", "natural_key", "num"]
