"""Connected sources: where a campaign's judgments are pulled from, the pull's cursor, and the
map of every annotation pulled (its task, its ``updated_at`` there, what it became), so that a
changed annotation replaces its judgment and a deleted one is taken out by its id alone."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import delete, insert, select, update
from sqlalchemy.orm import Session

from monitor.core.catalog import Kind
from monitor.store.campaigns import CampaignInfo
from monitor.store.models import (
    Campaign,
    CampaignSource,
    Item,
    Judgment,
    Preference,
    SourceAnnotation,
    dedup_digest,
    row_info,
    utcnow,
)

__all__ = [
    "Pulled",
    "SourceInfo",
    "connect_source",
    "connected_campaigns",
    "forget_annotations",
    "get_source",
    "item_tasks",
    "pulled_annotations",
    "record_annotations",
    "set_cursor",
    "unit_tasks",
]

BOUND = 500  # bounded IN lists (SQLite's parameter limit)


@dataclass(frozen=True)
class SourceInfo:
    """A campaign's recorded source (the token is never stored: only the path of its file)."""

    campaign_id: int
    platform: str
    url: str
    project: str
    token_file: str | None
    mapping: dict[str, str] = field(default_factory=dict)
    options: dict[str, str] = field(default_factory=dict)
    cursor_updated_at: str | None = None
    cursor_task_id: int | None = None
    pulled_at: datetime | None = None


@dataclass(frozen=True)
class Pulled:
    """One annotation as pulled: its task, ``updated_at`` there, role, and the item whose gold
    value it gave (gold or both)."""

    task_id: int
    updated_at: str | None
    role: str
    item: str | None = None


def _info(row: CampaignSource) -> SourceInfo:
    return row_info(
        SourceInfo, row, mapping=dict(row.mapping or {}), options=dict(row.options or {})
    )


def get_source(session: Session, campaign_id: int) -> SourceInfo | None:
    row = session.scalars(
        select(CampaignSource).where(CampaignSource.campaign_id == campaign_id)
    ).one_or_none()
    return None if row is None else _info(row)


def connect_source(
    session: Session,
    campaign_id: int,
    *,
    platform: str,
    url: str,
    project: str,
    token_file: str | None,
    mapping: dict[str, str],
    options: dict[str, str],
) -> SourceInfo:
    """Record (or change) the campaign's source. Another URL or project starts the cursor
    over (the next pull reads everything; what it already stored stays, by annotation id)."""
    row = session.scalars(
        select(CampaignSource).where(CampaignSource.campaign_id == campaign_id)
    ).one_or_none()
    if row is None:
        row = CampaignSource(campaign_id=campaign_id, connected_at=utcnow())
        session.add(row)
    elif (row.platform, row.url, row.project) != (platform, url, project):
        row.cursor_updated_at, row.cursor_task_id = None, None
    row.platform, row.url, row.project, row.token_file = platform, url, project, token_file
    row.mapping, row.options = dict(mapping), dict(options)
    session.flush()
    return _info(row)


def connected_campaigns(session: Session, platform: str | None = None) -> list[str]:
    """The names of the campaigns (not archived) that have a source, by name."""
    q = (
        select(Campaign.name)
        .join(CampaignSource, CampaignSource.campaign_id == Campaign.id)
        .where(Campaign.archived.is_(False))
        .order_by(Campaign.name)
    )
    if platform is not None:
        q = q.where(CampaignSource.platform == platform)
    return list(session.scalars(q))


def set_cursor(
    session: Session, campaign_id: int, updated_at: str | None, task_id: int | None
) -> None:
    session.execute(
        update(CampaignSource)
        .where(CampaignSource.campaign_id == campaign_id)
        .values(cursor_updated_at=updated_at, cursor_task_id=task_id, pulled_at=utcnow())
    )


def pulled_annotations(session: Session, campaign_id: int) -> dict[str, Pulled]:
    """Every annotation pulled into the campaign, by its id."""
    q = select(
        SourceAnnotation.annotation_id,
        SourceAnnotation.task_id,
        SourceAnnotation.updated_at,
        SourceAnnotation.role,
        SourceAnnotation.item,
    ).where(SourceAnnotation.campaign_id == campaign_id)
    return {a: Pulled(int(t), u, r, i) for a, t, u, r, i in session.execute(q)}


