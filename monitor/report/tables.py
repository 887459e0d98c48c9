"""The report's tables as plain data: columns from the catalog, cells already formatted.

A table shows a column for every catalog measure of its scope that has a key, applies to the
campaign's kind and holds a value in at least one of the rows shown: a measure added to the
catalog (and so to the JSON document's rows) shows up with its title, and a score that means
nothing for the kind (an item's UQS in a preference campaign) stays out. The template renders
any table alike (``templates/report.html``, macro ``table``); every text is escaped there.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from monitor.core import catalog


def fmt(x: Any, digits: int = 2) -> str:
    """A number for a table: '—' when undefined, thousands separated when whole."""
    if x is None:
        return "—"
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        if abs(x) >= 1000:
            return f"{x:,.{digits}f}"
        if 0 < abs(x) < 10**-digits:  # a small p-value is not 0.00
            return f"{x:.2g}"
        return f"{x:.{digits}f}"
    return str(x)


def fmt_ci(ci: Any, digits: int = 2) -> str:
    """``[low, high]``, or '—'."""
    if not ci or ci[0] is None or ci[1] is None:
        return "—"
    return f"[{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"


def pct(x: Any) -> str:
    return "—" if x is None else f"{100 * x:.0f}%"


def when(iso: Any) -> str:
    """An ISO timestamp as 'YYYY-MM-DD HH:MM UTC'."""
    if not iso:
        return "—"
    try:
        t = datetime.fromisoformat(str(iso))
    except ValueError:
        return str(iso)
    if t.tzinfo is not None:
        t = t.astimezone(UTC)
    return t.strftime("%Y-%m-%d %H:%M UTC")


def sort_key(x: Any) -> str:
    """``data-sort``: numbers as they are, undefined empty (sorted last either way)."""
    return "" if x is None else str(x)


@dataclass(frozen=True)
class Column:
    """One column: the row key it shows, its header, what it is (the header's tooltip)."""

    key: str
    title: str
    tip: str = ""
    kind: str = "num"
    """How its cells look: ``num``, ``id``, ``text``, ``badges``, ``bars``."""
    interval: bool = False
    """The cell shows ``<key>_interval`` under the value."""
    digits: int = 2


@dataclass
class Cell:
    """A formatted cell: ``text`` (escaped by the template), ``sort`` (``data-sort``), and
    what some kinds of cell carry beside."""

    text: str = ""
    sort: str | None = None
    sub: str = ""
    badges: list[tuple[str, str]] = field(default_factory=list)
    """(css class suffix, text) of each badge."""
    bars: list[tuple[str, int, int]] = field(default_factory=list)
    """(label, count, width in px) of each bar of a distribution."""
    href: str = ""


@dataclass
class Table:
    """Rows of cells under columns; ``visible`` rows show at first, the rest on demand."""

    id: str
    columns: list[Column]
    rows: list[list[Cell]]
    total: int
    """How many rows there are in all (the JSON document has every one)."""
    visible: int = 25
    scope: str = ""
    """What a row is about (``worker``, ``item``, ``pair``): the page marks each row with it
    and its subject, so a reader's tools (and the tests) find a subject's flags."""
    subjects: list[str] = field(default_factory=list)
    rule: str = ""
    """The flag every row of the table carries (the ambiguous items), if one does."""

    @property
    def more(self) -> int:
        """Rows the page does not hold at all."""
        return max(0, self.total - len(self.rows))


def measure_columns(
    scope: str, kind: str, rows: Sequence[dict[str, Any]], skip: Iterable[str] = ()
) -> list[Column]:
    """The catalog's measures of ``scope`` with a key, for ``kind``, that hold a value in some
    row of ``rows``: those with an interval first (the quality estimates), then in catalog
    order."""
    skipped = set(skip)
    out: dict[str, Column] = {}
    for m in catalog.measures(scope, kind):
        key = m.key
        if key is None or key in skipped or key in out:
            continue
        if not any(r.get(key) is not None for r in rows):
            continue
        title = m.title or key.replace("_", " ").capitalize()
        out[key] = Column(key, title, tip=m.value, interval=m.shows_interval)
    return sorted(out.values(), key=lambda c: not c.interval)


def number_cell(x: Any, digits: int = 2) -> Cell:
    """A number's cell: formatted (:func:`fmt`), sorted by its value."""
    return Cell(fmt(x, digits), sort_key(x))


def measure_cell(row: dict[str, Any], col: Column) -> Cell:
    v = row.get(col.key)
    sub = fmt_ci(row.get(f"{col.key}_interval"), col.digits) if col.interval else ""
    return Cell(fmt(v, col.digits), sort_key(v), "" if sub == "—" else sub)


def extra_column(
    rows: Sequence[dict[str, Any]], key: str, title: str, tip: str = "", digits: int = 2
) -> list[Column]:
    """A column of a row key that no catalog measure declares (``count_score``), when some
    row holds a value for it."""
    if any(r.get(key) is not None for r in rows):
        return [Column(key, title, tip=tip, digits=digits)]
    return []


__all__ = [
    "Cell",
    "Column",
    "Table",
    "extra_column",
    "fmt",
    "fmt_ci",
    "measure_cell",
    "measure_columns",
    "number_cell",
    "pct",
    "sort_key",
    "when",
]
