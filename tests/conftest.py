"""Fixtures: a fresh database on each backend (SQLite file, real PostgreSQL server).

PostgreSQL tests use the server at ``MONITOR_TEST_PG`` (default: the local one on
127.0.0.1:5432, user postgres). Each test session creates its own throwaway database. When the
server does not answer, PostgreSQL tests are skipped, unless ``MONITOR_REQUIRE_PG=1`` (set by
.ci/run), in which case they fail.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator

import pytest
from hypothesis import settings as hypothesis_settings
from sqlalchemy import Engine, text

from monitor.store.engine import make_engine
from monitor.store.migrate import upgrade
from monitor.store.models import Base

# CI runs the same examples every time (a red CI names a property that fails, not a draw);
# elsewhere each run draws new ones.
hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True)
# The slow job (README): new random draws, many of them (tests.hypothesis_profiles.examples
# multiplies the counts the properties set themselves).
hypothesis_settings.register_profile(
    "thorough", derandomize=False, max_examples=500, deadline=None, print_blob=True
)
if os.environ.get("MONITOR_HYPOTHESIS") == "thorough":
    hypothesis_settings.load_profile("thorough")
elif os.environ.get("CI"):
    hypothesis_settings.load_profile("ci")


_SAVED_CACHE_HOME: list[str | None] = []


def pytest_configure(config: pytest.Config) -> None:
    """The default ``cache_dir`` is the user's cache folder (``$XDG_CACHE_HOME/monitor``, read
    when a Settings is made, some at import): the tests' runs keep theirs in a temporary
    folder, set before collection and removed at the end."""
    _SAVED_CACHE_HOME.append(os.environ.get("XDG_CACHE_HOME"))
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="monitor-test-cache-")


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(os.environ["XDG_CACHE_HOME"], ignore_errors=True)
    before = _SAVED_CACHE_HOME.pop() if _SAVED_CACHE_HOME else None
    if before is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = before


PG_ADMIN = os.environ.get(
    "MONITOR_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
REQUIRE_PG = os.environ.get("MONITOR_REQUIRE_PG") == "1"
BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def _pg_admin() -> Engine | None:
    engine = make_engine(
        PG_ADMIN, isolation_level="AUTOCOMMIT", connect_args={"connect_timeout": 3}
    )
    try:
        with engine.connect() as c:
            c.execute(text("SELECT 1"))
    except Exception as exc:  # noqa: BLE001 - any failure means "no server"
        engine.dispose()
        if REQUIRE_PG:
            pytest.fail(f"PostgreSQL at {PG_ADMIN} does not answer: {exc}")
        return None
    return engine


def _url_for(dbname: str) -> str:
    return PG_ADMIN.rsplit("/", 1)[0] + "/" + dbname


class PgServer:
    """Creates and drops throwaway databases on the test server."""

    def __init__(self, admin: Engine) -> None:
        self.admin = admin
        self.created: list[str] = []

    def new_database(self) -> str:
        name = f"monitor_test_{uuid.uuid4().hex[:12]}"
        with self.admin.connect() as c:
            c.execute(text(f'CREATE DATABASE "{name}"'))
        self.created.append(name)
        return _url_for(name)

    def drop_all(self) -> None:
        with self.admin.connect() as c:
            for name in self.created:
                c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        self.admin.dispose()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    admin = _pg_admin()
    if admin is None:
        pytest.skip(f"no PostgreSQL server at {PG_ADMIN}")
    server = PgServer(admin)
    yield server
    server.drop_all()


@pytest.fixture(scope="session")
def pg_head_url(pg_server: PgServer) -> str:
    """One PostgreSQL database at head for the session; tests truncate it after use."""
    url = pg_server.new_database()
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    return url


def _truncate(engine: Engine) -> None:
    tables = ", ".join(f'"{t.name}"' for t in Base.metadata.sorted_tables)
    with engine.begin() as c:
        c.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def db_url(backend: str, request: pytest.FixtureRequest, tmp_path) -> Iterator[str]:  # noqa: ANN001
    """A database URL at head on the parametrised backend, empty of rows."""
    if backend == "sqlite":
        url = f"sqlite:///{tmp_path / 'monitor.db'}"
        engine = make_engine(url)
        upgrade(engine)
        engine.dispose()
        yield url
        return
    url = request.getfixturevalue("pg_head_url")
    yield url
    engine = make_engine(url)
    _truncate(engine)
    engine.dispose()


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    eng = make_engine(db_url)
    yield eng
    eng.dispose()


@pytest.fixture
def empty_db_url(backend: str, request: pytest.FixtureRequest, tmp_path) -> str:  # noqa: ANN001
    """A URL of an empty database (no schema) on the parametrised backend."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'empty.db'}"
    return request.getfixturevalue("pg_server").new_database()


@pytest.fixture(autouse=True)
def _documents_have_their_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every JSON document a test builds (``document_from``, whatever calls it) or writes
    (``write_json``, its items streamed from the table) is checked against
    ``docs/report.schema.json`` as it is made; the library's own functions run unchanged."""
    import io

    import orjson

    from monitor.report import document, render
    from tests.documents import check_document

    built = document.document_from

    def document_from(*args: object, **kwargs: object) -> object:
        doc = built(*args, **kwargs)  # type: ignore[arg-type]
        check_document(doc)
        return doc

    written = render.write_json

    def write_json(doc: object, f: object, **kwargs: object) -> None:
        buffer = io.StringIO()
        written(doc, buffer, **kwargs)  # type: ignore[arg-type]
        text = buffer.getvalue()
        f.write(text)  # type: ignore[attr-defined]
        if text.strip():
            check_document(orjson.loads(text))

    monkeypatch.setattr(document, "document_from", document_from)
    monkeypatch.setattr(render, "document_from", document_from)
    monkeypatch.setattr(render, "write_json", write_json)
