"""planned pairs: the pairs ``monitor pairs plan`` asked annotators, and which were answered

Each planned pair keeps its stable id (the task files carry it, ``monitor ingest`` maps it
back), its round, the annotator and the items as shown, its purpose, the campaign's newest
preference id when it was planned, and the preference that answered it (NULL while open), so
that planning again never repeats a pair that is planned and not yet answered.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-25 04:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "planned_pairs",
        sa.Column("id", BIG_ID, nullable=False),
        sa.Column("campaign_id", BIG_ID, nullable=False),
        sa.Column("pair_id", sa.String(length=40), nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("worker", sa.String(length=255), nullable=False),
        sa.Column("left_item", sa.String(length=255), nullable=False),
        sa.Column("right_item", sa.String(length=255), nullable=False),
        sa.Column("purpose", sa.String(length=16), nullable=False),
        sa.Column("watermark", sa.BigInteger(), nullable=False),
        sa.Column("answered_id", BIG_ID, nullable=True),
        sa.Column("planned_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "purpose IN ('triangle', 'information', 'known', 'gold', 'retest')",
            name=op.f("ck_planned_pairs_purpose"),
        ),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["campaigns.id"],
            name=op.f("fk_planned_pairs_campaign_id_campaigns"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_planned_pairs")),
        sa.UniqueConstraint(
            "campaign_id", "pair_id", name=op.f("uq_planned_pairs_campaign_id_pair_id")
        ),
    )
    op.create_index(
        "ix_planned_pairs_campaign_id_answered_id",
        "planned_pairs",
        ["campaign_id", "answered_id"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_planned_pairs_campaign_id_answered_id", table_name="planned_pairs")
    op.drop_table("planned_pairs")
