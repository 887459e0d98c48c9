"""Engines and sessions for SQLite (embedded default) and PostgreSQL."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

DEFAULT_URL = "sqlite:///monitor.db"


def normalise_url(url: str) -> str:
    """Accept ``postgresql://`` and ``postgres://`` as psycopg 3 URLs."""
    return re.sub(r"^postgres(ql)?://", "postgresql+psycopg://", url)


def redact(url: str) -> str:
    """The URL with its password replaced, for messages and logs."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", url)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def make_engine(url: str, **kwargs: Any) -> Engine:
    """Create an engine; SQLite gets foreign keys, WAL and a busy timeout on every connection."""
    url = normalise_url(url)
    engine = create_engine(url, **kwargs)
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


@contextmanager
def transaction(engine: Engine) -> Iterator[Session]:
    """One session, one transaction: committed on success, rolled back on any error."""
    with session_factory(engine)() as session, session.begin():
        yield session


@contextmanager
def snapshot(engine: Engine) -> Iterator[Session]:
    """A read transaction that sees one consistent snapshot of the database.

    PostgreSQL runs it at REPEATABLE READ (several queries must agree with each other while
    ingests commit); a SQLite transaction reads one snapshot already.
    """
    with session_factory(engine)() as session, session.begin():
        if engine.dialect.name == "postgresql":
            session.connection(execution_options={"isolation_level": "REPEATABLE READ"})
        yield session
