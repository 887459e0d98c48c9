"""Per-subject columns stored as changes from the run before.

An incremental run after 1% new judgments moves most item values by almost nothing (the
iterative measures settle a little further) and a few by a lot (the items that were judged).
Rewriting hundreds of thousands of item values on every run of a scheduler would cost more than
computing them, so a run with a base run stores, per column, only the rows that moved by more
than the tolerance, and the new subjects. A reader resolves the chain from the base's full column
(:func:`apply_delta`); the writer compares with what readers see (the resolved column, kept by
:func:`column_delta`), so the difference from the exact values never exceeds the tolerance,
however long the chain.

A delta is possible only when the new column extends the base's: the same subjects, in the same
order, then new ones (codes are stable and new items sort last, so this is the usual case), and
the same detail names and arrays. Anything else is stored whole.

A delta is written small: its positions as a bit per row of the resolved column when that is
shorter than a list of them (a run that moved most items), and the numbers of a column the
caller says are approximate anyway (an iteration's or a quadrature's) as float32 where that
rounding stays within half the tolerance (every magnitude at most ``tolerance * 2**23``;
readers see the rounded numbers, and the next delta is taken against them). Exact measures
keep their exact numbers.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping
from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from monitor.core.results import Column

DELTA_KEY = "delta"
"""Meta key (true) of a stored delta column; its ``.npz`` then also holds ``positions`` (the
rows, ascending) or ``moved`` (a bit per row of the resolved column, :func:`numpy.packbits`,
with ``rows`` their number)."""
_FLOATS = ("values", "low", "high", "data")


def _optional(a: NDArray | None, b: NDArray | None) -> bool:
    return (a is None) == (b is None)


def _moved(a: NDArray | None, b: NDArray | None, tolerance: float) -> NDArray[np.bool_]:
    """Per row, ``a`` and ``b`` differ by more than ``tolerance`` (NaN equals NaN only)."""
    assert a is not None and b is not None
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        far = ~(np.abs(a - b) <= tolerance)
    return far & ~(np.isnan(a) & np.isnan(b))


def _detail_moved(base: Column, cur: Column, rows: int, tolerance: float) -> NDArray[np.bool_]:
    """Per row of the first ``rows``, the CSR detail differs (other names, or a number moved)."""
    if base.indptr is None or cur.indptr is None:
        return np.zeros(rows, dtype=bool)
    assert base.indices is not None and cur.indices is not None
    assert base.data is not None and cur.data is not None
    len_b = np.diff(base.indptr[: rows + 1])
    len_c = np.diff(cur.indptr[: rows + 1])
    out = len_b != len_c
    same = ~out
    if not same.any():
        return out
    # compare the entries of the rows of equal length, entry by entry
    take_b = np.repeat(same, len_b)
    take_c = np.repeat(same, len_c)
    eb, ec = np.flatnonzero(take_b), np.flatnonzero(take_c)
    bad = (base.indices[eb] != cur.indices[ec]) | _moved(base.data[eb], cur.data[ec], tolerance)
    row_of = np.repeat(np.flatnonzero(same), len_b[same])
    out[np.unique(row_of[bad])] = True
    return out


def _stack(a: Column, b: Column) -> Column:
    """``a``'s rows then ``b``'s (same measure, same optional arrays and names)."""

    def cat(x: NDArray | None, y: NDArray | None) -> NDArray | None:
        return None if x is None or y is None else np.concatenate([x, y])

    indptr = indices = data = None
    if a.indptr is not None and b.indptr is not None:
        indptr = np.concatenate([a.indptr, b.indptr[1:] + a.indptr[-1]]).astype(np.int64)
        indices, data = cat(a.indices, b.indices), cat(a.data, b.data)
    return Column(
        a.scope,
        a.metric,
        [],  # callers pass the subjects to ``take``
        np.concatenate([a.values, b.values]),
        cat(a.low, b.low),
        cat(a.high, b.high),
        cat(a.n, b.n),
        a.detail_key,
        a.names,
        indptr,
        indices,
        data,
        a.integral,
    )


def _extends(base: Column, cur: Column, memo: dict | None = None) -> bool:
    """``cur`` can be stored as a delta on ``base``. ``memo`` keeps the comparisons of subject
    lists already made (a run's columns share a few lists of hundreds of thousands of names)."""
    k = len(base)
    if not (
        len(cur) >= k
        and cur.detail_key == base.detail_key
        and cur.names == base.names
        and cur.integral == base.integral
        and all(
            _optional(getattr(base, f), getattr(cur, f)) for f in ("low", "high", "n", "indptr")
        )
    ):
        return False
    key = (id(base.subjects), id(cur.subjects))
    if memo is not None and key in memo:
        return memo[key]
    same = cur.subjects[:k] == base.subjects
    if memo is not None:  # the lists are kept alive by the columns for as long as the memo
        memo[key] = same
    return same


def column_delta(
    base: Column | None,
    cur: Column,
    tolerance: float,
    *,
    narrow: bool = False,
    memo: dict | None = None,
) -> tuple[Column, NDArray[np.int64] | None, Column]:
    """What to store of ``cur`` against ``base`` (the base run's resolved column), and what a
    reader will then see.

    Returns ``(stored, positions, resolved)``: ``positions`` None when ``cur`` is stored whole,
    else the rows of the resolved column that ``stored`` holds (the moved rows of the base, then
    the new subjects), and ``stored.subjects`` only the new subjects (the base names the moved
    rows: writing their names again cost more than their numbers); ``resolved`` keeps the base's
    numbers where nothing moved beyond ``tolerance`` (counts ``n`` must be equal) and names
    its subjects by ``cur.subjects`` itself; ``narrow``: the stored numbers may be float32
    (module docstring); ``memo``: see :func:`_extends`."""
    if base is None or tolerance < 0 or not _extends(base, cur, memo):
        return cur, None, cur
    k = len(base)
    moved = _moved(base.values, cur.values[:k], tolerance)
    for f in ("low", "high"):
        if getattr(cur, f) is not None:
            moved |= _moved(getattr(base, f), getattr(cur, f)[:k], tolerance)
    if cur.n is not None:
        assert base.n is not None
        moved |= base.n != cur.n[:k]
    moved |= _detail_moved(base, cur, k, tolerance)
    changed = np.flatnonzero(moved)
    positions = np.r_[changed, np.arange(k, len(cur))].astype(np.int64)
    stored = cur.take(positions, cur.subjects[k:])
    if narrow:
        stored = _narrow(stored, tolerance)
    return stored, positions, apply_delta(base, stored, positions, cur.subjects)


def _narrow(column: Column, tolerance: float) -> Column:
    """``column`` with its numbers as float32 when rounding moves none by more than half of
    ``tolerance`` (relative rounding error at most 2**-24): half the bytes to write."""
    arrays = {f: getattr(column, f) for f in _FLOATS if getattr(column, f) is not None}
    if tolerance <= 0 or not arrays:
        return column
    bound = tolerance * 2.0**23
    for a in arrays.values():
        finite = np.abs(a[np.isfinite(a)])
        if finite.size and finite.max() > bound:
            return column
    return replace(column, **{f: a.astype(np.float32) for f, a in arrays.items()})


def apply_delta(
    base: Column,
    stored: Column,
    positions: NDArray[np.int64],
    subjects: list[str] | None = None,
) -> Column:
    """The column a delta describes: ``base`` with the rows at ``positions`` replaced by
    ``stored``'s, and the new subjects (positions ``len(base)``, ``len(base) + 1``, ...,
    last in ``stored``) appended. ``stored.subjects`` ends with the new subjects (earlier
    deltas also named the moved rows before them); ``subjects``: the resolved column's, when
    the caller has that list already."""
    k = len(base)
    if positions.size != stored.values.size or np.any(np.diff(positions) <= 0):
        raise ValueError("a delta column's positions must rise, one per stored row.")
    new = int(np.count_nonzero(positions >= k))
    if new and positions[-1] != k + new - 1:
        raise ValueError("a delta column's new subjects must follow the base's.")
    if positions.size == 0:
        return base if subjects is None else replace(base, subjects=subjects)
    rows = np.arange(k + new)
    rows[positions] = k + np.arange(positions.size)
    if new > len(stored.subjects):
        raise ValueError("a delta column must name its new subjects.")
    if subjects is None:
        subjects = (
            base.subjects + stored.subjects[len(stored.subjects) - new :] if new else base.subjects
        )
    return _stack(base, stored).take(rows, subjects)


def encode(column: Column, positions: NDArray[np.int64] | None) -> tuple[dict, bytes]:
    """The meta and the ``.npz`` bytes of a stored column (a delta also holds its positions:
    a list, or a bit per row when that is shorter)."""
    meta = column.meta()
    if positions is None:
        return meta, column.to_bytes()
    rows = int(positions[-1]) + 1 if positions.size else 0
    if positions.size * 64 > rows:
        mask = np.zeros(rows, dtype=bool)
        mask[positions] = True
        extra: dict[str, NDArray] = {
            "moved": np.packbits(mask),
            "rows": np.array(rows, dtype=np.int64),
        }
    else:
        extra = {"positions": positions.astype(np.int64)}
    return {**meta, DELTA_KEY: True}, column.to_bytes(**extra)


def decode_positions(meta: Mapping, blob: bytes) -> NDArray[np.int64] | None:
    """The positions of a stored delta column, None for a whole one."""
    if not meta.get(DELTA_KEY):
        return None
    with np.load(io.BytesIO(blob), allow_pickle=False) as npz:
        if "moved" in npz.files:
            rows = int(npz["rows"])
            return np.flatnonzero(np.unpackbits(npz["moved"], count=rows)).astype(np.int64)
        return np.asarray(npz["positions"], dtype=np.int64)


def resolve(chain: Iterable[tuple[Column, NDArray[np.int64] | None]]) -> Column | None:
    """The column a chain of stored columns describes, oldest first (the first must be whole;
    None if it is not: its base was pruned)."""
    out: Column | None = None
    for column, positions in chain:
        if positions is None:
            out = column
        elif out is None:
            return None
        else:
            out = apply_delta(out, column, positions)
    return out
