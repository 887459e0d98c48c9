"""the live path: frozen stop-test scores and the workers whose test reached its evidence

``live_scores`` keeps each judgment's score and null in its worker's stop test, given once by
the live path (a pull, a webhook, or the start of a run) against the answers that arrived
before it; ``live_stops`` the workers whose test reached ``1 / alpha``, with when and why.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-29 05:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _refs(table: str) -> list[sa.ForeignKeyConstraint]:
    return [
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["campaigns.id"],
            name=op.f(f"fk_{table}_campaign_id_campaigns"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["worker_id"],
            ["workers.id"],
            name=op.f(f"fk_{table}_worker_id_workers"),
            ondelete="CASCADE",
        ),
    ]


def upgrade() -> None:
    op.create_table(
        "live_scores",
        sa.Column("judgment_id", BIG_ID, nullable=False),
        sa.Column("campaign_id", BIG_ID, nullable=False),
        sa.Column("worker_id", BIG_ID, nullable=False),
        sa.Column("score", sa.Double(), nullable=True),
        sa.Column("expected", sa.Double(), nullable=True),
        sa.Column("ready_id", BIG_ID, nullable=False),
        sa.Column("run_id", BIG_ID, nullable=False),
        sa.Column("scored_at", sa.DateTime(timezone=True), nullable=False),
        *_refs("live_scores"),
        sa.PrimaryKeyConstraint("judgment_id", name=op.f("pk_live_scores")),
    )
    op.create_index(
        "ix_live_scores_campaign_id_worker_id",
        "live_scores",
        ["campaign_id", "worker_id"],
        unique=False,
    )
    op.create_table(
        "live_stops",
        sa.Column("campaign_id", BIG_ID, nullable=False),
        sa.Column("worker_id", BIG_ID, nullable=False),
        sa.Column("after", sa.Integer(), nullable=False),
        sa.Column("evidence", sa.Double(), nullable=False),
        sa.Column("line", sa.Double(), nullable=False),
        sa.Column("typical", sa.Double(), nullable=False),
        sa.Column("alpha", sa.Double(), nullable=False),
        sa.Column("judgment_id", BIG_ID, nullable=False),
        sa.Column("run_id", BIG_ID, nullable=False),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=False),
        *_refs("live_stops"),
        sa.PrimaryKeyConstraint("campaign_id", "worker_id", name=op.f("pk_live_stops")),
    )


def downgrade() -> None:
    op.drop_table("live_stops")
    op.drop_index("ix_live_scores_campaign_id_worker_id", table_name="live_scores")
    op.drop_table("live_scores")
