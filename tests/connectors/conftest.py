"""The connector tests run against a real Label Studio server (``labelstudio_server``), one
per test session; without ``$MONITOR_LABELSTUDIO_BIN`` they are skipped (.ci/run builds the
server's virtual environment and sets it, and fails when they were skipped)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.connectors.labelstudio_server import BIN_ENV, LabelStudio, binary


@pytest.fixture(scope="session")
def labelstudio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabelStudio]:
    path = binary()
    if path is None:
        pytest.skip(f"no Label Studio server: set {BIN_ENV} to its label-studio binary")
    server = LabelStudio(path, Path(tmp_path_factory.mktemp("labelstudio")))
    try:
        yield server
    finally:
        server.stop()
