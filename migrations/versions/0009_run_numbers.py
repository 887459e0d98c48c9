"""run numbers: each campaign counts its own runs

Users saw the database's run ids, which count across campaigns: a campaign's first run showed
as "#2". ``metric_runs.number`` counts the runs of each campaign (1 for its first, including
failed runs, which are recorded too); the ids stay internal. Existing runs are numbered in the
order of their ids. A unique index on ``(campaign_id, number)``.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # A plain ADD COLUMN (no batch copy on SQLite: recreating metric_runs would have to
    # rebuild every table that refers to it). NOT NULL needs a default for the rows there;
    # PostgreSQL drops it after the numbering, SQLite cannot without a copy and keeps it
    # (monitor always gives the number).
    op.add_column(
        "metric_runs", sa.Column("number", sa.Integer(), server_default="0", nullable=False)
    )
    op.execute(
        "UPDATE metric_runs SET number = (SELECT count(*) FROM metric_runs r "
        "WHERE r.campaign_id = metric_runs.campaign_id AND r.id <= metric_runs.id)"
    )
    if op.get_bind().dialect.name == "postgresql":
        op.alter_column("metric_runs", "number", server_default=None)
    op.create_index(
        "ix_metric_runs_campaign_id_number", "metric_runs", ["campaign_id", "number"], unique=True
    )


def downgrade() -> None:
    op.drop_index("ix_metric_runs_campaign_id_number", table_name="metric_runs")
    op.execute("ALTER TABLE metric_runs DROP COLUMN number")
