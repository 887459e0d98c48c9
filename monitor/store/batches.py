"""What each ingest brought: the batches of a campaign and the rows they rejected.

An ingest batch is one file (and its items file) ingested into one campaign, with its checksum
and counts; under ``--skip-invalid`` its refused rows are kept in ``rejected_rows`` with their
reasons (:mod:`monitor.ingest.api`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from monitor.store.models import IngestBatch, RejectedRow


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


__all__ = ["BatchInfo", "RejectedInfo", "ingest_batches", "rejected_rows"]
