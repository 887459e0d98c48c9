"""What a run produces: values and flags, as plain frozen dataclasses (no dependencies)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Value:
    """One stored number: ``value`` None means undefined (``detail['reason']`` says why)."""

    scope: str
    subject: str
    metric: str
    value: float | None
    low: float | None = None
    high: float | None = None
    n: int | None = None
    detail: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class FlagRecord:
    """A rule that fired, with the evidence (value, threshold, n, comparison, message)."""

    scope: str
    subject: str
    rule: str
    value: float | None
    threshold: float | None
    evidence: dict[str, Any] = field(default_factory=dict)
