"""Columns stored as changes from the base run: the delta holds what moved beyond the tolerance
and the new subjects, a reader resolves it to the writer's view, and anything that does not
extend the base is stored whole."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.core.results import Column
from monitor.store.column_deltas import (
    apply_delta,
    column_delta,
    decode_positions,
    encode,
    resolve,
)


def _column(values: list[float], *, names: tuple[str, ...] = ("a", "b"), seed: int = 0) -> Column:
    """A column with low/high/n and a CSR detail of up to two entries per row."""
    rng = np.random.default_rng(seed)
    v = np.asarray(values, dtype=np.float64)
    lengths = rng.integers(0, 3, v.size)
    indptr = np.r_[0, np.cumsum(lengths)].astype(np.int64)
    indices = np.concatenate([np.arange(k) for k in lengths]).astype(np.int64) if v.size else []
    return Column(
        "item",
        "m",
        [f"i{k}" for k in range(v.size)],
        v,
        v - 1,
        v + 1,
        np.arange(v.size, dtype=np.int64),
        "answers",
        names,
        indptr,
        np.asarray(indices, dtype=np.int64),
        rng.integers(1, 5, int(indptr[-1])).astype(np.float64),
        True,
    )


def _same(a: Column, b: Column) -> None:
    assert a.subjects == b.subjects
    for f in ("values", "low", "high", "n", "indptr", "indices", "data"):
        x, y = getattr(a, f), getattr(b, f)
        assert (x is None) == (y is None), f
        if x is not None:
            np.testing.assert_array_equal(x, y, err_msg=f)


def test_only_moved_rows_and_new_subjects_are_stored() -> None:
    base = _column([0.1, 0.2, 0.3, np.nan, 0.5])
    cur_values = [0.1004, 0.25, 0.3, np.nan, 0.5, 0.7, 0.8]
    # the same detail for the old rows, new rows after them
    cur = Column(
        "item", "m", [f"i{k}" for k in range(7)], np.asarray(cur_values),
        np.asarray(cur_values) - 1, np.asarray(cur_values) + 1, np.r_[base.n, 5, 6],
        "answers", base.names,
        np.r_[base.indptr, base.indptr[-1] + 1, base.indptr[-1] + 2],
        np.r_[base.indices, 0, 1], np.r_[base.data, 3.0, 4.0], True,
    )  # fmt: skip
    stored, positions, resolved = column_delta(base, cur, 0.001)
    assert positions is not None
    assert positions.tolist() == [1, 5, 6]
    assert stored.subjects == ["i5", "i6"]  # the base names the moved row
    assert stored.values.tolist() == [0.25, 0.7, 0.8]  # exact numbers stay exact
    narrowed = column_delta(base, cur, 0.001, narrow=True)[0]
    assert narrowed.values.dtype == np.float32  # rounding within half the tolerance
    np.testing.assert_array_equal(narrowed.values, np.float32([0.25, 0.7, 0.8]))
    assert resolved.values[0] == 0.1  # within the tolerance: the base's number
    assert resolved.values[1] == 0.25
    np.testing.assert_allclose(resolved.values, cur.values, atol=0.001)
    _same(resolved, apply_delta(base, stored, positions))
    # deltas stored before named the moved rows too: they resolve the same
    older = Column(stored.scope, stored.metric, ["i1", "i5", "i6"], stored.values, stored.low,
                   stored.high, stored.n, stored.detail_key, stored.names, stored.indptr,
                   stored.indices, stored.data, stored.integral)  # fmt: skip
    _same(resolved, apply_delta(base, older, positions))


def test_a_count_or_a_detail_that_changed_is_stored() -> None:
    base = _column([0.1, 0.2, 0.3], seed=1)
    n = base.n.copy()
    n[0] += 1
    data = base.data.copy()
    data[-1] += 1  # the last row with a detail
    cur = Column("item", "m", base.subjects, base.values, base.low, base.high, n, "answers",
                 base.names, base.indptr, base.indices, data, True)  # fmt: skip
    _, positions, resolved = column_delta(base, cur, 0.5)
    last = int(np.flatnonzero(np.diff(base.indptr) > 0)[-1])
    assert positions is not None
    assert set(positions.tolist()) == {0, last}
    _same(resolved, cur)


@pytest.mark.parametrize(
    "change",
    ["subjects", "names", "no_low", "shorter"],
)
def test_what_does_not_extend_the_base_is_stored_whole(change: str) -> None:
    base = _column([0.1, 0.2, 0.3])
    cur = _column([0.1, 0.2, 0.3, 0.4])
    if change == "subjects":
        cur = Column("item", "m", ["x", *cur.subjects[1:]], cur.values)
    elif change == "names":
        cur = _column([0.1, 0.2, 0.3, 0.4], names=("a", "b", "c"))
    elif change == "no_low":
        cur = Column("item", "m", cur.subjects, cur.values)
    else:
        cur = _column([0.1, 0.2])
    stored, positions, resolved = column_delta(base, cur, 0.001)
    assert positions is None
    assert stored is cur
    assert resolved is cur


def test_no_base_or_a_negative_tolerance_stores_whole() -> None:
    cur = _column([0.1])
    assert column_delta(None, cur, 0.001)[1] is None
    assert column_delta(cur, cur, -1)[1] is None


def test_encoded_delta_round_trips_and_resolves() -> None:
    base = _column([0.1, 0.2, 0.3])
    cur = Column("item", "m", [*base.subjects, "i3"], np.r_[0.1, 0.9, 0.3, 0.4])
    base = Column("item", "m", base.subjects, base.values)
    stored, positions, resolved = column_delta(base, cur, 0.001)
    meta, blob = encode(stored, positions)
    back = Column.from_bytes("item", "m", stored.subjects, meta, blob)
    pos = decode_positions(meta, blob)
    assert pos is not None
    assert pos.tolist() == [1, 3]
    whole_meta, whole_blob = encode(base, None)
    assert decode_positions(whole_meta, whole_blob) is None
    _same(resolve([(base, None), (back, pos)]), resolved)
    assert resolve([(back, pos)]) is None  # the base is gone


def test_bad_positions_are_refused() -> None:
    base = Column("item", "m", ["a", "b"], np.r_[1.0, 2.0])
    stored = Column("item", "m", ["b", "a"], np.r_[1.0, 2.0])
    with pytest.raises(ValueError, match="rise"):
        apply_delta(base, stored, np.array([1, 0]))
    with pytest.raises(ValueError, match="follow"):
        apply_delta(base, Column("item", "m", ["c"], np.r_[3.0]), np.array([3]))


@settings(max_examples=60, deadline=None)
@given(
    base=st.lists(
        st.one_of(st.floats(-5, 5), st.floats(1e4, 1e5), st.just(float("nan"))),
        min_size=0,
        max_size=30,
    ),
    moves=st.lists(st.floats(-0.01, 0.01), min_size=50, max_size=50),  # 30 + 4 x 5 new
    extra=st.integers(0, 5),
    tol=st.sampled_from([0.0, 0.001, 0.005]),
    chain=st.integers(1, 4),
    narrow=st.booleans(),
)
def test_resolved_chains_stay_within_the_tolerance(
    base: list[float], moves: list[float], extra: int, tol: float, chain: int, narrow: bool
) -> None:
    """However long the chain, a reader sees each run's numbers within the tolerance (the
    writer compares with what readers see, so the differences never accumulate), through the
    bytes as stored (float32 numbers where they fit, positions as a list or as bits)."""
    current = Column("item", "m", [f"i{k}" for k in range(len(base))], np.asarray(base))
    seen = current
    stored_chain: list[tuple[Column, np.ndarray | None]] = [(current, None)]
    rng = np.random.default_rng(len(base) + extra)
    for _ in range(chain):
        k = len(current)
        values = current.values + np.asarray(moves[:k]) * rng.random(k)
        values = np.r_[values, rng.random(extra)]
        current = Column("item", "m", [f"i{j}" for j in range(values.size)], values)
        stored, positions, seen_now = column_delta(seen, current, tol, narrow=narrow)
        meta, blob = encode(stored, positions)
        back = Column.from_bytes("item", "m", stored.subjects, meta, blob)
        stored_chain.append((back, decode_positions(meta, blob)))
        read = resolve(stored_chain)
        assert read is not None
        _same(read, seen_now)
        assert read.subjects == current.subjects
        both_nan = np.isnan(read.values) & np.isnan(current.values)
        assert np.all(both_nan | (np.abs(read.values - current.values) <= tol))
        seen = seen_now


def test_a_delta_is_written_small_and_read_back_the_same() -> None:
    """Most rows moved: positions as bits and (approximate numbers) float32 within half the
    tolerance; a few rows moved: a list of positions; numbers too large for float32 at this
    tolerance stay float64."""
    rng = np.random.default_rng(3)
    k = 1000
    base = Column("item", "m", [f"i{j}" for j in range(k)], rng.random(k) * 5, rng.random(k))
    for share, scale in ((0.9, 1.0), (0.01, 1.0), (0.9, 1e5)):
        values = base.values * scale
        cur_base = Column("item", "m", base.subjects, values, base.low)
        moved = rng.random(k) < share
        cur = Column(
            "item",
            "m",
            [*base.subjects, "new"],
            np.r_[values + moved * 0.1, 7.0],
            np.r_[base.low, 0.5],
        )
        stored, positions, resolved = column_delta(cur_base, cur, 0.001, narrow=True)
        assert positions is not None
        meta, blob = encode(stored, positions)
        with np.load(io.BytesIO(blob)) as npz:
            assert ("moved" in npz.files) == (share > 0.5)
            assert ("positions" in npz.files) == (share < 0.5)
            assert npz["values"].dtype == (np.float32 if scale == 1.0 else np.float64)
        pos = decode_positions(meta, blob)
        assert pos is not None
        np.testing.assert_array_equal(pos, positions)
        back = Column.from_bytes("item", "m", stored.subjects, meta, blob)
        _same(resolve([(cur_base, None), (back, pos)]), resolved)
        assert np.max(np.abs(resolved.values - cur.values)) <= 0.0005
