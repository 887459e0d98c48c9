"""Figure Eight (Appen) full report: answer column, golden units, tainted rows, times, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import create_engine, select

from monitor.cli import main
from monitor.core.errors import InputError, UsageError
from monitor.ingest.platforms import READERS, detect
from monitor.ingest.platforms.figure_eight import parse_time
from monitor.ingest.rows import SourceRow
from monitor.store.models import Item, Judgment

DATA = Path(__file__).resolve().parents[1] / "data" / "platforms"
FULL = DATA / "figure_eight_full.csv"
read = READERS["figure-eight"]
HEAD = "_unit_id,_created_at,_golden,_id,_tainted,_trust,_worker_id,answer,answer_gold"


def error_of(path: Path, **kwargs: object) -> str:
    with pytest.raises(InputError) as info:
        list(read(path, **kwargs))  # type: ignore[arg-type]
    return str(info.value)


def test_full_report_rows() -> None:
    assert detect(FULL) == "figure-eight"
    rows = read(FULL, kind="label", mapping={"text": "text"})
    listed = list(rows)
    judgments = [r for r in listed if r.table == "judgment"]
    # The tainted row (line 4) is skipped; golden units' rows stay judgments.
    assert [r.line for r in judgments] == [2, 3, 5, 6, 7, 8, 9]
    assert judgments[0] == SourceRow(
        2,
        {
            "worker": "31337012", "item": "1095632104", "value": "positive",
            "judgment_id": "2215870001", "created_at": "2017-03-14T10:35:07Z", "duration_s": 26,
        },
        extra={"trust": "0.8571", "missed": "", "golden": "false", "channel": "neodev"},
    )  # fmt: skip
    assert judgments[5].extra["missed"] == "true"
    items = [(r.line, r.fields) for r in listed if r.table == "item"]
    assert items == [
        (2, {"item": "1095632104", "text": "Loving the new update, great job!"}),
        (5, {"item": "1095632105", "text": 'Worst service ever. "Support" never answers.'}),
        (7, {"item": "1095631980", "gold": "negative", "text": "Flight delayed 3 hours, again."}),
        (9, {"item": "1095631981", "text": "Meeting moved to 5pm."}),
    ]
    assert rows.notes == [
        "1 tainted judgments skipped (--option keep_tainted=1 keeps them)",
        "1 golden units accept several answers in sentiment_gold: no gold value kept for them",
    ]


def test_keep_tainted_and_item_mapping() -> None:
    rows = read(FULL, kind="label", mapping={"item": "tweet_id"}, options={"keep_tainted": "1"})
    listed = list(rows)
    judgments = [r for r in listed if r.table == "judgment"]
    assert len(judgments) == 8
    assert judgments[2].fields["worker"] == "40122377"
    assert judgments[2].extra["trust"] == "0.5"
    assert [r.fields for r in listed if r.table == "item"] == [
        {"item": "tw-0042", "gold": "negative"}
    ]
    assert rows.notes[0].startswith("1 golden units accept several answers")


def test_multilabel_cells_and_gold_are_line_separated(tmp_path: Path) -> None:
    path = tmp_path / "f8.csv"
    path.write_text(
        HEAD + "\n"
        '7,3/14/2017 10:35:07,true,1,false,0.9,w1,"cat\ndog","cat\ndog"\n'
        '7,3/14/2017 10:36:07,true,2,false,0.9,w2,cat,"cat\ndog"\n',
        encoding="utf-8",
    )
    rows = list(read(path, kind="multilabel"))
    assert [(r.table, r.fields.get("value", r.fields.get("gold"))) for r in rows] == [
        ("item", ["cat", "dog"]),
        ("judgment", ["cat", "dog"]),
        ("judgment", ["cat"]),
    ]


def test_times() -> None:
    assert parse_time("3/14/2017 10:35:07").isoformat() == "2017-03-14T10:35:07+00:00"
    assert parse_time("12/1/2016 9:05:00").isoformat() == "2016-12-01T09:05:00+00:00"
    assert parse_time("2017-03-14T10:35:07Z").isoformat() == "2017-03-14T10:35:07+00:00"
    assert parse_time("3/14/17 10:35").isoformat() == "2017-03-14T10:35:00+00:00"
    for bad in ("14/3/2017 10:35:07", "3/14/2017", "yesterday"):
        with pytest.raises(ValueError):
            parse_time(bad)


def test_errors(tmp_path: Path) -> None:
    path = tmp_path / "f8.csv"
    path.write_text(HEAD + "\n7,14.03.2017,false,1,false,0.9,w1,a,\n", encoding="utf-8")
    assert error_of(path, kind="label") == (
        f"{path}:2: column '_created_at': cannot read '14.03.2017' as a time"
        " (expected Figure Eight's format like 3/14/2017 10:35:07)"
    )
    path.write_text(HEAD + "\n7,3/14/2017 10:35:07,false,1,false,0.9,,a,\n", encoding="utf-8")
    assert error_of(path, kind="label") == f"{path}:2: column '_worker_id': empty worker id"
    path.write_text(HEAD + ",other,other_gold\n", encoding="utf-8")
    assert error_of(path, kind="label") == (
        f"{path}:1: several answer columns: answer, other (choose one with --map value=COLUMN)"
    )
    assert error_of(path, kind="label", mapping={"value": "nope"}) == (
        f"{path}:1: column 'nope': not in the header (columns: answer, other;"
        " choose one with --map value=COLUMN)"
    )
    path.write_text("_unit_id,_golden,_unit_state,_trusted_judgments,answer\n", encoding="utf-8")
    assert error_of(path, kind="label") == (
        f"{path}:1: column '_worker_id': not in the header (this looks like an aggregated"
        " report: download the full report)"
    )
    with pytest.raises(UsageError, match="unknown option 'keep_rejected'"):
        read(FULL, kind="label", options={"keep_rejected": "1"})


def test_ingest_gold_feeds_the_items(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    def run(*words: str) -> tuple[int, list[str]]:
        code = main([*words, "--db", db_url])
        return code, capsys.readouterr().out.splitlines()

    run("campaign", "create", "s", "--kind", "label")
    code, out = run("ingest", str(FULL), "--campaign", "s", "--map", "text=text")
    assert code == 0
    assert out == [
        f"{FULL} (figure-eight, detected platform figure-eight): 7 rows: 7 new, 0 duplicate,"
        " 0 rejected",
        "4 items with gold values or texts stored",
        "1 tainted judgments skipped (--option keep_tainted=1 keeps them)",
        "1 golden units accept several answers in sentiment_gold: no gold value kept for them",
        "categories taken from the data: negative, neutral, positive",
        "campaign platform set to figure-eight (workers' history is per platform)",
    ]
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            gold = dict(conn.execute(select(Item.external_id, Item.gold)).all())
            n = len(conn.execute(select(Judgment.id)).all())
    finally:
        engine.dispose()
    assert gold == {
        "1095632104": None, "1095632105": None, "1095631980": "negative", "1095631981": None,
    }  # fmt: skip
    assert n == 7
    assert run("ingest", str(FULL), "--campaign", "s")[1][0].endswith(
        "7 rows: 0 new, 7 duplicate, 0 rejected"
    )


def test_pairwise(tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    path.write_text(
        "_unit_id,_created_at,_golden,_id,_tainted,_worker_id,left_img,right_img,which,which_gold\n"
        "9,3/14/2017 10:35:07,true,1,false,w1,a.jpg,b.jpg,first,first\n"
        "9,3/14/2017 10:36:07,false,2,false,w2,a.jpg,b.jpg,same,\n",
        encoding="utf-8",
    )
    mapping = {"left": "left_img", "right": "right_img", "pairwise": "left=first,tie=same"}
    rows = list(read(path, kind="pairwise", mapping=mapping))
    # A pair's gold is not an item's gold: *_gold is not read for pairwise campaigns.
    assert [(r.table, r.fields["preference"]) for r in rows] == [
        ("judgment", "left"),
        ("judgment", "tie"),
    ]
    assert rows[0].fields["left"] == "a.jpg"


def test_analyze_sees_the_gold(capsys: pytest.CaptureFixture[str]) -> None:
    words = ["analyze", str(FULL), "--kind", "label", "--json", "--bootstrap", "0", "--phi", "off"]
    assert main(words) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {i["item"]: i["gold"] for i in doc["items"]} == {
        "1095631980": "negative", "1095631981": None, "1095632104": None, "1095632105": None,
    }  # fmt: skip
    assert doc["campaign"]["n_judgments"] == 7
