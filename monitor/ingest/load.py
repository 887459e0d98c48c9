"""Bulk loading of validated records, inside the caller's transaction.

Per chunk: the judgments go into a TEMP staging table (PostgreSQL: ``COPY`` through psycopg 3 on
the connection's own transaction; SQLite: one executemany), the chunk's workers and items are
upserted from it (``INSERT ... SELECT ... ON CONFLICT DO NOTHING``, in order of first
appearance), and one ``INSERT ... SELECT ... ON CONFLICT (campaign_id, dedup_key) DO NOTHING``
joins the external ids to the database ids and stores the new judgments. Its row count is the
number of new judgments; the rest of the chunk were duplicates. Nothing is committed here: the
caller's transaction holds the whole file.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    Connection,
    DateTime,
    Double,
    MetaData,
    Table,
    Text,
    any_,
    func,
    literal,
    select,
)
from sqlalchemy.dialects import postgresql, sqlite

from monitor.ingest.validate import ItemRecord, JudgmentRecord, PreferenceRecord, WorkerRecord
from monitor.store.campaigns import CampaignInfo
from monitor.store.models import (
    Item,
    Judgment,
    JudgmentAnnotation,
    Preference,
    RejectedRow,
    Worker,
)

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
        Column("dedup_key", Text),
        Column("external_id", Text),
        Column("created_at", _TIME),
        Column("duration_s", Double),
        Column("payload", _JSON),
        prefixes=["TEMPORARY"],
        postgresql_on_commit="DROP",
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
LOOKUP_BATCH = 10_000

W = Worker.__table__
I = Item.__table__  # noqa: E741
J = Judgment.__table__
P = Preference.__table__
A = JudgmentAnnotation.__table__
R = RejectedRow.__table__


class Loader:
    """Stores the chunks of one file of one campaign, as ingest batch ``batch_id``."""

    def __init__(self, conn: Connection, campaign: CampaignInfo, batch_id: int) -> None:
        self.conn = conn
        self.campaign = campaign
        self.batch_id = batch_id
        self.pg = conn.dialect.name == "postgresql"
        self.insert = postgresql.insert if self.pg else sqlite.insert
        self.pairwise = campaign.kind == "pairwise"
        self.stage = STAGE_PREFERENCES if self.pairwise else STAGE_JUDGMENTS
        self.stage.drop(conn, checkfirst=True)
        self.stage.create(conn)
        if self.pg:
            # Sorting a chunk by file order must not spill to disk.
            conn.exec_driver_sql("SET LOCAL work_mem = '64MB'")
        self.seq = 0

    def close(self) -> None:
        """Drop the staging table (PostgreSQL drops it at commit anyway)."""
        self.stage.drop(self.conn, checkfirst=True)

    # --- workers and items with their own data -------------------------------------------

    def upsert_items(self, records: Iterable[ItemRecord]) -> int:
        """Items with gold values or texts; a value not given keeps the stored one."""
        merged: dict[str, list[str | None]] = {}
        for item, gold, text in records:
            have = merged.setdefault(item, [None, None])
            have[0] = gold if gold is not None else have[0]
            have[1] = text if text is not None else have[1]
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

    def load(self, records: Sequence[JudgmentRecord] | Sequence[PreferenceRecord]) -> int:
        """Store one chunk; return how many were new (the others were duplicates)."""
        if not records:
            return 0
        unique: dict[str, Any] = {}
        for record in records:
            unique.setdefault(record[4], record)
        rows = list(unique.values())
        workers = self.ids(W, dict.fromkeys(r[0] for r in rows))
        if self.pairwise:
            items = self.ids(I, dict.fromkeys(x for r in rows for x in (r[1], r[2])))
            staged = [
                (workers[r[0]], items[r[1]], items[r[2]], r[3], r[4], r[5], r[6], r[7], r[8])
                for r in rows
            ]
        else:
            items = self.ids(I, dict.fromkeys(r[1] for r in rows))
            staged = [
                (workers[r[0]], items[r[1]], r[2], r[3], r[4], r[5], r[6], r[7], r[8]) for r in rows
            ]
        self._stage(staged)
        if self.campaign.kind == "multilabel":
            return self._insert_multilabel(rows)
        stmt = self._insert_from_stage().execution_options(preserve_rowcount=True)
        return int(self.conn.execute(stmt).rowcount)

    def ids(self, table: Table, keys: dict[str, None]) -> dict[str, int]:
        """Database ids of the campaign's workers or items named ``keys``, created if new
        (in the order of ``keys``)."""
        found: dict[str, int] = {}
        wanted = list(keys)
        for attempt in range(2):
            for start in range(0, len(wanted), LOOKUP_BATCH):
                found.update(self._lookup(table, wanted[start : start + LOOKUP_BATCH]))
            wanted = [k for k in wanted if k not in found]
            if not wanted or attempt:
                break
            found.update(self._create(table, wanted))
            wanted = [k for k in wanted if k not in found]  # another transaction's, if any
            if not wanted:
                break
        return found

    def _lookup(self, table: Table, keys: list[str]) -> list[tuple[str, int]]:
        if self.pg:  # one array parameter instead of thousands
            match = table.c.external_id == any_(literal(keys, postgresql.ARRAY(Text)))
        else:
            match = table.c.external_id.in_(keys)
        query = select(table.c.external_id, table.c.id).where(
            table.c.campaign_id == self.campaign.id, match
        )
        return [(k, i) for k, i in self.conn.execute(query)]

    def _create(self, table: Table, keys: list[str]) -> list[tuple[str, int]]:
        """Create the rows named ``keys`` that do not exist; on PostgreSQL, return the new
        ones with their ids (RETURNING spares a second lookup)."""
        cid = self.campaign.id
        extra = {"status": "ok", "weight": 1.0} if table is W else {}
        stmt = self.insert(table)
        if self.pg:
            names = (
                func.unnest(literal(keys, postgresql.ARRAY(Text)))
                .table_valued("name", with_ordinality="n")
                .render_derived(name="new_keys")
            )
            values = [literal(cid, BigInteger), names.c.name] + [literal(v) for v in extra.values()]
            stmt = stmt.from_select(
                ["campaign_id", "external_id", *extra],
                select(*values).order_by(names.c.n),
            )
            stmt = stmt.on_conflict_do_nothing(
                index_elements=["campaign_id", "external_id"]
            ).returning(table.c.external_id, table.c.id)
            return [(k, i) for k, i in self.conn.execute(stmt)]
        self.conn.execute(
            stmt.on_conflict_do_nothing(index_elements=["campaign_id", "external_id"]),
            [{"campaign_id": cid, "external_id": k, **extra} for k in keys],
        )
        return []

    def _stage(self, rows: list[tuple[Any, ...]]) -> None:
        conn, stage = self.conn, self.stage
        start = self.seq
        self.seq += len(rows)
        names = [c.name for c in stage.columns]
        if self.pg:
            conn.exec_driver_sql(f"TRUNCATE {stage.name}")
            cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
            dumps = json.dumps
            sql = f"COPY {stage.name} ({', '.join(names)}) FROM STDIN"
            with cursor, cursor.copy(sql) as copy:
                write = copy.write_row
                for seq, r in enumerate(rows, start):
                    payload = r[8]
                    write((seq, *r[:8], None if payload is None else dumps(payload)))
        else:
            conn.execute(stage.delete())
            conn.execute(
                stage.insert(),
                [dict(zip(names, (seq, *r), strict=True)) for seq, r in enumerate(rows, start)],
            )

    def _insert_from_stage(self):  # noqa: ANN202 - a dialect Insert
        s = self.stage
        target = P if self.pairwise else J
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

    def _insert_multilabel(self, rows: list[JudgmentRecord]) -> int:
        stmt = self._insert_from_stage().returning(J.c.dedup_key, J.c.id)
        new = dict(self.conn.execute(stmt).all())
        annotations = [
            (new[r[4]], annotation, count)
            for r in rows
            if r[4] in new
            for annotation, count in (r[9] or ())
        ]
        if annotations:
            if self.pg:
                cursor = self.conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
                sql = f"COPY {A.name} (judgment_id, annotation, count) FROM STDIN"
                with cursor, cursor.copy(sql) as copy:
                    for row in annotations:
                        copy.write_row(row)
            else:
                self.conn.execute(
                    A.insert(),
                    [{"judgment_id": j, "annotation": a, "count": n} for j, a, n in annotations],
                )
        return len(new)

    # --- rejected rows --------------------------------------------------------------------

    def reject(self, rows: Sequence[tuple[int | None, str, list[str]]]) -> None:
        """Keep refused rows (``--skip-invalid``) with their reasons."""
        if rows:
            self.conn.execute(
                R.insert(),
                [
                    {"batch_id": self.batch_id, "line": line, "raw": raw, "reasons": reasons}
                    for line, raw, reasons in rows
                ],
            )
