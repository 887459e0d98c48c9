"""The size of ``monitor/``'s modules: none over 600 lines, and few over 500.

A module that grows past these is doing more than one thing: split it by idea, each new module
named for the one idea it owns (``docs/architecture.md``, "Where things go")."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "monitor"
MOST_LINES = 600
LONG_LINES = 500
MOST_LONG = 8


def _sizes() -> dict[str, int]:
    return {
        str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines())
        for p in sorted(ROOT.rglob("*.py"))
    }


def test_no_module_is_over_600_lines() -> None:
    assert {name: n for name, n in _sizes().items() if n > MOST_LINES} == {}


def test_at_most_eight_modules_are_over_500_lines() -> None:
    long = {name: n for name, n in _sizes().items() if n > LONG_LINES}
    assert len(long) <= MOST_LONG, long
