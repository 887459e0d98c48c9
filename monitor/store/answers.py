"""The answers of a few workers, as the report draws them beside their flags.

A report shows each flagged worker's answers against the model's; it reads only those
workers' judgments (a few thousand rows), never the campaign's arrays."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import select
from sqlalchemy.orm import Session

from monitor.core.catalog import Kind
from monitor.store.arrays import epochs, latest_per_pair, time_order
from monitor.store.campaigns import CampaignInfo
from monitor.store.models import Item, Judgment, JudgmentAnnotation, Worker


@dataclass(frozen=True)
class Answers:
    """The latest judgment of each listed worker on each item they judged, one entry each,
    in no particular order: ``value`` for ratings, ``label`` for labels, ``annotations`` for
    multi-label sets (the other two empty)."""

    worker: list[str]
    item: list[str]
    value: NDArray[np.float64]
    label: list[str | None]
    annotations: list[tuple[str, ...]]

    def __len__(self) -> int:
        return len(self.worker)


def window_start(session: Session, campaign: CampaignInfo, watermark: int, window: int) -> int:
    """The id after which the campaign's latest ``window`` judgments up to ``watermark`` lie
    (0 when there are no more than that): read from the (campaign, id) index alone."""
    q = (
        select(Judgment.id)
        .where(Judgment.campaign_id == campaign.id, Judgment.id <= int(watermark))
        .order_by(Judgment.id.desc())
        .offset(int(window))
        .limit(1)
    )
    return int(session.scalar(q) or 0)


def worker_answers(
    session: Session,
    campaign: CampaignInfo,
    workers: Collection[str],
    watermark: int,
    window: int | None = None,
) -> Answers:
    """The answers of ``workers`` (external ids) in ``campaign`` with ``id <= watermark``: the
    latest of each worker and item by ``created_at``, then by arrival, as a run counts them.
    With ``window``, only among the campaign's latest ``window`` judgments: the read is a range
    of the (campaign, id) index, whatever the campaign's size (a campaign has no index on its
    judgments' workers). Not for preference campaigns (their evidence is their cycles)."""
    if campaign.kind == Kind.PAIRWISE:
        raise ValueError("worker_answers reads judgments: preference campaigns have none.")
    wanted = sorted(set(workers))
    if not wanted:
        return Answers([], [], np.empty(0), [], [])
    ids: dict[int, str] = {}
    for lo in range(0, len(wanted), 500):  # bounded IN lists (SQLite's parameter limit)
        named = select(Worker.id, Worker.external_id).where(
            Worker.campaign_id == campaign.id, Worker.external_id.in_(wanted[lo : lo + 500])
        )
        ids.update((int(i), e) for i, e in session.execute(named))
    q = (
        select(
            Judgment.id,
            Judgment.worker_id,
            Item.external_id,
            Judgment.value_num,
            Judgment.value_label,
            Judgment.created_at,
        )
        .join(Item, Item.id == Judgment.item_id)
        .where(Judgment.campaign_id == campaign.id, Judgment.id <= int(watermark))
    )
    if window is not None:
        q = q.where(Judgment.id > window_start(session, campaign, watermark, window))
    db_ids = sorted(ids)
    rows: list[Any] = []
    for lo in range(0, len(db_ids), 500):
        rows += session.execute(q.where(Judgment.worker_id.in_(db_ids[lo : lo + 500]))).all()
    jid = np.array([r[0] for r in rows], dtype=np.int64)
    wid = np.array([r[1] for r in rows], dtype=np.int64)
    items = [r[2] for r in rows]
    _, item_code = np.unique(np.array(items, dtype=object), return_inverse=True)
    order = time_order(epochs([r[5] for r in rows]), jid)
    keep = latest_per_pair(wid, item_code.astype(np.int64), order).tolist()
    annotations: list[tuple[str, ...]] = []
    if campaign.kind == Kind.MULTILABEL:
        annotations = _annotations(session, jid[keep])
    return Answers(
        worker=[ids[int(wid[k])] for k in keep],
        item=[items[k] for k in keep],
        value=np.array([np.nan if rows[k][3] is None else rows[k][3] for k in keep], np.float64),
        label=[rows[k][4] for k in keep] if campaign.kind == Kind.LABEL else [],
        annotations=annotations,
    )


def _annotations(session: Session, judgment_ids: NDArray[np.int64]) -> list[tuple[str, ...]]:
    """The annotation set of each judgment, in the order of ``judgment_ids``."""
    sets: dict[int, list[str]] = {int(j): [] for j in judgment_ids.tolist()}
    wanted = sorted(sets)
    for lo in range(0, len(wanted), 500):
        q = select(JudgmentAnnotation.judgment_id, JudgmentAnnotation.annotation).where(
            JudgmentAnnotation.judgment_id.in_(wanted[lo : lo + 500])
        )
        for j, a in session.execute(q):
            sets[int(j)].append(a)
    return [tuple(sorted(sets[int(j)])) for j in judgment_ids.tolist()]


__all__ = ["Answers", "window_start", "worker_answers"]
