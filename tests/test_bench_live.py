"""The live bench's oracle (bench/live.py): Wald's sequential test on the truth, worked by hand."""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import live  # noqa: E402
from realdata import DataSet  # noqa: E402


def _labels(rows: list[tuple[str, str, str]]) -> DataSet:
    items = sorted({i for _, i, _ in rows})
    return DataSet("t", Path("."), "label", [], rows, {i: "1" for i in items if i != "x"}, items)


def test_the_oracle_stops_at_the_first_judgment_its_ratio_reaches_one_over_alpha() -> None:
    # right with probability 0.5 against a line of 0.8: a wrong answer adds log(0.5 / 0.2) =
    # 0.916, a right one log(0.5 / 0.8) = -0.470; log(1 / 0.01) = 4.605. Five wrong reach
    # 4.58, six 5.50: stopped at their sixth wrong answer, their seventh judgment (the first,
    # on an item without a truth, arrived but tells nothing)
    rows = [("w", "x", "0")] + [("w", f"i{k}", "0") for k in range(8)]
    rows += [("v", f"i{k}", "1") for k in range(8)]
    ds = _labels(rows)
    quality = {"w": 0.5, "v": 0.9}
    assert 5 * math.log(0.5 / 0.2) < math.log(100) < 6 * math.log(0.5 / 0.2)
    assert live.oracle(ds, rows, {"w", "v"}, quality, 0.8) == {"w": 7}


def test_the_oracle_leaves_a_worker_at_or_above_the_line_alone() -> None:
    rows = [("w", f"i{k}", "0") for k in range(50)]
    ds = _labels(rows)
    assert live.oracle(ds, rows, {"w"}, {"w": 0.8}, 0.8) == {}
    # a right answer moves the ratio away: one right after five wrong delays the stop by one
    rows = [("w", f"i{k}", "0") for k in range(5)] + [("w", "r", "1")]
    rows += [("w", f"j{k}", "0") for k in range(5)]
    ds = _labels(rows)
    got = live.oracle(ds, rows, {"w"}, {"w": 0.5}, 0.8)
    assert got == {"w": 7}  # 5 wrong (4.58) + right (4.11) + wrong (5.03)
