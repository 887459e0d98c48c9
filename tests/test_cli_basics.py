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
    assert "invalid choice: 'frobnicate'" in err
    assert "see 'monitor --help'" in err


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


HOSTILE_NAME = "a\x1b[2Jb\nc\u202ed\x00e"  # an ANSI escape, a line break, a bidi override, NUL
ESCAPED_NAME = "a\\x1b[2Jb\\x0ac\\u202ed\\x00e"


def test_missing_file_with_control_characters_is_one_escaped_line(
    db_url: str,
    tmp_path,
    capsys,  # noqa: ANN001
) -> None:
    """Issue 16: "no such file: PATH" printed the name raw (a terminal acted on its escapes);
    it is escaped as the FILE:LINE problem lines are, on every backend."""
    missing = tmp_path / HOSTILE_NAME.replace("\x00", "")  # a path cannot hold NUL
    code = main(["ingest", str(missing), "--campaign", "c", "--format", "csv", "--db", db_url])
    err = capsys.readouterr().err
    shown = str(tmp_path / ESCAPED_NAME.replace("\\x00", ""))
    assert (code, err.splitlines()) == (2, [f"monitor: error: no such file: {shown}"])
    assert "\x1b" not in err
    assert "\u202e" not in err


def test_usage_errors_are_escaped(tmp_path, capsys) -> None:  # noqa: ANN001
    """An argparse error quoting an argument, and a monitor usage error quoting an option
    and its hint, are one line each, control characters written as escapes."""
    with pytest.raises(SystemExit) as info:
        main(["ingest", "x.csv", "--campaign", "c", "--unknown", HOSTILE_NAME])
    assert info.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"monitor ingest: error: unrecognized arguments: --unknown {ESCAPED_NAME}"
    assert err[1:] == ["(see 'monitor ingest --help')"]
    path = tmp_path / "a.csv"
    path.write_text("worker,item,value\nw,i,1\n", encoding="utf-8")
    db = f"sqlite:///{tmp_path / 'm.db'}"
    code = main(["ingest", str(path), "--campaign", "c", "--map", HOSTILE_NAME, "--db", db])
    err = capsys.readouterr().err.splitlines()
    assert (code, err) == (2, [f"monitor: error: --map {ESCAPED_NAME}: expected KEY=VALUE"])
    words = ["analyze", str(path), "--kind", "label", "--format", "mturk"]
    code = main([*words, "--option", f"{HOSTILE_NAME}=1"])
    err = capsys.readouterr().err.splitlines()
    assert code == 2
    assert err[0] == f"monitor: error: unknown option '{ESCAPED_NAME}' for the MTurk reader"
    assert len(err) == 2
    assert err[1].startswith("hint: ")
