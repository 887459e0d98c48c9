"""What the live path keeps between runs: each judgment's frozen score in its worker's stop
test, and the workers whose test reached its evidence."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Double, Index, Integer
from sqlalchemy.orm import Mapped, mapped_column

from monitor.store.models.base import Base, BigId, campaign_ref, cascade_ref, inserted_at


class LiveScore(Base):
    """A judgment's score and its null (``expected``) in its worker's stop test, given once and never changed
    (:func:`monitor.metrics.stopping.arrival_scores`); both NULL where it is never scored (a
    worker's second answer to an item, an answer the reference has no class for). ``run_id``:
    the run whose fit was the reference. Keyed by campaign and judgment: a preference campaign's
    answers are numbered apart from the other kinds' judgments."""

    __tablename__ = "live_scores"
    __table_args__ = (Index("ix_live_scores_campaign_id_worker_id", "campaign_id", "worker_id"),)

    campaign_id: Mapped[int] = campaign_ref(primary_key=True)
    judgment_id: Mapped[int] = mapped_column(BigId, primary_key=True)
    worker_id: Mapped[int] = cascade_ref("workers")
    score: Mapped[float | None] = mapped_column(Double)
    expected: Mapped[float | None] = mapped_column(Double)  # the null: a worker at the line's
    # the judgment whose arrival made the score ready: the test takes the scores in this order
    ready_id: Mapped[int] = mapped_column(BigId)
    run_id: Mapped[int] = mapped_column(BigId)
    scored_at: Mapped[datetime] = inserted_at()


class LiveStop(Base):
    """A worker whose stop test reached ``1 / alpha``: after ``after`` scored judgments (the
    last of them ``judgment_id``), with the evidence then, against ``line``."""

    __tablename__ = "live_stops"

    campaign_id: Mapped[int] = campaign_ref(primary_key=True)
    worker_id: Mapped[int] = cascade_ref("workers", primary_key=True)
    after: Mapped[int] = mapped_column(Integer)
    evidence: Mapped[float] = mapped_column(Double)
    line: Mapped[float] = mapped_column(Double)
    typical: Mapped[float] = mapped_column(Double)
    alpha: Mapped[float] = mapped_column(Double)
    judgment_id: Mapped[int] = mapped_column(BigId)
    run_id: Mapped[int] = mapped_column(BigId)
    decided_at: Mapped[datetime] = inserted_at()
