"""connected sources: a campaign's live source (Label Studio) and the annotations pulled from it

``campaign_sources`` records where a campaign's judgments are pulled from (platform, URL,
project, the token file's path but never the token, the mapping and options) and the cursor of
the last pull (the newest task ``updated_at`` seen and its task id). ``source_annotations``
maps every annotation pulled to its task, its ``updated_at`` and what it became (a judgment,
the item's gold value, both, or nothing when skipped), so that an annotation changed there
replaces its judgment and one deleted there (deletion events name no task) is taken out.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-27 23:45:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "campaign_sources",
        sa.Column("id", BIG_ID, nullable=False),
        sa.Column("campaign_id", BIG_ID, nullable=False),
        sa.Column("platform", sa.String(length=32), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("project", sa.String(length=64), nullable=False),
        sa.Column("token_file", sa.Text(), nullable=True),
        sa.Column("mapping", JSON, nullable=False),
        sa.Column("options", JSON, nullable=False),
        sa.Column("cursor_updated_at", sa.String(length=64), nullable=True),
        sa.Column("cursor_task_id", sa.BigInteger(), nullable=True),
        sa.Column("connected_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("pulled_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["campaigns.id"],
            name=op.f("fk_campaign_sources_campaign_id_campaigns"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_campaign_sources")),
        sa.UniqueConstraint("campaign_id", name=op.f("uq_campaign_sources_campaign_id")),
    )
    op.create_table(
        "source_annotations",
        sa.Column("campaign_id", BIG_ID, nullable=False),
        sa.Column("annotation_id", sa.String(length=64), nullable=False),
        sa.Column("task_id", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.String(length=64), nullable=True),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("item", sa.String(length=255), nullable=True),
        sa.CheckConstraint(
            "role IN ('judgment', 'gold', 'both', 'none')",
            name=op.f("ck_source_annotations_role"),
        ),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["campaigns.id"],
            name=op.f("fk_source_annotations_campaign_id_campaigns"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "campaign_id", "annotation_id", name=op.f("pk_source_annotations")
        ),
    )
    op.create_index(
        "ix_source_annotations_campaign_id_task_id",
        "source_annotations",
        ["campaign_id", "task_id"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_source_annotations_campaign_id_task_id", table_name="source_annotations")
    op.drop_table("source_annotations")
    op.drop_table("campaign_sources")
