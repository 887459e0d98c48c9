"""Loading the golden cases: reference values computed by independent implementations, read by
the tests (never copied into the code). They live in ``tests/golden/``, copies of the shared
golden folder's cases with each one's source in ``tests/golden/SOURCES.md``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest


def shared_dir() -> Path:
    """The shared folder beside the checkout (``../shared``), or ``MONITOR_SHARED``."""
    env = os.environ.get("MONITOR_SHARED")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "shared"


GOLDEN = Path(__file__).resolve().parent / "golden"


def case_paths(pattern: str, folder: str = "cases") -> list[Path]:
    paths = sorted((GOLDEN / folder).glob(pattern))
    return paths


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def params(pattern: str, folder: str = "cases", key: str | None = None) -> list[Any]:
    """pytest parameters: every case file matching pattern (optionally only those whose
    ``expected`` has ``key``), with the file name as id. Fails loudly if none are found."""
    out = []
    for p in case_paths(pattern, folder):
        if key is not None and key not in load(p).get("expected", {}):
            continue
        out.append(pytest.param(p, id=p.stem))
    if not out:
        raise RuntimeError(f"no golden case matches {folder}/{pattern} under {GOLDEN}")
    return out
