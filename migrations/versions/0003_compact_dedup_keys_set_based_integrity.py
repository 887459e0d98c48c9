"""compact dedup keys, set-based integrity for judgments and preferences

Bulk loading judgments was dominated by work per inserted row that buys nothing a set cannot:

- ``dedup_key`` becomes the 16-byte digest of the key text (the first 16 bytes of its sha256,
  ``monitor.store.models.dedup_digest``) instead of the 71-character text: the unique index on
  ``(campaign_id, dedup_key)`` is a third of the size and compares bytes instead of collated
  text. Existing keys are converted with the same function (PostgreSQL in SQL, SQLite in Python,
  a batch at a time), so re-ingesting a file already stored is still a no-op.
- The single-column indexes on ``worker_id``, ``item_id``, ``left_item_id``, ``right_item_id``
  and ``batch_id`` go: every query of judgments and preferences is per campaign and uses
  ``(campaign_id, id)``.
- The foreign keys on the worker and item columns go: each was a trigger per inserted row. In
  their place, integrity is kept by triggers a statement at a time:

  * PostgreSQL: after each INSERT or UPDATE statement, one query over its new rows (a transition
    table) locks the referenced workers and items ``FOR KEY SHARE`` (as a foreign key does, once
    per referenced row instead of once per judgment) and raises ``foreign_key_violation``
    unless every worker and item exists *in the row's campaign* (stronger than the old keys,
    which did not look at the campaign). After a DELETE of workers or items, one statement
    deletes their judgments and preferences (the old ``ON DELETE CASCADE``), hash-joined so that
    deleting a campaign's 10^5 items stays one pass.
  * SQLite: the same checks as row triggers (SQLite has no statement triggers; its foreign keys
    were row checks anyway), the cascades as row triggers, and a ``BEFORE DELETE`` on campaigns
    that removes the campaign's judgments and preferences first, so that the cascades of its
    workers and items find nothing left to scan.

Downgrade restores the text keys as far as they can be: ``id:<external id>`` where the row has
an external id (exactly the old key), else ``digest:<hex>`` (the old ``sha256:`` text cannot be
recovered from its digest, so such rows are not recognised when their file is ingested again on
the old schema). The indexes and foreign keys come back; the triggers go.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BATCH = 10_000
TABLES = ("judgments", "preferences")
# (table, column, referred table) of the foreign keys that become triggers.
REFERENCES = (
    ("judgments", "worker_id", "workers"),
    ("judgments", "item_id", "items"),
    ("preferences", "worker_id", "workers"),
    ("preferences", "left_item_id", "items"),
    ("preferences", "right_item_id", "items"),
)
INDEXED = {
    "judgments": ("worker_id", "item_id", "batch_id"),
    "preferences": ("worker_id", "left_item_id", "right_item_id", "batch_id"),
}

# --- PostgreSQL -------------------------------------------------------------------------------

# Each distinct (campaign, worker) and (campaign, item) of the statement is looked up once
# through the primary key and locked FOR KEY SHARE (as a foreign key does: a concurrent delete
# of it waits, then cascades to these rows); fewer found than wanted is a violation, named by a
# second, slow query that only runs then. Index lookups, never a hash of the whole table: the
# planner knows nothing of a transition table's size.
PG_CHECK = """
CREATE FUNCTION monitor_{table}_refs() RETURNS trigger LANGUAGE plpgsql
SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    wanted bigint;
    found bigint;
    bad_id bigint;
    bad_campaign bigint;
