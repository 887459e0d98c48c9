"""Loading a campaign's judgments as integer-coded arrays (:mod:`monitor.store.coded`), whole
or extended with what arrived since a kept copy.

Workers and items are coded 0..W-1 and 0..N-1 in the order of their database ids (so codes are
stable as a campaign grows: new workers get new, larger codes). One query per table, no ORM
rows, no Python loop per judgment beyond the driver's own row conversion.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from monitor.core.catalog import Kind
from monitor.store.campaigns import CampaignCounts, CampaignInfo
from monitor.store.coded import (
    CampaignArrays,
    carry_latest,
    keep_pairs,
    kept_pairs,
    latest_per_pair,
)
from monitor.store.engine import psycopg_connection
from monitor.store.models import Item, Judgment, JudgmentAnnotation, Preference, Worker

OUTCOME_CODES = {"left": 1, "right": -1, "tie": 0}


def _code(db_ids: NDArray[np.int64], sorted_ids: NDArray[np.int64]) -> NDArray[np.int64]:
    return np.searchsorted(sorted_ids, db_ids).astype(np.int64)


_EPOCH = datetime(1970, 1, 1)
_EPOCH_UTC = _EPOCH.replace(tzinfo=UTC)
_SECOND = timedelta(seconds=1)


def epochs(created: list) -> NDArray[np.float64]:
    """Seconds since the epoch. SQLite hands back naive datetimes: they hold UTC (ingest
    stores UTC), never local time. A difference of datetimes, unlike ``datetime.timestamp()``,
    holds for any year (0001-01-01 included) whatever the local offset."""
    return np.array(
        [
            np.nan if c is None else (c - (_EPOCH if c.tzinfo is None else _EPOCH_UTC)) / _SECOND
            for c in created
        ],
        dtype=np.float64,
    )


def time_order(stamps: NDArray[np.float64], ids: NDArray[np.int64]) -> NDArray[np.int64]:
    """Rank of each row in time: by created_at (seconds since the epoch, NaN = missing: by
    arrival), then by database id."""
    if np.isnan(stamps).all():
        if np.all(ids[1:] > ids[:-1]):  # loaded in id order: the rank is the position
            return np.arange(ids.size, dtype=np.int64)
        return np.argsort(np.argsort(ids, kind="stable"), kind="stable").astype(np.int64)
    # Rows without a timestamp sort by arrival after the rows that have one.
    key = np.where(np.isnan(stamps), np.inf, stamps)
    order = np.lexsort((ids, key))
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank.astype(np.int64)


_NUMBERS = ("id", "worker", "item", "value", "duration", "epoch")
# PostgreSQL: each column of up to 2**22 consecutive ids as one bytea of big-endian 8-byte
# numbers (int8send/float8send), far below the 1 GB limit of a value; NaN stands for NULL.
_PG_NUMBERS = """
SELECT string_agg(int8send(id), ''::bytea),
       string_agg(int8send(worker_id), ''::bytea),
       string_agg(int8send(item_id), ''::bytea),
       string_agg(float8send(COALESCE(value_num, 'NaN')), ''::bytea),
       string_agg(float8send(COALESCE(duration_s, 'NaN')), ''::bytea),
       string_agg(float8send(COALESCE(EXTRACT(EPOCH FROM created_at)::float8, 'NaN')), ''::bytea)
FROM judgments WHERE campaign_id = %s AND id > %s AND id <= %s GROUP BY id >> 22
"""


def _workers(
    session: Session, cid: int, after: int = 0
) -> tuple[NDArray[np.int64], NDArray[np.object_]]:
    """Database ids (ascending) and external ids of a campaign's workers with ``id > after``."""
    return _ids_and_names(session, Worker, cid, after)


def _ids_and_names(
    session: Session, table: type[Worker] | type[Item], cid: int, after: int
) -> tuple[NDArray[np.int64], NDArray[np.object_]]:
    """Database ids (ascending) and external ids of a campaign's rows of ``table`` with
    ``id > after``, row by row."""
    rows = session.execute(
        select(table.id, table.external_id)
        .where(table.campaign_id == cid, table.id > after)
        .order_by(table.id)
    ).all()
    external = np.empty(len(rows), dtype=object)
    external[:] = [r[1] for r in rows]
    return np.array([r[0] for r in rows], dtype=np.int64), external


