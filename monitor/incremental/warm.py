"""What a run starts from: the previous run's scores, columns and states (:class:`WarmStart`),
and what arrived since it (:class:`Arrived`).

The plain full path has no warm start (``None``): every iterative measure starts afresh, every
state is computed anew. An incremental run gets one from its :class:`~monitor.incremental.cache.RunCache`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from monitor.core import catalog
from monitor.core.results import Column, Names, State, Value
from monitor.store.arrays import CampaignArrays


def digest(ids: NDArray[np.int64]) -> str:
    """A fingerprint of database ids (a state's codes still name the same subjects)."""
    return hashlib.sha256(np.ascontiguousarray(ids, dtype=np.int64).tobytes()).hexdigest()


@dataclass(frozen=True)
class Arrived:
    """The judgments the last run counted (``seen``, per judgment) and the items that received
    judgments since (``touched``, per item code)."""

    seen: NDArray[np.bool_]
    touched: NDArray[np.bool_]


@dataclass(frozen=True)
class WarmStart:
    """The previous run: its scores by subject (to start the iterative measures from), what
    it saw (``watermark``, ``n_judgments``), the states it stored and what it kept in this
    process's memory (``memory``: not stored, e.g. the preference triangles)."""

    METRICS: ClassVar[tuple[str, ...]] = catalog.WARM
    """The measures the next run starts from (the catalog's ``warm`` ones): read as values,
    and as columns where a run stores them so (the CrowdTruth update keeps unit scores, the
    rating model starts from the means)."""
    scores: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)
    watermark: int = 0
    n_judgments: int = 0
    states: dict[str, State] = field(default_factory=dict)
    columns: dict[tuple[str, str], Column] = field(default_factory=dict)
    memory: dict[str, Any] = field(default_factory=dict)
    _arrived: dict[int, Arrived | None] = field(default_factory=dict, repr=False, compare=False)
    _index: dict[int, tuple[Names, dict[str, int]]] = field(
        default_factory=dict, repr=False, compare=False
    )

    def arrived(self, arrays: CampaignArrays) -> Arrived | None:
        """What arrived since this run in ``arrays`` (computed once per arrays): None when
        judgments below its watermark changed since (an ingest that committed late), so that
        nothing the last run kept can be brought up to date."""
        key = id(arrays)
        if key not in self._arrived:
            seen = arrays.ids <= self.watermark
            out = None
            if int(seen.sum()) == self.n_judgments:
                touched = np.zeros(len(arrays.item_ids), dtype=bool)
                touched[arrays.items[~seen]] = True
                out = Arrived(seen, touched)
            self._arrived[key] = out
        return self._arrived[key]

    @classmethod
    def from_values(
        cls,
        values: Iterable[Value],
        columns: Iterable[Column] = (),
        *,
        watermark: int = 0,
        n_judgments: int = 0,
        states: dict[str, State] | None = None,
        memory: dict[str, Any] | None = None,
    ) -> WarmStart:
        scores: dict[tuple[str, str], dict[str, float]] = {}
        for v in values:
            if v.value is not None:
                scores.setdefault((v.scope, v.metric), {})[v.subject] = v.value
        kept = {(c.scope, c.metric): c for c in columns}
        return cls(scores, watermark, n_judgments, dict(states or {}), kept, dict(memory or {}))

    def aligned(
        self, scope: str, metric: str, subjects: Names, default: float = 1.0
    ) -> NDArray[np.float64] | None:
        """The scores in the order of ``subjects`` (``default`` for new ones and undefined
        values), or None."""
        column = self.columns.get((scope, metric)) if metric in self.METRICS else None
        if column is not None:
            out = np.full(len(subjects), default, dtype=np.float64)
            rows = self._rows(column, subjects)
            ok = (rows >= 0) & np.isfinite(column.values)
            out[rows[ok]] = column.values[ok]
            return out
        known = self.scores.get((scope, metric))
        if not known:
            return None
        return np.array([known.get(s, default) for s in subjects], dtype=np.float64)

    def _rows(self, column: Column, subjects: Names) -> NDArray[np.int64]:
        """Where each of ``column``'s subjects is in ``subjects`` (-1: gone). Item codes are
        stable and new items come last, so a column of every item is a prefix of the items
        now; otherwise (items without a value) the names are looked up."""
        k = len(column)
        head = subjects[:k]
        if (
            k <= len(subjects)
            and (head.tolist() if isinstance(head, np.ndarray) else list(head)) == column.subjects
        ):
            return np.arange(k, dtype=np.int64)
        index = self._index.get(id(subjects))
        if index is None or index[0] is not subjects:
            index = (subjects, {str(x): i for i, x in enumerate(subjects)})
            self._index[id(subjects)] = index
        where = index[1]
        return np.fromiter((where.get(x, -1) for x in column.subjects), np.int64, k)
