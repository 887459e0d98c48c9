"""Where reports go (issue 16, items 6 and 8): regular files atomically, devices, FIFOs and
links to them written as they are, a folder refused, and one file name per campaign, the same
for `monitor report` and the nightly job."""

from __future__ import annotations

import os
import re
import stat
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import Engine

from monitor.cli import main
from monitor.core.settings import Settings
from monitor.report.render import report_filename, safe_filename
from tests.report.fixtures import rating_campaign


def _report(db_url: str, *extra: str) -> int:
    return main(["report", "--db", db_url, "--campaign", "quality", *extra])


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_regular_file_is_replaced_atomically_keeping_its_mode(
    db_url: str, engine: Engine, tmp_path: Path, capsys
) -> None:  # noqa: ANN001
    rating_campaign(engine)
    out = tmp_path / "q.html"
    out.write_text("old")
    out.chmod(0o640)
    assert _report(db_url, "--out", str(out)) == 0
    assert capsys.readouterr().out.strip() == str(out)
    assert out.read_text().startswith("<!doctype html>")
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    assert _leftovers(tmp_path) == []


def test_symlink_to_a_regular_file_updates_the_file(
    db_url: str, engine: Engine, tmp_path: Path
) -> None:
    rating_campaign(engine)
    target = tmp_path / "real.html"
    target.write_text("old")
    link = tmp_path / "link.html"
    link.symlink_to(target)
    assert _report(db_url, "--out", str(link)) == 0
    assert link.is_symlink()
    assert target.read_text().startswith("<!doctype html>")
    assert _leftovers(tmp_path) == []


def test_fifo_is_written_not_replaced(db_url: str, engine: Engine, tmp_path: Path) -> None:
    rating_campaign(engine)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as f:
            got.append(f.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert _report(db_url, "--out", str(fifo), "--format", "json") == 0
    reader.join(timeout=30)
    assert not reader.is_alive()
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert b'"name": "quality"' in got[0]
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("device", ["/dev/null", "link to /dev/null"])
def test_dev_null_is_written_not_replaced(
    db_url: str, engine: Engine, tmp_path: Path, device: str
) -> None:
    rating_campaign(engine)
    out = Path("/dev/null")
    if device.startswith("link"):
        out = tmp_path / "null-link"
        out.symlink_to("/dev/null")
    assert _report(db_url, "--out", str(out)) == 0
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    if out.is_symlink():
        assert os.readlink(out) == "/dev/null"
    assert _leftovers(Path("/dev")) == []
    assert _leftovers(tmp_path) == []


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_dev_full_is_one_line_and_exit_1(db_url: str, engine: Engine, capsys) -> None:  # noqa: ANN001
    rating_campaign(engine)
    assert _report(db_url, "--out", "/dev/full") == 1
    assert capsys.readouterr().err.splitlines() == [
        "monitor: error: cannot write the report to /dev/full: No space left on device"
    ]
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_folder_is_a_usage_error_and_leaves_nothing(
    db_url: str, engine: Engine, tmp_path: Path, capsys
) -> None:  # noqa: ANN001
    rating_campaign(engine)
    folder = tmp_path / "reports"
    folder.mkdir()
    assert _report(db_url, "--out", str(folder)) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"monitor: error: {folder} is a folder, not a file to write the report to",
        f"hint: name a file, e.g. {folder / 'quality.html'}",
    ]
    assert _leftovers(tmp_path) == []
    assert not (tmp_path / "reports.tmp").exists()
    assert list(folder.iterdir()) == []


def test_unwritable_place_is_one_line_and_exit_1(
    db_url: str, engine: Engine, tmp_path: Path, capsys
) -> None:  # noqa: ANN001
    rating_campaign(engine)
    (tmp_path / "file").write_text("x")
    assert _report(db_url, "--out", str(tmp_path / "file" / "q.html")) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"monitor: error: cannot write the report to {tmp_path}/file/q.html: "
        f"Not a directory: {tmp_path}/file"
    ]


# ---- one file name per campaign ----


def test_names_that_read_alike_get_different_files() -> None:
    assert safe_filename("quality") == "quality"
    assert safe_filename("demo-ratings_2.v1") == "demo-ratings_2.v1"
    slash, space = safe_filename("a/b"), safe_filename("a b")
    assert slash != space
    assert re.fullmatch(r"a_b-[0-9a-f]{8}", slash)
    assert re.fullmatch(r"a_b-[0-9a-f]{8}", space)
    assert safe_filename("a/b") == slash  # stable
    assert safe_filename("../../etc/passwd").startswith("etc_passwd-")
    assert safe_filename("/").startswith("campaign-")
    assert report_filename("a b", "json") == f"{space}.json"


@given(st.text(min_size=1, max_size=300), st.text(min_size=1, max_size=300))
def test_file_names_are_safe_and_distinct(a: str, b: str) -> None:
    fa, fb = safe_filename(a), safe_filename(b)
    for name in (fa, fb):
        assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name), name
        assert len(name) <= 109
    assert (fa == fb) == (a == b)


def test_nightly_and_report_default_agree(
    db_url: str, engine: Engine, tmp_path: Path, capsys
) -> None:  # noqa: ANN001
    from monitor.runtime.scheduler import write_reports

    for name in ("a/b", "a b", "plain"):
        rating_campaign(engine, name)
    reports = tmp_path / "reports"
    written = write_reports(engine, Settings(report_dir=str(reports)))
    assert sorted(p.name for p in written) == sorted(
        report_filename(n) for n in ("a/b", "a b", "plain")
    )
    assert len({p.name for p in written}) == 3
    assert (reports / "plain.html").is_file()
    for name in ("a/b", "a b"):
        before = (reports / report_filename(name)).stat().st_mtime_ns
        code = main(
            ["report", "--db", db_url, "--campaign", name, "--config", str(_config(tmp_path))]
        )
        assert code == 0
        assert capsys.readouterr().out.strip() == str(reports / report_filename(name))
        assert (reports / report_filename(name)).stat().st_mtime_ns >= before
    assert len(list(reports.iterdir())) == 3 * 2 + 2  # each HTML and JSON, the index twice


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "monitor.toml"
    path.write_text(f'report_dir = "{tmp_path / "reports"}"\n')
    return path


# ---- exports go through the same writer ----


def _export_cli(db_url: str, out: str) -> int:
    return main(["export", "blocklist", "--db", db_url, "--campaign", "quality", "--out", out])


def test_export_to_a_folder_is_usage_and_to_dev_full_one_line(
    db_url: str, engine: Engine, tmp_path: Path, capsys
) -> None:  # noqa: ANN001
    rating_campaign(engine)
    assert _export_cli(db_url, str(tmp_path)) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"monitor: error: {tmp_path} is a folder, not a file to write the export to"
    assert _leftovers(tmp_path) == []
    if os.path.exists("/dev/full"):
        assert _export_cli(db_url, "/dev/full") == 1
        assert capsys.readouterr().err.splitlines() == [
            "monitor: error: cannot write the export to /dev/full: No space left on device"
        ]


def test_export_replaces_a_file_atomically_and_writes_a_fifo_in_place(
    db_url: str, engine: Engine, tmp_path: Path
) -> None:
    rating_campaign(engine)
    out = tmp_path / "block.csv"
    out.write_text("old")
    assert _export_cli(db_url, str(out)) == 0
    assert out.read_text().startswith("worker")
    assert _leftovers(tmp_path) == []
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    assert _export_cli(db_url, str(fifo)) == 0
    reader.join(timeout=30)
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert got[0].startswith(b"worker")
