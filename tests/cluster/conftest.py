"""Every cluster test: Dask's messages go to a file of the test's own (``cluster_log``), and
the library's loggers are as they were afterwards; a PostgreSQL database per module, emptied
after each test that uses its engine."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from monitor.store.engine import make_engine
from monitor.store.migrate import upgrade
from monitor.store.models import Base

LOGGERS = ("distributed", "tornado", "asyncio")


@pytest.fixture(autouse=True)
def cluster_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "cluster.log"
    monkeypatch.setenv("MONITOR_CLUSTER_LOG", str(path))
    saved = {n: (list(logging.getLogger(n).handlers), logging.getLogger(n).propagate)
             for n in LOGGERS}  # fmt: skip
    yield path
    for name, (handlers, propagate) in saved.items():
        logger = logging.getLogger(name)
        for h in list(logger.handlers):
            if h not in handlers:
                logger.removeHandler(h)
                h.close()
        for h in handlers:
            if h not in logger.handlers:
                logger.addHandler(h)
        logger.propagate = propagate


@pytest.fixture(scope="module")
def pg_url(pg_server) -> str:  # noqa: ANN001
    url = pg_server.new_database()
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    return url


@pytest.fixture
def engine(pg_url: str) -> Iterator[Engine]:
    eng = make_engine(pg_url)
    yield eng
    tables = ", ".join(f'"{t.name}"' for t in Base.metadata.sorted_tables)
    with eng.begin() as c:
        c.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
    eng.dispose()
