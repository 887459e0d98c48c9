"""Every cluster test: Dask's messages go to a file of the test's own (``cluster_log``), and
the library's loggers are as they were afterwards."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

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
