"""Sections of the settings: the part of :class:`monitor.core.settings.Settings` one layer reads
(the rules' thresholds, the measures' options), as a frozen dataclass of its own whose fields
are settings of the same name (``tests/test_settings.py`` checks the names and defaults); and
how a setting is declared (:func:`setting`: its default, what it accepts, what it does), in
:class:`~monitor.core.settings.Settings` or in the section that reads it."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, Self


class Section:
    """A frozen dataclass whose fields are settings: :meth:`of` takes them from the settings."""

    @classmethod
    def of(cls, settings: Any) -> Self:
        """This section of ``settings`` (any object with these attributes)."""
        return cls(**{f.name: getattr(settings, f.name) for f in fields(cls)})  # type: ignore[arg-type]


@dataclass(frozen=True)
class Range:
    """The numbers a setting accepts: ``low`` to ``high`` (None: unbounded), each end included
    unless open, and the values of ``also`` (a special meaning such as -1 = store all). A float
    must be finite whatever the range."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    also: tuple[float, ...] = ()

    def holds(self, value: Any) -> bool:  # noqa: ANN401 - an int or a float
        if isinstance(value, float) and not math.isfinite(value):
            return False
        if value in self.also:
            return True
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or (value < self.high if self.high_open else value <= self.high)

    def text(self, kind: type) -> str:
        """``an integer >= 1``, ``a number in [0, 1]``, ``-1 or a number >= 0``."""
        noun = "an integer" if kind is int else "a number"
        low, high = _num(self.low), _num(self.high)
        if self.low is not None and self.high is not None:
            left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
            span = f"{noun} in {left}{low}, {high}{right}"
        elif self.low is not None:
            span = f"{noun} {'>' if self.low_open else '>='} {low}"
        elif self.high is not None:
            span = f"{noun} {'<' if self.high_open else '<='} {high}"
        else:
            span = noun
        return " or ".join([*(_num(a) for a in self.also), span])


def _num(x: float | None) -> str:
    return "" if x is None else f"{x:g}" if isinstance(x, float) else f"{x}"


@dataclass(frozen=True)
class Choices:
    """The words a setting accepts."""

    words: tuple[str, ...]

    def holds(self, value: Any) -> bool:  # noqa: ANN401
        return value in self.words

    def text(self, _kind: type) -> str:
        return "one of " + ", ".join(self.words)


@dataclass(frozen=True)
class Text:
    """A text setting: ``description`` of what it holds, checked by ``pattern`` (a full match)
    or by ``check`` (a function raising :class:`ConfigError`) when given."""

    description: str
    pattern: str | None = None
    check: Callable[[str], None] | None = None

    def holds(self, value: Any) -> bool:  # noqa: ANN401
        return self.pattern is None or re.fullmatch(self.pattern, value) is not None

    def text(self, _kind: type) -> str:
        return self.description


Accepts = Range | Choices | Text
UNIT = Range(0, 1)


def at_least(low: int) -> Range:
    return Range(low)


def setting(
    default: Any,  # noqa: ANN401
    accepts: Accepts,
    doc: str,
    *,
    factory: Callable[[], Any] | None = None,
    shown: str | None = None,
) -> Any:  # noqa: ANN401 - a dataclass field
    """One setting: its default (or ``factory``, and ``shown`` for the documentation), the
    values it accepts and what it does."""
    meta = {"accepts": accepts, "doc": doc, "shown": shown}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)
