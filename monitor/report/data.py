"""What a report needs, read from the store in one pass: the campaign, its latest run's values
and flags, the history of the campaign measures, workers, items and the audit trail."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from monitor.store.campaigns import CampaignCounts, CampaignInfo, campaign_counts, get_campaign
from monitor.store.history import HistoryEntry, worker_history
from monitor.store.models import Item
from monitor.store.runs import (
    FlagRecord,
    RunInfo,
    Value,
    campaign_value_history,
    latest_run,
    run_flags,
    run_values,
)
from monitor.store.workers import DecisionRecord, WorkerState, decisions, list_workers

TREND_METRICS = ("krippendorff_alpha", "percent_agreement", "fleiss_kappa", "phi")


@dataclass(frozen=True)
class ItemInfo:
    external_id: str
    text: str | None
    gold: str | None


@dataclass
class CampaignData:
    """Everything read for one report (no ORM rows)."""

    campaign: CampaignInfo
    counts: CampaignCounts
    run: RunInfo | None
    values: dict[tuple[str, str], dict[str, Value]] = field(default_factory=dict)
    flags: list[FlagRecord] = field(default_factory=list)
    history: dict[str, list[tuple[RunInfo, Value]]] = field(default_factory=dict)
    workers: list[WorkerState] = field(default_factory=list)
    items: dict[str, ItemInfo] = field(default_factory=dict)
    decisions: list[DecisionRecord] = field(default_factory=list)
    worker_history: dict[str, list[HistoryEntry]] = field(default_factory=dict)

    def get(self, scope: str, metric: str, subject: str) -> Value | None:
        return self.values.get((scope, metric), {}).get(subject)

    def metric(self, scope: str, metric: str) -> dict[str, Value]:
        return self.values.get((scope, metric), {})

    def campaign_value(self, metric: str) -> Value | None:
        found = self.values.get(("campaign", metric), {})
        return found.get(self.campaign.name) or next(iter(found.values()), None)

    def subjects(self, scope: str) -> set[str]:
        return {s for (sc, _), by in self.values.items() if sc == scope for s in by}

    def flags_of(self, scope: str) -> dict[str, list[FlagRecord]]:
        out: dict[str, list[FlagRecord]] = defaultdict(list)
        for f in self.flags:
            if f.scope == scope:
                out[f.subject].append(f)
        return out


def num(x: Any) -> float | None:
    """A finite float, or None (undefined is null, never NaN)."""
    if x is None or isinstance(x, bool):
        return None
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def load(session: Session, campaign_name: str, *, decision_limit: int = 500) -> CampaignData:
    """Read a campaign's latest run and its context; raises NotFound for an unknown campaign."""
    campaign = get_campaign(session, campaign_name)
    data = CampaignData(
        campaign, campaign_counts(session, campaign), latest_run(session, campaign.id)
    )
    if data.run is not None:
        for v in run_values(session, data.run.id):
            data.values.setdefault((v.scope, v.metric), {})[v.subject] = v
        data.flags = run_flags(session, data.run.id)
        for metric in TREND_METRICS:
            data.history[metric] = campaign_value_history(session, campaign.id, metric)
    data.workers = list_workers(session, campaign.id, campaign.kind)
    data.items = {
        ext: ItemInfo(ext, text, gold)
        for ext, text, gold in session.execute(
            select(Item.external_id, Item.text, Item.gold).where(Item.campaign_id == campaign.id)
        )
    }
    data.decisions = decisions(session, campaign.id, limit=decision_limit)
    data.worker_history = worker_history(session, campaign, [w.external_id for w in data.workers])
    return data
