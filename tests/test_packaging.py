"""The distribution: every package listed, migrations usable after a non-editable install."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_is_listed() -> None:
    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        ".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "monitor").rglob("__init__.py")
    }
    assert found - listed == set()


@pytest.mark.slow
def test_non_editable_install_runs_migrations(tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    work = tmp_path / "empty"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": str(target)}
    env.pop("MONITOR_DATABASE_URL", None)
    run = subprocess.run(
        [sys.executable, "-m", "monitor", "db", "upgrade"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert (work / "monitor.db").is_file()
    where = subprocess.run(
        [sys.executable, "-c", "import monitor.store.migrate as m; print(m.migrations_dir())"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert where.startswith(str(target))
