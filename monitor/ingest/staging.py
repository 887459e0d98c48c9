"""Where a chunk of rows waits before it is inserted: the staging tables and columns (SQLite's
TEMP tables, PostgreSQL's COPY columns) and the times as SQLite writes them."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from operator import itemgetter
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    Connection,
    DateTime,
    Double,
    LargeBinary,
    MetaData,
    Table,
    Text,
)
from sqlalchemy.dialects import postgresql

_META = MetaData()
_JSON = JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")
_TIME = DateTime(timezone=True)


def _stage_table(name: str, *columns: Column[Any]) -> Table:
    return Table(
        name,
        _META,
        Column("seq", BigInteger),
        Column("worker_id", BigInteger),
        *columns,
        Column("dedup_key", LargeBinary),
        Column("external_id", Text),
        Column("created_at", _TIME),
        Column("duration_s", Double),
        Column("payload", _JSON),
        prefixes=["TEMPORARY"],
    )


STAGE_JUDGMENTS = _stage_table(
    "monitor_stage_judgments",
    Column("item_id", BigInteger),
    Column("value_num", Double),
    Column("value_label", Text),
)
STAGE_PREFERENCES = _stage_table(
    "monitor_stage_preferences",
    Column("left_item_id", BigInteger),
    Column("right_item_id", BigInteger),
    Column("outcome", Text),
)
BULK_CACHE_KIB = 256 * 1024  # SQLite's page cache while a file loads (a maximum, in KiB)
STAGE_CACHE_KIB = 64 * 1024  # and its TEMP database's, where a chunk's rows wait
ROWS_STAGE = "monitor_stage_rows"
# The staged columns bound whatever the chunk (worker, item or left and right items, value_num
# or outcome, dedup key): the others are bound only when some row of the chunk fills them.
ALWAYS_BOUND = frozenset({0, 1, 2, 4})

# COPY columns and their binary types, after (campaign_id, batch_id, worker_id).
COPY_TAIL = ("dedup_key", "external_id", "created_at", "duration_s", "payload")
COPY_TAIL_TYPES = ("bytea", "text", "timestamptz", "float8", "jsonb")
COPY_JUDGMENTS = (("item_id", "value_num", "value_label"), ("int8", "float8", "text"))
COPY_PREFERENCES = (("left_item_id", "right_item_id", "outcome"), ("int8", "int8", "text"))


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)
# The text sqlite_time gives, from microseconds since 1970 in UTC (floored: times before 1970
# too), computed by SQLite.
SQLITE_TIME_SQL = (
    "strftime('%Y-%m-%d %H:%M:%S', (created_at - ((created_at % 1000000 + 1000000) % 1000000))"
    " / 1000000, 'unixepoch') || printf('.%06d', (created_at % 1000000 + 1000000) % 1000000)"
)


def epoch_microseconds(moment: datetime) -> int:
    """Microseconds from 1970-01-01 UTC to ``moment`` (a time without offset is in UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - EPOCH) // MICROSECOND


def sqlite_time(moment: datetime | None) -> str | None:
    """The text SQLite keeps of a moment (what the ``created_at`` column's SQLAlchemy type
    binds: the wall time in UTC, ``YYYY-MM-DD HH:MM:SS.ffffff``, without its offset)."""
    if moment is None:
        return None
    if moment.utcoffset():
        moment = moment.astimezone(UTC)
    return moment.isoformat(" ", "microseconds")[:26]


