"""member tallies: a campaign's numbers of workers and items without a scan; new ones by index

Every incremental run compared the campaign's numbers of workers and items with the kept
arrays' (what tells a worker or an item committed late below the last known one) and read the
workers and items added since: two counts and a filter over every item of the campaign (80 ms
at 200,000 items). On PostgreSQL, statement-level triggers now append what each statement
inserted or deleted to ``member_tallies``, as ``judgment_tallies`` does for the judgments; and
``(campaign_id, id)`` indexes find the workers and items above an id directly.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24 18:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
TABLES = ("workers", "items")


def _pg_tally(table: str) -> str:
    other = "0" if table == "items" else "count(*)"
    items = "count(*)" if table == "items" else "0"
    neg_other = "0" if table == "items" else "-count(*)"
    neg_items = "-count(*)" if table == "items" else "0"
    return f"""
CREATE FUNCTION monitor_{table}_tally_in() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO member_tallies (campaign_id, workers, items)
        SELECT campaign_id, {other}, {items} FROM new_rows GROUP BY campaign_id;
    RETURN NULL;
END
$$;
CREATE FUNCTION monitor_{table}_tally_out() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- not for a campaign being deleted (its tallies go with it)
    INSERT INTO member_tallies (campaign_id, workers, items)
        SELECT o.campaign_id, {neg_other}, {neg_items} FROM old_rows o
        WHERE EXISTS (SELECT 1 FROM campaigns c WHERE c.id = o.campaign_id)
        GROUP BY o.campaign_id;
    RETURN NULL;
END
$$;
CREATE FUNCTION monitor_{table}_tally_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE member_tallies SET {"items" if table == "items" else "workers"} = 0;
    RETURN NULL;
END
$$;
CREATE TRIGGER {table}_tally_insert AFTER INSERT ON {table}
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION monitor_{table}_tally_in();
CREATE TRIGGER {table}_tally_delete AFTER DELETE ON {table}
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION monitor_{table}_tally_out();
CREATE TRIGGER {table}_tally_truncate AFTER TRUNCATE ON {table}
    FOR EACH STATEMENT EXECUTE FUNCTION monitor_{table}_tally_truncate();
"""


PG_SEED = """
INSERT INTO member_tallies (campaign_id, workers, items)
    SELECT c.id,
           (SELECT count(*) FROM workers w WHERE w.campaign_id = c.id),
           (SELECT count(*) FROM items i WHERE i.campaign_id = c.id)
    FROM campaigns c;
"""


def _pg_drop(table: str) -> str:
    return f"""
DROP TRIGGER {table}_tally_insert ON {table};
DROP TRIGGER {table}_tally_delete ON {table};
DROP TRIGGER {table}_tally_truncate ON {table};
DROP FUNCTION monitor_{table}_tally_in();
DROP FUNCTION monitor_{table}_tally_out();
DROP FUNCTION monitor_{table}_tally_truncate();
"""


def upgrade() -> None:
    op.create_table(
        "member_tallies",
        sa.Column("id", BIG_ID, nullable=False),
        sa.Column("campaign_id", BIG_ID, nullable=False),
        sa.Column("workers", sa.BigInteger(), nullable=False),
        sa.Column("items", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["campaigns.id"],
            name=op.f("fk_member_tallies_campaign_id_campaigns"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_member_tallies")),
    )
    op.create_index(
        op.f("ix_member_tallies_campaign_id"), "member_tallies", ["campaign_id"], unique=False
    )
    for table in TABLES:
        op.create_index(f"ix_{table}_campaign_id_id", table, ["campaign_id", "id"], unique=False)
    if op.get_bind().dialect.name == "postgresql":
        for table in TABLES:
            op.execute(_pg_tally(table))
        op.execute(PG_SEED)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for table in TABLES:
            op.execute(_pg_drop(table))
    for table in TABLES:
        op.drop_index(f"ix_{table}_campaign_id_id", table_name=table)
    op.drop_index(op.f("ix_member_tallies_campaign_id"), table_name="member_tallies")
    op.drop_table("member_tallies")
