"""What every family of measures shares: the :class:`Collector` a run's values go into, the
:class:`WarmStart` of the previous run, and the helpers (answer counts, intervals).

The families (:mod:`monitor.pipeline.absolute`, :mod:`monitor.pipeline.pairwise`) and
:mod:`monitor.pipeline.intervals` import from here; :mod:`monitor.pipeline.compute` imports
them, so the imports go one way.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from monitor import catalog
from monitor.metrics._common import Interval, count_matrix
from monitor.metrics.agreement import BootstrapCI
from monitor.results import Column, State, Value
from monitor.settings import Settings
from monitor.store.arrays import CampaignArrays
from monitor.store.campaigns import CampaignInfo


def num(x: Any) -> float | None:
    """A finite float, or None (undefined is never NaN in a run)."""
    if x is None:
        return None
    x = float(x)
    return x if np.isfinite(x) else None


def digest(ids: NDArray[np.int64]) -> str:
    """A fingerprint of database ids (a state's codes still name the same subjects)."""
    return hashlib.sha256(np.ascontiguousarray(ids, dtype=np.int64).tobytes()).hexdigest()


def _names(subjects: Sequence[str], idx: NDArray[np.int64]) -> list[str]:
    """The subjects at positions ``idx`` as strings (external ids and answer names are; a
    sequence of numbers, codes named by themselves, is converted)."""
    out = np.asarray(subjects, dtype=object)[idx].tolist()
    if out and type(out[0]) is not str:  # codes or numbers named as themselves
        return [str(x) for x in out]
    return out


class _NameCache:
    """:func:`_names` for the same subjects and mask again (a run's item measures mostly share
    one mask: every judged item), computed once."""

    def __init__(self) -> None:
        self._kept: dict[tuple[int, int, bytes], tuple[Sequence[str], list[str]]] = {}

    def __call__(self, subjects: Sequence[str], idx: NDArray[np.int64]) -> list[str]:
        key = (id(subjects), idx.size, hashlib.blake2b(idx.tobytes(), digest_size=16).digest())
        kept = self._kept.get(key)
        if kept is not None and kept[0] is subjects:
            return kept[1]
        names = _names(subjects, idx)
        self._kept[key] = (subjects, names)
        return names


@dataclass(frozen=True)
class Arrived:
    """The judgments the last run counted (``seen``, per judgment) and the items that received
    judgments since (``touched``, per item code)."""

    seen: NDArray[np.bool_]
    touched: NDArray[np.bool_]


@dataclass(frozen=True)
class WarmStart:
    """The previous run: its scores by subject (to start the iterative measures from), what
    it saw (``watermark``, ``n_judgments``) and the states it kept."""

    METRICS: ClassVar[tuple[str, ...]] = catalog.WARM
    """The measures the next run starts from (the catalog's ``warm`` ones): read as values,
    and as columns where a run stores them so (the CrowdTruth update keeps unit scores, the
    rating model starts from the means)."""
    COLUMNS: ClassVar[tuple[str, ...]] = catalog.WARM
    scores: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)
    watermark: int = 0
    n_judgments: int = 0
    states: dict[str, State] = field(default_factory=dict)
    columns: dict[tuple[str, str], Column] = field(default_factory=dict)
    _arrived: dict[int, Arrived | None] = field(default_factory=dict, repr=False, compare=False)
    _index: dict[int, tuple[Sequence[str], dict[str, int]]] = field(
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
    ) -> WarmStart:
        scores: dict[tuple[str, str], dict[str, float]] = {}
        for v in values:
            if v.value is not None:
                scores.setdefault((v.scope, v.metric), {})[v.subject] = v.value
        kept = {(c.scope, c.metric): c for c in columns}
        return cls(scores, watermark, n_judgments, dict(states or {}), kept)

    def aligned(
        self, scope: str, metric: str, subjects: Sequence[str], default: float = 1.0
    ) -> NDArray[np.float64] | None:
        """The scores in the order of ``subjects`` (``default`` for new ones and undefined
        values), or None."""
        column = self.columns.get((scope, metric)) if metric in self.COLUMNS else None
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

    def _rows(self, column: Column, subjects: Sequence[str]) -> NDArray[np.int64]:
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