def gold_signature(session: Session, cid: int) -> str | None:
    """A digest of the campaign's gold values (which items, which values); None without gold.
    A run keeps it: gold ingested since changes it, and the next run counts it."""
    rows = session.execute(
        select(Item.id, Item.gold)
        .where(Item.campaign_id == cid, Item.gold.is_not(None))
        .order_by(Item.id)
    ).all()
    if not rows:
        return None
    digest = hashlib.blake2b(digest_size=16)
    for item_id, gold in rows:
        digest.update(f"{item_id}\t{gold}\n".encode())
    return digest.hexdigest()


def _gold(session: Session, cid: int, item_db: NDArray[np.int64]) -> NDArray[np.object_]:
    """The gold answer of each item (None where there is none), in the order of ``item_db``."""
    gold = np.full(item_db.size, None, dtype=object)
    given = session.execute(
        select(Item.id, Item.gold).where(Item.campaign_id == cid, Item.gold.is_not(None))
    ).all()
    if given:
        gold[_code(np.array([r[0] for r in given], dtype=np.int64), item_db)] = [
            r[1] for r in given
        ]
    return gold


def _items(
    session: Session, cid: int, after: int = 0
) -> tuple[NDArray[np.int64], NDArray[np.object_]]:
    """Database ids (ascending) and external ids of a campaign's items with ``id > after``.
    PostgreSQL sends the external ids as one JSON array (no Python object per row but the
    strings themselves)."""
    if session.get_bind().dialect.name == "postgresql":
        with psycopg_connection(session).cursor(binary=True) as cursor:
            cursor.execute(
                "SELECT string_agg(int8send(id), ''::bytea ORDER BY id), "
                "json_agg(external_id ORDER BY id)::text FROM items "
                "WHERE campaign_id = %s AND id > %s",
                (int(cid), int(after)),
            )
            packed, names = cursor.fetchone()
        if packed is None:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=object)
        ids = np.frombuffer(packed, dtype=">i8").astype(np.int64)
        external = np.empty(ids.size, dtype=object)
        external[:] = json.loads(names)
        return ids, external
    return _ids_and_names(session, Item, cid, after)


def _judgment_numbers(
    session: Session, cid: int, watermark: int | None, after: int = 0
) -> dict[str, NDArray[Any]]:
    """id, worker, item, value, duration and created_at (epoch seconds; NaN where missing) of
    the campaign's judgments with ``after < id <= watermark``, in id order, by name.

    PostgreSQL packs each column into a few byte strings that NumPy reads as they are (no
    Python object per row: ten times faster than fetching rows); SQLite goes through rows.
    """
    upto = 2**63 - 1 if watermark is None else int(watermark)
    if session.get_bind().dialect.name == "postgresql":
        with psycopg_connection(session).cursor(binary=True) as cursor:
            cursor.execute(_PG_NUMBERS, (int(cid), int(after), upto))
            groups: list[list[Any]] = [list(g) for g in cursor.fetchall()]
        kinds = (">i8",) * 3 + (">f8",) * 3
        columns = {}
        for k, (name, kind) in enumerate(zip(_NUMBERS, kinds, strict=True)):
            parts = [np.frombuffer(g[k], dtype=kind) for g in groups] or [np.empty(0, kind)]
            columns[name] = np.concatenate(parts).astype(kind[1:])
            for g in groups:  # the bytes are copied: let them go as we go
                g[k] = None
        ids = columns["id"]
        if not np.all(ids[1:] > ids[:-1]):
            order = np.argsort(ids, kind="stable")
            columns = {name: c[order] for name, c in columns.items()}
        return columns
    return _sqlite_numbers(session, cid, after, upto)


