"""Connection failures turned into one line saying what is wrong and what to do.

A driver's error (psycopg, sqlite3) wrapped by SQLAlchemy prints a page of traceback and, for
some, the URL. :func:`database_error` reads the driver's message and the URL and names the
host and port, the database, the role or the path, never the password.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from sqlalchemy import URL, Engine, make_url
from sqlalchemy.exc import DBAPIError

from monitor.core.errors import ConfigError, DatabaseTimeout, DatabaseUnavailable, MonitorError
from monitor.store.engine import engine_timeouts, first_line, normalise_url, redact

WHERE_DB = "--db or MONITOR_DATABASE_URL"


def check_connection(engine: Engine) -> None:
    """Open (and return to the pool) one connection; raise :class:`DatabaseUnavailable`."""
    try:
        with engine.connect():
            pass
    except DBAPIError as exc:
        raise database_error(exc, engine.url) from None


@contextmanager
def step(what: str) -> Iterator[None]:
    """Name what the statements inside do (``reading the judgments of campaign x``): a database
    error raised inside carries it, for :func:`statement_error`'s message (the innermost step
    names it)."""
    try:
        yield
    except Exception as exc:
        if getattr(exc, "monitor_step", None) is None:
            # an exception without a __dict__ has no step to name
            with suppress(AttributeError):
                exc.monitor_step = what  # type: ignore[attr-defined]
        raise


def is_driver_error(exc: BaseException) -> bool:
    """A database error, SQLAlchemy's or the driver's own (psycopg's COPY and cursors raise
    these unwrapped)."""
    if isinstance(exc, DBAPIError):
        return True
    module = type(exc).__module__.split(".")[0]
    return module in ("psycopg", "sqlite3") and isinstance(exc, Exception)


#: SQLSTATEs of a session the server ended: admin_shutdown (pg_terminate_backend),
#: crash_shutdown, cannot_connect_now, idle_session_timeout; and idle_in_transaction_timeout.
_ENDED = {"57P01", "57P02", "57P03", "57P05", "25P03"}
_ENDED_TEXT = ("terminating connection due to",)
_TABLE = re.compile(
    r'\b(?:FROM|JOIN|INTO|UPDATE|TABLE|COPY)\s+(?:ONLY\s+)?"?([A-Za-z_][A-Za-z0-9_]*)"?', re.I
)


def described(exc: BaseException, engine: Engine) -> str:
    """``Type: first line`` of an error, for a failed run or a log line; a lock or statement
    timeout, or an ended session, says what it waited on (:func:`statement_error`)."""
    timed_out = statement_error(exc, *engine_timeouts(engine))
    if timed_out is not None:
        return f"{type(timed_out).__name__}: {timed_out}"
    return f"{type(exc).__name__}: {error_line(exc)}"


def error_line(exc: BaseException) -> str:
    """The first line of an error's message (the driver's, under SQLAlchemy's wrapper); its
    type's name when it has none."""
    orig = getattr(exc, "orig", None) or exc
    lines = str(orig).strip().splitlines()
    return lines[0] if lines else type(orig).__name__


