"""``monitor cache clear``: the run cache's files, all or one campaign's, and nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.cli import main
from monitor.incremental.cache import clear_files

ROWS = "".join(f"w{w},i{i},{1 + (w * i) % 5}\n" for w in range(1, 5) for i in range(1, 6))


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_clear_one_campaign_then_all(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("MONITOR_BOOTSTRAP_SAMPLES", "0")
    monkeypatch.setenv("MONITOR_PHI", "off")
    monkeypatch.setenv("MONITOR_CACHE_DIR", str(cache))
    db = ["--db", db_url]
    for name in ("a", "b"):
        assert _run(capsys, "campaign", "create", name, "--kind", "rating", "--min", "1",
                    "--max", "5", *db)[0] == 0  # fmt: skip
        path = tmp_path / f"{name}.csv"
        path.write_text("worker,item,value\n" + ROWS, encoding="utf-8")
        assert _run(capsys, "ingest", str(path), "--campaign", name, *db)[0] == 0
    assert _run(capsys, "recompute", *db)[0] == 0
    files = sorted(p.name for p in cache.iterdir())
    stems = sorted({name.split(".", 1)[0] for name in files})
    assert len(stems) == 2
    assert len(files) >= 2  # a snapshot or more per campaign
    a, b = sorted(stems, key=lambda s: int(s.rsplit("-", 1)[1]))  # a was created first
    (cache / f"{a}.npzx1y2.tmp").write_bytes(b"half")  # left by a killed run
    (cache / "notes.txt").write_text("mine", encoding="utf-8")

    code, out, _ = _run(capsys, "cache", "clear", "--campaign", "nope", *db)
    assert code == 2
    assert len(list(cache.iterdir())) == len(files) + 2  # nothing removed

    code, out, _ = _run(capsys, "cache", "clear", "--campaign", "a", *db)
    assert code == 0
    assert "cache files of campaign a" in out
    left = sorted(p.name for p in cache.iterdir())
    assert not [n for n in left if n.startswith(a)]
    assert [n for n in left if n.startswith(b)] == [n for n in files if n.startswith(b)]

    # The next run reads the database again: the same results.
    assert _run(capsys, "recompute", "--full", *db)[0] == 0
    code, out, _ = _run(capsys, "cache", "clear", *db)
    assert code == 0
    assert out.startswith("removed ")
    assert [p.name for p in cache.iterdir()] == ["notes.txt"]
    code, out, _ = _run(capsys, "cache", "clear", *db)
    assert code == 0
    assert out.startswith("no cache files in")


def test_a_campaign_id_is_not_a_prefix_of_another(tmp_path: Path) -> None:
    """Campaign 1's files are not campaign 11's; files of other names are left alone."""

    class Info:
        id = 1

    class Session:
        @staticmethod
        def get_bind():  # noqa: ANN205
            from sqlalchemy import create_engine

            return create_engine("sqlite://")

    from monitor.incremental.arrays import cache_key

    digest, _ = cache_key(Session(), Info())  # type: ignore[arg-type]
    names = [f"{digest}-1.npz", f"{digest}-1.columns.npz", f"{digest}-11.npz", "other-1.npz"]
    for name in names:
        (tmp_path / name).write_bytes(b"x" * 10)
    cleared = clear_files(tmp_path, Session(), Info())  # type: ignore[arg-type]
    assert (cleared.n_files, cleared.n_bytes) == (2, 20)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names[2:])
    assert clear_files(tmp_path / "missing").n_files == 0
    assert clear_files(None).n_files == 0
