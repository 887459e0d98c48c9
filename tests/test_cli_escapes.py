"""Hostile ids and labels through every command (issue 30 item 10): stored as they came, but
no line the command line prints lets a terminal act on them; JSON reads back the same strings;
data written to a file or a pipe is the data itself."""

from __future__ import annotations

import csv
import json
import logging
import sys
from pathlib import Path

import pytest

from monitor.cli import main
from monitor.cli.show import PrintableFormatter, json_escape

CLEAR = "\x1b[2J"  # clears the screen
TITLE = "\x1b]0;title\x07"  # sets the window title
RLO = "\u202e"  # right-to-left override
CAMPAIGN = f"c{CLEAR}{RLO}"
WORKER = f"w{CLEAR}1"
ITEM = f"i{TITLE}A"
POS, NEG = f"pos{RLO}", "neg\x1b[31m"
SHOWN = {CLEAR: "\\x1b[2J", TITLE: "\\x1b]0;title\\x07", RLO: "\\u202e"}


def _escaped(text: str) -> str:
    for raw, shown in SHOWN.items():
        text = text.replace(raw, shown)
    return text.replace("\x1b[31m", "\\x1b[31m")


def _safe(text: str) -> None:
    """Nothing a terminal acts on or hides: every character printable but line ends and tabs."""
    text = text.replace("\r\n", "\n")  # a CSV's line ends
    bad = sorted({repr(c) for c in text if not c.isprintable() and c not in "\n\t"})
    assert bad == [], text


def _judgments(path: Path, bad_row: bool = False) -> Path:
    rows = [(WORKER, ITEM, POS), ("w2", ITEM, NEG)]
    rows += [(f"w{k}", f"i{j}", (POS, NEG)[(k + j) % 2]) for k in range(3, 9) for j in range(1, 9)]
    if bad_row:
        rows.append((f"w{TITLE}", "", NEG))  # no item: rejected under --skip-invalid
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["worker", "item", "value"])
        w.writerows(rows)
    return path


