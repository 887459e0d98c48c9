"""What a run produces: values and flags, as plain frozen dataclasses.

A :class:`Value` is one number. A :class:`Column` is one measure of many subjects of one scope
(every item of a campaign, say) kept as arrays: a run of a million judgments has hundreds of
thousands of item values, and arrays cost neither a Python object per number in memory nor a
database row per number in the store. :meth:`Column.expand` gives the same numbers as Values.
"""

from __future__ import annotations

import io
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

Names = Sequence[str] | NDArray[np.object_]
"""Subject names (worker, item or pair ids) by code: a list, or the arrays' object array."""


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


_ARRAYS = ("values", "low", "high", "n", "indptr", "indices", "data")


@dataclass(frozen=True, slots=True, eq=False)
class Column:
    """``metric`` of ``subjects[i]`` is ``values[i]`` (NaN = undefined), with ``low``/``high``
    and ``n`` where they exist.

    A per-subject detail mapping names to numbers (the answer counts of an item, its annotation
    scores) is a sparse matrix in CSR form: row ``i`` holds ``data[indptr[i]:indptr[i+1]]`` at
    ``names[indices[...]]``, and expands to ``detail = {detail_key: {name: number}}``
    (``integral`` numbers are counts).
    """

    scope: str
    metric: str
    subjects: list[str]
    values: NDArray[np.float64]
    low: NDArray[np.float64] | None = None
    high: NDArray[np.float64] | None = None
    n: NDArray[np.int64] | None = None
    detail_key: str | None = None
    names: tuple[str, ...] = ()
    indptr: NDArray[np.int64] | None = None
    indices: NDArray[np.int64] | None = None
    data: NDArray[np.float64] | None = None
    integral: bool = False

    def __len__(self) -> int:
        return len(self.subjects)

    def take(self, rows: NDArray[np.int64], subjects: list[str] | None = None) -> Column:
        """The subjects ``rows`` (positions) alone, in that order (``subjects``: those subjects,
        when the caller has them already)."""
        rows = np.asarray(rows, dtype=np.int64)

        def pick(a: NDArray | None) -> NDArray | None:
            return None if a is None else a[rows]

        indptr = indices = data = None
        if self.indptr is not None:
            assert self.indices is not None and self.data is not None
            starts, lengths = self.indptr[rows], np.diff(self.indptr)[rows]
            indptr = np.r_[0, np.cumsum(lengths)].astype(np.int64)
            entries = np.repeat(starts - indptr[:-1], lengths) + np.arange(indptr[-1])
            indices, data = self.indices[entries], self.data[entries]
        return Column(
            self.scope,
            self.metric,
            [self.subjects[i] for i in rows.tolist()] if subjects is None else subjects,
            self.values[rows],
            pick(self.low),
            pick(self.high),
            pick(self.n),
            self.detail_key,
            self.names,
            indptr,
            indices,
            data,
            self.integral,
        )

    def details(self) -> list[dict[str, Any] | None]:
        """The per-subject detail dictionaries, ``{detail_key: {name: number}}`` (None without
        a detail matrix)."""
        inner, key = self.detail_maps(), self.detail_key
        if inner is None or key is None:
            return [None] * len(self.subjects)
        return [{key: d} for d in inner]

    def detail_maps(self) -> list[dict[str, Any]] | None:
        """Each subject's ``{name: number}`` of the detail matrix (None without one): the
        inside of :meth:`details`, built without the wrapper (the JSON writer's hot path)."""
        if self.detail_key is None or self.indptr is None:
            return None
        assert self.indices is not None and self.data is not None
        names = [self.names[i] for i in self.indices.tolist()]
        data = (
            self.data.astype(np.int64).tolist()
            if self.integral
            else np.round(self.data, 12).tolist()
        )
        pairs = list(zip(names, data))  # noqa: B905 - one length by construction
        bounds = self.indptr.tolist()
        return [dict(pairs[lo:hi]) for lo, hi in itertools.pairwise(bounds)]

    def row_detail(self, i: int) -> dict[str, Any] | None:
        """The detail of subject ``i`` alone."""
        if self.detail_key is None or self.indptr is None:
            return None
        assert self.indices is not None and self.data is not None
        lo, hi = int(self.indptr[i]), int(self.indptr[i + 1])
        cast = int if self.integral else (lambda x: round(float(x), 12))
        return {
            self.detail_key: {
                self.names[int(a)]: cast(x)
                for a, x in zip(self.indices[lo:hi], self.data[lo:hi], strict=True)
            }
        }

    def expand(self) -> Iterator[Value]:
        """The same numbers as one :class:`Value` per subject."""

        def floats(a: NDArray | None) -> list[float | None]:
            if a is None:
                return [None] * len(self.subjects)
            x = np.asarray(a, dtype=np.float64)
            return np.where(np.isfinite(x), x, np.array(None)).tolist()

        counts = [None] * len(self.subjects) if self.n is None else self.n.tolist()
        for subject, v, lo, hi, k, d in zip(
            self.subjects,
            floats(self.values),
            floats(self.low),
            floats(self.high),
            counts,
            self.details(),
            strict=True,
        ):
            yield Value(self.scope, subject, self.metric, v, lo, hi, k, d)

    # --- storage ------------------------------------------------------------------------

    def meta(self) -> dict[str, Any]:
        """What the arrays do not hold (stored as JSON beside them)."""
        return {"detail_key": self.detail_key, "names": list(self.names), "integral": self.integral}

    def to_bytes(self, **extra: Any) -> bytes:
        """The arrays (and ``extra`` ones) as an uncompressed ``.npz`` (read back without
        pickle)."""
        buffer = io.BytesIO()
        arrays: dict[str, Any] = {
            k: getattr(self, k) for k in _ARRAYS if getattr(self, k) is not None
        }
        np.savez(buffer, **arrays, **extra)
        return buffer.getvalue()

    @classmethod
    def from_bytes(
        cls, scope: str, metric: str, subjects: list[str], meta: dict[str, Any], blob: bytes
    ) -> Column:
        with np.load(io.BytesIO(blob), allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in _ARRAYS if k in npz.files}
        return cls(
            scope,
            metric,
            subjects,
            detail_key=meta.get("detail_key"),
            names=tuple(meta.get("names") or ()),
            integral=bool(meta.get("integral")),
            **arrays,
        )


@dataclass(frozen=True, slots=True, eq=False)
class State:
    """What a run keeps for the next one: an array and what it depends on (``meta``; the next
    run uses the array only when its own ``meta`` is the same)."""

    meta: dict[str, Any]
    array: NDArray[np.float64]

    def to_bytes(self) -> bytes:
        buffer = io.BytesIO()
        np.save(buffer, self.array, allow_pickle=False)
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, meta: dict[str, Any], blob: bytes) -> State:
        return cls(meta, np.load(io.BytesIO(blob), allow_pickle=False))
