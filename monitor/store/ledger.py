"""The ledger of actions sent to platforms and of webhook events received.

An action is recorded ``pending`` in its own transaction before it is sent, and marked
``done`` (or ``failed``) in another once the platform answered: a crash between the two leaves
it ``pending``, and the next push decides from that what may be sent again
(:mod:`monitor.connectors.prolific`). A webhook event id is remembered once
(:func:`remember_event`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, select, update
from sqlalchemy.exc import IntegrityError

from monitor.store.engine import transaction
from monitor.store.models import ConnectorAction, WebhookEvent, utcnow


@dataclass(frozen=True)
class ActionRecord:
    """One action of the ledger."""

    key: str
    action: str
    target: str
    status: str
    payload: dict[str, Any] | None
    remote_id: str | None
    error: str | None
    created_at: datetime
    done_at: datetime | None


def _record(r: ConnectorAction) -> ActionRecord:
    return ActionRecord(
        r.key, r.action, r.target, r.status, r.payload, r.remote_id, r.error, r.created_at,
        r.done_at,
    )  # fmt: skip


def ledger(engine: Engine, campaign_id: int, platform: str) -> dict[str, ActionRecord]:
    """Every action recorded for a campaign on a platform, by key."""
    with transaction(engine) as s:
        rows = s.scalars(
            select(ConnectorAction)
            .where(ConnectorAction.campaign_id == campaign_id)
            .where(ConnectorAction.platform == platform)
            .order_by(ConnectorAction.id)
        ).all()
        return {r.key: _record(r) for r in rows}


def record_intent(
    engine: Engine,
    campaign_id: int,
    platform: str,
    actions: Sequence[tuple[str, str, str]],
    payload: dict[str, Any] | None,
) -> None:
    """Record actions (key, action, target) ``pending`` before they are sent, in one
    transaction committed at once; an action of the same key that failed before is set pending
    again, one pending or done is left as it is."""
    keys = [k for k, _, _ in actions]
    with transaction(engine) as s:
        known = {
            r.key: r
            for r in s.scalars(select(ConnectorAction).where(ConnectorAction.key.in_(keys)))
        }
        for key, action, target in actions:
            row = known.get(key)
            if row is None:
                s.add(
                    ConnectorAction(
                        campaign_id=campaign_id, platform=platform, key=key, action=action,
                        target=target, payload=payload, status="pending",
                    )
                )  # fmt: skip
            elif row.status == "failed":
                row.status, row.error, row.payload = "pending", None, payload


def mark(
    engine: Engine,
    keys: Sequence[str],
    status: str,
    *,
    remote_id: str | None = None,
    error: str | None = None,
) -> None:
    """Set actions ``done``, ``failed`` or back to ``pending`` in one transaction (with the
    platform's id of what they made, or the one-line reason they failed)."""
    values: dict[str, Any] = {"status": status, "error": error}
    if remote_id is not None:
        values["remote_id"] = remote_id
    if status == "done":
        values["done_at"] = utcnow()
    with transaction(engine) as s:
        s.execute(
            update(ConnectorAction).where(ConnectorAction.key.in_(list(keys))).values(**values)
        )


def remember_event(engine: Engine, source: str, event_id: str) -> bool:
    """Remember a webhook event's id: True the first time, False when it was seen before."""
    try:
        with transaction(engine) as s:
            seen = s.scalar(
                select(WebhookEvent.id).where(
                    WebhookEvent.source == source, WebhookEvent.event_id == event_id
                )
            )
            if seen is not None:
                return False
            s.add(WebhookEvent(source=source, event_id=event_id))
    except IntegrityError:  # the same event, received twice at once
        return False
    return True
