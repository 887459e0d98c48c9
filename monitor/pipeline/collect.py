"""What a run's measures return: :class:`Values`, the numbers of one measure or a family of
them (single values, columns, states for the next run, the parameters that produced them), and
the helpers every family shares (answer counts, scale codes, intervals).

Each measure fills a :class:`Values` of its own and returns it; the per-kind modules add them up.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.core.catalog import Kind
from monitor.core.results import Column, Names, State, Value
from monitor.metrics.agreement.bootstrap import BootstrapCI
from monitor.metrics.common import Interval, count_matrix
from monitor.store.arrays import CampaignArrays
from monitor.store.campaigns import CampaignInfo


def num(x: Any) -> float | None:
    """A finite float, or None (undefined is never NaN in a run)."""
    if x is None:
        return None
    x = float(x)
    return x if np.isfinite(x) else None


def names_of(subjects: Names, idx: NDArray[np.int64]) -> list[str]:
    """The subjects at positions ``idx`` as strings (external ids and answer names are; a
    sequence of numbers, codes named by themselves, is converted)."""
    out = np.asarray(subjects, dtype=object)[idx].tolist()
    if out and type(out[0]) is not str:  # codes or numbers named as themselves
        return [str(x) for x in out]
    return out


class NameCache:
    """:func:`names_of` for the same subjects and mask again (a run's item measures mostly share
    one mask: every judged item), computed once."""

    def __init__(self) -> None:
        self._kept: dict[tuple[int, int, bytes], tuple[Names, list[str]]] = {}

    def __call__(self, subjects: Names, idx: NDArray[np.int64]) -> list[str]:
        key = (id(subjects), idx.size, hashlib.blake2b(idx.tobytes(), digest_size=16).digest())
        kept = self._kept.get(key)
        if kept is not None and kept[0] is subjects:
            return kept[1]
        names = names_of(subjects, idx)
        self._kept[key] = (subjects, names)
        return names


LiveRow = tuple[int, int, float | None, float | None, int]
"""A stop-test score a run gives once (stored with the run in ``live_scores``): the judgment,
its worker (database ids), the score, its null and the judgment as of which it was known."""


@dataclass
class Values:
    """What a measure (or a family of them) computed for one run: per-subject values of the
    ``columnar`` scopes as :class:`Column` arrays, the others as :class:`Value` objects; the
    states it keeps for the next run (stored with the run), what it keeps in this process's
    memory for the next run (``memory``: not stored), the ``parameters`` behind it, and the stop
    test's scores it gave (``live_rows``: kept once, never given again)."""

    campaign: str
    columnar: frozenset[str] = frozenset({"item"})
    values: list[Value] = field(default_factory=list)
    columns: list[Column] = field(default_factory=list)
    states: dict[str, State] = field(default_factory=dict)
    memory: dict[str, Any] = field(default_factory=dict)
    parameters: dict[str, Any] = field(default_factory=dict)
    live_rows: list[LiveRow] = field(default_factory=list)
    names: NameCache = field(default_factory=NameCache, repr=False)

    def add(self, part: Values) -> Values:
        """The values, columns, states, memory and parameters of ``part``, after those
        gathered so far; returns self."""
        self.values.extend(part.values)
        self.columns.extend(part.columns)
        self.states.update(part.states)
        self.memory.update(part.memory)
        self.parameters.update(part.parameters)
        self.live_rows.extend(part.live_rows)
        return self

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
        subjects: Names,
        values: NDArray,
        n: NDArray | None = None,
        low: NDArray | None = None,
        high: NDArray | None = None,
        mask: NDArray | None = None,
    ) -> None:
        """One value per subject (NaN = undefined) where ``mask`` is true."""
        idx = np.arange(len(subjects)) if mask is None else np.flatnonzero(mask)
        names = self.names(subjects, idx)
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
            return np.where(np.isfinite(x), x, np.array(None)).tolist()  # NaN, inf: None

        counts = [None] * idx.size if n is None else np.asarray(n)[idx].astype(np.int64).tolist()
        self.values.extend(
            Value(scope, str(name), metric, v, lo, hi, k)
            for name, v, lo, hi, k in zip(
                names, column(values), column(low), column(high), counts, strict=True
            )
        )


def bootstrap_interval(
    options: Any, estimate: float | None, draw: Callable[[int, int], BootstrapCI]
) -> Interval | None:
    """``draw(n_boot, seed).interval`` for a defined estimate, None when intervals are off
    (``options``: :class:`~monitor.pipeline.params.BootstrapOptions`)."""
    if not options.bootstrap_samples or estimate is None:
        return None
    return draw(options.bootstrap_samples, options.seed).interval


def answers_detail(
    out: Values,
    scope: str,
    subjects: Names,
    units: NDArray[np.int64],
    codes: NDArray[np.int64],
    names: Names,
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
                names_of(subjects, judged),
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
    for u in np.flatnonzero(per_unit).tolist():
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
    if arrays.kind == Kind.LABEL:
        domain = np.arange(len(arrays.categories), dtype=np.float64)
        return arrays.values.astype(np.int64), domain, arrays.categories
    x = arrays.values
    lo, hi = info.scale_min, info.scale_max
    if (
        lo is not None
        and hi is not None
        and float(lo).is_integer()
        and float(hi).is_integer()
        and hi - lo + 1 <= MAX_SCALE_POINTS
        and np.all(np.mod(x, 1) == 0)
    ):
        domain = np.arange(lo, hi + 1, dtype=np.float64)
        codes = (x - lo).astype(np.int64)
    else:
        domain, codes = np.unique(x, return_inverse=True)
        codes = codes.reshape(-1).astype(np.int64)
    names = tuple(f"{v:g}" for v in domain)
    return codes, domain, names
