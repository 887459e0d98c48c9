"""The items' tables share their first columns and number cells: the same cells as the plain
construction each table had of its own."""

from __future__ import annotations

from typing import Any

import numpy as np

from monitor.report.lists import ambiguous_table, item_table
from monitor.report.tables import Cell, fmt, number_cell, sort_key


def _rows(seed: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(30):
        n = None if k % 7 == 0 else int(rng.integers(0, 5000))
        rows.append(
            {
                "item": f"i{k}",
                "text": None if k % 5 == 0 else f"text {k}",
                "n_judgments": n,
                "gold": None if k % 3 else "yes",
                "answers": {"yes": int(rng.integers(0, 9)), "no": int(rng.integers(0, 9))},
                "flags": ["ambiguous"],
            }
        )
    return rows


def test_a_number_cell_is_the_formatted_number_sorted_by_its_value() -> None:
    rng = np.random.default_rng(1)
    values = [None, True, 0, 12_345, 0.0, 1e-5, -3.25, 1234.5, *rng.normal(0, 100, 50).tolist()]
    for x in values:
        for digits in (1, 2, 3):
            assert number_cell(x, digits) == Cell(fmt(x, digits), sort_key(x))


def test_the_items_first_cells_are_those_of_the_plain_construction() -> None:
    for seed in range(3):
        rows = _rows(seed)
        items = item_table("label", rows, len(rows))
        ambiguous = ambiguous_table("label", rows, len(rows), {})
        assert [c.key for c in items.columns[:3]] == ["item", "text", "n_judgments"]
        assert [c.key for c in ambiguous.columns[:3]] == ["item", "text", "n_judgments"]
        for r, plain, amb in zip(rows, items.rows, ambiguous.rows, strict=True):
            n = r.get("n_judgments")
            head = [Cell(str(r["item"])), Cell(str(r.get("text") or "")), Cell(fmt(n), sort_key(n))]
            assert plain[:3] == head
            gold = r.get("gold")
            head[1] = Cell(str(r.get("text") or ""), sub=f"gold: {gold}" if gold else "")
            assert amb[:3] == head
