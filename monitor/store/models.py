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

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Double,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    event,
    false,
    func,
    select,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# SQLite only auto-increments an INTEGER PRIMARY KEY; PostgreSQL gets a BIGINT identity.
BigId = BigInteger().with_variant(Integer(), "sqlite")
Json = JSON().with_variant(JSONB(), "postgresql")


class _UtcTime(TypeDecorator[datetime]):
    """A moment in UTC, read back as an aware datetime on both backends.

    PostgreSQL keeps ``timestamptz``; SQLite keeps the wall time without its offset, so an
    aware value is stored in UTC and a naive one read back is UTC (never local time)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is not None and dialect.name == "sqlite" and value.utcoffset():
            value = value.astimezone(UTC)
        return value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value

    @property
    def python_type(self) -> type[datetime]:
        return datetime


UtcTime = _UtcTime()

KINDS = ("rating", "label", "multilabel", "pairwise")
LEVELS = ("nominal", "ordinal", "interval", "ratio")
WORKER_STATUSES = ("ok", "down_weighted", "blocked")
OUTCOMES = ("left", "right", "tie")
RUN_STATUSES = ("running", "ok", "failed")
SCOPES = ("campaign", "worker", "item", "pair", "annotation")
ACTIONS = ("block", "down_weight", "clear", "suggest")


def utcnow() -> datetime:
    return datetime.now(UTC)


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class Campaign(Base):
    """One annotation job with one kind of judgment and its scale."""

    __tablename__ = "campaigns"
    __table_args__ = (
        CheckConstraint(_in("kind", KINDS), name="kind"),
        CheckConstraint(_in("level", LEVELS), name="level"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    kind: Mapped[str] = mapped_column(String(16))
    level: Mapped[str] = mapped_column(String(16))
    scale_min: Mapped[float | None] = mapped_column(Double)
    scale_max: Mapped[float | None] = mapped_column(Double)
    # Label categories or multi-label options, in scale order; None = taken from the data.
    categories: Mapped[list[str] | None] = mapped_column(Json)
    open: Mapped[bool] = mapped_column(Boolean, default=False)
    strict: Mapped[bool] = mapped_column(Boolean, default=False)
    settings: Mapped[dict[str, Any]] = mapped_column(Json, default=dict)
    created_at: Mapped[datetime] = mapped_column(UtcTime, default=utcnow)
    # Where the workers come from (mturk, prolific, toloka, labelstudio, or a name given at
    # creation; "none" = unknown): the same worker id on the same platform is the same person,
    # so their quality in other campaigns of the platform is their history.
    platform: Mapped[str] = mapped_column(String(32), default="none", server_default="none")
    # Archived: kept, but left out of the runs over every campaign and of the report index.
    archived: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # When judgments were last taken out (``monitor ingest undo``): a run started before
    # cannot be extended, the next one is full.
    changed_at: Mapped[datetime | None] = mapped_column(UtcTime)


class Worker(Base):
    """A worker of one campaign, with the decision in force (status, weight)."""

    __tablename__ = "workers"
    __table_args__ = (
        UniqueConstraint("campaign_id", "external_id"),
        CheckConstraint(_in("status", WORKER_STATUSES), name="status"),
        # an incremental run reads the workers added since the last one
        Index("ix_workers_campaign_id_id", "campaign_id", "id"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id", ondelete="CASCADE"))
    external_id: Mapped[str] = mapped_column(String(255))
    status: Mapped[str] = mapped_column(String(16), default="ok")
    weight: Mapped[float] = mapped_column(Double, default=1.0)
    # What the platform says of the worker (Prolific status, times), when known.
    platform: Mapped[dict[str, Any] | None] = mapped_column(Json)


class Item(Base):
    """A unit that is judged (or a thing that is compared, in pairwise campaigns)."""

    __tablename__ = "items"
    __table_args__ = (
        UniqueConstraint("campaign_id", "external_id"),
        # every run reads the gold items alone (most campaigns have few or none)
        Index(
            "ix_items_gold",
            "campaign_id",
            postgresql_where=text("gold IS NOT NULL"),
            sqlite_where=text("gold IS NOT NULL"),
        ),
        # an incremental run reads the items added since the last one
        Index("ix_items_campaign_id_id", "campaign_id", "id"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id", ondelete="CASCADE"))
    external_id: Mapped[str] = mapped_column(String(255))
    gold: Mapped[str | None] = mapped_column(Text)
    text: Mapped[str | None] = mapped_column(Text)


class IngestBatch(Base):
    """One file ingested into one campaign: where it came from and what became of its rows."""

    __tablename__ = "ingest_batches"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(
        ForeignKey("campaigns.id", ondelete="CASCADE"), index=True
    )
    path: Mapped[str] = mapped_column(Text)
    checksum: Mapped[str] = mapped_column(String(64))
    format: Mapped[str] = mapped_column(String(32))
    n_rows: Mapped[int] = mapped_column(Integer, default=0)
    n_new: Mapped[int] = mapped_column(Integer, default=0)
    n_duplicate: Mapped[int] = mapped_column(Integer, default=0)
    n_rejected: Mapped[int] = mapped_column(Integer, default=0)
    started_at: Mapped[datetime] = mapped_column(UtcTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UtcTime)
    # The campaign's newest worker and item ids before and after the batch: the workers and
    # items it created lie between (what ``monitor ingest undo`` removes with its judgments
    # when nothing else uses them). None for batches stored before they were recorded.
    workers_before: Mapped[int | None] = mapped_column(BigInteger)
    workers_after: Mapped[int | None] = mapped_column(BigInteger)
    items_before: Mapped[int | None] = mapped_column(BigInteger)
    items_after: Mapped[int | None] = mapped_column(BigInteger)


class RejectedRow(Base):
    """A row refused with --skip-invalid: kept with its reasons, never dropped silently."""

    __tablename__ = "rejected_rows"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    batch_id: Mapped[int] = mapped_column(
        ForeignKey("ingest_batches.id", ondelete="CASCADE"), index=True
    )
    line: Mapped[int | None] = mapped_column(Integer)
    raw: Mapped[str] = mapped_column(Text)
    reasons: Mapped[list[str]] = mapped_column(Json)


DIGEST_SIZE = 16


def dedup_digest(key: str) -> bytes:
    """The stored form of a dedup key: the first 16 bytes of the sha256 of its UTF-8 text
    (PostgreSQL: ``substring(sha256(convert_to(key, 'UTF8')) from 1 for 16)``)."""
    return hashlib.sha256(key.encode()).digest()[:DIGEST_SIZE]


class DedupKey(TypeDecorator[bytes]):
    """A dedup key stored as its 16-byte digest (:func:`dedup_digest`); a ``str`` bound to it
    is digested on the way in, ``bytes`` are taken as a digest already. Reads give bytes."""

    impl = LargeBinary(DIGEST_SIZE)
    cache_ok = True

    def process_bind_param(self, value: str | bytes | None, dialect: Dialect) -> bytes | None:
        return dedup_digest(value) if isinstance(value, str) else value

    @property
    def python_type(self) -> type[bytes]:
        return bytes


class _Provenance:
    """Where a judgment or preference came from: the columns both tables share."""

    # The digest of "id:<external id>" or "sha256:<hash of the row>": what makes re-ingest a
    # no-op. 16 bytes instead of a 71-character text: the unique index is a third of the size
    # and compares bytes, not collated text.
    dedup_key: Mapped[bytes] = mapped_column(DedupKey())
    external_id: Mapped[str | None] = mapped_column(String(255))
    created_at: Mapped[datetime | None] = mapped_column(UtcTime)
    duration_s: Mapped[float | None] = mapped_column(Double)
    # Not indexed, no foreign key: nothing looks judgments up by batch.
    batch_id: Mapped[int | None] = mapped_column(BigId)
    payload: Mapped[dict[str, Any] | None] = mapped_column(Json)


class Judgment(_Provenance, Base):
    """An absolute judgment: a rating (value_num), a label (value_label) or a multi-label set
    (rows of :class:`JudgmentAnnotation`)."""

    __tablename__ = "judgments"
    __table_args__ = (
        UniqueConstraint("campaign_id", "dedup_key"),
        Index("ix_judgments_campaign_id_id", "campaign_id", "id"),
        CheckConstraint("duration_s IS NULL OR duration_s >= 0", name="duration"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    # No foreign keys and no single-column indexes: every query is per campaign
    # ((campaign_id, id) index); the triggers of migration 0003 check that worker and item
    # belong to the campaign (a statement at a time) and cascade deletes.
    campaign_id: Mapped[int] = mapped_column(BigId)
    worker_id: Mapped[int] = mapped_column(BigId)
    item_id: Mapped[int] = mapped_column(BigId)
    value_num: Mapped[float | None] = mapped_column(Double)
    value_label: Mapped[str | None] = mapped_column(Text)


class JudgmentTally(Base):
    """What one statement did to a campaign's judgments (PostgreSQL): how many it inserted and
    the sum of their ids, negative for those it deleted. Written by triggers (migration 0007)
    in the statement's transaction, so the sums over a campaign's rows are its number of
    judgments and the sum of their ids in any snapshot, read without a scan of the judgments.
    Empty on SQLite, which counts the judgments instead."""

    __tablename__ = "judgment_tallies"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(
        ForeignKey("campaigns.id", ondelete="CASCADE"), index=True
    )
    n: Mapped[int] = mapped_column(BigInteger)
    id_sum: Mapped[int] = mapped_column(BigInteger)


class MemberTally(Base):
    """What one statement did to a campaign's workers and items (PostgreSQL): how many of each
    it inserted, negative for those it deleted. Written by triggers (migration 0008) in the
    statement's transaction, like :class:`JudgmentTally`: the sums over a campaign's rows are
    its numbers of workers and items in any snapshot (a worker or an item never changes
    campaign). Empty on SQLite, which counts them instead."""

    __tablename__ = "member_tallies"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(
        ForeignKey("campaigns.id", ondelete="CASCADE"), index=True
    )
    workers: Mapped[int] = mapped_column(BigInteger)
    items: Mapped[int] = mapped_column(BigInteger)


class JudgmentAnnotation(Base):
    """One annotation of a multi-label judgment, with how many times the answer held it."""

    __tablename__ = "judgment_annotations"

    judgment_id: Mapped[int] = mapped_column(
        ForeignKey("judgments.id", ondelete="CASCADE"), primary_key=True
    )
    annotation: Mapped[str] = mapped_column(String(255), primary_key=True)
    count: Mapped[int] = mapped_column(Integer, default=1)


class Preference(_Provenance, Base):
    """A pairwise judgment: the worker preferred left, right, or neither (tie)."""

    __tablename__ = "preferences"
    __table_args__ = (
        UniqueConstraint("campaign_id", "dedup_key"),
        Index("ix_preferences_campaign_id_id", "campaign_id", "id"),
        CheckConstraint(_in("outcome", OUTCOMES), name="outcome"),
        CheckConstraint("left_item_id <> right_item_id", name="distinct_items"),
        CheckConstraint("duration_s IS NULL OR duration_s >= 0", name="duration"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    # No foreign keys, no single-column indexes: see Judgment.
    campaign_id: Mapped[int] = mapped_column(BigId)
    worker_id: Mapped[int] = mapped_column(BigId)
    left_item_id: Mapped[int] = mapped_column(BigId)
    right_item_id: Mapped[int] = mapped_column(BigId)
    outcome: Mapped[str] = mapped_column(String(5))


PLAN_PURPOSES = ("triangle", "information", "known", "gold", "retest")


class PlannedPair(Base):
    """A pair planned for an annotator (``monitor pairs plan``): its stable id (carried in the
    task file), the round of the plan, the items as shown, why it was chosen, and the
    preference that answered it (None while it is planned and not answered). ``watermark``:
    the campaign's newest preference id when it was planned (an answer comes after it)."""

    __tablename__ = "planned_pairs"
    __table_args__ = (
        UniqueConstraint("campaign_id", "pair_id"),
        CheckConstraint(_in("purpose", PLAN_PURPOSES), name="purpose"),
        Index("ix_planned_pairs_campaign_id_answered_id", "campaign_id", "answered_id"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id", ondelete="CASCADE"))
    pair_id: Mapped[str] = mapped_column(String(40))
    round: Mapped[int] = mapped_column(Integer)
    worker: Mapped[str] = mapped_column(String(255))
    left_item: Mapped[str] = mapped_column(String(255))
    right_item: Mapped[str] = mapped_column(String(255))
    purpose: Mapped[str] = mapped_column(String(16))
    watermark: Mapped[int] = mapped_column(BigInteger)
    answered_id: Mapped[int | None] = mapped_column(BigId)
    planned_at: Mapped[datetime] = mapped_column(UtcTime, default=utcnow)


def _next_run_number(context: Any) -> int:  # noqa: ANN401 - SQLAlchemy's execution context
    """A new run's number in its campaign: one more than the campaign's last (1 for its first).
    Runs of one campaign are written under its recompute lock, one at a time; the unique
    index refuses anything else (several runs of one campaign in one flush included)."""
    campaign_id = context.get_current_parameters()["campaign_id"]
    return context.connection.execute(
        select(func.coalesce(func.max(MetricRun.number), 0) + 1).where(
            MetricRun.campaign_id == campaign_id
        )
    ).scalar_one()


class MetricRun(Base):
    """One recompute of one campaign: what it saw (watermark) and how it went. ``number``
    counts the campaign's runs (1, 2, ...: what users see); ``id`` is the database's."""

    __tablename__ = "metric_runs"
    __table_args__ = (
        CheckConstraint(_in("status", RUN_STATUSES), name="status"),
        Index("ix_metric_runs_campaign_id_id", "campaign_id", "id"),
        Index("ix_metric_runs_campaign_id_number", "campaign_id", "number", unique=True),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id", ondelete="CASCADE"))
    number: Mapped[int] = mapped_column(Integer, default=_next_run_number)
    watermark: Mapped[int] = mapped_column(BigInteger)
    full: Mapped[bool] = mapped_column(Boolean, default=True)
    # The run whose item and pair flags this run's flags change (None: this run holds them all).
    base_run_id: Mapped[int | None] = mapped_column(BigId)
    status: Mapped[str] = mapped_column(String(16), default="running")
    started_at: Mapped[datetime] = mapped_column(UtcTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UtcTime)
    parameters: Mapped[dict[str, Any]] = mapped_column(Json, default=dict)
    code_version: Mapped[str] = mapped_column(String(64))
    n_judgments: Mapped[int] = mapped_column(Integer, default=0)
    n_new: Mapped[int] = mapped_column(Integer, default=0)
    seconds: Mapped[float | None] = mapped_column(Double)
    error: Mapped[str | None] = mapped_column(Text)


class MetricValue(Base):
    """One number of a run: a measure of the campaign, a worker, an item, a pair or an
    annotation, with its interval and the amount of evidence (n) where there is one."""

    __tablename__ = "metric_values"
    __table_args__ = (
        CheckConstraint(_in("scope", SCOPES), name="scope"),
        Index("ix_metric_values_run_id_scope_metric", "run_id", "scope", "metric"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("metric_runs.id", ondelete="CASCADE"))
    scope: Mapped[str] = mapped_column(String(16))
    subject: Mapped[str] = mapped_column(Text)
    metric: Mapped[str] = mapped_column(String(64))
    value: Mapped[float | None] = mapped_column(Double)
    low: Mapped[float | None] = mapped_column(Double)
    high: Mapped[float | None] = mapped_column(Double)
    n: Mapped[int | None] = mapped_column(BigInteger)
    detail: Mapped[dict[str, Any] | None] = mapped_column(Json)


class MetricColumn(Base):
    """One measure of many subjects of one scope in a run, as arrays (``results.Column``): the
    item values of a large campaign in one row per measure instead of one row per item."""

    __tablename__ = "metric_columns"
    __table_args__ = (
        CheckConstraint(_in("scope", SCOPES), name="scope"),
        UniqueConstraint("run_id", "scope", "metric"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("metric_runs.id", ondelete="CASCADE"))
    scope: Mapped[str] = mapped_column(String(16))
    metric: Mapped[str] = mapped_column(String(64))
    # JSON array of the subjects, in the order of the arrays.
    subjects: Mapped[str] = mapped_column(Text)
    # detail_key, names, integral (see results.Column.meta).
    meta: Mapped[dict[str, Any]] = mapped_column(Json, default=dict)
    # The arrays as an uncompressed .npz, read back without pickle.
    data: Mapped[bytes] = mapped_column(LargeBinary)


class RunState(Base):
    """What a run keeps for the next one to start from (the replicate sums of the Poisson
    bootstrap): a named array with what it depends on."""

    __tablename__ = "run_states"

    run_id: Mapped[int] = mapped_column(
        ForeignKey("metric_runs.id", ondelete="CASCADE"), primary_key=True
    )
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    meta: Mapped[dict[str, Any]] = mapped_column(Json, default=dict)
    # The array as a .npy, read back without pickle.
    data: Mapped[bytes] = mapped_column(LargeBinary)


class Flag(Base):
    """A rule that fired in a run, with the value, the threshold and the evidence."""

    __tablename__ = "flags"
    __table_args__ = (
        CheckConstraint(_in("scope", SCOPES), name="scope"),
        Index("ix_flags_run_id_scope", "run_id", "scope"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("metric_runs.id", ondelete="CASCADE"))
    scope: Mapped[str] = mapped_column(String(16))
    subject: Mapped[str] = mapped_column(Text)
    rule: Mapped[str] = mapped_column(String(64))
    value: Mapped[float | None] = mapped_column(Double)
    threshold: Mapped[float | None] = mapped_column(Double)
    evidence: Mapped[dict[str, Any]] = mapped_column(Json, default=dict)
    # A flag of the base run (``metric_runs.base_run_id``) that no longer holds.
    cleared: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


class WorkerDecision(Base):
    """The audit trail of actions on workers: appended to, never rewritten."""

    __tablename__ = "worker_decisions"
    __table_args__ = (
        CheckConstraint(_in("action", ACTIONS), name="action"),
        Index("ix_worker_decisions_campaign_id_worker_id", "campaign_id", "worker_id"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id", ondelete="CASCADE"))
    worker_id: Mapped[int] = mapped_column(ForeignKey("workers.id", ondelete="CASCADE"))
    action: Mapped[str] = mapped_column(String(16))
    weight: Mapped[float | None] = mapped_column(Double)
    reason: Mapped[str] = mapped_column(Text)
    automatic: Mapped[bool] = mapped_column(Boolean, default=False)
    actor: Mapped[str] = mapped_column(String(200))
    run_id: Mapped[int | None] = mapped_column(ForeignKey("metric_runs.id", ondelete="SET NULL"))
    evidence: Mapped[dict[str, Any] | None] = mapped_column(Json)
    created_at: Mapped[datetime] = mapped_column(UtcTime, default=utcnow)


class CampaignLock(Base):
    """Who is recomputing a campaign, and the token of its lock (``host:pid/random``), which
    the transaction that saves a run confirms (PostgreSQL also holds an advisory lock)."""

    __tablename__ = "campaign_locks"

    campaign_id: Mapped[int] = mapped_column(
        ForeignKey("campaigns.id", ondelete="CASCADE"), primary_key=True
    )
    holder: Mapped[str] = mapped_column(String(200))
    acquired_at: Mapped[datetime] = mapped_column(UtcTime, default=utcnow)


LEDGER_STATES = ("pending", "done", "failed")


class ConnectorAction(Base):
    """An action sent to a platform (``monitor push``), by its idempotency key: recorded
    ``pending`` before it is sent, ``done`` once the platform answered (``remote_id``: the id of
    what it created), ``failed`` when it refused; ``payload`` is the body sent, never a token."""

    __tablename__ = "connector_actions"
    __table_args__ = (
        UniqueConstraint("key"),
        CheckConstraint(_in("status", LEDGER_STATES), name="status"),
        Index("ix_connector_actions_campaign_id_platform", "campaign_id", "platform"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id", ondelete="CASCADE"))
    platform: Mapped[str] = mapped_column(String(32))
    key: Mapped[str] = mapped_column(String(300))
    action: Mapped[str] = mapped_column(String(32))
    target: Mapped[str] = mapped_column(Text)
    payload: Mapped[dict[str, Any] | None] = mapped_column(Json)
    status: Mapped[str] = mapped_column(String(16))
    remote_id: Mapped[str | None] = mapped_column(String(200))
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UtcTime, default=utcnow)
    done_at: Mapped[datetime | None] = mapped_column(UtcTime)


class WebhookEvent(Base):
    """A webhook event received (``monitor serve``), by its sender's id: seen once."""

    __tablename__ = "webhook_events"
    __table_args__ = (UniqueConstraint("source", "event_id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    source: Mapped[str] = mapped_column(String(32))
    event_id: Mapped[str] = mapped_column(String(300))
    received_at: Mapped[datetime] = mapped_column(UtcTime, default=utcnow)


SOURCE_ROLES = ("judgment", "gold", "both", "none")


class CampaignSource(Base):
    """Where a campaign's judgments are pulled from (``monitor campaign connect``): platform,
    URL, project, the token file's path (never the token), mapping and options; and the cursor
    of the last pull, the newest task ``updated_at`` seen (the platform's own text) and its id."""

    __tablename__ = "campaign_sources"
    __table_args__ = (UniqueConstraint("campaign_id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id", ondelete="CASCADE"))
    platform: Mapped[str] = mapped_column(String(32))
    url: Mapped[str] = mapped_column(Text)
    project: Mapped[str] = mapped_column(String(64))
    token_file: Mapped[str | None] = mapped_column(Text)
    mapping: Mapped[dict[str, str]] = mapped_column(Json, default=dict)
    options: Mapped[dict[str, str]] = mapped_column(Json, default=dict)
    cursor_updated_at: Mapped[str | None] = mapped_column(String(64))
    cursor_task_id: Mapped[int | None] = mapped_column(BigInteger)
    connected_at: Mapped[datetime] = mapped_column(UtcTime, default=utcnow)
    pulled_at: Mapped[datetime | None] = mapped_column(UtcTime)


class SourceAnnotation(Base):
    """An annotation pulled from a source: its task, its ``updated_at`` there, what it became
    (``role``: a judgment, the gold value of ``item``, both, or nothing when skipped). A
    changed annotation replaces its judgment; a deleted one is taken out by its id alone."""

    __tablename__ = "source_annotations"
    __table_args__ = (
        CheckConstraint(_in("role", SOURCE_ROLES), name="role"),
        Index("ix_source_annotations_campaign_id_task_id", "campaign_id", "task_id"),
    )

    campaign_id: Mapped[int] = mapped_column(
        ForeignKey("campaigns.id", ondelete="CASCADE"), primary_key=True
    )
    annotation_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    task_id: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[str | None] = mapped_column(String(64))
    role: Mapped[str] = mapped_column(String(16))
    item: Mapped[str | None] = mapped_column(String(255))


@event.listens_for(WorkerDecision, "before_update")
@event.listens_for(WorkerDecision, "before_delete")
def _append_only(_mapper: Any, _connection: Any, target: WorkerDecision) -> None:
    raise ValueError(
        f"worker decision {target.id} is part of the audit trail: append a new one instead"
    )
