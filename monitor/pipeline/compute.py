"""From a campaign's arrays to the values of a run (names in docs/store-values.md).

Every measure that applies to the campaign's kind is computed here, from the integer-coded
arrays of :mod:`monitor.store.arrays`; the measures themselves live in :mod:`monitor.metrics`,
the families in :mod:`monitor.pipeline.absolute` and :mod:`monitor.pipeline.pairwise`, what they
share in :mod:`monitor.pipeline.collect`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from monitor.pipeline import absolute, pairwise
from monitor.pipeline.collect import Collector, WarmStart
from monitor.results import Column, State, Value
from monitor.settings import Settings
from monitor.store.arrays import CampaignArrays
from monitor.store.campaigns import CampaignInfo
from monitor.store.history import HistoryEntry

__all__ = ["Collector", "WarmStart", "compute_values"]


def compute_values(
    info: CampaignInfo,
    arrays: CampaignArrays,
    settings: Settings,
    *,
    warm: WarmStart | None = None,
    columnar: frozenset[str] | None = None,
    history: Mapping[str, Sequence[HistoryEntry]] | None = None,
) -> tuple[list[Value], list[Column], dict[str, State], dict[str, Any]]:
    """All values of a run (single values and columns), the states it keeps for the next run
    and the parameters that produced them. ``columnar``: the scopes whose per-subject values
    become columns (default: items, except in pairwise campaigns, whose pair and item values
    are fewer and stay single values). ``history``: worker id -> their entries in the other
    campaigns of the same platform (:func:`monitor.store.history.worker_history`), the
    reliability model's starting point for workers with few judgments."""
    if columnar is None:
        columnar = frozenset() if arrays.kind == "pairwise" else frozenset({"item"})
    out = Collector(info.name, columnar)
    W, N = len(arrays.worker_ids), len(arrays.item_ids)
    n_by_worker = np.bincount(arrays.workers, minlength=W)
    active = n_by_worker > 0
    out.campaign_value("n_workers", int(np.count_nonzero(active)))
    judged = np.zeros(N, dtype=bool)
    judged[arrays.items] = True
    if arrays.kind == "pairwise":
        judged[arrays.right] = True
    out.campaign_value("n_items", int(np.count_nonzero(judged)))
    out.campaign_value("n_judgments", arrays.n)
    out.per_subject("worker", "n_judgments", arrays.worker_ids, n_by_worker, mask=active)
    has_d = np.isfinite(arrays.duration_s)
    if has_d.any():
        d_n = np.bincount(arrays.workers[has_d], minlength=W)
        d_sum = np.bincount(arrays.workers[has_d], weights=arrays.duration_s[has_d], minlength=W)
        with np.errstate(invalid="ignore", divide="ignore"):
            out.per_subject(
                "worker", "mean_duration_s", arrays.worker_ids, d_sum / d_n, n=d_n, mask=d_n > 0
            )
    parameters: dict[str, Any] = {
        "seed": settings.seed,
        "bootstrap_samples": settings.bootstrap_samples,
        "crowdtruth": {
            "max_iter": settings.crowdtruth_max_iter,
            "tol": settings.crowdtruth_tol,
            "warm_start": warm is not None,
        },
    }
    if arrays.kind == "pairwise":
        pairwise.compute(info, arrays, settings, out, warm, parameters)
    else:
        absolute.compute(info, arrays, settings, out, warm, parameters, history)
    return out.values, out.columns, out.states, parameters
