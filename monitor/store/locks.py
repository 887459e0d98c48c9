"""One recompute of a campaign at a time, across processes.

PostgreSQL: a session-level advisory lock on a dedicated connection (released by the server if
the process dies). SQLite: a row in ``campaign_locks`` naming the holder (host and pid); a lock
whose holder process is gone, or that is older than ``stale_after``, is taken over.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import cast

from sqlalchemy import Engine, Table, delete, select, text
from sqlalchemy.exc import IntegrityError

from monitor.errors import Busy
from monitor.store.models import CampaignLock, utcnow

LOCK_CLASS = 0x6D6F6E  # "mon": the first key of monitor's advisory locks


def holder_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _alive(holder: str) -> bool:
    host, _, pid = holder.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return True  # another machine's process: trust it until it goes stale
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextmanager
def campaign_lock(
    engine: Engine, campaign_id: int, stale_after: timedelta = timedelta(hours=6)
) -> Iterator[None]:
    """Hold the recompute lock of a campaign, or raise :class:`Busy` at once."""
    if engine.dialect.name == "postgresql":
        with engine.connect() as conn:
            got = conn.execute(
                text("SELECT pg_try_advisory_lock(:k1, :k2)"), {"k1": LOCK_CLASS, "k2": campaign_id}
            ).scalar()
            conn.commit()
            if not got:
                raise Busy(f"campaign {campaign_id} is being recomputed by another process")
            try:
                yield
            finally:
                conn.execute(
                    text("SELECT pg_advisory_unlock(:k1, :k2)"),
                    {"k1": LOCK_CLASS, "k2": campaign_id},
                )
                conn.commit()
        return

    me = holder_name()
    with engine.begin() as conn:
        row = conn.execute(
            select(CampaignLock.holder, CampaignLock.acquired_at).where(
                CampaignLock.campaign_id == campaign_id
            )
        ).one_or_none()
        if row is not None:
            acquired = row.acquired_at
            if acquired.tzinfo is None:
                acquired = acquired.replace(tzinfo=UTC)
            if _alive(row.holder) and datetime.now(UTC) - acquired < stale_after:
                raise Busy(
                    f"campaign {campaign_id} is being recomputed by {row.holder}",
                )
            conn.execute(delete(CampaignLock).where(CampaignLock.campaign_id == campaign_id))
        try:
            conn.execute(
                cast(Table, CampaignLock.__table__)
                .insert()
                .values(campaign_id=campaign_id, holder=me, acquired_at=utcnow())
            )
        except IntegrityError:
            raise Busy(f"campaign {campaign_id} is being recomputed by another process") from None
    try:
        yield
    finally:
        with engine.begin() as conn:
            conn.execute(
                delete(CampaignLock).where(
                    CampaignLock.campaign_id == campaign_id, CampaignLock.holder == me
                )
            )
