"""The schema: SQLAlchemy 2 typed models, the same on SQLite and PostgreSQL.

Workers and items belong to one campaign (``UNIQUE (campaign_id, external_id)``): platform worker
ids are only unique per platform and requester, quality is judged per campaign, and every query
of the pipeline is per campaign, so integer coding stays dense and the recompute of one campaign
never touches another's rows. A person who works in two campaigns is two rows; blocking is
exported per campaign.

Judgment and preference ids are monotonically increasing and serve as the watermark of a metric
run: a run has seen exactly the rows with ``id <= watermark``.

Judgments and preferences keep no foreign keys (a foreign key is a trigger per inserted row, most
of bulk-load time): migration 0003 installs set-based triggers in their place, one check per
statement that every worker and item exists in the row's campaign, and a cascade when a worker,
item or campaign is deleted.
"""

from monitor.store.models.base import (
    ACTIONS,
    KINDS,
    LEVELS,
    NAMING_CONVENTION,
    OUTCOMES,
    RUN_STATUSES,
    SCOPES,
    WORKER_STATUSES,
    Base,
    UtcTime,
    in_values,
    row_info,
    utcnow,
)
from monitor.store.models.campaigns import (
    DIGEST_SIZE,
    PLAN_PURPOSES,
    Campaign,
    DedupKey,
    IngestBatch,
    Item,
    Judgment,
    JudgmentAnnotation,
    JudgmentTally,
    MemberTally,
    PlannedPair,
    Preference,
    RejectedRow,
    Worker,
    dedup_digest,
)
from monitor.store.models.connectors import (
    LEDGER_STATES,
    SOURCE_ROLES,
    CampaignSource,
    ConnectorAction,
    SourceAnnotation,
    WebhookEvent,
)
from monitor.store.models.live import LiveScore, LiveStop
from monitor.store.models.runs import (
    CampaignLock,
    Flag,
    MetricColumn,
    MetricRun,
    MetricValue,
    RunState,
    WorkerDecision,
)

__all__ = [
    "ACTIONS",
    "DIGEST_SIZE",
    "KINDS",
    "LEDGER_STATES",
    "LEVELS",
    "NAMING_CONVENTION",
    "OUTCOMES",
    "PLAN_PURPOSES",
    "RUN_STATUSES",
    "SCOPES",
    "SOURCE_ROLES",
    "WORKER_STATUSES",
    "Base",
    "Campaign",
    "CampaignLock",
    "CampaignSource",
    "ConnectorAction",
    "DedupKey",
    "Flag",
    "IngestBatch",
    "Item",
    "Judgment",
    "JudgmentAnnotation",
    "JudgmentTally",
    "LiveScore",
    "LiveStop",
    "MemberTally",
    "MetricColumn",
    "MetricRun",
    "MetricValue",
    "PlannedPair",
    "Preference",
    "RejectedRow",
    "RunState",
    "SourceAnnotation",
    "UtcTime",
    "WebhookEvent",
    "Worker",
    "WorkerDecision",
    "dedup_digest",
    "in_values",
    "row_info",
    "utcnow",
]
