"""campaign lifecycle: archived campaigns, undone ingests

A campaign can be archived (kept, left out of the runs over every campaign and of the index of
reports) and unarchived. ``changed_at`` is when judgments below the campaign's newest were last
taken out (``monitor ingest undo``): a run started before it cannot be extended, so the next
run is a full one. An ingest batch records the campaign's newest worker and item ids before
and after it, so that undoing it also removes the workers and items it alone brought.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-27 20:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BATCH_COLUMNS = ("workers_before", "workers_after", "items_before", "items_after")


def upgrade() -> None:
    # Plain ADD COLUMNs (no batch copy on SQLite: recreating the table would drop the cascade
    # trigger of migration 0003).
    op.add_column(
        "campaigns",
        sa.Column("archived", sa.Boolean(), server_default=sa.false(), nullable=False),
    )
    op.add_column("campaigns", sa.Column("changed_at", sa.DateTime(timezone=True), nullable=True))
    for name in BATCH_COLUMNS:
        op.add_column("ingest_batches", sa.Column(name, sa.BigInteger(), nullable=True))


def downgrade() -> None:
    for name in BATCH_COLUMNS:
        op.execute(f"ALTER TABLE ingest_batches DROP COLUMN {name}")
    op.execute("ALTER TABLE campaigns DROP COLUMN changed_at")
    op.execute("ALTER TABLE campaigns DROP COLUMN archived")