BEGIN
    WITH n AS (SELECT DISTINCT campaign_id, worker_id FROM new_rows)
    SELECT (SELECT count(*) FROM n),
           (SELECT count(*) FROM (
                SELECT 1 FROM n JOIN workers w
                    ON w.id = n.worker_id AND w.campaign_id = n.campaign_id
                FOR KEY SHARE OF w) l)
        INTO wanted, found;
    IF found < wanted THEN
        SELECT n.worker_id, n.campaign_id INTO bad_id, bad_campaign FROM new_rows n
            WHERE NOT EXISTS (SELECT 1 FROM workers w
                              WHERE w.id = n.worker_id AND w.campaign_id = n.campaign_id)
            LIMIT 1;
        RAISE EXCEPTION '{table}: worker % is not a worker of campaign %', bad_id, bad_campaign
            USING ERRCODE = 'foreign_key_violation', TABLE = '{table}', COLUMN = 'worker_id';
    END IF;
    WITH n AS (SELECT DISTINCT campaign_id, x FROM {item_values} v)
    SELECT (SELECT count(*) FROM n),
           (SELECT count(*) FROM (
                SELECT 1 FROM n JOIN items i ON i.id = n.x AND i.campaign_id = n.campaign_id
                FOR KEY SHARE OF i) l)
        INTO wanted, found;
    IF found < wanted THEN
        SELECT n.x, n.campaign_id INTO bad_id, bad_campaign FROM {item_values} n
            WHERE NOT EXISTS (SELECT 1 FROM items i
                              WHERE i.id = n.x AND i.campaign_id = n.campaign_id)
            LIMIT 1;
        RAISE EXCEPTION '{table}: item % is not an item of campaign %', bad_id, bad_campaign
            USING ERRCODE = 'foreign_key_violation', TABLE = '{table}';
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER {table}_refs_insert AFTER INSERT ON {table}
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION monitor_{table}_refs();
CREATE TRIGGER {table}_refs_update AFTER UPDATE ON {table}
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION monitor_{table}_refs();
"""
PG_ITEM_VALUES = {
    "judgments": "(SELECT campaign_id, item_id AS x FROM new_rows)",
    "preferences": (
        "(SELECT campaign_id, left_item_id AS x FROM new_rows"
        " UNION ALL SELECT campaign_id, right_item_id FROM new_rows)"
    ),
}
# Hash joins only: a nested loop over a transition table (the planner knows nothing of its
# size) against a campaign's judgments would be quadratic when a campaign's items go.
PG_CASCADE = """
CREATE FUNCTION monitor_{table}_cascade() RETURNS trigger LANGUAGE plpgsql
SET enable_nestloop = off SET enable_mergejoin = off AS $$
BEGIN
    DELETE FROM judgments j USING (SELECT DISTINCT campaign_id, id FROM old_rows) o
        WHERE j.campaign_id = o.campaign_id AND j.{judgment_column} = o.id;
    DELETE FROM preferences p USING (SELECT DISTINCT campaign_id, id FROM old_rows) o
        WHERE p.campaign_id = o.campaign_id AND {preference_match};
    RETURN NULL;
END
$$;
CREATE TRIGGER {table}_cascade AFTER DELETE ON {table}
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION monitor_{table}_cascade();
"""
PG_CASCADES = {
    "workers": ("worker_id", "p.worker_id = o.id"),
    "items": ("item_id", "(p.left_item_id = o.id OR p.right_item_id = o.id)"),
}

# --- SQLite -----------------------------------------------------------------------------------

SQLITE_WORKER_OK = (
    "EXISTS (SELECT 1 FROM workers WHERE id = NEW.worker_id AND campaign_id = NEW.campaign_id)"
)
SQLITE_ITEM_OK = (
    "EXISTS (SELECT 1 FROM items WHERE id = NEW.{column} AND campaign_id = NEW.campaign_id)"
)
SQLITE_ITEMS = {"judgments": ("item_id",), "preferences": ("left_item_id", "right_item_id")}
SQLITE_CHECK = """
CREATE TRIGGER {table}_refs_{name} BEFORE {event} ON {table}
WHEN NOT ({condition})
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: {table} refers to a worker or an item that is not in its campaign');
END
"""
SQLITE_CASCADES = {
    "workers_cascade": """
CREATE TRIGGER workers_cascade AFTER DELETE ON workers
BEGIN
    DELETE FROM judgments WHERE campaign_id = OLD.campaign_id AND worker_id = OLD.id;
    DELETE FROM preferences WHERE campaign_id = OLD.campaign_id AND worker_id = OLD.id;
END
""",
    "items_cascade": """
CREATE TRIGGER items_cascade AFTER DELETE ON items
BEGIN
    DELETE FROM judgments WHERE campaign_id = OLD.campaign_id AND item_id = OLD.id;
    DELETE FROM preferences WHERE campaign_id = OLD.campaign_id
        AND (left_item_id = OLD.id OR right_item_id = OLD.id);
END
""",
    "campaigns_cascade": """
CREATE TRIGGER campaigns_cascade BEFORE DELETE ON campaigns
BEGIN
    DELETE FROM judgments WHERE campaign_id = OLD.id;
    DELETE FROM preferences WHERE campaign_id = OLD.id;
