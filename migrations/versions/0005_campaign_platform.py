"""campaign platform: where a campaign's workers come from

The same worker id on the same platform is the same person: their model and gold accuracy in
the platform's other campaigns is their history (shown in reports, and the starting point of the
reliability model for a worker with few judgments). Existing campaigns get "none" (unknown);
the next platform-format ingest sets it.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 15:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # A plain ADD COLUMN (no batch copy on SQLite: recreating the table would drop the
    # cascade trigger of migration 0003).
    op.add_column(
        "campaigns",
        sa.Column("platform", sa.String(length=32), server_default="none", nullable=False),
    )


def downgrade() -> None:
    op.execute("ALTER TABLE campaigns DROP COLUMN platform")
