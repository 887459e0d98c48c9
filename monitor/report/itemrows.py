"""The document's item rows built from the columns' arrays, a measure at a time: the rows of
:meth:`monitor.report.items.ItemTable.rows` (the plain version, an item at a time), but with
undefined numbers left as NaN, which the JSON writer turns into null
(``tests/report/test_items.py`` checks the two against each other). A JSON report of a campaign
with hundreds of thousands of items builds its rows so."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.core.results import Column
from monitor.report.items import ItemTable, model_label, row_measures


def _column(table: ItemTable, metric: str, positions: NDArray[np.int64]) -> tuple[Column, NDArray]:
    """The one column of ``metric`` and the row of each item at ``positions`` in it (-1: none)."""
    [s] = table.series[metric]
    assert s.column is not None
    return s.column, s.row[positions]


def _take(a: NDArray[np.float64] | None, rows: NDArray[np.int64]) -> NDArray[np.float64]:
    """``a[rows]``, NaN where a row is -1 or there is no array."""
    out = np.full(rows.size, np.nan)
    if a is not None:
        have = rows >= 0
        out[have] = a[rows[have]]
    return out


def _values(table: ItemTable, metric: str, positions: NDArray[np.int64]) -> list[float]:
    if metric not in table.series:
        return [np.nan] * positions.size
    c, rows = _column(table, metric, positions)
    return _take(c.values, rows).tolist()


def _intervals(table: ItemTable, metric: str, positions: NDArray[np.int64]) -> list[Any]:
    out: list[Any] = [None] * positions.size
    if metric not in table.series:
        return out
    c, rows = _column(table, metric, positions)
    lo, hi = _take(c.low, rows), _take(c.high, rows)
    ok = np.flatnonzero(np.isfinite(lo) & np.isfinite(hi))
    for k, pair in zip(ok.tolist(), np.column_stack([lo[ok], hi[ok]]).tolist(), strict=True):
        out[k] = pair
    return out


def _details(table: ItemTable, metric: str, key: str, positions: NDArray[np.int64]) -> list[Any]:
    """``detail[key]`` of each item's row: None without a value or without that detail."""
    out: list[Any] = [None] * positions.size
    if metric not in table.series:
        return out
    c, rows = _column(table, metric, positions)
    if c.detail_key != key or c.indptr is None:
        return out
    have = np.flatnonzero(rows >= 0)
    maps = c.take(rows[have], []).detail_maps() or []
    for k, d in zip(have.tolist(), maps, strict=True):
        out[k] = d
    return out


def column_rows(table: ItemTable, positions: NDArray[np.int64]) -> list[dict[str, Any]]:
    """The rows of the items at ``positions`` of a table whose measures are all columns."""
    ids = [table.ids[p] for p in positions.tolist()]
    counts = _values(table, "n_judgments", positions)
    if "score" in table.series:  # pairwise items: their comparisons
        c, where = _column(table, "score", positions)
        if c.n is not None:
            for k in np.flatnonzero(~np.isfinite(counts) & (where >= 0)).tolist():
                counts[k] = c.n[where[k]]
    keys: list[str] = ["item", "n_judgments"]
    columns: list[list[Any]] = [ids, [int(x) if math.isfinite(x) else None for x in counts]]
    for metric, key, interval in row_measures(table.kind):
        keys.append(key)
        columns.append(_values(table, metric, positions))
        if interval:
            keys.append(f"{key}_interval")
            columns.append(_intervals(table, metric, positions))
    texts = [table.texts.get(i, (None, None)) for i in ids]
    keys += ["uas", "answers", "flags", "text", "gold", "count_score"]
    columns += [
        _details(table, "uas", "scores", positions),
        _details(table, "n_judgments", "answers", positions),
        [list(table.flags.get(p, ())) for p in positions.tolist()],
        [t for t, _ in texts],
        [g for _, g in texts],
        [None] * positions.size,  # a column's detail holds no count score
    ]
    rows = [dict(zip(keys, values, strict=True)) for values in zip(*columns, strict=True)]
    if "model_label" in table.series:
        posteriors = _details(table, "model_label", "posterior", positions)
        chosen = _values(table, "model_label", positions)
        _, where = _column(table, "model_label", positions)
        for k in np.flatnonzero(where >= 0).tolist():
            post = posteriors[k] or {}
            rows[k].update(model_label=model_label(post, table.kind), posterior=chosen[k],
                           posteriors=post)  # fmt: skip
    return rows


def row_chunks(table: ItemTable, chunk: int = 4096) -> Iterator[list[dict[str, Any]]]:
    """The rows of every item of ``table``, ``chunk`` at a time: built from the arrays column
    by column when every measure is one column (:func:`column_rows`, the same rows as
    :meth:`~monitor.report.items.ItemTable.rows` once written as JSON, where NaN is null), else
    item by item."""
    for lo in range(0, len(table.ids), chunk):
        positions = np.arange(lo, min(lo + chunk, len(table.ids)))
        if table.columnar:
            yield column_rows(table, positions)
        else:
            yield table.rows(positions.tolist())