def statement_error(
    exc: BaseException, lock_timeout: float | None = None, statement_timeout: float | None = None
) -> MonitorError | None:
    """A statement that waited too long (``lock_timeout``, ``statement_timeout``; SQLite: its
    busy timeout) or whose session the server ended, as one line naming the wait, the tables
    of the statement and the step (:func:`step`) and the setting; None for other errors."""
    orig: BaseException = (exc.orig if isinstance(exc, DBAPIError) else None) or exc
    state = getattr(orig, "sqlstate", None)
    first = first_line(orig)
    lowered = str(orig).lower()
    where = _step_of(exc, orig)
    on = _tables_of(exc, orig)
    if (state == "55P03" or "lock timeout" in lowered) and "advisory_xact_lock" in str(
        getattr(exc, "statement", "")
    ):
        return DatabaseTimeout(
            f"waited more than {_seconds(lock_timeout)} (lock_timeout) for another ingest into "
            f"the same campaign to commit{where}",
            "ingests into one campaign run one at a time: retry when the other is done, or "
            "raise the setting lock_timeout (MONITOR_LOCK_TIMEOUT; a lock_timeout in the "
            "database URL's options wins)",
        )
    if state == "55P03" or "lock timeout" in lowered:
        return DatabaseTimeout(
            f"waited more than {_seconds(lock_timeout)} (lock_timeout) for a lock{on} that "
            f"another session holds{where}",
            "find that session (pg_locks, pg_stat_activity) and let it finish or end it, then "
            "retry; the setting lock_timeout (MONITOR_LOCK_TIMEOUT) sets the wait, or a "
            "lock_timeout in the database URL's options, which wins",
        )
    if state == "57014":
        if "statement timeout" in lowered:
            return DatabaseTimeout(
                f"a statement{on} ran more than {_seconds(statement_timeout)} "
                f"(statement_timeout) and was cancelled{where}",
                "look for a session holding a lock it waited on (pg_stat_activity); if the work "
                "is that large, raise the setting statement_timeout (MONITOR_STATEMENT_TIMEOUT; a "
                "statement_timeout in the database URL's options wins)",
            )
        return DatabaseTimeout(
            f"a statement{on} was cancelled ({first}){where}",
            "another session or an administrator cancelled it (pg_cancel_backend); retry",
        )
    if state in _ENDED or any(t in lowered for t in _ENDED_TEXT):
        return DatabaseUnavailable(
            f"PostgreSQL ended the session{where}: {first}",
            "the server closed it (an administrator, idle_session_timeout, a restart, a pooler "
            "or the network); nothing half-done was kept: retry",
        )
    if "database is locked" in lowered or "database table is locked" in lowered:
        return DatabaseTimeout(
            f"waited more than {_seconds(lock_timeout)} (lock_timeout) for the SQLite database, "
            f"which another connection is writing{where}",
            "retry when the other writer is done; the setting lock_timeout "
            "(MONITOR_LOCK_TIMEOUT) sets the wait",
        )
    return None


def _seconds(value: float | None) -> str:
    if value is None:
        return "its limit"
    if value <= 0:
        return "the server's limit"
    return f"{value:g} s"


def _step_of(exc: BaseException, orig: BaseException) -> str:
    what = getattr(exc, "monitor_step", None) or getattr(orig, "monitor_step", None)
    return f" while {what}" if what else ""


def _tables_of(exc: BaseException, orig: BaseException) -> str:
    """`` on table x`` for the tables of the failed statement (SQLAlchemy keeps it; a
    driver's message may quote it after ``LINE 1:``), those of monitor's schema only."""
    from monitor.store.models import Base

    statement = getattr(exc, "statement", None) or ""
    statement += "\n" + str(orig)
    known = Base.metadata.tables
    names = list(dict.fromkeys(m for m in _TABLE.findall(statement) if m in known))
    if not names:
        return ""
    return f" on table{'s' if len(names) > 1 else ''} {', '.join(names)}"


def database_error(exc: BaseException, url: str | URL) -> MonitorError:
    """The typed error for a driver's failure to connect to or open ``url``."""
    parsed = url if isinstance(url, URL) else make_url(normalise_url(str(url)))
    detail = first_line(exc, parsed)
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_error(parsed, detail)
    return _postgres_error(parsed, detail)


def _server(url: URL) -> str:
    host = url.query.get("host") or url.host or "localhost"
    if isinstance(host, tuple):
        host = ",".join(host)
    if str(host).startswith("/"):
        return f"the socket in {host}"
    return f"{host}:{url.port or 5432}"


