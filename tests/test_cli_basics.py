"""The CLI skeleton: help everywhere, exit codes, one-line errors with hints."""

from __future__ import annotations

import subprocess
import sys

import pytest

from monitor.cli import build_parser, main


def _subcommands() -> list[list[str]]:
    parser = build_parser()
    out: list[list[str]] = [[]]
    for action in parser._subparsers._group_actions:  # noqa: SLF001
        for name, sub in action.choices.items():
            out.append([name])
            for sa in getattr(sub, "_subparsers", None)._group_actions if sub._subparsers else []:  # noqa: SLF001
                out.extend([name, n] for n in sa.choices)
    return out


@pytest.mark.parametrize("words", _subcommands(), ids=lambda w: " ".join(w) or "monitor")
def test_help_everywhere(words: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main([*words, "--help"])
    assert info.value.code == 0
    assert "usage: monitor" in capsys.readouterr().out


def test_unknown_command_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["frobnicate"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'frobnicate'" in err and "see 'monitor --help'" in err


def test_bad_setting_names_key_and_hint(tmp_path, monkeypatch, capsys) -> None:  # noqa: ANN001
    monkeypatch.chdir(tmp_path)
    (tmp_path / "monitor.toml").write_text('databse_url = "x"\n')
    assert main(["db", "current"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "monitor: error: monitor.toml: unknown setting 'databse_url'",
        "hint: did you mean 'database_url'?",
    ]


def test_db_upgrade_creates_monitor_db_in_working_directory(tmp_path, monkeypatch, capsys) -> None:  # noqa: ANN001
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MONITOR_DATABASE_URL", raising=False)
    assert main(["db", "upgrade"]) == 0
    assert (tmp_path / "monitor.db").is_file()
    assert main(["db", "current"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith("(head)")


def test_db_flag_after_the_command(tmp_path, capsys) -> None:  # noqa: ANN001
    url = f"sqlite:///{tmp_path / 'x.db'}"
    assert main(["db", "upgrade", "--db", url]) == 0
    assert (tmp_path / "x.db").is_file()


def test_python_dash_m_monitor() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "monitor", "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.startswith("monitor ")


@pytest.mark.postgres
def test_db_upgrade_on_postgres_via_environment(pg_server, monkeypatch, tmp_path, capsys) -> None:  # noqa: ANN001
    url = pg_server.new_database()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MONITOR_DATABASE_URL", url)
    assert main(["db", "current"]) == 0
    assert capsys.readouterr().out.startswith("empty (behind head")
    assert main(["db", "upgrade"]) == 0
    assert "***" not in url or "***" in capsys.readouterr().out
    assert main(["db", "current"]) == 0
    assert capsys.readouterr().out.strip().endswith("(head)")
    assert not (tmp_path / "monitor.db").exists()
