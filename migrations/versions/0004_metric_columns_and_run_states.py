"""metric columns and run states: the per-subject values of a run as arrays, and what the
next run starts from

A run of a large campaign stores hundreds of thousands of item values; one row per value made
saving a run cost more than computing it. ``metric_columns`` holds one row per measure and
scope, with the subjects as a JSON array and the numbers as an ``.npz``. ``run_states`` keeps
the replicate sums of the Poisson bootstrap, which the next run updates with the items that
changed instead of resampling every item.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22 06:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "metric_columns",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("run_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("scope", sa.String(length=16), nullable=False),
        sa.Column("metric", sa.String(length=64), nullable=False),
        sa.Column("subjects", sa.Text(), nullable=False),
        sa.Column(
            "meta",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.CheckConstraint(
            "scope IN ('campaign', 'worker', 'item', 'pair', 'annotation')",
            name=op.f("ck_metric_columns_scope"),
        ),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["metric_runs.id"],
            name=op.f("fk_metric_columns_run_id_metric_runs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_metric_columns")),
        sa.UniqueConstraint(
            "run_id", "scope", "metric", name=op.f("uq_metric_columns_run_id_scope_metric")
        ),
    )


    op.create_table(
        "run_states",
        sa.Column("run_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column(
            "meta",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["metric_runs.id"],
            name=op.f("fk_run_states_run_id_metric_runs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("run_id", "name", name=op.f("pk_run_states")),
    )
    if op.get_bind().dialect.name == "postgresql":
        # Arrays of floats hardly compress: storing them out of line as they are spares
        # PostgreSQL a compression attempt on every run's tens of megabytes.
        for table, column in (
            ("metric_columns", "data"),
            ("metric_columns", "subjects"),
            ("run_states", "data"),
        ):
            op.execute(f"ALTER TABLE {table} ALTER COLUMN {column} SET STORAGE EXTERNAL")


def downgrade() -> None:
    op.drop_table("run_states")
    op.drop_table("metric_columns")
