"""A worker's quality across campaigns: the same worker id on the same platform.

Workers belong to one campaign (``monitor.store.models``); a platform's worker id names one
person across that platform's campaigns. For a list of worker ids, :func:`worker_history` reads
their reliability-model and gold values in the latest successful run of every *other* campaign
on the same platform, in one query per 5,000 ids. Campaigns whose platform is unknown
(``"none"``) have no history.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from monitor.core import catalog
from monitor.store.campaigns import CampaignInfo
from monitor.store.models import Campaign, MetricRun, MetricValue
from monitor.store.runs import VALUE_FIELDS

HISTORY_METRICS = catalog.HISTORY
CHUNK = 5000


@dataclass(frozen=True)
class Measure:
    value: float | None
    low: float | None
    high: float | None
    n: int | None


@dataclass
class HistoryEntry:
    """One worker in one other campaign (its latest successful run)."""

    campaign: str
    kind: str
    scale_min: float | None
    scale_max: float | None
    run_id: int
    chance: float | None = None
    measures: dict[str, Measure] = field(default_factory=dict)


def worker_history(
    session: Session, campaign: CampaignInfo, worker_ids: Sequence[str]
) -> dict[str, list[HistoryEntry]]:
    """Worker id -> their entries in the platform's other campaigns (by campaign name)."""
    if campaign.platform == "none" or not worker_ids:
        return {}
    latest = (
        select(MetricRun.campaign_id, func.max(MetricRun.id).label("run_id"))
        .join(Campaign, Campaign.id == MetricRun.campaign_id)
        .where(
            MetricRun.status == "ok",
            Campaign.platform == campaign.platform,
            Campaign.id != campaign.id,
        )
        .group_by(MetricRun.campaign_id)
        .subquery()
    )
    base = (
        select(
            Campaign.name,
            Campaign.kind,
            Campaign.scale_min,
            Campaign.scale_max,
            latest.c.run_id,
            *VALUE_FIELDS[:-1],  # all but the detail
        )
        .join(latest, latest.c.campaign_id == Campaign.id)
        .join(MetricValue, MetricValue.run_id == latest.c.run_id)
    )
    ids = sorted({str(w) for w in worker_ids})
    entries: dict[tuple[str, str], HistoryEntry] = {}
    chance: dict[str, float | None] = {}
    for start in range(0, len(ids), CHUNK):
        chunk = ids[start : start + CHUNK]
        q = base.where(
            ((MetricValue.scope == "worker") & MetricValue.metric.in_(HISTORY_METRICS)
             & MetricValue.subject.in_(chunk))
            | ((MetricValue.scope == "campaign") & (MetricValue.metric == "model_chance"))
        )  # fmt: skip
        for (
            name,
            kind,
            lo,
            hi,
            run_id,
            scope,
            subject,
            metric,
            value,
            low,
            high,
            n,
        ) in session.execute(q):
            if scope == "campaign":
                chance[name] = value
                continue
            e = entries.get((subject, name))
            if e is None:
                e = entries[(subject, name)] = HistoryEntry(name, kind, lo, hi, int(run_id))
            e.measures[metric] = Measure(value, low, high, None if n is None else int(n))
    out: dict[str, list[HistoryEntry]] = defaultdict(list)
    for (subject, name), e in sorted(entries.items()):
        if not ({"model_accuracy", "model_noise_sd", "gold_accuracy"} & set(e.measures)):
            continue
        e.chance = chance.get(name)
        out[subject].append(e)
    return dict(out)


__all__ = ["HISTORY_METRICS", "HistoryEntry", "Measure", "worker_history"]