_SQLITE_NUMBERS = (
    "SELECT id, worker_id, item_id, value_num, duration_s, created_at FROM judgments"
    " WHERE campaign_id = ? AND id > ? AND id <= ? ORDER BY id"
)
SQLITE_BATCH = 100_000
"""Rows read at a time on SQLite: each becomes NumPy arrays before the next is fetched, so
that no Python object per judgment outlives its batch (4 million rows as Python objects take
gigabytes)."""


def _sqlite_numbers(session: Session, cid: int, after: int, upto: int) -> dict[str, NDArray[Any]]:
    """:func:`_judgment_numbers` on SQLite: the rows through the sqlite3 cursor of the
    session's transaction, a batch at a time, the times read as the column type reads them."""
    dialect = session.get_bind().dialect
    time_type = Judgment.__table__.c.created_at.type.dialect_impl(dialect)
    read_time = time_type.result_processor(dialect, None) or (lambda value: value)
    parts: dict[str, list[NDArray[Any]]] = {name: [] for name in _NUMBERS}
    nan = np.nan
    cursor = session.connection().connection.driver_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(_SQLITE_NUMBERS, (int(cid), int(after), upto))
        while rows := cursor.fetchmany(SQLITE_BATCH):
            cols: list[Any] = list(zip(*rows, strict=True))
            del rows
            parts["id"].append(np.array(cols[0], dtype=np.int64))
            parts["worker"].append(np.array(cols[1], dtype=np.int64))
            parts["item"].append(np.array(cols[2], dtype=np.int64))
            parts["value"].append(
                np.array([nan if v is None else v for v in cols[3]], dtype=np.float64)
            )
            parts["duration"].append(
                np.array([nan if d is None else d for d in cols[4]], dtype=np.float64)
            )
            parts["epoch"].append(epochs([None if c is None else read_time(c) for c in cols[5]]))
    finally:
        cursor.close()
    kinds = (np.int64,) * 3 + (np.float64,) * 3
    return {
        name: np.concatenate(parts[name]) if parts[name] else np.empty(0, dtype=kind)
        for name, kind in zip(_NUMBERS, kinds, strict=True)
    }


def load_arrays(
    session: Session, campaign: CampaignInfo, watermark: int | None = None
) -> CampaignArrays:
    """Load every judgment of ``campaign`` with ``id <= watermark`` (all if None)."""
    cid = campaign.id
    worker_db, worker_ids = _workers(session, cid)
    item_db, item_ids = _items(session, cid)
    common: dict[str, Any] = {
        "worker_ids": worker_ids,
        "worker_db_ids": worker_db,
        "item_ids": item_ids,
        "item_db_ids": item_db,
        "item_gold": _gold(session, cid, item_db),
    }
    if campaign.kind == Kind.PAIRWISE:
        return _load_preferences(session, campaign, watermark, worker_db, item_db, common)
    part = _judgments(session, campaign, 0, watermark, worker_db, item_db)
    ids = part["ids"]
    if campaign.kind == Kind.LABEL:
        seen = sorted(set(part["raw_labels"].tolist()))
        categories = tuple(campaign.categories or ()) or tuple(seen)
        categories = categories + tuple(s for s in seen if s not in set(categories))
        part["values"] = _label_codes(part["raw_labels"], categories)
        part["categories"] = categories
    elif campaign.kind == Kind.MULTILABEL:
        names = list(campaign.categories or ())
        names += sorted(set(part["ann_raw"].tolist()) - set(names))
        part["ann_code"] = _label_codes(part.pop("ann_raw"), tuple(names)).astype(np.int64)
        part["annotation_names"] = tuple(names)
    part.pop("raw_labels", None)
    return CampaignArrays(
        kind=campaign.kind, order=time_order(part["created_s"], ids), **part, **common
    )


def _label_codes(labels: NDArray[np.object_], names: tuple[str, ...]) -> NDArray[np.float64]:
    lookup = {c: i for i, c in enumerate(names)}
    return np.array([lookup[v] for v in labels.tolist()], dtype=np.float64)