def forget_annotations(
    session: Session, campaign: CampaignInfo, gone: dict[str, Pulled]
) -> tuple[int, int]:
    """Take the annotations ``gone`` out of the campaign: their judgments (found by their
    dedup key, ``id:<annotation id>``), the gold values they gave, and their map rows; the
    campaign's ``changed_at`` is set so that the next run is a full one. ``(judgments, gold
    values)`` taken out."""
    if not gone:
        return 0, 0
    cid = campaign.id
    table: type[Judgment] | type[Preference] = (
        Preference if campaign.kind == Kind.PAIRWISE else Judgment
    )
    ids = sorted(gone)
    n_judgments = 0
    for lo in range(0, len(ids), BOUND):
        part = ids[lo : lo + BOUND]
        keys = [dedup_digest("id:" + a) for a in part]
        done = session.execute(
            delete(table)
            .where(table.campaign_id == cid, table.dedup_key.in_(keys))
            .execution_options(synchronize_session=False)
        )
        n_judgments += int(getattr(done, "rowcount", 0) or 0)
        session.execute(
            delete(SourceAnnotation).where(
                SourceAnnotation.campaign_id == cid, SourceAnnotation.annotation_id.in_(part)
            )
        )
    items = sorted({p.item for p in gone.values() if p.role in ("gold", "both") and p.item})
    for lo in range(0, len(items), BOUND):
        session.execute(
            update(Item)
            .where(Item.campaign_id == cid, Item.external_id.in_(items[lo : lo + BOUND]))
            .values(gold=None)
        )
    if n_judgments:
        session.execute(update(Campaign).where(Campaign.id == cid).values(changed_at=utcnow()))
    return n_judgments, len(items)


def record_annotations(
    session: Session, campaign_id: int, pulled: Iterable[tuple[str, Pulled]]
) -> None:
    """Add annotations to the map (those replaced were forgotten first)."""
    rows = [
        {
            "campaign_id": campaign_id,
            "annotation_id": a,
            "task_id": p.task_id,
            "updated_at": p.updated_at,
            "role": p.role,
            "item": p.item,
        }
        for a, p in pulled
    ]
    for lo in range(0, len(rows), 5000):
        session.execute(insert(SourceAnnotation), rows[lo : lo + 5000])


def item_tasks(session: Session, campaign: CampaignInfo) -> dict[str, int]:
    """The task of each item, from its judgments (the reader keeps the task id of each), for
    what is written back to the tasks."""
    table: type[Judgment] | type[Preference] = (
        Preference if campaign.kind == Kind.PAIRWISE else Judgment
    )
    if table is Preference:
        return {}
    q = (
        select(Item.external_id, Judgment.payload)
        .join(Item, Item.id == Judgment.item_id)
        .where(Judgment.campaign_id == campaign.id, Judgment.payload.is_not(None))
    )
    out: dict[str, int] = {}
    for item, payload in session.execute(q):
        task = (payload or {}).get("task_id")
        if isinstance(task, int) and not isinstance(task, bool):
            out.setdefault(str(item), task)
    return out


def unit_tasks(
    session: Session, campaign: CampaignInfo, watermark: int
) -> dict[tuple[str, ...], dict[int, int]]:
    """The tasks of each item (``(item,)``) or pair (``(low, high)``, the items in the order
    of their database ids, as a run keys pairs) with the number of distinct workers whose
    judgments up to ``watermark`` (a run's) came from each: what a platform counts toward the
    task's overlap, as the run saw it. Only judgments that kept their task id (Label Studio's)."""
    found: dict[tuple[str, ...], dict[int, set[int]]] = {}
    if campaign.kind == Kind.PAIRWISE:
        q_items = select(Item.id, Item.external_id).where(Item.campaign_id == campaign.id)
        names: dict[int, str] = {int(i): str(e) for i, e in session.execute(q_items)}
        rows = session.execute(
            select(Preference.left_item_id, Preference.right_item_id, Preference.worker_id,
                   Preference.payload)
            .where(Preference.campaign_id == campaign.id, Preference.id <= watermark,
                   Preference.payload.is_not(None))
        )  # fmt: skip
        for left, right, worker, payload in rows:
            task = (payload or {}).get("task_id")
            if isinstance(task, int) and not isinstance(task, bool):
                key = (str(names[min(left, right)]), str(names[max(left, right)]))
                found.setdefault(key, {}).setdefault(task, set()).add(worker)
    else:
        q = (
            select(Item.external_id, Judgment.worker_id, Judgment.payload)
            .join(Item, Item.id == Judgment.item_id)
            .where(Judgment.campaign_id == campaign.id, Judgment.id <= watermark,
                   Judgment.payload.is_not(None))
        )  # fmt: skip
        for item, worker, payload in session.execute(q):
            task = (payload or {}).get("task_id")
            if isinstance(task, int) and not isinstance(task, bool):
                found.setdefault((str(item),), {}).setdefault(task, set()).add(worker)
    return {k: {t: len(w) for t, w in tasks.items()} for k, tasks in found.items()}
