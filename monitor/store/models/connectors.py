"""What the platforms' connectors keep: the ledger of actions sent, the webhook events seen,
a campaign's sources and the annotations pulled from them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Index,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from monitor.store.models.base import (
    Base,
    Json,
    UtcTime,
    campaign_ref,
    check_in,
    inserted_at,
    serial_id,
)

LEDGER_STATES = ("pending", "done", "failed")


class ConnectorAction(Base):
    """An action sent to a platform (``monitor push``), by its idempotency key: recorded
    ``pending`` before it is sent, ``done`` once the platform answered (``remote_id``: the id of
    what it created), ``failed`` when it refused; ``payload`` is the body sent, never a token."""

    __tablename__ = "connector_actions"
    __table_args__ = (
        UniqueConstraint("key"),
        check_in("status", LEDGER_STATES),
        Index("ix_connector_actions_campaign_id_platform", "campaign_id", "platform"),
    )

    id: Mapped[int] = serial_id()
    campaign_id: Mapped[int] = campaign_ref()
    platform: Mapped[str] = mapped_column(String(32))
    key: Mapped[str] = mapped_column(String(300))
    action: Mapped[str] = mapped_column(String(32))
    target: Mapped[str] = mapped_column(Text)
    payload: Mapped[dict[str, Any] | None] = mapped_column(Json)
    status: Mapped[str] = mapped_column(String(16))
    remote_id: Mapped[str | None] = mapped_column(String(200))
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = inserted_at()
    done_at: Mapped[datetime | None] = mapped_column(UtcTime)


class WebhookEvent(Base):
    """A webhook event received (``monitor serve``), by its sender's id: seen once."""

    __tablename__ = "webhook_events"
    __table_args__ = (UniqueConstraint("source", "event_id"),)

    id: Mapped[int] = serial_id()
    source: Mapped[str] = mapped_column(String(32))
    event_id: Mapped[str] = mapped_column(String(300))
    received_at: Mapped[datetime] = inserted_at()


SOURCE_ROLES = ("judgment", "gold", "both", "none")


class CampaignSource(Base):
    """Where a campaign's judgments are pulled from (``monitor campaign connect``): platform,
    URL, project, the token file's path (never the token), mapping and options; and the cursor
    of the last pull, the newest task ``updated_at`` seen (the platform's own text) and its id."""

    __tablename__ = "campaign_sources"
    __table_args__ = (UniqueConstraint("campaign_id"),)

    id: Mapped[int] = serial_id()
    campaign_id: Mapped[int] = campaign_ref()
    platform: Mapped[str] = mapped_column(String(32))
    url: Mapped[str] = mapped_column(Text)
    project: Mapped[str] = mapped_column(String(64))
    token_file: Mapped[str | None] = mapped_column(Text)
    mapping: Mapped[dict[str, str]] = mapped_column(Json, default=dict)
    options: Mapped[dict[str, str]] = mapped_column(Json, default=dict)
    cursor_updated_at: Mapped[str | None] = mapped_column(String(64))
    cursor_task_id: Mapped[int | None] = mapped_column(BigInteger)
    connected_at: Mapped[datetime] = inserted_at()
    pulled_at: Mapped[datetime | None] = mapped_column(UtcTime)


class SourceAnnotation(Base):
    """An annotation pulled from a source: its task, its ``updated_at`` there, what it became
    (``role``: a judgment, the gold value of ``item``, both, or nothing when skipped). A
    changed annotation replaces its judgment; a deleted one is taken out by its id alone."""

    __tablename__ = "source_annotations"
    __table_args__ = (
        check_in("role", SOURCE_ROLES),
        Index("ix_source_annotations_campaign_id_task_id", "campaign_id", "task_id"),
    )

    campaign_id: Mapped[int] = campaign_ref(primary_key=True)
    annotation_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    task_id: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[str | None] = mapped_column(String(64))
    role: Mapped[str] = mapped_column(String(16))
    item: Mapped[str | None] = mapped_column(String(255))
