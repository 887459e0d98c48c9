"""One recompute of a campaign at a time, across processes.

Who may compute: PostgreSQL, a session-level advisory lock on a dedicated connection (released
by the server if the process dies; the session is exempt from ``idle_session_timeout``);
SQLite, a row in ``campaign_locks`` naming the holder (host and pid); a lock whose holder
process is gone, or that is older than ``stale_after``, is taken over.

Who may save: on both, the row in ``campaign_locks`` carries a token new with each lock (a
fence). A session lock can still be lost during a run (the session terminated, a firewall or
a pooler restart) and a SQLite lock taken over as stale; the next process that locks the
campaign writes its own token. The transaction that saves a run first confirms its token
(:meth:`Lease.confirm`, an ``UPDATE`` of the row, which holds it until commit): when another
process has taken the campaign, it raises :class:`LockLost` and the run saves nothing.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import cast

from sqlalchemy import Connection, Engine, Table, delete, select, text, update
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.orm import Session

from monitor.core.errors import Busy, LockLost
from monitor.store.models import CampaignLock, utcnow

LOCK_CLASS = 0x6D6F6E  # "mon": the first key of monitor's advisory locks

log = logging.getLogger("monitor.store.locks")


def holder_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _alive(holder: str) -> bool:
    host, _, pid = holder.partition("/")[0].rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return True  # another machine's process: trust it until it goes stale
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class Lease:
    """A held campaign lock: ``token`` is the holder's name and a random part, written in the
    campaign's ``campaign_locks`` row. ``session_lost`` is set when the PostgreSQL session
    that held the advisory lock was found closed at release."""

    campaign_id: int
    token: str
    session_lost: bool = False

    def confirm(self, session: Session) -> None:
        """In the transaction that saves: keep the campaign's lock row until commit, or raise
        :class:`LockLost` when another process holds the campaign now (the transaction must
        then be rolled back; nothing of the run is saved)."""
        confirmed = session.execute(
            update(CampaignLock)
            .where(CampaignLock.campaign_id == self.campaign_id, CampaignLock.holder == self.token)
            .values(holder=self.token)
            .execution_options(synchronize_session=False)
        )
        if confirmed.rowcount == 1:  # type: ignore[attr-defined]
            return
        now = session.scalar(
            select(CampaignLock.holder).where(CampaignLock.campaign_id == self.campaign_id)
        )
        by = f"{now.partition('/')[0]} holds it now" if now else "nobody holds it now"
        raise LockLost(
            f"campaign {self.campaign_id}: the recompute lock was lost during the run ({by}); "
            "this run saved nothing",
            "the session that held the lock was closed (terminated, idle_session_timeout, a "
            "pooler or the network) or the lock was taken over as stale; the process that "
            "holds it now computes the campaign",
        )


def _new_token() -> str:
    return f"{holder_name()}/{secrets.token_hex(6)}"


def _write_token(conn: Connection, campaign_id: int, token: str) -> None:
    conn.execute(delete(CampaignLock).where(CampaignLock.campaign_id == campaign_id))
    conn.execute(
        cast(Table, CampaignLock.__table__)
        .insert()
        .values(campaign_id=campaign_id, holder=token, acquired_at=utcnow())
    )


def _drop_token(engine: Engine, lease: Lease) -> None:
    try:
        with engine.begin() as conn:
            conn.execute(
                delete(CampaignLock).where(
                    CampaignLock.campaign_id == lease.campaign_id,
                    CampaignLock.holder == lease.token,
                )
            )
    except DBAPIError as exc:  # the next holder replaces the row anyway
        log.warning(
            "campaign %s: its lock row could not be removed: %s",
            lease.campaign_id,
            str(exc.orig).strip().splitlines()[0] if str(exc.orig).strip() else exc,
        )


@contextmanager
def campaign_lock(
    engine: Engine, campaign_id: int, stale_after: timedelta = timedelta(hours=6)
) -> Iterator[Lease]:
    """Hold the recompute lock of a campaign, or raise :class:`Busy` at once; the
    :class:`Lease` confirms the lock in the transaction that saves."""
    if engine.dialect.name == "postgresql":
        with _advisory_lock(engine, campaign_id) as lease:
            yield lease
        return

    lease = Lease(campaign_id, _new_token())
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
                    f"campaign {campaign_id} is being recomputed by {row.holder.partition('/')[0]}",
                )
            conn.execute(delete(CampaignLock).where(CampaignLock.campaign_id == campaign_id))
        try:
            conn.execute(
                cast(Table, CampaignLock.__table__)
                .insert()
                .values(campaign_id=campaign_id, holder=lease.token, acquired_at=utcnow())
            )
        except IntegrityError:
            raise Busy(f"campaign {campaign_id} is being recomputed by another process") from None
    try:
        yield lease
    finally:
        _drop_token(engine, lease)


@contextmanager
def _advisory_lock(engine: Engine, campaign_id: int) -> Iterator[Lease]:
    key = {"k1": LOCK_CLASS, "k2": campaign_id}
    with engine.connect() as conn:
        if (conn.dialect.server_version_info or (0,)) >= (14,):
            # The session sits idle for the whole run: a server's idle_session_timeout must
            # not end it (and with it the lock).
            conn.execute(text("SET idle_session_timeout = 0"))
        got = conn.execute(text("SELECT pg_try_advisory_lock(:k1, :k2)"), key).scalar()
        conn.commit()
        if not got:
            raise Busy(f"campaign {campaign_id} is being recomputed by another process")
        lease = Lease(campaign_id, _new_token())
        try:
            _write_token(conn, campaign_id, lease.token)
            conn.commit()
        except BaseException:
            conn.rollback()
            conn.execute(text("SELECT pg_advisory_unlock(:k1, :k2)"), key)
            conn.commit()
            raise
        try:
            yield lease
        finally:
            _drop_token(engine, lease)
            try:
                conn.execute(text("SELECT pg_advisory_unlock(:k1, :k2)"), key)
                conn.commit()
            except DBAPIError as exc:
                # The session ended during the run, and the server released the lock with it:
                # the run's own transaction confirmed the lease (or refused) when it saved.
                lease.session_lost = True
                conn.invalidate()
                log.warning(
                    "campaign %s: the session holding its recompute lock was closed during "
                    "the run (%s)",
                    campaign_id,
                    (str(exc.orig).strip().splitlines() or [type(exc.orig).__name__])[0],
                )
