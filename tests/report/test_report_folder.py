"""A folder of reports others may write to (issue 43): file names that never meet, whatever
the file system's case rules; the index's saved state checked before it is used; a failed
report in one line; nothing written through a symbolic link, by ``report --all`` and the
nightly job alike."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import Engine

from monitor.cli import main
from monitor.core.settings import Settings
from monitor.report.index import INDEX, STATE, read_state, write_all
from monitor.report.render import report_filename, report_stems, safe_filename
from monitor.runtime.scheduler import write_reports
from tests.report.fixtures import rating_campaign

DIGESTED = "x_y-" + hashlib.sha256(b"x y").hexdigest()[:8]
"""A campaign literally named as ``x y``'s file would have been named."""


def test_file_names_never_meet_nor_take_the_index(engine: Engine, tmp_path: Path) -> None:
    names = ["index", "INDEX", "x y", DIGESTED, "Camp", "camp"]
    for name in names:
        rating_campaign(engine, name)
    tmp_path /= "reports"
    written = write_all(engine, tmp_path)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert len({f.lower() for f in files}) == len(files) == 2 * len(names) + 2
    assert [p.name for p in written.reports].count(INDEX) == 0
    for name in names:  # each file holds its own campaign's report
        doc = json.loads((tmp_path / report_filename(name, "json")).read_text(encoding="utf-8"))
        assert doc["campaign"]["name"] == name
    state = json.loads((tmp_path / STATE).read_text(encoding="utf-8"))
    assert sorted(s["campaign"] for s in state["campaigns"]) == sorted(names)
    assert safe_filename("camp") == "camp"
    assert safe_filename("Camp") != "Camp"


@given(st.lists(st.text(min_size=1, max_size=12), max_size=12, unique=True))
def test_stems_distinct_ignoring_case(names: list[str]) -> None:
    stems = report_stems(names)
    assert len({s.lower() for s in stems.values()}) == len(names)
    assert all(s.lower() != "index" and s.isascii() for s in stems.values())


def test_stems_of_a_digest_collision_take_the_whole_digest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import monitor.report.render as render

    real = render.safe_filename
    monkeypatch.setattr(
        render, "safe_filename", lambda n, d=8: "same-00000000" if d == 8 else real(n, d)
    )
    stems = report_stems(["a", "b", "c d"])
    assert stems == {n: real(n, 64) for n in ("a", "b", "c d")}
    assert len(stems["a"]) == 1 + 1 + 64
    assert stems["c d"].startswith("c_d-")


BAD_STATES = [
    "{not json",
    "[1, 2]",
    '{"campaigns": {"quality": 1}}',
    None,  # a good state with one field of the wrong type, filled in below
]


@pytest.mark.parametrize("bad", BAD_STATES)
def test_a_bad_saved_state_is_set_aside(
    engine: Engine,
    tmp_path: Path,
    capsys,
    db_url: str,
    bad: str | None,  # noqa: ANN001
) -> None:
    rating_campaign(engine)
    rating_campaign(engine, "other")
    write_all(engine, tmp_path)
    if bad is None:
        state = json.loads((tmp_path / STATE).read_text(encoding="utf-8"))
        state["campaigns"][0]["alpha"] = "0.8"  # a string where a number belongs
        state["campaigns"][1]["run"] = {"number": 2}
        bad = json.dumps(state)
    (tmp_path / STATE).write_text(bad, encoding="utf-8")
    code = main(["report", "--all", "--db", db_url, "--out", str(tmp_path)])
    _out, err = capsys.readouterr()
    assert code == 0
    warnings = err.splitlines()
    assert warnings
    assert all(w.startswith("monitor: warning: ") for w in warnings)
    assert "set aside as index.json.invalid" in warnings[0]
    assert "Traceback" not in err
    assert (tmp_path / (STATE + ".invalid")).read_text(encoding="utf-8") == bad
    assert sorted(read_state(tmp_path)) == ["other", "quality"]  # the new state is whole
    assert main(["report", "--all", "--db", db_url, "--out", str(tmp_path)]) == 0  # and the next
    assert capsys.readouterr().err == ""


