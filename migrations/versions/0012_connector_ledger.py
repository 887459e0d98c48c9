"""connector ledger: what was pushed to a platform, and the webhook events already seen

``connector_actions`` records every action sent to a platform (``monitor push prolific``): its
idempotency key (unique), what it does and to whom, the request body sent (never a token), its
state (``pending`` from before it is sent, ``done`` once the platform answered, ``failed`` when
the platform refused it) and the platform's id of what it created. A retried or repeated push
reads it and never sends an action twice. ``webhook_events`` keeps the id of every webhook
event received (``monitor serve``), so a delivery repeated by the sender is acted on once.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-27 23:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
JSON = sa.JSON().with_variant(JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "connector_actions",
        sa.Column("id", BIG_ID, nullable=False),
        sa.Column("campaign_id", BIG_ID, nullable=False),
        sa.Column("platform", sa.String(length=32), nullable=False),
        sa.Column("key", sa.String(length=300), nullable=False),
        sa.Column("action", sa.String(length=32), nullable=False),
        sa.Column("target", sa.Text(), nullable=False),
        sa.Column("payload", JSON, nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("remote_id", sa.String(length=200), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("done_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "status IN ('pending', 'done', 'failed')", name=op.f("ck_connector_actions_status")
        ),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["campaigns.id"],
            name=op.f("fk_connector_actions_campaign_id_campaigns"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_connector_actions")),
        sa.UniqueConstraint("key", name=op.f("uq_connector_actions_key")),
    )
    op.create_index(
        "ix_connector_actions_campaign_id_platform",
        "connector_actions",
        ["campaign_id", "platform"],
        unique=False,
    )
    op.create_table(
        "webhook_events",
        sa.Column("id", BIG_ID, nullable=False),
        sa.Column("source", sa.String(length=32), nullable=False),
        sa.Column("event_id", sa.String(length=300), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_events")),
        sa.UniqueConstraint(
            "source", "event_id", name=op.f("uq_webhook_events_source_event_id")
        ),
    )


def downgrade() -> None:
    op.drop_table("webhook_events")
    op.drop_index("ix_connector_actions_campaign_id_platform", table_name="connector_actions")
    op.drop_table("connector_actions")
