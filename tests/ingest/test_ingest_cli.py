"""``monitor campaign`` and ``monitor ingest``: exit codes and exact messages, both backends."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.cli import main

GOOD = Path(__file__).resolve().parents[1] / "data" / "good"
BAD = Path(__file__).resolve().parents[1] / "data" / "bad"


def run(
    capsys: pytest.CaptureFixture[str], db_url: str, *words: str
) -> tuple[int, list[str], list[str]]:
    code = main([*words, "--db", db_url])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err.splitlines()


def test_campaign_create_and_list(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, db_url, "campaign", "create", "rel", "--kind", "rating", "--min", "1", "--max", "5") == (
        0, ["campaign 'rel' created: rating 1..5 (interval)"], []
    )  # fmt: skip
    assert run(capsys, db_url, "campaign", "create", "tags", "--kind", "multilabel", "--options", "cat,dog")[1] == [
        "campaign 'tags' created: multilabel cat, dog"
    ]  # fmt: skip
    assert run(capsys, db_url, "campaign", "create", "pairs", "--kind", "pairwise", "--strict")[1] == [
        "campaign 'pairs' created: pairwise (strict)"
    ]  # fmt: skip
    code, out, _ = run(capsys, db_url, "campaign", "list")
    assert code == 0
    assert out == [
        "pairs\tpairwise (strict)\t0 judgments, 0 workers, 0 items",
        "rel\trating 1..5 (interval)\t0 judgments, 0 workers, 0 items",
        "tags\tmultilabel cat, dog\t0 judgments, 0 workers, 0 items",
    ]


@pytest.mark.parametrize(
    ("words", "err"),
    [
        (["--kind", "rating", "--min", "1"], ["monitor: error: a rating campaign needs --min and --max", "hint: e.g. --min 1 --max 5"]),
        (["--kind", "label", "--options", "a,b"], ["monitor: error: --options and --open are for multilabel campaigns"]),
        (["--kind", "multilabel", "--categories", "a,b"], ["monitor: error: --categories is for label campaigns", "hint: a multilabel campaign takes --options"]),
        (["--kind", "label", "--categories", "a,,b"], ["monitor: error: --categories: an empty name in 'a,,b'", "hint: write --categories a,b,c"]),
        (["--kind", "rating", "--min", "1", "--max", "5", "--strict"], ["monitor: error: --strict is for pairwise campaigns"]),
    ],
)  # fmt: skip
def test_campaign_create_usage_errors(
    db_url: str, capsys: pytest.CaptureFixture[str], words: list[str], err: list[str]
) -> None:
    assert run(capsys, db_url, "campaign", "create", "c", *words) == (2, [], err)


def test_duplicate_campaign_exits_2(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, db_url, "campaign", "create", "c", "--kind", "pairwise")
    assert run(capsys, db_url, "campaign", "create", "c", "--kind", "pairwise") == (
        2, [], ["monitor: error: a campaign named 'c' exists already"]
    )  # fmt: skip


def test_ingest_prints_the_summary(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, db_url, "campaign", "create", "r", "--kind", "rating", "--min", "1", "--max", "5")
    path = str(GOOD / "ratings.csv")
    items = str(GOOD / "items.csv")
    assert run(capsys, db_url, "ingest", path, "--campaign", "r", "--items", items) == (
        0,
        [f"{path} (csv): 4 rows: 4 new, 0 duplicate, 0 rejected", "2 items with gold values or texts stored"],
        [],
    )  # fmt: skip
    code, out, _ = run(capsys, db_url, "ingest", path, "--campaign", "r")
    assert code == 0
    assert out == [
        f"{path} (csv): 4 rows: 0 new, 4 duplicate, 0 rejected",
        "the same file was ingested before (batch 1)",
    ]


def test_ingest_bad_file_exits_2_and_writes_nothing(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, db_url, "campaign", "create", "r", "--kind", "rating", "--min", "1", "--max", "5")
    path = str(BAD / "rating_many_problems.csv")
    code, out, err = run(capsys, db_url, "ingest", path, "--campaign", "r")
    assert (code, out) == (2, [])
    assert err == [
        f"{path}:3: column 'value': expected a number in 1..5, got 'four'",
        f"{path}:3: column 'created_at': cannot read 'yesterday' as a time (ISO 8601, e.g. 2025-11-03T09:12:45Z)",
        f"{path}:3: column 'duration_s': expected a non-negative number of seconds, got '-1'",
        f"{path}:4: column 'worker': empty (a rating judgment needs worker, item, value)",
        f"{path}:5: column 'value': expected a number in 1..5, got '9' (outside the campaign's scale)",
        "nothing was written",
    ]
    assert run(capsys, db_url, "campaign", "list")[1] == [
        "r\trating 1..5 (interval)\t0 judgments, 0 workers, 0 items"
    ]
    code, out, err = run(capsys, db_url, "ingest", path, "--campaign", "r", "--skip-invalid")
    assert (code, err) == (0, [])
    # (PostgreSQL does not give back the id of the batch that was rolled back)
    assert out[0] == f"{path} (csv): 4 rows: 1 new, 0 duplicate, 3 rejected"
    assert out[1].startswith("rejected rows are kept with their reasons in ingest batch ")
    assert len(out) == 2


def test_ingest_usage_errors(
    db_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = str(GOOD / "ratings.csv")
    assert run(capsys, db_url, "ingest", path, "--campaign", "nope") == (
        2, [], ["monitor: error: no campaign named 'nope'", "hint: create one: monitor campaign create"]
    )  # fmt: skip
    run(capsys, db_url, "campaign", "create", "r", "--kind", "rating", "--min", "1", "--max", "5")
    assert run(capsys, db_url, "ingest", path, "--campaign", "r", "--map", "worker")[0:3:2] == (
        2, ["monitor: error: --map worker: expected KEY=VALUE"]
    )  # fmt: skip
    missing = str(tmp_path / "missing.csv")
    assert run(capsys, db_url, "ingest", missing, "--campaign", "r") == (
        2, [], [f"monitor: error: no such file: {missing}"]
    )  # fmt: skip
    with pytest.raises(SystemExit) as info:
        main(["ingest", path, "--campaign", "r", "--format", "xml", "--db", db_url])
    assert info.value.code == 2
    assert "invalid choice: 'xml'" in capsys.readouterr().err
