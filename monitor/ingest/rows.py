"""The canonical row: what every reader (CSV, JSON Lines, platform exports) yields, and the
record a reader could not turn into one."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from monitor.core.errors import Problem

Table = Literal["judgment", "item", "worker"]

JUDGMENT_COLUMNS = ("worker", "item", "value", "judgment_id", "created_at", "duration_s")
PREFERENCE_COLUMNS = (
    "worker",
    "left",
    "right",
    "preference",
    "judgment_id",
    "created_at",
    "duration_s",
)
ITEM_COLUMNS = ("item", "gold", "text")
WORKER_COLUMNS = ("worker", "status", "started_at", "completed_at", "duration_s")


@dataclass(frozen=True)
class SourceRow:
    """One record of an input file with canonical column names, before validation.

    ``line`` is the 1-based line of the file where the record starts (for error messages).
    ``table`` says what the row describes: a judgment (or preference), an item (gold value,
    text) or a worker (platform status and times). ``fields`` holds the canonical columns of
    that table (see the ``*_COLUMNS`` tuples; values are raw: strings from CSV, JSON values from
    JSON); ``extra`` holds the columns that are not canonical, kept as payload. ``checked``
    says the reader has made sure every value can be stored (no NUL, lone surrogate, NaN,
    number past a double's range, deep nesting: :mod:`monitor.ingest.safe`); the validator
    checks the other rows (platform exports) value by value.
    """

    line: int
    fields: dict[str, Any]
    table: Table = "judgment"
    extra: dict[str, Any] = field(default_factory=dict)
    checked: bool = False


@dataclass(frozen=True)
class BadRecord:
    """A record that could not be read as a row: where it starts, its raw text, what is wrong.
    The ingest lists it with the other problems, or keeps it in ``rejected_rows`` with its
    reason (``--skip-invalid``)."""

    line: int
    raw: str
    problem: Problem
