"""The golden cases in ``tests/golden/``: each file's source is listed, and each copy is still
the shared folder's file (checked where that folder is present)."""

from __future__ import annotations

import re

import pytest

from tests.golden import GOLDEN, shared_dir

SHARED = shared_dir() / "golden"
COPIES = sorted(p.relative_to(GOLDEN).as_posix() for p in GOLDEN.rglob("*.json"))


def test_every_case_has_its_source_listed() -> None:
    listed = re.findall(r"^\| `([^`]+)` \| \S", (GOLDEN / "SOURCES.md").read_text("utf-8"), re.M)
    assert COPIES
    assert sorted(listed) == COPIES


@pytest.mark.skipif(
    not SHARED.is_dir(),
    reason=f"no shared golden folder at {SHARED} (../shared beside the checkout, or MONITOR_SHARED)",
)
@pytest.mark.parametrize("name", COPIES)
def test_the_copy_is_the_shared_file(name: str) -> None:
    assert (GOLDEN / name).read_bytes() == (SHARED / name).read_bytes()