def staged_values(
    rows: list[Any],
    digests: list[bytes],
    workers: dict[str, int],
    items: dict[str, int],
    dump: Callable[[Any], Any],
    *,
    pairwise: bool,
) -> list[tuple[Any, ...]]:
    """A chunk's rows as SQLite's TEMP table takes them (``ROWS_STAGE``'s columns): the ids
    resolved, the digests, the time as microseconds since 1970 (:func:`epoch_microseconds`),
    the payload through the JSON column's serializer ``dump``."""
    epoch, tick, utc = EPOCH, MICROSECOND, UTC
    # epoch_microseconds(t), inlined for a time in UTC (what the readers give)
    if pairwise:
        values = [
            (
                workers[r[0]], items[r[1]], items[r[2]], r[3], d, r[5],
                None if (t := r[6]) is None
                else (t - epoch) // tick if t.tzinfo is utc else epoch_microseconds(t),
                r[7], None if r[8] is None else dump(r[8]),
            )
            for r, d in zip(rows, digests, strict=True)
        ]  # fmt: skip
    else:
        values = [
            (
                workers[r[0]], items[r[1]], r[2], r[3], d, r[5],
                None if (t := r[6]) is None
                else (t - epoch) // tick if t.tzinfo is utc else epoch_microseconds(t),
                r[7], None if r[8] is None else dump(r[8]),
            )
            for r, d in zip(rows, digests, strict=True)
        ]  # fmt: skip
    return values


def sqlite_stage(
    conn: Connection, stage: Table, target: str, *, pairwise: bool
) -> tuple[int | None, tuple[str, ...], str]:
    """SQLite, before a file loads: the staging tables made afresh and the page caches sized
    for the load. Returns the page cache's size before it (to restore), the columns of the
    rows' TEMP table and the statement that inserts them into ``target``."""
    stage.drop(conn, checkfirst=True)
    stage.create(conn)
    # A page cache that holds the unique index the rows go into (random digests): with
    # the default 2 MB, SQLite spills and rereads its pages for every chunk. Only a
    # cache: the transaction and its guarantees are the same.
    cache_size = conn.exec_driver_sql("PRAGMA cache_size").scalar()
    conn.exec_driver_sql(f"PRAGMA cache_size = -{BULK_CACHE_KIB}")
    # The rows of a chunk wait in a TEMP table without types or indexes (kept in its
    # cache, never spilled), then go into the target in one statement.
    conn.exec_driver_sql(f"PRAGMA temp.cache_size = -{STAGE_CACHE_KIB}")
    conn.exec_driver_sql(f"DROP TABLE IF EXISTS temp.{ROWS_STAGE}")
    middle = COPY_PREFERENCES[0] if pairwise else COPY_JUDGMENTS[0]
    columns = ("worker_id", *middle, *COPY_TAIL)
    conn.exec_driver_sql(
        f"CREATE TEMP TABLE {ROWS_STAGE} (seq INTEGER PRIMARY KEY, {', '.join(columns)})"
    )
    # created_at waits as microseconds since 1970 (UTC) and becomes SQLite's text of it
    # (sqlite_time) in the statement, off the GIL.
    selected = [SQLITE_TIME_SQL if c == "created_at" else c for c in columns]
    insert_sql = (
        f"INSERT INTO {target} (campaign_id, batch_id, {', '.join(columns)})"  # noqa: S608
        f" SELECT ?, ?, {', '.join(selected)} FROM temp.{ROWS_STAGE}"
        " WHERE true ORDER BY seq"  # WHERE: so that ON CONFLICT does not read as a join
        " ON CONFLICT (campaign_id, dedup_key) DO NOTHING"
    )
    return cache_size, columns, insert_sql


def bound_rows(
    columns: tuple[str, ...], values: list[tuple[Any, ...]], statements: dict[tuple[int, ...], str]
) -> tuple[str, list[Any]]:
    """The statement that stages a chunk's rows in SQLite's TEMP table, and the rows as it
    binds them: only the columns some row of the chunk fills (binding costs per value; the
    others stay NULL). ``statements`` keeps each statement by the columns it binds."""
    # worker, items and the answer's first column, dedup key: always filled
    bound = tuple(
        k for k in range(len(columns)) if k in ALWAYS_BOUND or any(v[k] is not None for v in values)
    )
    sql = statements.get(bound)
    if sql is None:
        names = ", ".join(columns[k] for k in bound)
        marks = ", ".join("?" * len(bound))
        sql = statements[bound] = f"INSERT INTO temp.{ROWS_STAGE} ({names}) VALUES ({marks})"  # noqa: S608 - names
    if len(bound) < len(columns):
        values = list(map(itemgetter(*bound), values))
    return sql, values
