"""Bootstrap intervals of alpha and Fleiss' kappa that follow a campaign as it grows.

A run keeps, per measure, the replicate sums of the Poisson bootstrap
(:mod:`monitor.metrics.agreement.poisson`). The next run adds the change of the items that received
judgments since, when nothing else moved (same replicates, seed, value domain and items; no
judgment committed late below the last watermark); otherwise it resamples every item. Both
give the same replicates, so an incremental run has the interval of a full one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from monitor.core.results import State
from monitor.incremental.warm import WarmStart, digest
from monitor.metrics.agreement.krippendorff import ValueCounts
from monitor.metrics.agreement.poisson import Update, replicate_sums
from monitor.metrics.common import Interval
from monitor.store.arrays import CampaignArrays

CONFIDENCE = 0.95
Features = Callable[[ValueCounts], NDArray[np.float64]]
Replicates = Callable[[NDArray[np.float64]], NDArray[np.float64]]


@dataclass(frozen=True)
class Request:
    """One measure to bootstrap: its estimate, value counts, per-item features, the
    replicates from their sums, and what else the sums depend on (``meta``)."""

    name: str
    estimate: float | None
    vc: ValueCounts
    features: Features
    replicates: Replicates
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Resampler:
    """Intervals for one run of one campaign. ``codes`` is the value code of every judgment;
    ``latest`` picks, among judgments, those the measures count (the latest per worker and
    item); ``options``: :class:`~monitor.pipeline.params.BootstrapOptions`; the replicate sums
    kept for the next run go into ``states``."""

    arrays: CampaignArrays
    options: Any
    warm: WarmStart | None
    states: dict[str, State]
    codes: NDArray[np.int64]
    domain: NDArray[np.float64]
    latest: Callable[[NDArray, NDArray, NDArray], NDArray[np.int64]]
    _previous: tuple[NDArray[np.int64], ValueCounts] | None = field(init=False, default=None)
    _looked: bool = field(init=False, default=False)

    def previous(self) -> tuple[NDArray[np.int64], ValueCounts] | None:
        """The items with new judgments, and the value counts of those items (only) as the
        last run saw them; None when the last run's state cannot be brought up to date."""
        if self._looked:
            return self._previous
        self._looked = True
        warm, a = self.warm, self.arrays
        if warm is None or not warm.states:
            return None
        arrived = warm.arrived(a)
        if arrived is None:
            return None  # an ingest committed judgments below the watermark after that run
        touched = np.flatnonzero(arrived.touched)
        idx = np.flatnonzero(arrived.seen & arrived.touched[a.items])
        idx = idx[self.latest(a.workers[idx], a.items[idx], a.order[idx])]
        before = ValueCounts.from_judgments(
            np.searchsorted(touched, a.items[idx]), self.codes[idx], n_items=touched.size,
            value_domain=self.domain,
        )  # fmt: skip
        self._previous = (touched, before)
        return self._previous

    def intervals(self, requests: Sequence[Request]) -> dict[str, Interval | None]:
        """The percentile interval of each request's estimate from its replicates, whose
        sums this run keeps for the next (also while the estimate is undefined: the sums are,
        and the next run may need them). The measures brought up to date share one draw of
        the touched items' weights; the others are resampled together, in one pass over the
        items' weights."""
        b, seed = self.options.bootstrap_samples, self.options.seed
        if not b:
            return {r.name: None for r in requests}
        n_items = len(self.arrays.item_ids)
        metas = {r.name: self._meta(r, n_items) for r in requests}
        sums = self._updated([r for r in requests if self._updatable(r, metas[r.name])])
        fresh = [r for r in requests if r.name not in sums]
        if fresh:
            parts = [r.features(r.vc) for r in fresh]
            together = replicate_sums(np.arange(n_items), _side_by_side(parts), n_boot=b, seed=seed)
            sums.update(_split(fresh, parts, together))
        out: dict[str, Interval | None] = {}
        for r in requests:
            self.states[r.name] = State(metas[r.name], np.ascontiguousarray(sums[r.name]))
            out[r.name] = None if r.estimate is None else _percentile(r.replicates(sums[r.name]))
        return out

    def _meta(self, r: Request, n_items: int) -> dict[str, Any]:
        """What a request's replicate sums depend on."""
        return {
            **r.meta,
            "n_boot": self.options.bootstrap_samples,
            "seed": self.options.seed,
            "domain": self.domain.tolist(),
            "origin": r.vc.origin,
            "n_items": n_items,
            "items": digest(self.arrays.item_db_ids),
        }

    def _updatable(self, r: Request, meta: dict[str, Any]) -> bool:
        """The last run kept this request's sums for the same replicates and items."""
        old = self.warm.states.get(r.name) if self.warm is not None else None
        if old is None:
            return False
        n_old = int(old.meta.get("n_items", -1))
        same = {k: v for k, v in meta.items() if k not in ("n_items", "items")}
        return (
            0 <= n_old <= meta["n_items"]
            and all(old.meta.get(k) == v for k, v in same.items())
            and old.meta.get("items") == digest(self.arrays.item_db_ids[:n_old])
            and old.array.shape == (meta["n_boot"], r.features(_empty(r.vc)).shape[1])
        )

    def _updated(self, requests: Sequence[Request]) -> dict[str, NDArray[np.float64]]:
        """The kept sums of ``requests`` plus the change of the touched items' features."""
        previous = self.previous() if requests else None
        if previous is None:
            return {}
        assert self.warm is not None
        touched, before = previous
        now = [r.features(r.vc.take(touched)) for r in requests]
        change = Update(
            touched, _side_by_side([r.features(before) for r in requests]), _side_by_side(now)
        )
        olds = np.hstack([self.warm.states[r.name].array for r in requests])
        return _split(requests, now, change.apply(olds, seed=self.options.seed))


def _side_by_side(parts: Sequence[Any]) -> Any:  # noqa: ANN401 - an array or a sparse one
    """The features of several requests side by side; sparse where any is (many values)."""
    if any(sparse.issparse(p) for p in parts):
        return sparse.hstack([sparse.csr_array(p) for p in parts], format="csr")
    return np.hstack(parts)


def _split(
    requests: Sequence[Request],
    parts: Sequence[NDArray[np.float64]],
    together: NDArray[np.float64],
) -> dict[str, NDArray[np.float64]]:
    """Each request's columns of ``together``, the sums of its ``parts`` side by side."""
    edges = np.cumsum([0] + [p.shape[1] for p in parts])
    spans = zip(requests, edges[:-1], edges[1:], strict=True)
    return {r.name: together[:, lo:hi] for r, lo, hi in spans}


def _percentile(reps: NDArray[np.float64]) -> Interval | None:
    ok = reps[np.isfinite(reps)]
    if ok.size == 0:
        return None
    lo, hi = np.quantile(ok, [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2])
    return Interval(float(lo), float(hi), CONFIDENCE)


def _empty(vc: ValueCounts) -> ValueCounts:
    """No judgments, on the same values (for the width of the features)."""
    none = np.empty(0, dtype=np.int64)
    return ValueCounts.from_judgments(none, none, n_items=1, value_domain=vc.value_domain)
