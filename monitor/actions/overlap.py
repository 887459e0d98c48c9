"""``monitor export overlap``: how many more judgments each item wants, from the latest run's
item measure ``need`` (:mod:`monitor.metrics.overlap`), as ``item,need`` CSV (0: settled, send
it to no one else). See ``docs/live.md``."""

from __future__ import annotations

from sqlalchemy.orm import Session

from monitor.core.cells import csv_table
from monitor.core.errors import UsageError
from monitor.store.campaigns import get_campaign
from monitor.store.runs import latest_run, run_values

PLATFORMS = ("csv",)


def item_need(session: Session, campaign_name: str) -> dict[str, int]:
    """Each item's ``need`` in the campaign's latest run, by item id."""
    campaign = get_campaign(session, campaign_name)
    if campaign.kind != "label":
        raise UsageError(
            f"campaign {campaign.name} is a {campaign.kind} campaign: dynamic overlap is "
            "measured on label campaigns",
            hint="monitor export requeue sends back the items the latest run flagged ambiguous",
        )
    run = latest_run(session, campaign.id)
    if run is None:
        raise UsageError(
            f"campaign {campaign.name} has no run yet: nothing says what its items need",
            hint=f"monitor recompute --campaign {campaign.name}",
        )
    values = run_values(session, run.id, "item", ["need"])
    return {v.subject: int(v.value) for v in values if v.value is not None}


def export_overlap(session: Session, campaign_name: str, platform: str = "csv") -> str:
    """``item,need`` CSV, the items that want most first, then by id."""
    from monitor.report.jsonsafe import natural_key

    if platform not in PLATFORMS:
        raise UsageError(f"overlap is not written for {platform}", hint="use --platform csv")
    need = item_need(session, campaign_name)
    rows = sorted(need.items(), key=lambda kv: (-kv[1], natural_key(kv[0])))
    return csv_table(("item", "need"), rows)


__all__ = ["PLATFORMS", "export_overlap", "item_need"]
