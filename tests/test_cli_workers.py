"""Worker decisions and exports at the command line (issue 30 item 11, issue 29 item 8): a
reason is never made up, an empty block list says why, a flagged worker has one status."""

from __future__ import annotations

import csv
import io
import json

import pytest
from sqlalchemy import Engine

from monitor.cli import main
from monitor.core.errors import UsageError
from monitor.store.engine import transaction
from monitor.store.workers import append_decision, decisions
from tests.report.fixtures import rating_campaign

EMPTY = (
    "monitor: error: --reason is empty: a decision needs its reason in words (the audit trail "
    "keeps it, and a block list shows it to the worker)"
)
HINT = 'hint: for example --reason "random answers on gold questions"'


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("reason", ["", "   ", "\t"])
@pytest.mark.parametrize("action", [["block"], ["down-weight", "--weight", "0.5"]])
def test_an_empty_reason_is_a_usage_error(
    engine: Engine, db_url: str, capsys, reason: str, action: list[str]
) -> None:  # noqa: ANN001
    """`monitor block w1 --reason ""` recorded "cleared by hand", which the MTurk export then
    showed to the worker."""
    c = rating_campaign(engine)
    argv = [action[0], "w6", *action[1:], "--campaign", "quality", "--db", db_url]
    code, out, err = _run(capsys, *argv, "--reason", reason)
    assert (code, out, err.splitlines()) == (2, "", [EMPTY, HINT])
    with transaction(engine) as s:
        assert decisions(s, c.id) == []
    code, out, _ = _run(capsys, "export", "blocklist", "--campaign", "quality", "--db", db_url,
                        "--platform", "mturk")  # fmt: skip
    assert "cleared by hand" not in out


def test_the_store_refuses_a_block_without_a_reason(engine: Engine) -> None:
    c = rating_campaign(engine)
    with (
        pytest.raises(UsageError, match="a block needs a reason in words, got ' '"),
        transaction(engine) as s,
    ):
        append_decision(s, c.id, "w6", "block", reason=" ", actor="alice")
    with transaction(engine) as s:
        d = append_decision(s, c.id, "w6", "clear", reason="", actor="alice")
    assert d.reason == ""


def test_a_clear_without_a_reason_records_none(engine: Engine, db_url: str, capsys) -> None:  # noqa: ANN001
    c = rating_campaign(engine)
    base = ["--campaign", "quality", "--db", db_url, "--by", "alice"]
    assert _run(capsys, "block", "w6", *base, "--reason", "spam")[1] == (
        "w6: blocked in quality by alice (spam)\n"
    )
    assert (
        _run(capsys, "clear", "w6", *base)[1]
        == "w6: cleared in quality by alice (no reason given)\n"
    )
    with transaction(engine) as s:
        assert [(d.action, d.reason) for d in decisions(s, c.id)] == [
            ("clear", ""),
            ("block", "spam"),
        ]


def test_an_empty_blocklist_says_why_and_how_to_include_the_flagged(
    engine: Engine, db_url: str, capsys
) -> None:  # noqa: ANN001
    rating_campaign(engine)  # w6 is flagged low_quality by the latest run, nobody is blocked
    base = ["export", "blocklist", "--campaign", "quality", "--db", db_url]
    code, out, err = _run(capsys, *base, "--platform", "csv")
    assert code == 0
    assert out == "worker,reason,actor,automatic,blocked_at,status\r\n"
    assert err.splitlines() == [
        "the block list is empty: nobody is blocked or decided block in campaign quality",
        "1 worker is flagged but not decided block (see monitor workers --campaign quality): "
        "add --include-flagged to list it too",
    ]
    code, out, err = _run(capsys, *base, "--platform", "mturk", "--include-flagged")
    rows = list(csv.reader(io.StringIO(out)))
    assert (code, err) == (0, "")
    assert rows[1] == ["w6", "", "", "", "", "Block", "flagged by monitor: low_quality"]
    code, out, _ = _run(capsys, *base, "--platform", "json", "--include-flagged")
    [entry] = json.loads(out)["blocked"]
    assert (entry["worker"], entry["status"], entry["actor"]) == ("w6", "flagged", None)
    assert _run(capsys, "block", "w6", "--campaign", "quality", "--db", db_url,
                "--reason", "spam")[0] == 0  # fmt: skip
    code, out, err = _run(capsys, *base, "--include-flagged")
    assert err == ""
    assert list(csv.reader(io.StringIO(out)))[1][::5] == ["w6", "blocked"]
    _run(capsys, "clear", "w6", "--campaign", "quality", "--db", db_url, "--reason", "ok")
    code, out, err = _run(capsys, *base, "--include-flagged")
    assert err == ""
    assert "w6" in out  # still flagged by the latest run


def test_export_weights_gives_the_status_workers_gives(engine: Engine, db_url: str, capsys) -> None:  # noqa: ANN001
    rating_campaign(engine)
    db = ["--campaign", "quality", "--db", db_url]
    listed = [json.loads(x) for x in _run(capsys, "workers", *db, "--json")[1].splitlines()]
    weights = json.loads(_run(capsys, "export", "weights", *db, "--platform", "json")[1])
    shown = {w["worker"]: w["status"] for w in listed}
    assert shown["w6"] == "flagged"
    assert {w["worker"]: w["status"] for w in weights["weights"]} == shown
    code, _, err = _run(capsys, "export", "weights", *db, "--include-flagged")
    assert (code, err) == (2, "monitor: error: --include-flagged is for the blocklist\n")


def test_the_workers_table_names_its_measure(engine: Engine, db_url: str, capsys) -> None:  # noqa: ANN001
    rating_campaign(engine)
    header = _run(capsys, "workers", "--campaign", "quality", "--db", db_url)[1].splitlines()[0]
    columns = [c.strip() for c in header.split("  ") if c.strip()]
    assert columns[:6] == ["worker", "status", "decision", "weight", "judgments", "model noise sd"]