def _postgres_error(url: URL, detail: str) -> MonitorError:
    server = _server(url)
    user = url.username or os.environ.get("PGUSER") or "(default user)"
    database = url.database or user
    lowered = detail.lower()
    if match := re.search(r'connection option "([^"]*)"', detail):
        # libpq refused an option of the URL's query (its value is never quoted: it may be a
        # password); before the timeout case, which "connect_timeout" would match
        return ConfigError(
            f"the database URL has an option {match[1]} whose value PostgreSQL refuses",
            "see the connection parameters of libpq",
        )
    if match := re.search(r'database "([^"]*)" does not exist', detail):
        return DatabaseUnavailable(
            f"PostgreSQL at {server} has no database '{match[1]}'",
            f"create it (createdb -h HOST -U USER {match[1]}), then run: monitor db upgrade",
        )
    if match := re.search(r'role "([^"]*)" does not exist', detail):
        return DatabaseUnavailable(
            f"PostgreSQL at {server} has no role (user) '{match[1]}'",
            f"create it (createuser {match[1]}) or name another user in {WHERE_DB}",
        )
    # the driver's words, and what they mean: the first that appears in its message
    known = (
        (
            ("authentication failed", "no password supplied"),
            f"PostgreSQL at {server} refused the password of user '{user}'",
            f"check the user and password in {WHERE_DB} (or ~/.pgpass)",
        ),
        (
            ("failed to resolve host", "could not translate host"),
            f"cannot connect to PostgreSQL: unknown host '{url.host}'",
            f"check the host name in {WHERE_DB}",
        ),
        (
            ("connection refused", "no such file or directory"),
            f"cannot connect to PostgreSQL at {server}: nothing accepts connections there",
            f"is the server running on that host and port? check {WHERE_DB}",
        ),
        (
            ("timeout", "timed out"),
            f"cannot connect to PostgreSQL at {server}: the connection timed out",
            f"check the host, the port and any firewall; {WHERE_DB} names them",
        ),
        (
            ("does not allow connections", "no pg_hba.conf entry"),
            f"PostgreSQL at {server} refuses user '{user}' on database '{database}': {detail}",
            "the server's pg_hba.conf or the database's settings must allow it",
        ),
    )
    for words, message, hint in known:
        if any(word in lowered for word in words):
            return DatabaseUnavailable(message, hint)
    return DatabaseUnavailable(
        f"cannot use PostgreSQL database '{database}' at {server}: {detail}",
        f"check the server and {WHERE_DB} ({redact(url)})",
    )


def _sqlite_error(url: URL, detail: str) -> DatabaseUnavailable:
    if not url.database or url.database == ":memory:":
        return DatabaseUnavailable(f"cannot open the in-memory SQLite database: {detail}")
    path = Path(url.database)
    hint = "choose another path in " + WHERE_DB
    if "not a database" in detail or "malformed" in detail:
        return DatabaseUnavailable(
            f"{path} is not a SQLite database (or is damaged)",
            f"point {WHERE_DB} at a monitor database or a new file name",
        )
    folder = path.parent
    ancestor = folder
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if ancestor != folder or not folder.is_dir():
        if ancestor.exists() and not ancestor.is_dir():
            return DatabaseUnavailable(
                f"cannot create the SQLite database {path}: {ancestor} is a file, not a folder",
                hint,
            )
        return DatabaseUnavailable(
            f"cannot create the SQLite database {path}: folder {folder} does not exist",
            f"create it (mkdir -p {folder}) or {hint}",
        )
    if path.is_dir():
        return DatabaseUnavailable(f"{path} is a folder, not a SQLite database file", hint)
    if "readonly" in detail or not os.access(folder, os.W_OK):
        return DatabaseUnavailable(
            f"cannot write the SQLite database {path}: {detail}",
            f"the folder {folder} and the file must be writable, or {hint}",
        )
    return DatabaseUnavailable(
        f"cannot open the SQLite database {path}: {detail}",
        f"the folder {folder} must be writable and allow new files, or {hint}",
    )


def open_database(
    url: str,
    *,
    lock_timeout: float,
    statement_timeout: float,
    check_schema: bool = True,
    on_created: Callable[[Engine], None] | None = None,
) -> Engine:
    """An engine on ``url`` whose connection answers and (``check_schema``) whose schema is at
    head (:func:`~monitor.store.migrate.ensure_schema`); ``on_created`` is called when this
    created the schema. A driver's failure becomes the typed error of
    :func:`database_error`; the engine is disposed of on any failure."""
    from monitor.store.engine import make_engine
    from monitor.store.migrate import ensure_schema

    engine = make_engine(url, lock_timeout=lock_timeout, statement_timeout=statement_timeout)
    try:
        check_connection(engine)
        if check_schema and ensure_schema(engine) and on_created is not None:
            on_created(engine)
    except DBAPIError as exc:
        engine.dispose()
        raise database_error(exc, engine.url) from None
    except BaseException:
        engine.dispose()
        raise
    return engine
