"""What a metric run stores: the run, its values, columns, states and flags, the workers'
decisions (an append-only audit trail) and the campaign's lock."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Double,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    event,
    false,
    func,
    select,
)
from sqlalchemy.orm import Mapped, mapped_column

from monitor.store.models.base import (
    ACTIONS,
    RUN_STATUSES,
    SCOPES,
    Base,
    BigId,
    Json,
    UtcTime,
    campaign_ref,
    cascade_ref,
    check_in,
    inserted_at,
    run_ref,
    serial_id,
)


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
        check_in("status", RUN_STATUSES),
        Index("ix_metric_runs_campaign_id_id", "campaign_id", "id"),
        Index("ix_metric_runs_campaign_id_number", "campaign_id", "number", unique=True),
    )

    id: Mapped[int] = serial_id()
    campaign_id: Mapped[int] = campaign_ref()
    number: Mapped[int] = mapped_column(Integer, default=_next_run_number)
    watermark: Mapped[int] = mapped_column(BigInteger)
    full: Mapped[bool] = mapped_column(Boolean, default=True)
    # The run whose item and pair flags this run's flags change (None: this run holds them all).
    base_run_id: Mapped[int | None] = mapped_column(BigId)
    status: Mapped[str] = mapped_column(String(16), default="running")
    started_at: Mapped[datetime] = inserted_at()
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
        check_in("scope", SCOPES),
        Index("ix_metric_values_run_id_scope_metric", "run_id", "scope", "metric"),
    )

    id: Mapped[int] = serial_id()
    run_id: Mapped[int] = run_ref()
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
        check_in("scope", SCOPES),
        UniqueConstraint("run_id", "scope", "metric"),
    )

    id: Mapped[int] = serial_id()
    run_id: Mapped[int] = run_ref()
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

    run_id: Mapped[int] = run_ref(primary_key=True)
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    meta: Mapped[dict[str, Any]] = mapped_column(Json, default=dict)
    # The array as a .npy, read back without pickle.
    data: Mapped[bytes] = mapped_column(LargeBinary)


class Flag(Base):
    """A rule that fired in a run, with the value, the threshold and the evidence."""

    __tablename__ = "flags"
    __table_args__ = (
        check_in("scope", SCOPES),
        Index("ix_flags_run_id_scope", "run_id", "scope"),
    )

    id: Mapped[int] = serial_id()
    run_id: Mapped[int] = run_ref()
    # (columns of the shape of planned_pairs' in models/campaigns.py: another table, nothing
    # shared beyond the helpers of models/base.py)
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
        check_in("action", ACTIONS),
        Index("ix_worker_decisions_campaign_id_worker_id", "campaign_id", "worker_id"),
    )

    id: Mapped[int] = serial_id()
    campaign_id: Mapped[int] = campaign_ref()
    worker_id: Mapped[int] = cascade_ref("workers")
    action: Mapped[str] = mapped_column(String(16))
    weight: Mapped[float | None] = mapped_column(Double)
    reason: Mapped[str] = mapped_column(Text)
    automatic: Mapped[bool] = mapped_column(Boolean, default=False)
    actor: Mapped[str] = mapped_column(String(200))
    run_id: Mapped[int | None] = mapped_column(ForeignKey("metric_runs.id", ondelete="SET NULL"))
    evidence: Mapped[dict[str, Any] | None] = mapped_column(Json)
    created_at: Mapped[datetime] = inserted_at()


class CampaignLock(Base):
    """Who is recomputing a campaign, and the token of its lock (``host:pid/random``), which
    the transaction that saves a run confirms (PostgreSQL also holds an advisory lock)."""

    __tablename__ = "campaign_locks"

    campaign_id: Mapped[int] = campaign_ref(primary_key=True)
    holder: Mapped[str] = mapped_column(String(200))
    acquired_at: Mapped[datetime] = inserted_at()


@event.listens_for(WorkerDecision, "before_update")
@event.listens_for(WorkerDecision, "before_delete")
def _append_only(_mapper: Any, _connection: Any, target: WorkerDecision) -> None:
    raise ValueError(
        f"worker decision {target.id} is part of the audit trail: append a new one instead"
    )
