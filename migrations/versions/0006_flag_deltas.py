"""flag deltas: a run stores its item and pair flags as the changes from a base run

An incremental run raises nearly the same item flags as the run before it (tens of thousands
at scale, each with its evidence); writing them all again cost more than computing them.
``metric_runs.base_run_id`` names the run whose item and pair flags this run's are changes
to, and ``flags.cleared`` marks a flag of the base that no longer holds. Readers resolve the
chain (``monitor.store.runs.run_flags``); a run without a base holds all its flags.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 16:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "metric_runs",
        sa.Column(
            "base_run_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True
        ),
    )
    op.add_column(
        "flags",
        sa.Column("cleared", sa.Boolean(), nullable=False, server_default=sa.false()),
    )


def downgrade() -> None:
    with op.batch_alter_table("flags") as batch:
        batch.drop_column("cleared")
    with op.batch_alter_table("metric_runs") as batch:
        batch.drop_column("base_run_id")