END
""",
}


def _sqlite_digests(table: str, source: str, target: str, convert) -> None:  # noqa: ANN001
    """Fill ``target`` from ``source`` in Python, a batch of ids at a time."""
    bind = op.get_bind()
    last = 0
    while True:
        rows = bind.execute(
            sa.text(
                f"SELECT id, {source}, external_id FROM {table} WHERE id > :last"  # noqa: S608
                " ORDER BY id LIMIT :n"
            ),
            {"last": last, "n": BATCH},
        ).all()
        if not rows:
            return
        bind.execute(
            sa.text(f"UPDATE {table} SET {target} = :value WHERE id = :id"),  # noqa: S608
            [{"id": i, "value": convert(key, external)} for i, key, external in rows],
        )
        last = rows[-1][0]


def _sqlite_unique_keys() -> None:
    """The unique keys of the replaced columns (a batch of their own: in the batch that drops
    the old constraint, one of the same name is not created again)."""
    for table in TABLES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.create_unique_constraint(
                batch_op.f(f"uq_{table}_campaign_id_dedup_key"), ["campaign_id", "dedup_key"]
            )


def _digest(key: str, _external: str | None) -> bytes:
    from monitor.store.models import dedup_digest

    return dedup_digest(key)


def _key_text(digest: bytes, external: str | None) -> str:
    return "id:" + external if external is not None else "digest:" + bytes(digest).hex()


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        for table in TABLES:
            with op.batch_alter_table(table, schema=None) as batch_op:
                batch_op.add_column(sa.Column("dedup_digest", sa.LargeBinary(length=16)))
            _sqlite_digests(table, "dedup_key", "dedup_digest", _digest)
    for table in TABLES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            for column in INDEXED[table]:
                batch_op.drop_index(batch_op.f(f"ix_{table}_{column}"))
            for owner, column, referred in REFERENCES:
                if owner == table:
                    batch_op.drop_constraint(
                        batch_op.f(f"fk_{table}_{column}_{referred}"), type_="foreignkey"
                    )
            if dialect == "sqlite":
                batch_op.drop_constraint(
                    batch_op.f(f"uq_{table}_campaign_id_dedup_key"), type_="unique"
                )
                batch_op.drop_column("dedup_key")
                batch_op.alter_column(
                    "dedup_digest",
                    new_column_name="dedup_key",
                    nullable=False,
                    existing_type=sa.LargeBinary(length=16),
                )
            else:
                batch_op.alter_column(
                    "dedup_key",
                    existing_type=sa.String(length=300),
                    type_=sa.LargeBinary(length=16),
                    existing_nullable=False,
                    postgresql_using="substring(sha256(convert_to(dedup_key, 'UTF8')) from 1 for 16)",
                )
    if dialect == "sqlite":
        _sqlite_unique_keys()
    if dialect == "postgresql":
        for table in TABLES:
            op.execute(PG_CHECK.format(table=table, item_values=PG_ITEM_VALUES[table]))
        for table, (column, match) in PG_CASCADES.items():
            op.execute(
                PG_CASCADE.format(table=table, judgment_column=column, preference_match=match)
            )
    else:
        for table in TABLES:
            condition = " AND ".join(
                [SQLITE_WORKER_OK] + [SQLITE_ITEM_OK.format(column=c) for c in SQLITE_ITEMS[table]]
            )
            for event in ("INSERT", "UPDATE"):
                op.execute(
                    SQLITE_CHECK.format(
                        table=table, name=event.lower(), event=event, condition=condition
                    )
                )
        for sql in SQLITE_CASCADES.values():
            op.execute(sql)


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        for table in PG_CASCADES:
            op.execute(f"DROP TRIGGER {table}_cascade ON {table}")
            op.execute(f"DROP FUNCTION monitor_{table}_cascade()")
        for table in TABLES:
            op.execute(f"DROP TRIGGER {table}_refs_insert ON {table}")
            op.execute(f"DROP TRIGGER {table}_refs_update ON {table}")
            op.execute(f"DROP FUNCTION monitor_{table}_refs()")
    else:
        for name in SQLITE_CASCADES:
            op.execute(f"DROP TRIGGER {name}")
        for table in TABLES:
            for name in ("insert", "update"):
                op.execute(f"DROP TRIGGER {table}_refs_{name}")
        for table in TABLES:
            with op.batch_alter_table(table, schema=None) as batch_op:
                batch_op.add_column(sa.Column("dedup_text", sa.String(length=300)))
            _sqlite_digests(table, "dedup_key", "dedup_text", _key_text)
    for table in TABLES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            if dialect == "sqlite":
                batch_op.drop_constraint(
                    batch_op.f(f"uq_{table}_campaign_id_dedup_key"), type_="unique"
                )
                batch_op.drop_column("dedup_key")
                batch_op.alter_column(
                    "dedup_text",
                    new_column_name="dedup_key",
                    nullable=False,
                    existing_type=sa.String(length=300),
                )
            else:
                batch_op.alter_column(
                    "dedup_key",
                    existing_type=sa.LargeBinary(length=16),
                    type_=sa.String(length=300),
                    existing_nullable=False,
                    postgresql_using=(
                        "CASE WHEN external_id IS NOT NULL THEN 'id:' || external_id"
                        " ELSE 'digest:' || encode(dedup_key, 'hex') END"
                    ),
                )
            for owner, column, referred in REFERENCES:
                if owner == table:
                    batch_op.create_foreign_key(
                        batch_op.f(f"fk_{table}_{column}_{referred}"),
                        referred,
                        [column],
                        ["id"],
                        ondelete="CASCADE",
                    )
            for column in INDEXED[table]:
                batch_op.create_index(batch_op.f(f"ix_{table}_{column}"), [column], unique=False)
    if dialect == "sqlite":
        _sqlite_unique_keys()