def test_a_bad_entry_is_named_and_the_good_kept(engine: Engine, tmp_path: Path) -> None:
    rating_campaign(engine)
    rating_campaign(engine, "other")
    write_all(engine, tmp_path)
    state = json.loads((tmp_path / STATE).read_text(encoding="utf-8"))
    state["campaigns"][0]["flags"] = {"worker:low_quality": "3"}
    (tmp_path / STATE).write_text(json.dumps(state), encoding="utf-8")
    warnings: list[str] = []
    kept = read_state(tmp_path, warnings)
    assert list(kept) == ["quality"]
    assert len(warnings) == 1
    assert "campaign 'other': field 'flags'" in warnings[0]


def test_a_failed_report_is_one_line(
    engine: Engine,
    tmp_path: Path,
    capsys,
    db_url: str,
    monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
) -> None:
    import monitor.core.output as output

    rating_campaign(engine)
    rating_campaign(engine, "other")
    atomically = output._write_atomically

    def full(path: Path, *args, **kwargs) -> None:  # noqa: ANN002, ANN003
        if path.name == "other.json":
            raise OSError(28, os.strerror(28))
        atomically(path, *args, **kwargs)

    monkeypatch.setattr(output, "_write_atomically", full)
    code = main(["report", "--all", "--db", db_url, "--out", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 1
    assert err.splitlines() == [
        f"monitor: report of campaign 'other' failed: cannot write the report to "
        f"{tmp_path / 'other.json'}: No space left on device"
    ]
    assert out.strip() == str(tmp_path / INDEX)


@contextlib.contextmanager
def _tmpfs(path: Path, size: str) -> Iterator[Path]:
    path.mkdir()
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root and mount(8)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True, check=False)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=False)


def test_a_full_disk_is_one_line(engine: Engine, tmp_path: Path, capsys, db_url: str) -> None:  # noqa: ANN001
    rating_campaign(engine)
    rating_campaign(engine, "other")
    with _tmpfs(tmp_path / "small", "64k") as small:
        (small / "filler").write_bytes(b"\0" * 56 * 1024)
        code = main(["report", "--all", "--db", db_url, "--out", str(small)])
        _out, err = capsys.readouterr()
        assert code == 1
        lines = err.splitlines()
        assert len(lines) == 1, err  # the index cannot be written either: one line, not more
        assert "No space left on device" in lines[0]
        assert "Traceback" not in err
        assert not [p for p in small.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("via", ["cli", "scheduler"])
def test_nothing_written_through_a_link(
    engine: Engine,
    tmp_path: Path,
    db_url: str,
    via: str,
    capsys,  # noqa: ANN001
) -> None:
    rating_campaign(engine, "camp")
    folder, elsewhere = tmp_path / "reports", tmp_path / "elsewhere"
    folder.mkdir()
    elsewhere.mkdir()
    victims = {}
    for name in ("camp.html", "camp.json", INDEX, STATE):
        victim = elsewhere / name
        victim.write_text("precious", encoding="utf-8")
        (folder / name).symlink_to(victim)
        victims[name] = victim
    fifo = folder / "x.html"  # nothing in the folder can make the writer wait either
    if hasattr(os, "mkfifo"):
        os.mkfifo(fifo)
    if via == "cli":
        assert main(["report", "--all", "--db", db_url, "--out", str(folder)]) == 0
    else:
        write_reports(engine, Settings(database_url=db_url, report_dir=str(folder)))
    capsys.readouterr()
    for name, victim in victims.items():
        assert victim.read_text(encoding="utf-8") == "precious", name
        assert not (folder / name).is_symlink()
        assert (folder / name).is_file()
    assert (
        json.loads((folder / "camp.json").read_text(encoding="utf-8"))["campaign"]["name"] == "camp"
    )


def test_the_default_report_file_is_not_written_through_a_link(
    engine: Engine,
    tmp_path: Path,
    db_url: str,
    capsys,  # noqa: ANN001
) -> None:
    rating_campaign(engine, "camp")
    victim = tmp_path / "victim"
    victim.write_text("precious", encoding="utf-8")
    (tmp_path / "camp.html").symlink_to(victim)
    config = tmp_path / "monitor.toml"
    config.write_text(f'report_dir = "{tmp_path}"\n', encoding="utf-8")
    assert main(["report", "--campaign", "camp", "--db", db_url, "--config", str(config)]) == 0
    assert victim.read_text(encoding="utf-8") == "precious"
    assert not (tmp_path / "camp.html").is_symlink()
    assert "<html" in (tmp_path / "camp.html").read_text(encoding="utf-8")
