"""What each ingest brought, from the command line (issue 29): ``monitor ingest history`` and
``monitor ingest rejected``, a file named like them, and the count of a refused file's
problems."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from monitor.cli import main

RATING = ["--kind", "rating", "--min", "1", "--max", "5"]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _file(path: Path, rows: list[str]) -> Path:
    path.write_text("worker,item,value\n" + "".join(r + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def campaign(db_url: str, capsys) -> list[str]:  # noqa: ANN001
    assert _run(capsys, "campaign", "create", "c", *RATING, "--db", db_url)[0] == 0
    return ["--campaign", "c", "--db", db_url]


def test_history_and_rejected_rows(campaign: list[str], tmp_path: Path, capsys) -> None:  # noqa: ANN001
    good = _file(tmp_path / "good.csv", ["w1,i1,1", "w2,i1,2"])
    bad = _file(tmp_path / "bad.csv", ["w1,i2,3", "w2,i2,four", "w3,i2,9", "w3,i3,4"])
    assert _run(capsys, "ingest", str(good), *campaign)[0] == 0
    code, out, _ = _run(capsys, "ingest", str(bad), *campaign, "--skip-invalid")
    assert out.splitlines() == [
        f"{bad} (csv): 4 rows: 2 new, 0 duplicate, 2 rejected",
        "rejected rows are kept with their reasons in ingest batch 2: "
        "monitor ingest rejected --campaign c --batch 2",
    ]
    assert _run(capsys, "ingest", str(good), *campaign)[0] == 0  # all duplicate

    code, out, err = _run(capsys, "ingest", "history", *campaign)
    lines = out.splitlines()
    assert (code, err) == (0, "")
    assert lines[0].split() == [
        "batch", "started", "(UTC)", "file", "format", "rows", "stored", "duplicate",
        "rejected", "sha256",
    ]  # fmt: skip
    cells = [line.split() for line in lines[1:]]
    assert [(c[0], c[3], c[5], c[6], c[7], c[8]) for c in cells] == [
        ("1", str(good), "2", "2", "0", "0"),
        ("2", str(bad), "4", "2", "0", "2"),
        ("3", str(good), "2", "0", "2", "0"),
    ]
    assert cells[0][9] == cells[2][9] != cells[1][9]
    assert len(cells[0][9]) == 12
    history = [
        json.loads(x)
        for x in _run(capsys, "ingest", "history", *campaign, "--json")[1].splitlines()
    ]
    import hashlib

    assert history[1] == history[1] | {
        "batch": 2,
        "file": str(bad),
        "format": "csv",
        "checksum": hashlib.sha256(bad.read_bytes()).hexdigest(),
        "rows": 4,
        "stored": 2,
        "duplicate": 0,
        "rejected": 2,
    }
    assert history[1]["started_at"] <= history[1]["finished_at"]

    code, out, err = _run(capsys, "ingest", "rejected", *campaign)
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"{bad}:3: column 'value': expected a number in 1..5, got 'four'",
        '    row: {"worker": "w2", "item": "i2", "value": "four"}',
        f"{bad}:4: column 'value': expected a number in 1..5, got '9' (outside the campaign's "
        "scale)",
        '    row: {"worker": "w3", "item": "i2", "value": "9"}',
        "2 rejected rows in campaign c",
    ]
    rows = [json.loads(x) for x in _run(capsys, "ingest", "rejected", *campaign, "--batch", "2",
                                        "--json")[1].splitlines()]  # fmt: skip
    assert [(r["batch"], r["file"], r["line"], len(r["reasons"])) for r in rows] == [
        (2, str(bad), 3, 1),
        (2, str(bad), 4, 1),
    ]
    assert _run(capsys, "ingest", "rejected", *campaign, "--batch", "1")[1] == (
        "0 rejected rows in batch 1\n"
    )
    assert _run(capsys, "ingest", "rejected", *campaign, "--batch", "7")[1:] == (
        "",
        "monitor: error: campaign c has no ingest batch 7\n"
        "hint: list its batches with: monitor ingest history --campaign c\n",
    )
    code, _, err = _run(capsys, "ingest", "history", "--campaign", "nope", *campaign[2:])
    assert code == 2
    assert err.startswith("monitor: error: no campaign named 'nope'")


def test_a_file_named_like_a_subcommand(
    campaign: list[str], tmp_path: Path, monkeypatch, capsys
) -> None:  # noqa: ANN001
    monkeypatch.chdir(tmp_path)
    _file(tmp_path / "rejected", ["w1,i1,1"])
    code, out, err = _run(capsys, "ingest", "./rejected", *campaign, "--format", "csv")
    assert code == 0
    assert out.startswith("rejected (csv): 1 rows: 1 new")
    code, out, err = _run(capsys, "ingest", "rejected", *campaign)
    assert code == 0
    assert out == "0 rejected rows in campaign c\n"
    assert err == (
        "note: 'rejected' is read as 'monitor ingest rejected'; to ingest the file of that "
        "name, write ./rejected\n"
    )
    with pytest.raises(SystemExit) as info:
        main(["ingest", "rejected", *campaign, "--format", "csv"])
    assert info.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        "monitor ingest rejected: error: unrecognized arguments: --format csv",
        "(a file named rejected is written ./rejected: monitor ingest ./rejected ...)",
        "(see 'monitor ingest rejected --help')",
    ]
    # the word is found after options too, but not after '--' (a file, whatever its name)
    code, out, _ = _run(capsys, "ingest", *campaign, "history")
    assert code == 0
    assert out.splitlines()[1].split()[3] == "rejected"
    code, out, _ = _run(capsys, "ingest", *campaign, "--format", "csv", "--", "rejected")
    assert code == 0
    assert out.startswith("rejected (csv): 1 rows: 0 new, 1 duplicate")


def test_every_problem_of_a_refused_file_is_counted(
    campaign: list[str], tmp_path: Path, capsys
) -> None:  # noqa: ANN001
    """The first 50 problems, then "... and 151 more problems" where --skip-invalid showed
    5,844 bad rows: now the rest of the file is read to count them all."""
    rows = [f"w{k % 7},i{k},{'x' if k % 3 == 0 else 1 + k % 5}" for k in range(17_532)]
    path = _file(tmp_path / "many.csv", rows)
    n_bad = sum(1 for k in range(17_532) if k % 3 == 0)
    assert n_bad == 5_844
    code, out, err = _run(capsys, "ingest", str(path), *campaign)
    lines = err.splitlines()
    assert (code, out, len(lines)) == (2, "", 52)
    assert lines[0] == f"{path}:2: column 'value': expected a number in 1..5, got 'x'"
    assert lines[50:] == [
        "... and 5,794 more problems: 5,844 bad rows in all",
        "nothing was written",
    ]
    code, out, _ = _run(capsys, "ingest", str(path), *campaign, "--skip-invalid")
    assert out.splitlines()[0].endswith(f"{17_532 - n_bad} new, 0 duplicate, 5844 rejected")
