"""A run's values as the rules read them: one table per scope and measure, whatever shape the
run stored them in (single :class:`~monitor.core.results.Value` objects or a
:class:`~monitor.core.results.Column` of arrays)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.core.results import Column, Value


def finite(x: float | None) -> float | None:
    """``x`` as a float when it is a finite number, else None."""
    return None if x is None or not np.isfinite(x) else float(x)


def pct(x: float) -> str:
    """``x`` as a whole percentage, for a reason's text ("83%")."""
    return f"{x:.0%}"


@dataclass(frozen=True, eq=False)
class Table:
    """One measure of one scope: ``values[i]`` of ``subjects[i]`` (NaN: undefined), with
    ``low``/``high`` (NaN: none) and ``n`` (0: none). Built from single values the subjects are
    sorted; from a column they keep its order."""

    subjects: list[str]
    values: NDArray[np.float64]
    low: NDArray[np.float64]
    high: NDArray[np.float64]
    n: NDArray[np.int64]
    column: Column | None = None
    records: list[Value] | None = None

    def __len__(self) -> int:
        return len(self.subjects)

    def detail(self, i: int) -> dict[str, Any] | None:
        """The detail of subject ``i``."""
        if self.records is not None:
            return self.records[i].detail
        return None if self.column is None else self.column.row_detail(i)

    def details(self, rows: Sequence[int]) -> list[dict[str, Any] | None]:
        """The details of the subjects ``rows``."""
        if self.records is not None:
            return [self.records[i].detail for i in rows]
        if self.column is None or self.column.indptr is None:
            return [None] * len(rows)
        return self.column.take(np.asarray(rows, dtype=np.int64)).details()

    def record(self, i: int) -> Value:
        """Subject ``i`` as one value."""
        if self.records is not None:
            return self.records[i]
        return Value(
            "", self.subjects[i], "", finite(self.values[i]), finite(self.low[i]),
            finite(self.high[i]), int(self.n[i]), self.detail(i),
        )  # fmt: skip

    def interval(self, i: int) -> list[float] | None:
        """``[low, high]`` of subject ``i``, None without both ends."""
        lo, hi = finite(self.low[i]), finite(self.high[i])
        return [lo, hi] if lo is not None and hi is not None else None

    def on(self, subjects: Sequence[str]) -> NDArray[np.int64]:
        """Where each of ``subjects`` is in this table (-1: not there)."""
        if list(subjects) == self.subjects:
            return np.arange(len(subjects), dtype=np.int64)
        where = {s: i for i, s in enumerate(self.subjects)}
        return np.fromiter((where.get(s, -1) for s in subjects), np.int64, len(subjects))

    def aligned(self, subjects: Sequence[str], what: str = "values") -> NDArray:
        """``values`` (or ``n``, ``low``, ``high``) in the order of ``subjects``; NaN (0 for
        ``n``) where a subject has none."""
        rows = self.on(subjects)
        source = getattr(self, what)
        out = np.zeros(len(subjects), source.dtype) if what == "n" else np.full(len(rows), np.nan)
        have = rows >= 0
        out[have] = source[rows[have]]
        return out


EMPTY = Table([], np.empty(0), np.empty(0), np.empty(0), np.empty(0, dtype=np.int64))


def _floats(xs: list[float | None]) -> NDArray[np.float64]:
    return np.array([np.nan if x is None else x for x in xs], dtype=np.float64)


class RunValues:
    """Everything one run produced, by scope and measure (``kind``: the campaign's kind)."""

    def __init__(self, kind: str, values: Sequence[Value], columns: Sequence[Column] = ()) -> None:
        self.kind = kind
        self._values: dict[tuple[str, str], list[Value]] = defaultdict(list)
        for v in values:
            self._values[(v.scope, v.metric)].append(v)
        self._columns = {(c.scope, c.metric): c for c in columns}
        self._tables: dict[tuple[str, str], Table] = {}
        campaign = next((v for v in values if v.scope == "campaign"), None)
        self.campaign_name = campaign.subject if campaign is not None else None

    def campaign(self, metric: str) -> Value | None:
        """The campaign value ``metric``."""
        found = self._values.get(("campaign", metric))
        return found[-1] if found else None

    def number(self, metric: str) -> float | None:
        """The campaign value ``metric`` as a finite float, or None."""
        v = self.campaign(metric)
        return None if v is None else finite(v.value)

    def table(self, scope: str, metric: str) -> Table:
        """``metric`` of every subject of ``scope`` that has it (empty without any)."""
        key = (scope, metric)
        if key not in self._tables:
            self._tables[key] = self._build(key)
        return self._tables[key]

    def _build(self, key: tuple[str, str]) -> Table:
        column = self._columns.get(key)
        if column is not None:
            size = len(column)

            def part(a: NDArray | None) -> NDArray[np.float64]:
                return np.full(size, np.nan) if a is None else np.asarray(a, dtype=np.float64)

            n = np.zeros(size, np.int64) if column.n is None else column.n.astype(np.int64)
            return Table(column.subjects, part(column.values), part(column.low),
                         part(column.high), n, column=column)  # fmt: skip
        found = self._values.get(key)
        if not found:
            return EMPTY
        latest = {v.subject: v for v in found}  # the last stored wins, as in the store
        records = [latest[s] for s in sorted(latest)]
        return Table(
            [v.subject for v in records],
            _floats([v.value for v in records]),
            _floats([v.low for v in records]),
            _floats([v.high for v in records]),
            np.array([v.n or 0 for v in records], dtype=np.int64),
            records=records,
        )

    def model(self) -> tuple[bool, dict[str, Any]]:
        """(converged, detail of ``model_iterations``); (False, {}) without a model."""
        it = self.campaign("model_iterations")
        if it is None or it.value is None:
            return False, {}
        detail = dict(it.detail or {})
        return bool(detail.get("converged")), detail
