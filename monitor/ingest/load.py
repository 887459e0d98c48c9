"""Bulk loading of validated records, inside the caller's transaction.

Per chunk, the external ids of workers and items are resolved to database ids (a bounded cache,
then one lookup of the rest, then the creation of the new ones in order of first appearance),
the rows repeated inside the chunk are dropped (the first wins), and each dedup key becomes its
16-byte digest (:func:`~monitor.store.models.dedup_digest`). Then:

- PostgreSQL: the digests already stored in the campaign are looked up in one query against the
  unique index (skipped while the campaign was empty when the file began and the chunk's keys
  are new to this file: see :class:`SeenKeys`), and the new rows are copied straight into
  ``judgments`` (or ``preferences``) with a binary ``COPY``, in file order (ids follow it).
  A transaction-level advisory lock per campaign, taken first, makes concurrent ingests into
  one campaign wait for each other, so no other transaction can store a key between the lookup
  and the copy; the unique constraint stays as the last word.
- SQLite (one writer at a time anyway): one executemany through sqlite3 of the resolved rows
  into a TEMP table without types or indexes (only the columns the chunk fills; times as
  microseconds since 1970), then one ``INSERT ... SELECT ... ON CONFLICT (campaign_id,
  dedup_key) DO NOTHING`` into the table, which writes the times' text, run like PostgreSQL's
  COPY in a helper thread while the next chunk is read (one call into SQLite: the GIL stays
  free for the reading thread), with a page cache large enough for the unique index while the
  file loads (multi-label judgments, whose annotations need the new ids, load in turn with
  ``RETURNING``). New workers and items are created by one statement per chunk, from a JSON
  array, ``RETURNING`` their ids.

The number of rows stored is the number of new judgments; the rest of the chunk were
duplicates. Nothing is committed here: the caller's transaction holds the whole file.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, cast

import numpy as np
from psycopg.copy import LibpqWriter
from psycopg.sql import SQL, Identifier
from psycopg.types.string import BytesBinaryDumper
from sqlalchemy import (
    BigInteger,
    Connection,
    Table,
    exists,
    func,
    literal,
    select,
    text,
)
from sqlalchemy.dialects import postgresql, sqlite

from monitor.ingest.bloom import SeenKeys
from monitor.ingest.safe import storable_text
from monitor.ingest.staging import (
    COPY_JUDGMENTS,
    COPY_PREFERENCES,
    COPY_TAIL,
    COPY_TAIL_TYPES,
    ROWS_STAGE,
    STAGE_JUDGMENTS,
    STAGE_PREFERENCES,
    bound_rows,
    sqlite_stage,
    staged_values,
)
from monitor.ingest.validate import ItemRecord, JudgmentRecord, PreferenceRecord, WorkerRecord
from monitor.store.campaigns import CampaignInfo
from monitor.store.locks import LOCK_CLASS
from monitor.store.models import (
    DIGEST_SIZE,
    Item,
    Judgment,
    JudgmentAnnotation,
    Preference,
    RejectedRow,
    Worker,
)

# The first key of the ingest locks: apart from the recompute locks (LOCK_CLASS).
INGEST_LOCK_CLASS = LOCK_CLASS + 1

LOOKUP_BATCH = 10_000
CACHE_SIZE = 100_000  # ids of workers or items kept between chunks (then the cache restarts)

W = cast(Table, Worker.__table__)
I = cast(Table, Item.__table__)  # noqa: E741
J = cast(Table, Judgment.__table__)
P = cast(Table, Preference.__table__)
A = cast(Table, JudgmentAnnotation.__table__)
R = cast(Table, RejectedRow.__table__)


class Chunk(list[Any]):
    """The records of one chunk (a list of them) with what :meth:`Loader.prepare` found."""

    def __init__(
        self,
        records: Iterable[Any],
        rows: list[Any],
        digests: list[bytes],
        workers: dict[str, None],
        items: dict[str, None],
        maybe: np.ndarray | None,
    ) -> None:
        super().__init__(records)
        self.rows = rows  # the first record of each dedup key, in file order
        self.digests = digests  # their digests
        self.workers = workers  # the external ids of their workers, in order of appearance
        self.items = items  # of their items
        self.maybe = maybe  # the digests the Bloom filter may have seen (or None)


class Loader:
    """Stores the chunks of one file of one campaign, as ingest batch ``batch_id``."""

    def __init__(self, conn: Connection, campaign: CampaignInfo, batch_id: int) -> None:
        self.conn = conn
        self.campaign = campaign
        self.batch_id = batch_id
        self.pg = conn.dialect.name == "postgresql"
        self.insert = postgresql.insert if self.pg else sqlite.insert
        self.pairwise = campaign.kind == "pairwise"
        self.target = P if self.pairwise else J
        self.stage = STAGE_PREFERENCES if self.pairwise else STAGE_JUDGMENTS
        self.known: dict[str, dict[str, int]] = {W.name: {}, I.name: {}}
        self.seen: SeenKeys | None = None
        # PostgreSQL: leave the storing of each chunk (lookup of the stored digests, COPY) to
        # finish(), which another thread may run while this one reads the next chunk.
        self.defer = False
        self._deferred: Callable[[], int] | None = None
        self._settled = 0  # new rows stored by _settle() since the last finish()
        self._cache_size: int | None = None  # SQLite: the page cache's size before the load
        self._insert_sql = ""
        self._stage_columns: tuple[str, ...] = ()
        self._stage_sql: dict[tuple[int, ...], str] = {}  # by the columns a chunk binds
        if self.pg:
            # Ingests into one campaign, one at a time until commit (see the module docstring).
            conn.execute(
                text("SELECT pg_advisory_xact_lock(:k1, :k2)"),
                {"k1": INGEST_LOCK_CLASS, "k2": campaign.id},
            )
            # The integrity triggers keep each statement's rows (a transition table): in memory.
            conn.exec_driver_sql("SET LOCAL work_mem = '64MB'")
            stored = exists().where(self.target.c.campaign_id == campaign.id)
            if not conn.scalar(select(stored)):
                self.seen = SeenKeys()
        else:
            self._cache_size, self._stage_columns, self._insert_sql = sqlite_stage(
                conn, self.stage, self.target.name, pairwise=self.pairwise
            )
        self.seq = 0

    def finish(self) -> int:
        """Store the chunk the last :meth:`load` left (``defer``): look up its digests, COPY
        the new rows; return how many rows were new since the last call (0: none was left)."""
        self._settle()
        n, self._settled = self._settled, 0
        return n

    def _settle(self) -> None:
        """Store the chunk left to :meth:`finish`, if any (before any other statement)."""
        deferred, self._deferred = self._deferred, None
        if deferred is not None:
            self._settled += deferred()

    def abort(self) -> None:
        """Forget the chunk left to :meth:`finish`, if any (on the way out of a failed ingest)."""
        self._deferred = None
        self._restore_cache()

    def close(self) -> None:
        """Drop the staging table (SQLite; PostgreSQL stages nothing)."""
        self._settle()
        if not self.pg:
            self.stage.drop(self.conn, checkfirst=True)
            self.conn.exec_driver_sql(f"DROP TABLE IF EXISTS temp.{ROWS_STAGE}")
            self._restore_cache()

    def _restore_cache(self) -> None:
        """SQLite: the connection's page cache back to its size before the load."""
        size, self._cache_size = self._cache_size, None
        if size is not None:
            self.conn.exec_driver_sql(f"PRAGMA cache_size = {int(size)}")

    # --- workers and items with their own data -------------------------------------------

    def upsert_items(self, records: Iterable[ItemRecord]) -> int:
        """Items with gold values or texts; a value not given keeps the stored one."""
        self._settle()
        merged: dict[str, list[str | None]] = {}
        for item, gold, text_ in records:
            have = merged.setdefault(item, [None, None])
            have[0] = gold if gold is not None else have[0]
            have[1] = text_ if text_ is not None else have[1]
        if not merged:
            return 0
        cid = self.campaign.id
        stmt = self.insert(I)
        stmt = stmt.on_conflict_do_update(
            index_elements=[I.c.campaign_id, I.c.external_id],
            set_={
                "gold": func.coalesce(stmt.excluded.gold, I.c.gold),
                "text": func.coalesce(stmt.excluded.text, I.c.text),
            },
        )
        rows = [
            {"campaign_id": cid, "external_id": k, "gold": g, "text": t}
            for k, (g, t) in merged.items()
        ]
        self.conn.execute(stmt, rows)
        return len(rows)

    def upsert_workers(self, records: Iterable[WorkerRecord]) -> int:
        """Workers with what the platform says of them (``Worker.platform``)."""
        self._settle()
        merged: dict[str, dict[str, Any]] = {}
        for worker, platform in records:
            merged.setdefault(worker, {}).update(platform)
        if not merged:
            return 0
        stmt = self.insert(W)
        stmt = stmt.on_conflict_do_update(
            index_elements=[W.c.campaign_id, W.c.external_id],
            set_={"platform": stmt.excluded.platform},
        )
        cid = self.campaign.id
        rows = [
            {"campaign_id": cid, "external_id": k, "status": "ok", "weight": 1.0, "platform": p}
            for k, p in merged.items()
        ]
        self.conn.execute(stmt, rows)
        return len(rows)

    # --- judgments ------------------------------------------------------------------------

    def prepare(
        self,
        records: Sequence[JudgmentRecord] | Sequence[PreferenceRecord],
        known: Mapping[str, bytes] | None = None,
    ) -> Chunk:
        """The part of :meth:`load` that needs no database: the first record of each dedup
        key, the keys' digests, the chunk's workers and items, and (PostgreSQL, into a campaign
        that was empty) which digests the Bloom filter may have seen. The ingest calls it in
        the reading thread, chunk after chunk in file order, while the previous chunk loads."""
        unique: dict[str, Any] = {}
        setdefault = unique.setdefault
        for record in records:
            setdefault(record[4], record)
        rows = list(unique.values())
        sha, size = hashlib.sha256, DIGEST_SIZE  # dedup_digest(key), inlined
        if known:  # the digests already made (of the keys with an id)
            digests = [known.get(k) or sha(k.encode()).digest()[:size] for k in unique]
        else:
            digests = [sha(key.encode()).digest()[:size] for key in unique]
        workers = dict.fromkeys([r[0] for r in rows])
        if self.pairwise:
            items = dict.fromkeys([x for r in rows for x in (r[1], r[2])])
        else:
            items = dict.fromkeys([r[1] for r in rows])
        maybe = self.seen.add(digests) if self.pg and self.seen is not None else None
        return Chunk(records, rows, digests, workers, items, maybe)

    def load(self, records: Sequence[JudgmentRecord] | Sequence[PreferenceRecord]) -> int:
        """Store one chunk (records, or the :class:`Chunk` :meth:`prepare` made of them);
        return how many were new (the others were duplicates). With ``defer`` (PostgreSQL),
        only its workers and items are stored here, the rest by :meth:`finish`: 0 here."""
        self._settle()
        if not records:
            return 0
        chunk = records if isinstance(records, Chunk) else self.prepare(records)
        rows, digests = chunk.rows, chunk.digests
        workers = self.ids(W, chunk.workers)
        items = self.ids(I, chunk.items)
        if not self.pg and self.campaign.kind != "multilabel":
            self._stage_rows(rows, digests, workers, items)
            if self.defer:  # finish() stores them (a statement that leaves the GIL free)
                self._deferred = self._insert_staged
                return 0
            return self._insert_staged()
        if self.pairwise:
            staged = [
                (workers[r[0]], items[r[1]], items[r[2]], r[3], d, r[5], r[6], r[7], r[8])
                for r, d in zip(rows, digests, strict=True)
            ]
        else:
            staged = [
                (workers[r[0]], items[r[1]], r[2], r[3], d, r[5], r[6], r[7], r[8])
                for r, d in zip(rows, digests, strict=True)
            ]
        if self.pg:
            if self.defer:  # finish() stores them
                self._deferred = lambda: self._copy_new(staged, digests, rows, chunk.maybe)
                return 0
            return self._copy_new(staged, digests, rows, chunk.maybe)
        self._stage(staged)
        return self._insert_multilabel(rows, digests)

    def ids(self, table: Table, keys: dict[str, None]) -> dict[str, int]:
        """Database ids of the campaign's workers or items named ``keys``, created if new
        (in the order of ``keys``)."""
        known = self.known[table.name]
        found = {k: known[k] for k in keys if k in known}
        wanted = [k for k in keys if k not in found]
        for attempt in range(2):
            if not wanted:
                break
            for start in range(0, len(wanted), LOOKUP_BATCH):
                found.update(self._lookup(table, wanted[start : start + LOOKUP_BATCH]))
            wanted = [k for k in wanted if k not in found]
            if not wanted or attempt:
                break
            found.update(self._create(table, wanted))
            wanted = [k for k in wanted if k not in found]  # another transaction's, if any
        if len(known) + len(found) > CACHE_SIZE:
            known.clear()
        known.update(found)
        return found

    def _lookup(self, table: Table, keys: list[str]) -> list[tuple[str, int]]:
        if self.pg:  # one array parameter instead of thousands, straight through psycopg
            query = SQL(
                "SELECT external_id, id FROM {table} WHERE campaign_id = %s"
                " AND external_id = ANY(%b::text[])"
            ).format(table=Identifier(table.name))
            with self._cursor() as cursor:
                cursor.execute(query, (self.campaign.id, keys))
                return cursor.fetchall()
        # One JSON array parameter instead of thousands, straight through sqlite3.
        cursor = self._cursor()
        try:
            cursor.execute(
                f"SELECT external_id, id FROM {table.name} WHERE campaign_id = ?"  # noqa: S608
                " AND external_id IN (SELECT value FROM json_each(?))",
                (self.campaign.id, json.dumps(keys)),
            )
            return cursor.fetchall()
        finally:
            cursor.close()

    def _create(self, table: Table, keys: list[str]) -> list[tuple[str, int]]:
        """Create the rows named ``keys`` that do not exist; return the new ones with their ids
        (RETURNING spares a second lookup)."""
        cid = self.campaign.id
        extra = {"status": "ok", "weight": 1.0} if table is W else {}
        if self.pg:  # in the order of keys (ids follow it), straight through psycopg
            query = SQL(
                "INSERT INTO {table} (campaign_id, external_id{names})"
                " SELECT %s, new_keys.name{values}"
                " FROM unnest(%b::text[]) WITH ORDINALITY AS new_keys(name, n)"
                " ORDER BY new_keys.n"
                " ON CONFLICT (campaign_id, external_id) DO NOTHING"
                " RETURNING external_id, id"
            ).format(
                table=Identifier(table.name),
                names=SQL("").join(SQL(", ") + Identifier(name) for name in extra),
                values=SQL(", %s" * len(extra)),
            )
            with self._cursor() as cursor:
                cursor.execute(query, (cid, *extra.values(), keys))
                return cursor.fetchall()
        # One statement of one JSON array, straight through sqlite3, in the order of keys.
        names = ", ".join(("campaign_id", "external_id", *extra))
        marks = "".join(", ?" * len(extra))
        cursor = self._cursor()
        try:
            cursor.execute(
                f"INSERT INTO {table.name} ({names})"  # noqa: S608 - names
                f" SELECT ?, value{marks} FROM json_each(?) WHERE true ORDER BY key"
                " ON CONFLICT (campaign_id, external_id) DO NOTHING RETURNING external_id, id",
                (cid, *extra.values(), json.dumps(keys)),
            )
            return cursor.fetchall()
        finally:
            cursor.close()

    def _executemany(self, sql: str, rows: list[tuple[Any, ...]]) -> int:
        """``sql`` for each of ``rows`` on the sqlite3 connection under the transaction; the
        number of rows it changed."""
        cursor = self._cursor()
        try:
            cursor.executemany(sql, rows)
            return int(cursor.rowcount)
        finally:
            cursor.close()

    # --- PostgreSQL: look up, then COPY ------------------------------------------------------

    def _cursor(self) -> Any:  # noqa: ANN401 - a psycopg cursor
        return self.conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]

    def _stored(self, digests: list[bytes], maybe: np.ndarray | None) -> set[bytes]:
        """The digests among ``digests`` that the campaign has stored already (``maybe``: those
        the Bloom filter may have seen, when the campaign was empty at the start)."""
        if self.seen is not None:
            if maybe is None:
                maybe = self.seen.add(digests)
            if not maybe.any():
                return set()
            digests = [d for d, m in zip(digests, maybe.tolist(), strict=True) if m]
        # One bytea of the sorted digests (an array of 50,000 costs more to send than to look
        # up) and one probe of the unique index per digest: LIMIT 1 in LATERAL keeps the
        # planner from scanning the campaign instead.
        query = SQL(
            "SELECT x.d FROM generate_series(0, length(%(b)s) / %(size)s - 1) AS i, LATERAL"
            " (SELECT t.dedup_key AS d FROM {table} AS t WHERE t.campaign_id = %(c)s"
            "  AND t.dedup_key = substring(%(b)s FROM i * %(size)s + 1 FOR %(size)s)"
            "  LIMIT 1) AS x"
        ).format(table=Identifier(self.target.name))
        packed = b"".join(sorted(digests))
        with self._cursor() as cursor:
            cursor.execute(
                query, {"b": packed, "size": DIGEST_SIZE, "c": self.campaign.id}, binary=True
            )
            return {bytes(row[0]) for row in cursor}

    def _copy_new(
        self,
        staged: list[tuple[Any, ...]],
        digests: list[bytes],
        rows: list[Any],
        maybe: np.ndarray | None,
    ) -> int:
        stored = self._stored(digests, maybe)
        if stored:
            keep = [d not in stored for d in digests]
            staged = [s for s, k in zip(staged, keep, strict=True) if k]
            rows = [r for r, k in zip(rows, keep, strict=True) if k]
        if not staged:
            return 0
        middle, middle_types = COPY_PREFERENCES if self.pairwise else COPY_JUDGMENTS
        names = ["campaign_id", "batch_id", "worker_id", *middle, *COPY_TAIL]
        types = ["int8", "int8", "int8", *middle_types, *COPY_TAIL_TYPES]
        head: tuple[int, ...] = (self.campaign.id, self.batch_id)
        ids: list[int] | None = None
        if self.campaign.kind == "multilabel":
            ids = self._new_ids(len(staged))
            names.insert(0, "id")
            types.insert(0, "int8")
        sql = f"COPY {self.target.name} ({', '.join(names)}) FROM STDIN (FORMAT BINARY)"
        if ids is None:
            self._copy(sql, types, (head + row for row in staged))
        else:
            self._copy(sql, types, ((i, *head, *row) for i, row in zip(ids, staged, strict=True)))
            self._copy(
                f"COPY {A.name} (judgment_id, annotation, count) FROM STDIN (FORMAT BINARY)",
                ["int8", "text", "int4"],
                (
                    (new_id, annotation, count)
                    for new_id, r in zip(ids, rows, strict=True)
                    for annotation, count in (r[9] or ())
                ),
            )
        return len(staged)

    def _copy(self, sql: str, types: list[str], rows: Iterable[tuple[Any, ...]]) -> None:
        """A binary COPY of ``rows``, sent when they are all encoded.

        The rows are encoded into libpq's buffer and flushed once at the end (not every 128
        KiB): each flush gives up the GIL, and taking it back from the thread that validates
        the next chunk costs up to a switch interval (5 ms), hundreds of times a chunk.
        """
        with self._cursor() as cursor:
            # The C dumper of bytes (psycopg.dbapi20 registers a Python one for bytea).
            cursor.adapters.register_dumper(bytes, BytesBinaryDumper)
            writer = LibpqWriter(cursor, flush_threshold=1 << 62)
            with cursor.copy(sql, writer=writer) as copy:
                copy.set_types(types)
                write = copy.write_row
                for row in rows:
                    write(row)

    def _new_ids(self, n: int) -> list[int]:
        """``n`` ids from the judgments' sequence, increasing (file order)."""
        sql = "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)"
        with self._cursor() as cursor:
            cursor.execute(sql, (self.target.name, n))
            return sorted(row[0] for row in cursor)

    # --- SQLite: stage, then insert-select ---------------------------------------------------

    def _stage(self, rows: list[tuple[Any, ...]]) -> None:
        conn, stage = self.conn, self.stage
        start = self.seq
        self.seq += len(rows)
        names = [c.name for c in stage.columns]
        conn.execute(stage.delete())
        conn.execute(
            stage.insert(),
            [dict(zip(names, (seq, *r), strict=True)) for seq, r in enumerate(rows, start)],
        )

    def _stage_rows(
        self,
        rows: list[Any],
        digests: list[bytes],
        workers: dict[str, int],
        items: dict[str, int],
    ) -> None:
        """SQLite: the chunk's rows into the TEMP table, one executemany through sqlite3, the
        values bound as SQLAlchemy would store them (the JSON column's serializer) but the
        time, bound as microseconds since 1970 (:func:`epoch_microseconds`; the insert into
        the table writes :func:`sqlite_time`'s text), without its per-row parameter dicts;
        ``seq`` (the rowid) keeps the file order. The columns no row of the chunk fills are
        not bound (they stay NULL): binding costs per value."""
        dialect = self.conn.dialect
        dump = self.target.c.payload.type.dialect_impl(dialect).bind_processor(dialect)
        if dump is None:  # pragma: no cover - JSON always has one
            raise RuntimeError("the payload column has no JSON serializer")
        values = staged_values(rows, digests, workers, items, dump, pairwise=self.pairwise)
        sql, values = bound_rows(self._stage_columns, values, self._stage_sql)
        self._executemany(f"DELETE FROM temp.{ROWS_STAGE}", [()])  # noqa: S608 - a name
        self._executemany(sql, values)

    def _insert_staged(self) -> int:
        """SQLite: the staged rows into the target, ``ON CONFLICT (campaign_id, dedup_key) DO
        NOTHING``, in file order (ids follow it): one statement, one call into SQLite that
        leaves the GIL free while it runs (the ingest reads the next chunk meanwhile, see
        :meth:`~monitor.ingest.chunks.FileRun.run`). The number of new rows."""
        cursor = self._cursor()
        try:
            cursor.execute(self._insert_sql, (self.campaign.id, self.batch_id))
            return int(cursor.rowcount)
        finally:
            cursor.close()

    def _insert_from_stage(self):  # noqa: ANN202 - a dialect Insert
        s = self.stage
        target = self.target
        names = [c.name for c in s.columns if c.name != "seq"]
        rows = (
            select(
                literal(self.campaign.id, BigInteger),
                literal(self.batch_id, BigInteger),
                *(s.c[n] for n in names),
            )
            .where(s.c.seq >= 0)  # SQLite: a WHERE keeps ON CONFLICT from reading as a join
            .order_by(s.c.seq)
        )
        return (
            self.insert(target)
            .from_select(["campaign_id", "batch_id", *names], rows)
            .on_conflict_do_nothing(index_elements=[target.c.campaign_id, target.c.dedup_key])
        )

    def _insert_multilabel(self, rows: list[JudgmentRecord], digests: list[bytes]) -> int:
        stmt = self._insert_from_stage().returning(J.c.dedup_key, J.c.id)
        new = {bytes(d): i for d, i in self.conn.execute(stmt)}
        annotations = [
            {"judgment_id": new[d], "annotation": annotation, "count": count}
            for r, d in zip(rows, digests, strict=True)
            if d in new
            for annotation, count in (r[9] or ())
        ]
        if annotations:
            self.conn.execute(A.insert(), annotations)
        return len(new)

    def withdraw(self, digests: Sequence[bytes]) -> int:
        """Take back the judgments of this file with these dedup digests (set aside after they
        were stored); return how many there were."""
        self._settle()
        if not digests:
            return 0
        table = self.target
        stmt = (
            table.delete()
            .where(table.c.campaign_id == self.campaign.id, table.c.batch_id == self.batch_id)
            .where(table.c.dedup_key.in_(list(digests)))
            .execution_options(preserve_rowcount=True)
        )
        return int(self.conn.execute(stmt).rowcount)

    # --- rejected rows --------------------------------------------------------------------

    def reject(self, rows: Sequence[tuple[int | None, str, list[str]]]) -> None:
        """Keep refused rows (``--skip-invalid``) with their reasons (a NUL or a lone surrogate
        of the raw text written as an escape: both databases store the same)."""
        self._settle()
        if rows:
            self.conn.execute(
                R.insert(),
                [
                    {
                        "batch_id": self.batch_id,
                        "line": line,
                        "raw": storable_text(raw),
                        "reasons": [storable_text(r) for r in reasons],
                    }
                    for line, raw, reasons in rows
                ],
            )
