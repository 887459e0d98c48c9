"""Every docstring example in ``monitor/`` runs: the modules are found by their text (a line
starting with ``>>>``), so a new module's examples run without being listed anywhere."""

from __future__ import annotations

import doctest
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "monitor"
EXAMPLE = re.compile(r"^\s*>>> ", re.M)


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = sorted(
    _module(p) for p in ROOT.rglob("*.py") if EXAMPLE.search(p.read_text(encoding="utf-8"))
)


def test_the_examples_are_found() -> None:
    assert "monitor.metrics.agreement.krippendorff" in MODULES
    assert not [m for m in MODULES if m.endswith("__main__")]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    result = doctest.testmod(
        importlib.import_module(name), optionflags=doctest.NORMALIZE_WHITESPACE
    )
    assert result.attempted > 0
    assert result.failed == 0
