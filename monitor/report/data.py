"""What a report needs, read from the store in one pass: the campaign, its latest run's values
and flags, the history of the campaign measures, workers, items and the audit trail.

The run's item values stay arrays (:class:`~monitor.report.items.ItemTable`): the report never
holds a Value per item and measure."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from monitor.core import catalog
from monitor.report.items import ItemPicks, ItemTable, ItemText
from monitor.report.jsonsafe import num
from monitor.store.campaigns import (
    CampaignCounts,
    CampaignInfo,
    campaign_counts,
    get_campaign,
    item_ids,
    item_texts,
    newest_judgment_id,
)
from monitor.store.history import HistoryEntry, worker_history
from monitor.store.runs import (
    FlagRecord,
    RunInfo,
    Value,
    campaign_value_history,
    iter_run_columns,
    latest_run,
    run_flags,
    run_values,
)
from monitor.store.workers import DecisionRecord, WorkerState, decisions, list_workers

TREND_METRICS = catalog.TREND


@dataclass
class CampaignData:
    """Everything read for one report (no ORM rows)."""

    campaign: CampaignInfo
    counts: CampaignCounts | None
    """Counted only for a campaign without a run (the run has its counts)."""
    run: RunInfo | None
    max_id: int = 0
    """The newest judgment's id (newer than the run's watermark: the run is stale)."""
    values: dict[tuple[str, str], dict[str, Value]] = field(default_factory=dict)
    flags: list[FlagRecord] = field(default_factory=list)
    history: dict[str, list[tuple[RunInfo, Value]]] = field(default_factory=dict)
    workers: list[WorkerState] = field(default_factory=list)
    items: ItemTable = field(default_factory=lambda: ItemTable("rating", []))
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


def load(
    session: Session,
    campaign_name: str,
    *,
    decision_limit: int = 500,
    texts: bool = True,
    items: bool = True,
) -> CampaignData:
    """Read a campaign's latest run and its context; raises NotFound for an unknown campaign.
    Without ``texts`` the items' texts are left to be read for the items shown
    (:func:`item_picks`); without ``items`` neither the items' nor the pairs' values are read
    (what the workers' rows take: :func:`monitor.report.document.build_worker_rows`)."""
    campaign = get_campaign(session, campaign_name)
    run = latest_run(session, campaign.id)
    counts = campaign_counts(session, campaign) if run is None else None
    max_id = counts.max_id if counts is not None else newest_judgment_id(session, campaign)
    data = CampaignData(campaign, counts, run, max_id)
    records: list[Value] = []
    if data.run is not None:
        scopes = None if items else ("campaign", "worker")
        for v in run_values(session, data.run.id, columns=False, scopes=scopes):
            if v.scope == "item":
                records.append(v)
            else:
                data.values.setdefault((v.scope, v.metric), {})[v.subject] = v
        data.flags = run_flags(session, data.run.id)
        for metric in TREND_METRICS:
            data.history[metric] = campaign_value_history(session, campaign.id, metric)
    data.items = ItemTable(
        campaign.kind,
        item_ids(session, campaign.id),
        iter_run_columns(session, data.run.id, "item") if data.run is not None and items else (),
        records,
        (f for f in data.flags if f.scope == "item"),
        item_texts(session, campaign.id) if texts else (),
    )
    data.workers = list_workers(session, campaign.id, campaign.kind, counts=data.run is None)
    data.decisions = decisions(session, campaign.id, limit=decision_limit)
    data.worker_history = worker_history(session, campaign, [w.external_id for w in data.workers])
    return data


def item_picks(
    session: Session, data: CampaignData, max_items: int, max_ambiguous: int
) -> ItemPicks:
    """The items the HTML report shows (see :meth:`ItemTable.picks`), their texts read now."""

    def fetch(ids: Collection[str]) -> list[ItemText]:
        return item_texts(session, data.campaign.id, ids)

    return data.items.picks(max_items, max_ambiguous, fetch)


__all__ = ["CampaignData", "item_picks", "load", "num"]
