"""What each ingest brought: the batches of a campaign and the rows they rejected.

An ingest batch is one file (and its items file) ingested into one campaign, with its checksum
and counts; under ``--skip-invalid`` its refused rows are kept in ``rejected_rows`` with their
reasons (:mod:`monitor.ingest.api`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import CursorResult, Select, delete, func, select, text, update
from sqlalchemy.orm import Session

from monitor.core.catalog import Kind
from monitor.core.errors import NotFound
from monitor.store.campaigns import CampaignInfo
from monitor.store.models import (
    Campaign,
    IngestBatch,
    Item,
    Judgment,
    LiveScore,
    LiveStop,
    PlannedPair,
    Preference,
    RejectedRow,
    Worker,
    utcnow,
)


@dataclass(frozen=True)
class BatchInfo:
    """One ingest batch: the file, its sha256, when, and its rows read, stored (new),
    duplicate (already stored) and rejected."""

    id: int
    path: str
    checksum: str
    format: str
    n_rows: int
    n_new: int
    n_duplicate: int
    n_rejected: int
    started_at: datetime
    finished_at: datetime | None


@dataclass(frozen=True)
class RejectedInfo:
    """A rejected row: its batch, the file and line it came from, the reasons (each
    ``FILE:LINE: column 'NAME': what is wrong``) and the row as it was read."""

    batch_id: int
    path: str
    line: int | None
    reasons: list[str]
    raw: str


def ingest_batches(session: Session, campaign_id: int) -> list[BatchInfo]:
    """The campaign's ingest batches, oldest first."""
    rows = session.scalars(
        select(IngestBatch).where(IngestBatch.campaign_id == campaign_id).order_by(IngestBatch.id)
    )
    return [
        BatchInfo(
            b.id,
            b.path,
            b.checksum,
            b.format,
            b.n_rows,
            b.n_new,
            b.n_duplicate,
            b.n_rejected,
            b.started_at,
            b.finished_at,
        )
        for b in rows
    ]


def rejected_rows(
    session: Session, campaign_id: int, batch_id: int | None = None, *, chunk: int = 2000
) -> Iterator[RejectedInfo]:
    """The rejected rows of the campaign (or of one batch), batch by batch in file order,
    read ``chunk`` rows at a time."""
    q = (
        select(
            RejectedRow.batch_id,
            IngestBatch.path,
            RejectedRow.line,
            RejectedRow.reasons,
            RejectedRow.raw,
        )
        .join(IngestBatch, IngestBatch.id == RejectedRow.batch_id)
        .where(IngestBatch.campaign_id == campaign_id)
        .order_by(RejectedRow.batch_id, RejectedRow.id)
    )
    if batch_id is not None:
        q = q.where(RejectedRow.batch_id == batch_id)
    for b, path, line, reasons, raw in session.execute(q, execution_options={"yield_per": chunk}):
        reasons = list(reasons or [])
        yield RejectedInfo(b, _file_of(reasons, line, path), line, reasons, raw)


def _file_of(reasons: list[str], line: int | None, batch_path: str) -> str:
    """The file a rejected row came from: the batch's, or the items file's that its reason
    names (``ITEMS:LINE: ...``: an items file is ingested in its judgment file's batch)."""
    if reasons and line is not None and not reasons[0].startswith(f"{batch_path}:{line}:"):
        head, sep, _ = reasons[0].partition(f":{line}: ")
        if sep:
            return head
    return batch_path


@dataclass(frozen=True)
class Undone:
    """What undoing a batch took out: its judgments, the workers and items it alone brought,
    and how many rows later batches found already stored (they came with this one and went
    with it: ingesting those files again brings them back)."""

    batch_id: int
    path: str
    n_judgments: int
    n_workers: int
    n_items: int
    later_duplicates: int


def id_marks(session: Session, campaign_id: int) -> tuple[int, int]:
    """The campaign's newest worker and item ids (0 without any): recorded before and after
    each ingest batch."""
    w = session.scalar(select(func.max(Worker.id)).where(Worker.campaign_id == campaign_id))
    i = session.scalar(select(func.max(Item.id)).where(Item.campaign_id == campaign_id))
    return int(w or 0), int(i or 0)


def undo_batch(session: Session, campaign: CampaignInfo, batch_id: int) -> Undone:
    """Take one ingest batch out of ``campaign`` in the caller's transaction: the judgments it
    stored (every row keeps its batch, so no other is touched), its rejected rows, the
    answers it gave planned pairs, the workers and items it created that no other judgment
    uses, the categories it added to a campaign that takes them from the data, and the batch
    itself. The campaign's ``changed_at`` is set so that the next run is a full one.

    Not undone: the gold values or texts an items file of the batch gave items that existed
    before it, and the platform it set on the campaign. NotFound when the campaign has no such
    batch."""
    batch = session.get(IngestBatch, batch_id)
    if batch is None or batch.campaign_id != campaign.id:
        raise NotFound(
            f"campaign {campaign.name!r} has no ingest batch {batch_id}",
            hint=f"list its batches with: monitor ingest history --campaign {campaign.name}",
        )
    cid = campaign.id
    table: type[Judgment] | type[Preference] = (
        Preference if campaign.kind == Kind.PAIRWISE else Judgment
    )
    mine = (table.campaign_id == cid) & (table.batch_id == batch_id)
    if table is Preference:
        session.execute(
            update(PlannedPair)
            .where(
                PlannedPair.campaign_id == cid,
                PlannedPair.answered_id.in_(select(Preference.id).where(mine)),
            )
            .values(answered_id=None)
        )
    _forget_scores(session, cid, select(table.id).where(mine))
    done = session.execute(delete(table).where(mine).execution_options(synchronize_session=False))
    n = cast("CursorResult[Any]", done).rowcount
    path, workers, items = (
        batch.path,
        (batch.workers_before, batch.workers_after),
        (batch.items_before, batch.items_after),
    )
    session.execute(delete(RejectedRow).where(RejectedRow.batch_id == batch_id))
    session.execute(delete(IngestBatch).where(IngestBatch.id == batch_id))
    n_workers = _drop_unused(session, campaign, Worker, *workers)
    n_items = _drop_unused(session, campaign, Item, *items)
    later = session.scalar(
        select(func.coalesce(func.sum(IngestBatch.n_duplicate), 0)).where(
            IngestBatch.campaign_id == cid, IngestBatch.id > batch_id
        )
    )
    row = session.get_one(Campaign, cid)
    if campaign.kind == Kind.LABEL and (row.settings or {}).get("categories_from_data"):
        _data_categories_again(session, row)
    row.changed_at = utcnow()
    session.flush()
    return Undone(batch_id, path, int(n or 0), n_workers, n_items, int(later or 0))


