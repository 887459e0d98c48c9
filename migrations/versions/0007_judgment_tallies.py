"""judgment tallies: a campaign's number of judgments and sum of their ids without a scan

Every run, and every scheduler tick that finds nothing new, compared the number of a campaign's
judgments and the sum of their ids with the last run's (what tells new judgments from judgments
deleted or committed late below the watermark): a scan of the campaign's judgments, 0.1 s at
1M. On PostgreSQL, statement-level triggers now append what each statement inserted or deleted
to ``judgment_tallies`` (one row per campaign and statement), in the statement's transaction;
the sums over a campaign's rows are the same numbers in any snapshot. SQLite keeps counting.
And a partial index of the gold items: every run reads them alone (most campaigns have few).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24 13:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

PG_TALLY = """
CREATE FUNCTION monitor_judgments_tally_in() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO judgment_tallies (campaign_id, n, id_sum)
        SELECT campaign_id, count(*), sum(id) FROM new_rows GROUP BY campaign_id;
    RETURN NULL;
END
$$;
CREATE FUNCTION monitor_judgments_tally_out() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- not for a campaign being deleted (its tallies go with it)
    INSERT INTO judgment_tallies (campaign_id, n, id_sum)
        SELECT o.campaign_id, -count(*), -sum(o.id) FROM old_rows o
        WHERE EXISTS (SELECT 1 FROM campaigns c WHERE c.id = o.campaign_id)
        GROUP BY o.campaign_id;
    RETURN NULL;
END
$$;
CREATE FUNCTION monitor_judgments_tally_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM judgment_tallies;
    RETURN NULL;
END
$$;
CREATE TRIGGER judgments_tally_insert AFTER INSERT ON judgments
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION monitor_judgments_tally_in();
CREATE TRIGGER judgments_tally_delete AFTER DELETE ON judgments
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION monitor_judgments_tally_out();
CREATE TRIGGER judgments_tally_update_old AFTER UPDATE ON judgments
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION monitor_judgments_tally_out();
CREATE TRIGGER judgments_tally_update_new AFTER UPDATE ON judgments
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION monitor_judgments_tally_in();
CREATE TRIGGER judgments_tally_truncate AFTER TRUNCATE ON judgments
    FOR EACH STATEMENT EXECUTE FUNCTION monitor_judgments_tally_truncate();
INSERT INTO judgment_tallies (campaign_id, n, id_sum)
    SELECT campaign_id, count(*), sum(id) FROM judgments GROUP BY campaign_id;
"""
PG_DROP = """
DROP TRIGGER judgments_tally_insert ON judgments;
DROP TRIGGER judgments_tally_delete ON judgments;
DROP TRIGGER judgments_tally_update_old ON judgments;
DROP TRIGGER judgments_tally_update_new ON judgments;
DROP TRIGGER judgments_tally_truncate ON judgments;
DROP FUNCTION monitor_judgments_tally_in();
DROP FUNCTION monitor_judgments_tally_out();
DROP FUNCTION monitor_judgments_tally_truncate();
"""


def upgrade() -> None:
    op.create_table(
        "judgment_tallies",
        sa.Column("id", BIG_ID, nullable=False),
        sa.Column("campaign_id", BIG_ID, nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.Column("id_sum", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["campaigns.id"],
            name=op.f("fk_judgment_tallies_campaign_id_campaigns"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_judgment_tallies")),
    )
    op.create_index(
        op.f("ix_judgment_tallies_campaign_id"), "judgment_tallies", ["campaign_id"], unique=False
    )
    op.create_index(
        "ix_items_gold",
        "items",
        ["campaign_id"],
        unique=False,
        postgresql_where=sa.text("gold IS NOT NULL"),
        sqlite_where=sa.text("gold IS NOT NULL"),
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute(PG_TALLY)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(PG_DROP)
    op.drop_index("ix_items_gold", table_name="items")
    op.drop_index(op.f("ix_judgment_tallies_campaign_id"), table_name="judgment_tallies")
    op.drop_table("judgment_tallies")
