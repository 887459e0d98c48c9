"""A campaign and what it collects: workers, items, ingest batches, rejected rows, judgments
(with their tallies and annotations), preferences and planned pairs."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Double,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import Mapped, mapped_column

from monitor.store.models.base import (
    KINDS,
    LEVELS,
    OUTCOMES,
    WORKER_STATUSES,
    Base,
    BigId,
    Json,
    UtcTime,
    campaign_ref,
    cascade_ref,
    check_in,
    inserted_at,
    serial_id,
)


class Campaign(Base):
    """One annotation job with one kind of judgment and its scale."""

    __tablename__ = "campaigns"
    __table_args__ = (
        check_in("kind", KINDS),
        check_in("level", LEVELS),
    )

    id: Mapped[int] = serial_id()
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
    created_at: Mapped[datetime] = inserted_at()
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
        check_in("status", WORKER_STATUSES),
        # an incremental run reads the workers added since the last one
        Index("ix_workers_campaign_id_id", "campaign_id", "id"),
    )

    id: Mapped[int] = serial_id()
    campaign_id: Mapped[int] = campaign_ref()
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

    id: Mapped[int] = serial_id()
    campaign_id: Mapped[int] = campaign_ref()
    external_id: Mapped[str] = mapped_column(String(255))
    gold: Mapped[str | None] = mapped_column(Text)
    text: Mapped[str | None] = mapped_column(Text)


class IngestBatch(Base):
    """One file ingested into one campaign: where it came from and what became of its rows."""

    __tablename__ = "ingest_batches"

    id: Mapped[int] = serial_id()
    campaign_id: Mapped[int] = campaign_ref(index=True)
    path: Mapped[str] = mapped_column(Text)
    checksum: Mapped[str] = mapped_column(String(64))
    format: Mapped[str] = mapped_column(String(32))
    n_rows: Mapped[int] = mapped_column(Integer, default=0)
    n_new: Mapped[int] = mapped_column(Integer, default=0)
    n_duplicate: Mapped[int] = mapped_column(Integer, default=0)
    n_rejected: Mapped[int] = mapped_column(Integer, default=0)
    started_at: Mapped[datetime] = inserted_at()
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

    id: Mapped[int] = serial_id()
    batch_id: Mapped[int] = cascade_ref("ingest_batches", index=True)
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

    id: Mapped[int] = serial_id()
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

    id: Mapped[int] = serial_id()
    campaign_id: Mapped[int] = campaign_ref(index=True)
    n: Mapped[int] = mapped_column(BigInteger)
    id_sum: Mapped[int] = mapped_column(BigInteger)


class MemberTally(Base):
    """What one statement did to a campaign's workers and items (PostgreSQL): how many of each
    it inserted, negative for those it deleted. Written by triggers (migration 0008) in the
    statement's transaction, like :class:`JudgmentTally`: the sums over a campaign's rows are
    its numbers of workers and items in any snapshot (a worker or an item never changes
    campaign). Empty on SQLite, which counts them instead."""

    __tablename__ = "member_tallies"

    id: Mapped[int] = serial_id()
    campaign_id: Mapped[int] = campaign_ref(index=True)
    workers: Mapped[int] = mapped_column(BigInteger)
    items: Mapped[int] = mapped_column(BigInteger)


class JudgmentAnnotation(Base):
    """One annotation of a multi-label judgment, with how many times the answer held it."""

    __tablename__ = "judgment_annotations"

    judgment_id: Mapped[int] = cascade_ref("judgments", primary_key=True)
    annotation: Mapped[str] = mapped_column(String(255), primary_key=True)
    count: Mapped[int] = mapped_column(Integer, default=1)


class Preference(_Provenance, Base):
    """A pairwise judgment: the worker preferred left, right, or neither (tie)."""

    __tablename__ = "preferences"
    __table_args__ = (
        UniqueConstraint("campaign_id", "dedup_key"),
        Index("ix_preferences_campaign_id_id", "campaign_id", "id"),
        check_in("outcome", OUTCOMES),
        CheckConstraint("left_item_id <> right_item_id", name="distinct_items"),
        CheckConstraint("duration_s IS NULL OR duration_s >= 0", name="duration"),
    )

    id: Mapped[int] = serial_id()
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
        check_in("purpose", PLAN_PURPOSES),
        Index("ix_planned_pairs_campaign_id_answered_id", "campaign_id", "answered_id"),
    )

    id: Mapped[int] = serial_id()
    campaign_id: Mapped[int] = campaign_ref()
    pair_id: Mapped[str] = mapped_column(String(40))
    round: Mapped[int] = mapped_column(Integer)
    worker: Mapped[str] = mapped_column(String(255))
    left_item: Mapped[str] = mapped_column(String(255))
    right_item: Mapped[str] = mapped_column(String(255))
    purpose: Mapped[str] = mapped_column(String(16))
    watermark: Mapped[int] = mapped_column(BigInteger)
    answered_id: Mapped[int | None] = mapped_column(BigId)
    planned_at: Mapped[datetime] = inserted_at()
