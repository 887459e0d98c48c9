"""Engines and sessions for SQLite (embedded default) and PostgreSQL."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import URL, Engine, create_engine, event, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError
from sqlalchemy.orm import Session, sessionmaker

from monitor.errors import ConfigError

DEFAULT_URL = "sqlite:///monitor.db"


def normalise_url(url: str) -> str:
    """Accept ``postgresql://`` and ``postgres://`` as psycopg 3 URLs."""
    return re.sub(r"^postgres(ql)?://", "postgresql+psycopg://", url)


SECRET_QUERY_KEYS = frozenset({"password", "sslpassword", "pwd"})


def redact(url: str | URL) -> str:
    """The URL with every password hidden (``user:***@`` and ``?password=***``), for any
    message, log line or report."""
    try:
        parsed = url if isinstance(url, URL) else make_url(normalise_url(str(url)))
    except Exception:  # noqa: BLE001 - not a URL SQLAlchemy can parse: hide by pattern
        text = re.sub(r"(://[^:/@?]*):[^@]*@", r"\1:***@", str(url))
        return re.sub(r"(?i)([?&](?:ssl)?(?:password|pwd)=)[^&]*", r"\1***", text)
    secret = {k: "***" for k in parsed.query if k.lower() in SECRET_QUERY_KEYS}
    if secret:
        parsed = parsed.update_query_dict(secret)
    return parsed.render_as_string(hide_password=True).replace("=%2A%2A%2A", "=***")


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def make_engine(url: str, **kwargs: Any) -> Engine:
    """Create an engine; SQLite gets foreign keys, WAL and a busy timeout on every connection.
    A malformed URL is a :class:`ConfigError` (:func:`monitor.store.url.check_url`)."""
    from monitor.store.url import EXAMPLES, check_url

    url = normalise_url(url)
    check_url(url)
    try:
        engine = create_engine(url, **kwargs)
    except ValueError:  # a case check_url does not know; SQLAlchemy's text may quote a secret
        raise ConfigError("the database URL cannot be read", f"write {EXAMPLES}") from None
    except (ArgumentError, NoSuchModuleError) as exc:
        # SQLAlchemy's message quotes the whole URL, password included.
        raise ConfigError(
            f"database URL {redact(url)} cannot be used: {first_line(exc, url)}",
            f"write {EXAMPLES}",
        ) from None
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def psycopg_connection(session: Session) -> Any:
    """The psycopg connection under a PostgreSQL session's transaction (for COPY and binary
    cursors, which SQLAlchemy does not offer)."""
    raw = session.connection().connection.driver_connection
    if raw is None:
        raise RuntimeError("the session's connection has no driver connection")
    return raw


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


def first_line(exc: BaseException, url: str | URL | None = None) -> str:
    """The first line of a driver's message, with the URL's password (if any) hidden."""
    orig = getattr(exc, "orig", None) or exc
    text = (str(orig).strip().splitlines() or [type(orig).__name__])[0].strip()
    for secret in _secrets(url):
        text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(secret)}(?![A-Za-z0-9])", "***", text)
    return text


def _secrets(url: str | URL | None) -> list[str]:
    if url is None:
        return []
    try:
        parsed = url if isinstance(url, URL) else make_url(normalise_url(str(url)))
    except Exception:  # noqa: BLE001 - unparseable: nothing more to hide than redact() does
        return []
    found = [parsed.password] if parsed.password else []
    found += [str(v) for k, v in parsed.query.items() if k.lower() in SECRET_QUERY_KEYS]
    return [s for s in found if s and s != "***"]
