"""Engines and sessions for SQLite (embedded default) and PostgreSQL."""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import URL, Engine, create_engine, event, make_url, text
from sqlalchemy.exc import ArgumentError, NoSuchModuleError
from sqlalchemy.orm import Session, sessionmaker

from monitor.core.errors import ConfigError

DEFAULT_URL = "sqlite:///monitor.db"
DEFAULT_LOCK_TIMEOUT = 60.0
"""Seconds a statement waits for a lock (the ``lock_timeout`` setting's default)."""
DEFAULT_STATEMENT_TIMEOUT = 1800.0
"""Seconds one PostgreSQL statement may run (the ``statement_timeout`` setting's default)."""
MAX_TIMEOUT = 2_000_000
"""The longest timeout in seconds (PostgreSQL and SQLite take at most 2**31 - 1 ms)."""
NO_LIMIT_MS = 2**31 - 1
"""SQLite's busy timeout when ``lock_timeout`` is 0 (no limit): about 25 days."""
AFTER_TIMEOUT_MS = 2000
"""How long a statement may wait, once one of the engine's statements has timed out (the
failed run's record): the command ends within its timeout plus this."""


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


def _sqlite_pragmas(busy_ms: int) -> Callable[[Any, Any], None]:
    def pragmas(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={int(busy_ms)}")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    return pragmas


def _postgres_timeouts(values: dict[str, int]) -> Callable[[Any, Any], None]:
    """Set the session's timeouts (milliseconds by name) on each new connection (committed,
    so that no rollback undoes them)."""
    calls = ", ".join("set_config(%s, %s, false)" for _ in values)
    params = [str(x) for item in values.items() for x in item]

    def timeouts(dbapi_connection: Any, _record: Any) -> None:
        with dbapi_connection.cursor() as cursor:
            cursor.execute(f"SELECT {calls}", params)
        if not dbapi_connection.autocommit:
            dbapi_connection.commit()

    return timeouts


def make_engine(
    url: str,
    *,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    statement_timeout: float = DEFAULT_STATEMENT_TIMEOUT,
    **kwargs: Any,
) -> Engine:
    """Create an engine; SQLite gets foreign keys, WAL and a busy timeout of ``lock_timeout``
    on every connection; PostgreSQL gets ``lock_timeout`` and ``statement_timeout`` (seconds,
    0 = no limit) on every session, and a connection taken from the pool is checked first (a
    server that closes idle sessions does not fail the next statement). A malformed URL is a
    :class:`ConfigError` (:func:`monitor.store.url.check_url`)."""
    from monitor.store.url import EXAMPLES, TIMEOUT_KEYS, check_url, url_timeouts

    url = normalise_url(url)
    check_url(url)
    if url.startswith("postgresql"):
        kwargs.setdefault("pool_pre_ping", True)
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
        event.listen(engine, "connect", _sqlite_pragmas(_ms(lock_timeout) or NO_LIMIT_MS))
    elif engine.dialect.name == "postgresql":
        # the URL's own options win: monitor sets only the timeouts they leave out
        given = url_timeouts(engine.url.query.get("options"))
        settings = zip(TIMEOUT_KEYS, (lock_timeout, statement_timeout), strict=True)
        ours = {key: _ms(seconds) for key, seconds in settings if key not in given}
        if ours:
            event.listen(engine, "connect", _postgres_timeouts(ours))
        event.listen(engine, "handle_error", _note_timeout)
    _TIMEOUTS[engine] = session_timeouts(engine.url, lock_timeout, statement_timeout)
    return engine


def session_timeouts(
    url: str | URL, lock_timeout: float, statement_timeout: float
) -> tuple[float, float]:
    """The ``lock_timeout`` and ``statement_timeout`` (seconds) of a session on ``url``: those
    of the URL's ``options`` (PostgreSQL), else the settings' ``lock_timeout`` and
    ``statement_timeout``."""
    from monitor.store.url import url_timeouts

    parsed = url if isinstance(url, URL) else make_url(normalise_url(str(url)))
    if parsed.get_backend_name() != "postgresql":
        return lock_timeout, statement_timeout
    given = url_timeouts(parsed.query.get("options"))
    return (
        given.get("lock_timeout", lock_timeout),
        given.get("statement_timeout", statement_timeout),
    )


def _note_timeout(context: Any) -> None:
    """After a statement of the engine has waited out its timeout, the next transactions wait
    :data:`AFTER_TIMEOUT_MS` at most (:func:`transaction`): the command that records the
    failure and stops does not wait a second time as long."""
    if getattr(context.original_exception, "sqlstate", None) in ("55P03", "57014"):
        _TIMED_OUT.add(context.engine)


_TIMED_OUT: weakref.WeakSet[Engine] = weakref.WeakSet()


def _shorten_waits(session: Session, engine: Engine) -> None:
    if engine in _TIMED_OUT:
        lock_ms = _ms(engine_timeouts(engine)[0])
        session.execute(
            text(
                "SELECT set_config('lock_timeout', :lock, true),"
                " set_config('statement_timeout', :statement, true)"
            ),
            {
                "lock": str(min(lock_ms or AFTER_TIMEOUT_MS, AFTER_TIMEOUT_MS)),
                "statement": str(AFTER_TIMEOUT_MS),
            },
        )


def engine_timeouts(engine: Engine) -> tuple[float, float]:
    """The ``lock_timeout`` and ``statement_timeout`` (seconds) the engine was made with."""
    return _TIMEOUTS.get(engine, (DEFAULT_LOCK_TIMEOUT, DEFAULT_STATEMENT_TIMEOUT))


_TIMEOUTS: weakref.WeakKeyDictionary[Engine, tuple[float, float]] = weakref.WeakKeyDictionary()


def _ms(seconds: float) -> int:
    """Seconds as whole milliseconds, at least 1 unless 0 (no limit)."""
    return 0 if seconds <= 0 else max(1, round(seconds * 1000))


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
        _shorten_waits(session, engine)
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
        _shorten_waits(session, engine)
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