def _forget_scores(session: Session, cid: int, ids: Select[Any]) -> None:
    """Take out the stop-test scores of the judgments ``ids`` (an id may be given again after
    they go), and the recorded stops of their workers: their tests are taken again, without
    them, by the next run."""
    gone = select(LiveScore.worker_id).where(
        LiveScore.campaign_id == cid, LiveScore.judgment_id.in_(ids)
    )
    session.execute(
        delete(LiveStop).where(LiveStop.campaign_id == cid, LiveStop.worker_id.in_(gone))
    )
    session.execute(
        delete(LiveScore).where(LiveScore.campaign_id == cid, LiveScore.judgment_id.in_(ids))
    )


def _drop_unused(
    session: Session,
    campaign: CampaignInfo,
    model: type[Worker] | type[Item],
    before: int | None,
    after: int | None,
) -> int:
    """Delete the campaign's workers (or items) that no remaining batch brought and no
    judgment or preference uses, once the batch that recorded ``(before, after]`` is gone;
    how many. A worker another batch brought and only the undone one used is also gone, as
    are those of an earlier undone batch that a later one used. Where a remaining batch
    recorded no ids (stored before they were), only those of ``(before, after]`` may go."""
    if before is None or after is None:
        return 0
    cid = campaign.id
    marks = (
        (IngestBatch.workers_before, IngestBatch.workers_after)
        if model is Worker
        else (IngestBatch.items_before, IngestBatch.items_after)
    )
    ranges = session.execute(select(*marks).where(IngestBatch.campaign_id == cid)).all()
    q = select(model.id).where(model.campaign_id == cid)
    if any(lo is None or hi is None for lo, hi in ranges):
        q = q.where(model.id > before, model.id <= after)
    ids = set(session.scalars(q))
    for lo, hi in ranges:
        if lo is not None and hi is not None:
            ids = {i for i in ids if not lo < i <= hi}
    if not ids:
        return 0
    if campaign.kind == Kind.PAIRWISE:
        if model is Worker:
            columns = [Preference.worker_id]
        else:
            columns = [Preference.left_item_id, Preference.right_item_id]
        where = Preference.campaign_id == cid
    else:
        columns = [Judgment.worker_id if model is Worker else Judgment.item_id]
        where = Judgment.campaign_id == cid
    for column in columns:  # one pass over the campaign's judgments (no index on these)
        ids.difference_update(session.scalars(select(column).where(where).distinct()))
    gone = sorted(ids)
    with _cascade_lookups(session, columns):
        for lo in range(0, len(gone), 500):  # bounded IN lists (SQLite's parameter limit)
            session.execute(
                delete(model)
                .where(model.id.in_(gone[lo : lo + 500]))
                .execution_options(synchronize_session=False)
            )
    return len(gone)


@contextmanager
def _cascade_lookups(session: Session, columns: list[Any]) -> Iterator[None]:
    """On SQLite, indexes on ``(campaign_id, column)`` of the judgment tables while unused
    workers or items are deleted, dropped in the same transaction. The cascade triggers of
    migration 0003 run once per deleted row there, each looking up the row's judgments by
    worker or item, which no index covers: without these, deleting the 2,000 items of a
    10,000-row batch from a 200,000-judgment campaign scans the campaign 4,000 times (minutes
    instead of a second)."""
    if session.get_bind().dialect.name != "sqlite":
        yield
        return
    names = []
    for column in columns:  # columns of our own tables, never input
        table, name = column.table.name, column.name
        index = f"tmp_undo_{table}_{name}"
        session.execute(text(f"CREATE INDEX {index} ON {table} (campaign_id, {name})"))
        names.append(index)
    yield  # an error rolls the transaction back, the indexes with it
    for index in names:
        session.execute(text(f"DROP INDEX {index}"))


def _data_categories_again(session: Session, row: Campaign) -> None:
    """The categories of a campaign that takes them from the data, as its remaining batches
    would have added them: each batch's new labels in sorted order after those before."""
    found: dict[int, set[str]] = {}
    q = (
        select(Judgment.batch_id, Judgment.value_label)
        .where(Judgment.campaign_id == row.id, Judgment.value_label.is_not(None))
        .distinct()
    )
    for b, label in session.execute(q):
        found.setdefault(int(b or 0), set()).add(str(label))
    if not found:  # as before its first file
        settings = dict(row.settings or {})
        settings.pop("categories_from_data", None)
        row.settings, row.categories = settings, None
        return
    categories: list[str] = []
    for b in sorted(found):
        categories.extend(sorted(found[b] - set(categories)))
    row.categories = categories


__all__ = [
    "BatchInfo",
    "RejectedInfo",
    "Undone",
    "id_marks",
    "ingest_batches",
    "rejected_rows",
    "undo_batch",
]
