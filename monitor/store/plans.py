"""Planned pairs (``monitor pairs plan``): stored with their stable ids, matched to the
preferences that answer them when those are ingested."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, insert, select, update
from sqlalchemy.orm import Session, aliased

from monitor.store.models import Item, PlannedPair, Preference, Worker


@dataclass(frozen=True)
class PlannedRow:
    """One planned pair as a task file shows it."""

    pair_id: str
    worker: str
    left: str
    right: str
    purpose: str


def next_round(session: Session, campaign_id: int) -> int:
    """The round of the campaign's next plan (1 for its first)."""
    last = session.scalar(
        select(func.max(PlannedPair.round)).where(PlannedPair.campaign_id == campaign_id)
    )
    return int(last or 0) + 1


def open_pairs(session: Session, campaign_id: int) -> list[tuple[str, str, str]]:
    """(worker, left, right) of every pair planned and not answered yet."""
    rows = session.execute(
        select(PlannedPair.worker, PlannedPair.left_item, PlannedPair.right_item).where(
            PlannedPair.campaign_id == campaign_id, PlannedPair.answered_id.is_(None)
        )
    )
    return [(w, a, b) for w, a, b in rows]


def newest_preference_id(session: Session, campaign_id: int) -> int:
    """The campaign's newest preference id (0: none)."""
    newest = session.scalar(
        select(func.coalesce(func.max(Preference.id), 0)).where(
            Preference.campaign_id == campaign_id
        )
    )
    return int(newest or 0)


def save_plan(
    session: Session, campaign_id: int, round_: int, watermark: int, rows: list[PlannedRow]
) -> None:
    """Store a plan's pairs (one statement)."""
    if not rows:
        return
    session.execute(
        insert(PlannedPair),
        [
            {
                "campaign_id": campaign_id,
                "pair_id": r.pair_id,
                "round": round_,
                "worker": r.worker,
                "left_item": r.left,
                "right_item": r.right,
                "purpose": r.purpose,
                "watermark": watermark,
            }
            for r in rows
        ],
    )


def mark_answered(session: Session, campaign_id: int, after_id: int) -> tuple[int, int]:
    """Match the campaign's preferences with ``id > after_id`` (just ingested) to its open
    planned pairs: by the ``pair_id`` a row carries (plain files, and platform exports whose
    tasks had it), else by the annotator and the pair (either side) judged after the pair was
    planned. Returns (pairs answered, pair ids that name no planned pair)."""
    has_open = session.scalar(
        select(PlannedPair.id)
        .where(PlannedPair.campaign_id == campaign_id, PlannedPair.answered_id.is_(None))
        .limit(1)
    )
    if has_open is None:
        return 0, 0
    planned = session.execute(
        select(
            PlannedPair.id,
            PlannedPair.pair_id,
            PlannedPair.worker,
            PlannedPair.left_item,
            PlannedPair.right_item,
            PlannedPair.watermark,
            PlannedPair.answered_id,
        ).where(PlannedPair.campaign_id == campaign_id)
    ).all()
    by_id = {p.pair_id: p for p in planned}
    by_pair: dict[tuple[str, str, str], list] = {}
    for p in planned:
        if p.answered_id is None:
            key = (p.worker, *sorted((p.left_item, p.right_item)))
            by_pair.setdefault(key, []).append(p)
    lhs, rhs = aliased(Item), aliased(Item)
    new = session.execute(
        select(
            Preference.id, Worker.external_id, lhs.external_id, rhs.external_id, Preference.payload
        )  # fmt: skip
        .join(Worker, Worker.id == Preference.worker_id)
        .join(lhs, lhs.id == Preference.left_item_id)
        .join(rhs, rhs.id == Preference.right_item_id)
        .where(Preference.campaign_id == campaign_id, Preference.id > after_id)
        .order_by(Preference.id)
    ).all()
    answered: dict[int, int] = {}
    unknown = 0
    for pref_id, worker, left, right, payload in new:
        pid = payload.get("pair_id") if isinstance(payload, dict) else None
        if pid is not None:
            hit = by_id.get(str(pid))
            if hit is None:
                unknown += 1
            elif hit.answered_id is None and hit.id not in answered:
                answered[hit.id] = pref_id
            continue
        for p in by_pair.get((worker, *sorted((left, right))), ()):
            if p.id not in answered and pref_id > p.watermark:
                answered[p.id] = pref_id
                break
    for planned_id, pref_id in answered.items():
        session.execute(
            update(PlannedPair).where(PlannedPair.id == planned_id).values(answered_id=pref_id)
        )
    return len(answered), unknown
