"""The live path's rows: the judgments still to score with the items they share, the frozen
scores of a worker's stop test, and the workers whose test reached its evidence."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import and_, insert, select
from sqlalchemy.orm import Session

from monitor.store.models import Item, Judgment, JudgmentAnnotation, LiveScore, LiveStop, Worker


@dataclass(frozen=True)
class Pending:
    """The judgments of the items that hold a judgment without a score, in order of arrival
    (database id): ``ids``, ``workers`` and ``items`` (database ids), the answer (``labels``:
    a label; ``numbers``: a rating, NaN where none; ``sets``: a multi-label judgment's
    annotations, empty for the other kinds), ``gold`` (the item's gold, or None) and ``scored``
    (whether it has its score already)."""

    ids: NDArray[np.int64]
    workers: NDArray[np.int64]
    items: NDArray[np.int64]
    labels: list[str | None]
    gold: list[str | None]
    scored: NDArray[np.bool_]
    numbers: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    sets: list[tuple[str, ...]] = field(default_factory=list)


def pending(session: Session, campaign_id: int, multilabel: bool = False) -> Pending:
    """What :func:`monitor.incremental.live.update_live` scores from: every judgment of the
    items that have one without a score (an anti-join on the campaign's judgments), and of a
    ``multilabel`` campaign their annotations."""
    unscored = (
        select(Judgment.item_id)
        .outerjoin(
            LiveScore,
            and_(
                LiveScore.campaign_id == Judgment.campaign_id, LiveScore.judgment_id == Judgment.id
            ),
        )
        .where(Judgment.campaign_id == campaign_id, LiveScore.judgment_id.is_(None))
        .distinct()
    )
    rows = session.execute(
        select(
            Judgment.id,
            Judgment.worker_id,
            Judgment.item_id,
            Judgment.value_label,
            Item.gold,
            LiveScore.judgment_id.is_not(None),
            Judgment.value_num,
        )
        .join(Item, Item.id == Judgment.item_id)
        .outerjoin(
            LiveScore,
            and_(
                LiveScore.campaign_id == Judgment.campaign_id, LiveScore.judgment_id == Judgment.id
            ),
        )
        .where(Judgment.campaign_id == campaign_id, Judgment.item_id.in_(unscored))
        .order_by(Judgment.id)
    ).all()
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    sets: list[tuple[str, ...]] = []
    if multilabel:
        chosen: dict[int, list[str]] = {}
        for j, name in session.execute(
            select(JudgmentAnnotation.judgment_id, JudgmentAnnotation.annotation)
            .join(Judgment, Judgment.id == JudgmentAnnotation.judgment_id)
            .where(Judgment.campaign_id == campaign_id, Judgment.item_id.in_(unscored))
        ):
            chosen.setdefault(int(j), []).append(name)
        sets = [tuple(chosen.get(int(j), ())) for j in ids]
    return Pending(
        ids,
        np.array([r[1] for r in rows], dtype=np.int64),
        np.array([r[2] for r in rows], dtype=np.int64),
        [r[3] for r in rows],
        [r[4] for r in rows],
        np.array([bool(r[5]) for r in rows], dtype=bool),
        np.array([np.nan if r[6] is None else r[6] for r in rows], dtype=np.float64),
        sets,
    )


def save_scores(
    session: Session,
    campaign_id: int,
    run_id: int,
    rows: Iterable[tuple[int, int, float | None, float | None, int]],
) -> int:
    """Store each ``(judgment, worker, score, expected, ready)`` once (the caller gives only
    the unscored); how many."""
    batch = [
        {"judgment_id": j, "campaign_id": campaign_id, "worker_id": w, "score": s,
         "expected": m, "ready_id": r, "run_id": run_id}
        for j, w, s, m, r in rows
    ]  # fmt: skip
    if batch:
        session.execute(insert(LiveScore), batch)
    return len(batch)


@dataclass(frozen=True)
class Scores:
    """Frozen scores in the order they became known: each one's judgment, worker (database
    ids) and the judgment that made it ready, its score and null."""

    ids: NDArray[np.int64]
    workers: NDArray[np.int64]
    ready: NDArray[np.int64]
    scores: NDArray[np.float64]
    nulls: NDArray[np.float64]


def worker_scores(
    session: Session, campaign_id: int, workers: Iterable[int] | None = None
) -> Scores:
    """The scored judgments of the campaign, or of some of its ``workers``, in the order their
    scores became known (``ready_id``, then the judgment's own id); those never scored left
    out. A judgment taken out (an ingest undone) took its score with it
    (:func:`monitor.store.batches.undo_batch`)."""
    q = select(
        LiveScore.judgment_id,
        LiveScore.worker_id,
        LiveScore.ready_id,
        LiveScore.score,
        LiveScore.expected,
    ).where(LiveScore.campaign_id == campaign_id, LiveScore.score.is_not(None))
    if workers is not None:
        q = q.where(LiveScore.worker_id.in_(list(workers)))
    rows = session.execute(q.order_by(LiveScore.ready_id, LiveScore.judgment_id)).all()
    ids, workers_, ready = (np.array([r[k] for r in rows], dtype=np.int64) for k in range(3))
    scores, nulls = (np.array([r[k] for r in rows], dtype=np.float64) for k in (3, 4))
    return Scores(ids, workers_, ready, scores, nulls)


def stored_ids(session: Session, campaign_id: int) -> NDArray[np.int64]:
    """The judgments the live path has given a row, scored or never to be."""
    return np.array(
        session.scalars(
            select(LiveScore.judgment_id).where(LiveScore.campaign_id == campaign_id)
        ).all(),
        dtype=np.int64,
    )


@dataclass(frozen=True)
class StopRecord:
    """A worker's stop as the live path recorded it (:class:`monitor.store.models.LiveStop`)."""

    worker: str
    after: int
    evidence: float
    line: float
    typical: float
    alpha: float
    judgment_id: int
    run_id: int


def live_stops(session: Session, campaign_id: int) -> dict[str, StopRecord]:
    """The campaign's recorded stops, by worker id."""
    rows = session.execute(
        select(LiveStop, Worker.external_id)
        .join(Worker, Worker.id == LiveStop.worker_id)
        .where(LiveStop.campaign_id == campaign_id)
    ).all()
    return {
        ext: StopRecord(
            ext, s.after, s.evidence, s.line, s.typical, s.alpha, s.judgment_id, s.run_id
        )
        for s, ext in rows
    }


def record_stops(
    session: Session, campaign_id: int, stops: Iterable[dict[str, float]]
) -> list[str]:
    """Record each new stop (``worker_id``, ``after``, ``evidence``, ``line``, ``typical``,
    ``alpha``, ``judgment_id``, ``run_id``) once: a worker recorded before keeps their first.
    The workers newly stopped (their ids), in order."""
    batch = [{"campaign_id": campaign_id, **s} for s in stops]
    if not batch:
        return []
    known = set(
        session.scalars(
            select(LiveStop.worker_id).where(
                and_(
                    LiveStop.campaign_id == campaign_id,
                    LiveStop.worker_id.in_([int(s["worker_id"]) for s in batch]),
                )
            )
        )
    )
    new = [s for s in batch if int(s["worker_id"]) not in known]
    if not new:
        return []
    session.execute(insert(LiveStop), new)
    ids = [int(s["worker_id"]) for s in new]
    return sorted(session.scalars(select(Worker.external_id).where(Worker.id.in_(ids))))
