"""Cells that spreadsheets will not run: every CSV/TSV cell (and every line of a list) that a
spreadsheet would read as a formula (``=``, ``+``, ``-``, ``@``, tab, CR) is neutralised with a
leading single quote; numbers are written as numbers."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["FORMULA_START", "csv_table", "json_text", "neutralise"]

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def neutralise(value: Any) -> str:
    """A cell a spreadsheet will not evaluate: text starting like a formula gets a ``'``."""
    if value is None:
        return ""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value) if math.isfinite(value) else ""
    s = str(value)
    return "'" + s if s.startswith(FORMULA_START) else s


def csv_table(header: Sequence[str], rows: Iterable[Sequence[Any]], delimiter: str = ",") -> str:
    """CSV/TSV text with every text cell neutralised (numbers are written as numbers)."""
    buf = io.StringIO()
    w = csv.writer(buf, delimiter=delimiter, lineterminator="\r\n")
    w.writerow([neutralise(h) for h in header])
    for row in rows:
        w.writerow(
            [
                ("" if not math.isfinite(c) else f"{c:.6g}")
                if isinstance(c, float)
                else str(c)
                if isinstance(c, int) and not isinstance(c, bool)
                else neutralise(c)
                for c in row
            ]
        )
    return buf.getvalue()


def json_text(obj: Any) -> str:  # noqa: ANN401
    """JSON text, indented, non-ASCII kept, NaN refused (an export holds none)."""
    return json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
