"""Connection failures turned into one line saying what is wrong and what to do.

A driver's error (psycopg, sqlite3) wrapped by SQLAlchemy prints a page of traceback and, for
some, the URL. :func:`database_error` reads the driver's message and the URL and names the
host and port, the database, the role or the path, never the password.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from sqlalchemy import URL, Engine, make_url
from sqlalchemy.exc import DBAPIError

from monitor.errors import ConfigError, DatabaseUnavailable, MonitorError
from monitor.store.engine import first_line, normalise_url, redact

WHERE_DB = "--db or MONITOR_DATABASE_URL"


def check_connection(engine: Engine) -> None:
    """Open (and return to the pool) one connection; raise :class:`DatabaseUnavailable`."""
    try:
        with engine.connect():
            pass
    except DBAPIError as exc:
        raise database_error(exc, engine.url) from None


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
    if "authentication failed" in lowered or "no password supplied" in lowered:
        return DatabaseUnavailable(
            f"PostgreSQL at {server} refused the password of user '{user}'",
            f"check the user and password in {WHERE_DB} (or ~/.pgpass)",
        )
    if "failed to resolve host" in lowered or "could not translate host" in lowered:
        return DatabaseUnavailable(
            f"cannot connect to PostgreSQL: unknown host '{url.host}'",
            f"check the host name in {WHERE_DB}",
        )
    if "connection refused" in lowered or "no such file or directory" in lowered:
        return DatabaseUnavailable(
            f"cannot connect to PostgreSQL at {server}: nothing accepts connections there",
            f"is the server running on that host and port? check {WHERE_DB}",
        )
    if "timeout" in lowered or "timed out" in lowered:
        return DatabaseUnavailable(
            f"cannot connect to PostgreSQL at {server}: the connection timed out",
            f"check the host, the port and any firewall; {WHERE_DB} names them",
        )
    if "does not allow connections" in lowered or "no pg_hba.conf entry" in lowered:
        return DatabaseUnavailable(
            f"PostgreSQL at {server} refuses user '{user}' on database '{database}': {detail}",
            "the server's pg_hba.conf or the database's settings must allow it",
        )
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