@pytest.fixture
def run(db_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    monkeypatch.setenv("MONITOR_BOOTSTRAP_SAMPLES", "0")
    monkeypatch.setenv("MONITOR_CACHE_DIR", "")

    def _run(*argv: str, code: int = 0, safe: bool = True) -> tuple[str, str]:
        got = main([*argv, "--db", db_url])
        out, err = capsys.readouterr()
        assert got == code, err
        if safe:
            _safe(out)
        _safe(err)
        return out, err

    return _run


def test_hostile_ids_through_every_command(
    run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:  # noqa: ANN001
    name = ["--campaign", CAMPAIGN]
    out, _ = run("campaign", "create", CAMPAIGN, "--kind", "label")
    assert out == f"campaign '{_escaped(CAMPAIGN)}' created: label categories from the data " \
        "(nominal)\n"  # fmt: skip
    out, _ = run("ingest", str(_judgments(tmp_path / "h.csv", bad_row=True)), *name,
                 "--skip-invalid")  # fmt: skip
    lines = out.splitlines()
    assert lines[1] == f"categories taken from the data: {_escaped(NEG)}, {_escaped(POS)}"
    assert lines[2].startswith("rejected rows are kept with their reasons in ingest batch ")
    out, _ = run("ingest", "history", *name)
    assert "h.csv" in out
    history = [json.loads(x) for x in run("ingest", "history", *name, "--json")[0].splitlines()]
    assert history[0]["rejected"] == 1
    out, _ = run("ingest", "rejected", *name)
    assert '"w\\u001b]0;title\\u0007"' in out
    assert out.endswith(f"1 rejected row in campaign {_escaped(CAMPAIGN)}\n")
    [row] = [json.loads(x) for x in run("ingest", "rejected", *name, "--json")[0].splitlines()]
    assert json.loads(row["raw"])["worker"] == f"w{TITLE}"  # the row as it was read

    out, _ = run("recompute")
    assert out.startswith(f"{_escaped(CAMPAIGN)}: run 1, ")
    out, _ = run("campaign", "list")
    assert out.split("\t")[:2] == [
        _escaped(CAMPAIGN),
        f"label {_escaped(NEG)}, {_escaped(POS)} (nominal)",
    ]
    out, _ = run("workers", *name)
    assert any(line.startswith(_escaped(WORKER) + " ") for line in out.splitlines())
    workers = [json.loads(x) for x in run("workers", *name, "--json")[0].splitlines()]
    assert WORKER in {w["worker"] for w in workers}

    out, _ = run("block", WORKER, *name, "--reason", f"spam{RLO}")
    assert out == f"{_escaped(WORKER)}: blocked in {_escaped(CAMPAIGN)} by " \
        f"{out.split(' by ')[1].split(' (')[0]} (spam{SHOWN[RLO]})\n"  # fmt: skip
    run("down-weight", "w2", *name, "--weight", "0.5", "--reason", f"sloppy{CLEAR}")
    run("clear", "w2", *name)
    _, err = run("block", f"nobody{CLEAR}", *name, "--reason", "x", code=2)
    assert (
        err.splitlines()[0] == f"monitor: error: no worker 'nobody{SHOWN[CLEAR]}' in this campaign"
    )
    _, err = run("workers", "--campaign", f"none{TITLE}", code=2)
    assert err.splitlines()[0] == f"monitor: error: no campaign named 'none{SHOWN[TITLE]}'"

    # data to a pipe or a file is the data itself; to a terminal, escaped
    out, _ = run("export", "blocklist", *name, safe=False)
    assert WORKER in out
    assert f"spam{RLO}" in out
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    for what in ("blocklist", "weights", "labels"):
        out, _ = run("export", what, *name)
    assert _escaped(ITEM) in out
    out, _ = run("report", *name, "--out", "-")
    assert "<!doctype html>" in out.lower()
    assert SHOWN[RLO] in out
    monkeypatch.undo()
    monkeypatch.setenv("MONITOR_BOOTSTRAP_SAMPLES", "0")
    monkeypatch.setenv("MONITOR_CACHE_DIR", "")
    target = tmp_path / f"block{CLEAR}.csv"
    out, _ = run("export", "blocklist", *name, "--out", str(target))
    assert out == f"{_escaped(str(target))}\n"
    assert WORKER in target.read_text(encoding="utf-8")

    doc = json.loads(run("report", *name, "--json")[0])
    assert doc["campaign"]["name"] == CAMPAIGN
    assert WORKER in {w["worker"] for w in doc["workers"]}
    out, _ = run("report", *name, "--out", str(tmp_path / "r.html"))


def test_analyze_summary_and_json_are_escaped(run, tmp_path: Path) -> None:  # noqa: ANN001
    path = _judgments(tmp_path / f"a{RLO}.csv")
    out, _ = run("analyze", str(path), "--kind", "label", "--phi", "off")
    assert out.startswith(f"a{SHOWN[RLO]}: label (nominal), 50 judgments")
    doc = json.loads(run("analyze", str(path), "--kind", "label", "--json")[0])
    assert {POS, NEG} <= {k for i in doc["items"] for k in i["uas"]}


def test_json_escape_reads_back_the_same() -> None:
    value = {"a": f"{CLEAR}{TITLE}{RLO}\x7f\x9b\ud800\U000e0001 ünï 中"}
    text = json_escape(json.dumps(value, ensure_ascii=False))
    _safe(text)
    assert json.loads(text) == value
    assert json_escape('{"x": "plain ünï"}\n') == '{"x": "plain ünï"}\n'


def test_scheduler_log_lines_are_escaped() -> None:
    record = logging.LogRecord(
        "monitor.pipeline", logging.INFO, "", 0, "%s: run 3", (CAMPAIGN,), None
    )
    line = PrintableFormatter("%(message)s").format(record)
    assert line == f"{_escaped(CAMPAIGN)}: run 3"