@dataclass
class Collector:
    """Accumulates the values of a run: per-subject values of the ``columnar`` scopes as
    :class:`Column` arrays, the others as :class:`Value` objects."""

    campaign: str
    columnar: frozenset[str] = frozenset({"item"})
    values: list[Value] = field(default_factory=list)
    columns: list[Column] = field(default_factory=list)
    states: dict[str, State] = field(default_factory=dict)
    _names: _NameCache = field(default_factory=_NameCache, repr=False)

    def names(self, subjects: Sequence[str], idx: NDArray[np.int64]) -> list[str]:
        """The subjects at positions ``idx`` as strings (computed once per mask)."""
        return self._names(subjects, idx)

    def part(self) -> Collector:
        """An empty collector for a part of the run taken apart (in another thread), sharing
        the names computed: :meth:`add` it back where its values belong."""
        return Collector(self.campaign, self.columnar, _names=self._names)

    def add(self, part: Collector) -> None:
        """The values, columns and states of ``part``, after those collected so far."""
        self.values.extend(part.values)
        self.columns.extend(part.columns)
        self.states.update(part.states)

    def campaign_value(
        self,
        metric: str,
        value: Any,
        interval: Interval | None = None,
        n: int | None = None,
        detail: dict | None = None,
        reason: str | None = None,
    ) -> None:
        v = num(value)
        if v is None and reason:
            detail = {**(detail or {}), "reason": reason}
        low, high = (interval.low, interval.high) if interval is not None else (None, None)
        self.values.append(
            Value("campaign", self.campaign, metric, v, num(low), num(high), n, detail)
        )

    def per_subject(
        self,
        scope: str,
        metric: str,
        subjects: Sequence[str],
        values: NDArray,
        n: NDArray | None = None,
        low: NDArray | None = None,
        high: NDArray | None = None,
        mask: NDArray | None = None,
    ) -> None:
        """One value per subject (NaN = undefined) where ``mask`` is true."""
        idx = np.arange(len(subjects)) if mask is None else np.flatnonzero(mask)
        names = self._names(subjects, idx)
        if scope in self.columnar:

            def part(a: NDArray | None) -> NDArray[np.float64] | None:
                return None if a is None else np.asarray(a, dtype=np.float64)[idx]

            self.columns.append(
                Column(
                    scope,
                    metric,
                    names,
                    part(values),  # type: ignore[arg-type]
                    part(low),
                    part(high),
                    None if n is None else np.asarray(n)[idx].astype(np.int64),
                )
            )
            return

        def column(a: NDArray | None) -> list:
            if a is None:
                return [None] * idx.size
            x = np.asarray(a, dtype=np.float64)[idx]
            return np.where(np.isfinite(x), x, None).tolist()  # NaN and inf become None

        counts = [None] * idx.size if n is None else np.asarray(n)[idx].astype(np.int64).tolist()
        self.values.extend(
            Value(scope, str(name), metric, v, lo, hi, k)
            for name, v, lo, hi, k in zip(
                names, column(values), column(low), column(high), counts, strict=True
            )
        )


def bootstrap_interval(
    settings: Settings, estimate: float | None, draw: Callable[[int, int], BootstrapCI]
) -> Interval | None:
    """``draw(n_boot, seed).interval`` for a defined estimate, None when intervals are off."""
    if not settings.bootstrap_samples or estimate is None:
        return None
    return draw(settings.bootstrap_samples, settings.seed).interval


def answers_detail(
    out: Collector,
    scope: str,
    subjects: Sequence[str],
    units: NDArray[np.int64],
    codes: NDArray[np.int64],
    names: Sequence[str],
    judgment_units: NDArray[np.int64] | None = None,
) -> None:
    """Per unit: the number of judgments (of ``judgment_units``, default ``units``) and the
    distribution of answers (``detail.answers``: answer name -> count)."""
    n_units = len(subjects)
    counts = count_matrix(units, codes, (n_units, len(names)))
    per_unit = np.bincount(units if judgment_units is None else judgment_units, minlength=n_units)
    if scope in out.columnar:
        judged = np.flatnonzero(per_unit)
        rows = counts if judged.size == n_units else counts[judged]
        out.columns.append(
            Column(
                scope,
                "n_judgments",
                _names(subjects, judged),
                per_unit[judged].astype(np.float64),
                detail_key="answers",
                names=tuple(str(x) for x in names),
                indptr=rows.indptr.astype(np.int64),
                indices=rows.indices.astype(np.int64),
                data=rows.data.astype(np.float64),
                integral=True,
            )
        )
        return
    for u in np.flatnonzero(per_unit):
        lo, hi = counts.indptr[u], counts.indptr[u + 1]
        answers = {
            str(names[c]): int(x)
            for c, x in zip(counts.indices[lo:hi], counts.data[lo:hi], strict=True)
        }
        out.values.append(
            Value(
                scope,
                str(subjects[u]),
                "n_judgments",
                float(per_unit[u]),
                detail={"answers": answers},
            )
        )


MAX_SCALE_POINTS = 101


def scale_codes(
    info: CampaignInfo, arrays: CampaignArrays
) -> tuple[NDArray[np.int64], NDArray[np.float64], tuple[str, ...]]:
    """Value codes, the number behind each code, and each code's name.

    Labels: the category index. Ratings on an integer scale of at most 101 points: the position
    on the scale (so kappa weights are over scale positions, unobserved points included);
    otherwise (continuous ratings) the rank among the distinct observed values.
    """
    if arrays.kind == "label":
        domain = np.arange(len(arrays.categories), dtype=np.float64)
        return arrays.values.astype(np.int64), domain, arrays.categories
    x = arrays.values
    lo, hi = info.scale_min, info.scale_max
    integral = (
        lo is not None and hi is not None and float(lo).is_integer() and float(hi).is_integer()
    )
    if integral and hi - lo + 1 <= MAX_SCALE_POINTS and np.all(np.mod(x, 1) == 0):
        domain = np.arange(lo, hi + 1, dtype=np.float64)
        codes = (x - lo).astype(np.int64)
    else:
        domain, codes = np.unique(x, return_inverse=True)
        codes = codes.reshape(-1).astype(np.int64)
    names = tuple(f"{v:g}" for v in domain)
    return codes, domain, names