def _judgments(
    session: Session,
    campaign: CampaignInfo,
    after: int,
    watermark: int | None,
    worker_db: NDArray[np.int64],
    item_db: NDArray[np.int64],
) -> dict:
    """The judgments with ``after < id <= watermark`` as arrays (CampaignArrays' fields; labels
    and annotations still as strings: ``raw_labels``, ``ann_raw``)."""
    cid = campaign.id
    upto = 2**63 - 1 if watermark is None else int(watermark)
    numbers = _judgment_numbers(session, cid, watermark, after)
    ids = numbers.pop("id")
    out: dict = {
        "ids": ids,
        "workers": _code(numbers.pop("worker"), worker_db),
        "items": _code(numbers.pop("item"), item_db),
        "duration_s": numbers.pop("duration"),
        "created_s": numbers.pop("epoch"),
        "values": np.full(ids.size, np.nan),
    }
    if campaign.kind == Kind.RATING:
        out["values"] = numbers.pop("value")
    elif campaign.kind == Kind.LABEL:
        q = select(Judgment.value_label).where(
            Judgment.campaign_id == cid, Judgment.id > after, Judgment.id <= upto
        )
        labels = np.array(session.scalars(q.order_by(Judgment.id)).all(), dtype=object)
        out["raw_labels"] = labels
    elif campaign.kind == Kind.MULTILABEL:
        aq = (
            select(
                JudgmentAnnotation.judgment_id,
                JudgmentAnnotation.annotation,
                JudgmentAnnotation.count,
            )
            .join(Judgment, Judgment.id == JudgmentAnnotation.judgment_id)
            .where(Judgment.campaign_id == cid, Judgment.id > after, Judgment.id <= upto)
            .order_by(JudgmentAnnotation.judgment_id, JudgmentAnnotation.annotation)
        )
        arows = session.execute(aq).all()
        acols: list[Any] = list(zip(*arows, strict=True)) if arows else [[]] * 3
        raw = np.empty(len(arows), dtype=object)
        raw[:] = list(acols[1])
        out["ann_judgment"] = np.searchsorted(ids, np.array(acols[0], dtype=np.int64)).astype(
            np.int64
        )
        out["ann_raw"] = raw
        out["ann_count"] = np.array(acols[2], dtype=np.int64)
    return out


