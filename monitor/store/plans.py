"""Planned pairs (``monitor pairs plan``): stored with their stable ids, matched to the
preferences that answer them when those are ingested."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from sqlalchemy import delete, func, insert, select, text, update
from sqlalchemy.orm import Session, aliased

from monitor.core.cells import FORMULA_START
from monitor.core.errors import NotFound, UsageError
from monitor.store.models import Campaign, Item, PlannedPair, Preference, Worker


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


@dataclass
class Answered:
    """What :func:`mark_answered` made of the new preferences: the planned pairs they answered,
    and the rows that answer none, by kind: ``unknown`` (a pair id naming no planned pair),
    ``other_items`` (a pair id naming a planned pair of other items), ``again`` (a planned pair
    answered before, in this file or an earlier one)."""

    n: int = 0
    mismatches: Counter[str] = field(default_factory=Counter)


def lock_planning(session: Session, campaign: str) -> None:
    """Serialise the planning of one campaign: the first statement of the transaction that
    plans and stores (so that what it reads is what the plan before it stored). PostgreSQL: a
    row lock on the campaign (``FOR NO KEY UPDATE``: an ingest's inserts, which only take a key
    share, are not held up); SQLite: the database's write lock, taken before anything is read
    (another planner waits for it within the busy timeout). A campaign that does not exist
    locks nothing (the planning reports it)."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(
            select(Campaign.id).where(Campaign.name == campaign).with_for_update(key_share=True)
        )
    else:
        session.execute(
            text("UPDATE campaigns SET name = name WHERE name = :name"), {"name": campaign}
        )


def undo_quote(value: str) -> str:
    """An item id as it was before a task file neutralised it for spreadsheets (``'=item4`` ->
    ``=item4``: :func:`monitor.core.cells.neutralise`); any other value unchanged."""
    if value.startswith("'") and value[1:].startswith(FORMULA_START):
        return value[1:]
    return value


def as_planned(planned: tuple[str, str], left: str, right: str) -> tuple[str, str] | None:
    """A row's items (``left``, ``right``) as the planned pair names them, either side, each
    taken as written or with the quote a task file added undone; None when they are other
    items."""

    def same(value: str, wanted: str) -> bool:
        return value == wanted or undo_quote(value) == wanted

    a, b = planned
    if same(left, a) and same(right, b):
        return a, b
    if same(left, b) and same(right, a):
        return b, a
    return None


def planned_items(session: Session, campaign_id: int) -> dict[str, tuple[str, str]]:
    """The items (left, right) of each planned pair of the campaign, by pair id."""
    rows = session.execute(
        select(PlannedPair.pair_id, PlannedPair.left_item, PlannedPair.right_item).where(
            PlannedPair.campaign_id == campaign_id
        )
    )
    return {pid: (a, b) for pid, a, b in rows}


def item_texts(session: Session, campaign_id: int) -> dict[str, str]:
    """The text (or URL) of each item of the campaign that has one (the items file's
    ``text``)."""
    rows = session.execute(
        select(Item.external_id, Item.text).where(
            Item.campaign_id == campaign_id, Item.text.is_not(None)
        )
    )
    return {i: t for i, t in rows if t}


def plan_rounds(session: Session, campaign_id: int) -> dict[int, tuple[int, int]]:
    """Each plan (round) of the campaign: (pairs planned, pairs answered)."""
    rows = session.execute(
        select(PlannedPair.round, func.count(), func.count(PlannedPair.answered_id))
        .where(PlannedPair.campaign_id == campaign_id)
        .group_by(PlannedPair.round)
    )
    return {int(r): (int(n), int(done)) for r, n, done in rows}


def cancel_plan(
    session: Session, campaign_id: int, campaign: str, round_: int | None = None
) -> tuple[int, int, int]:
    """Take back the pairs of one plan (the newest when ``round_`` is None) not answered yet:
    they are planned again by the next plan. Returns (round, pairs removed, answered pairs
    kept). NotFound when the campaign has no such plan, UsageError when all its pairs are
    answered."""
    rounds = plan_rounds(session, campaign_id)
    if not rounds:
        raise NotFound(f"campaign {campaign!r} has no planned pairs to cancel")
    if round_ is None:
        round_ = max(rounds)
    if round_ not in rounds:
        known = ", ".join(str(r) for r in sorted(rounds))
        raise NotFound(f"campaign {campaign!r} has no plan {round_} (its plans: {known})")
    n, done = rounds[round_]
    if n == done:
        raise UsageError(
            f"plan {round_} of campaign {campaign!r} has all its {n} pairs answered: nothing "
            "to cancel"
        )
    drop_round(session, campaign_id, round_)
    return round_, n - done, done


def drop_round(session: Session, campaign_id: int, round_: int) -> None:
    """Remove the pairs of a plan not answered yet (a plan whose task file could not be
    written)."""
    session.execute(
        delete(PlannedPair).where(
            PlannedPair.campaign_id == campaign_id,
            PlannedPair.round == round_,
            PlannedPair.answered_id.is_(None),
        )
    )


def mark_answered(session: Session, campaign_id: int, after_id: int) -> Answered:
    """Match the campaign's preferences with ``id > after_id`` (just ingested) to its open
    planned pairs: by the ``pair_id`` a row carries (plain files, and platform exports whose
    tasks had it) when the row's items are the pair's (:func:`as_planned`), else by the
    annotator and the pair (either side) judged after the pair was planned. A row whose pair id
    names no planned pair, names a pair of other items, or names a pair answered before answers
    nothing and is counted by kind (:class:`Answered`)."""
    result = Answered()
    has_plan = session.scalar(
        select(PlannedPair.id).where(PlannedPair.campaign_id == campaign_id).limit(1)
    )
    if has_plan is None:
        return result
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
        )
        .join(Worker, Worker.id == Preference.worker_id)
        .join(lhs, lhs.id == Preference.left_item_id)
        .join(rhs, rhs.id == Preference.right_item_id)
        .where(Preference.campaign_id == campaign_id, Preference.id > after_id)
        .order_by(Preference.id)
    ).all()
    answered: dict[int, int] = {}
    for pref_id, worker, left, right, payload in new:
        pid = payload.get("pair_id") if isinstance(payload, dict) else None
        if pid is not None and str(pid).strip():
            hit = by_id.get(str(pid).strip())
            if hit is None:
                result.mismatches["unknown"] += 1
            elif as_planned((hit.left_item, hit.right_item), left, right) is None:
                result.mismatches["other_items"] += 1
            elif hit.answered_id is not None or hit.id in answered:
                result.mismatches["again"] += 1
            else:
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
    result.n = len(answered)
    return result