def extend_arrays(
    session: Session,
    campaign: CampaignInfo,
    base: CampaignArrays,
    watermark: int,
    counted: CampaignCounts | None = None,
) -> CampaignArrays | None:
    """``base`` (a load of ``campaign`` up to its own watermark) with the judgments, workers and
    items that arrived since, up to ``watermark``: the arrays :func:`load_arrays` would give,
    reading only what is new. None when that cannot be guaranteed (the caller loads afresh):
    pairwise campaigns, a judgment deleted or committed late below ``base.watermark`` (the
    number or the sum of the ids up to ``watermark`` differs), a worker or an item committed
    below the last known one, or a label or annotation name the base has no code for.

    Codes stay stable because ids only grow: new workers and items sort after the known ones.
    ``counted``: the campaign's counts (:func:`~monitor.store.campaigns.campaign_counts`) when
    the caller read them in the same snapshot with ``watermark`` their ``max_id`` (saves a scan
    of the campaign's judgments and two counts).
    """
    if campaign.kind == Kind.PAIRWISE or base.kind != campaign.kind or base.watermark > watermark:
        return None
    cid = campaign.id
    if counted is None:
        n, total = session.execute(
            select(func.count(Judgment.id), func.coalesce(func.sum(Judgment.id), 0)).where(
                Judgment.campaign_id == cid, Judgment.id <= watermark
            )
        ).one()
        n_workers, n_items = (
            session.scalar(select(func.count(t.id)).where(t.campaign_id == cid))
            for t in (Worker, Item)
        )
    else:
        n, total = counted.n_judgments, counted.id_sum
        n_workers, n_items = counted.n_workers, counted.n_items
    last_w = int(base.worker_db_ids[-1]) if base.worker_db_ids.size else 0
    last_i = int(base.item_db_ids[-1]) if base.item_db_ids.size else 0
    new_w, new_w_ids = _workers(session, cid, last_w)
    new_i, new_i_ids = _items(session, cid, last_i)
    if (n_workers, n_items) != (
        base.worker_db_ids.size + new_w.size,
        base.item_db_ids.size + new_i.size,
    ):
        return None
    worker_db = np.concatenate([base.worker_db_ids, new_w])
    item_db = np.concatenate([base.item_db_ids, new_i])
    part = _judgments(session, campaign, base.watermark, watermark, worker_db, item_db)
    if base.n + part["ids"].size != n or int(base.ids.sum()) + int(part["ids"].sum()) != int(total):
        return None
    extra: dict = {}
    if campaign.kind == Kind.LABEL:
        if not set(part["raw_labels"].tolist()) <= set(base.categories):
            return None
        part["values"] = _label_codes(part["raw_labels"], base.categories)
    elif campaign.kind == Kind.MULTILABEL:
        assert base.ann_judgment is not None and base.ann_code is not None
        assert base.ann_count is not None
        if not set(part["ann_raw"].tolist()) <= set(base.annotation_names):
            return None
        extra = {
            "ann_judgment": np.concatenate([base.ann_judgment, part["ann_judgment"] + base.n]),
            "ann_code": np.concatenate(
                [
                    base.ann_code,
                    _label_codes(part["ann_raw"], base.annotation_names).astype(np.int64),
                ]
            ),
            "ann_count": np.concatenate([base.ann_count, part["ann_count"]]),
            "annotation_names": base.annotation_names,
        }
    ids = np.concatenate([base.ids, part["ids"]])
    created = np.concatenate(
        [
            base.created_s if base.created_s is not None else np.full(base.n, np.nan),
            part["created_s"],
        ]
    )
    out = CampaignArrays(
        kind=campaign.kind,
        ids=ids,
        workers=np.concatenate([base.workers, part["workers"]]),
        items=np.concatenate([base.items, part["items"]]),
        values=np.concatenate([base.values, part["values"]]),
        duration_s=np.concatenate([base.duration_s, part["duration_s"]]),
        order=time_order(created, ids),
        worker_ids=np.concatenate([base.worker_ids, new_w_ids]),
        worker_db_ids=worker_db,
        item_ids=np.concatenate([base.item_ids, new_i_ids]),
        item_db_ids=item_db,
        item_gold=_gold(session, cid, item_db),
        categories=base.categories,
        created_s=created,
        **extra,
    )
    carry_latest(base, out)
    return out


def _load_preferences(
    session: Session,
    campaign: CampaignInfo,
    watermark: int | None,
    worker_db: NDArray[np.int64],
    item_db: NDArray[np.int64],
    common: dict,
) -> CampaignArrays:
    q = select(
        Preference.id,
        Preference.worker_id,
        Preference.left_item_id,
        Preference.right_item_id,
        Preference.outcome,
        Preference.duration_s,
        Preference.created_at,
    ).where(Preference.campaign_id == campaign.id)
    if watermark is not None:
        q = q.where(Preference.id <= watermark)
    rows = session.execute(q.order_by(Preference.id)).all()
    cols: list[Any] = list(zip(*rows, strict=True)) if rows else [[]] * 7
    ids = np.array(cols[0], dtype=np.int64)
    left = _code(np.array(cols[2], dtype=np.int64), item_db)
    outcome = np.array([OUTCOME_CODES[o] for o in cols[4]], dtype=np.int8)
    return CampaignArrays(
        kind=Kind.PAIRWISE,
        ids=ids,
        workers=_code(np.array(cols[1], dtype=np.int64), worker_db),
        items=left,
        values=np.full(ids.size, np.nan),
        duration_s=np.array([np.nan if d is None else d for d in cols[5]], dtype=np.float64),
        order=time_order(epochs(list(cols[6])), ids),
        left=left,
        right=_code(np.array(cols[3], dtype=np.int64), item_db),
        outcome=outcome,
        **common,
    )


__all__ = [
    "OUTCOME_CODES",
    "CampaignArrays",
    "extend_arrays",
    "keep_pairs",
    "kept_pairs",
    "latest_per_pair",
    "load_arrays",
]
