"""The files people have (issue 40), each stored whole on both backends: a spreadsheet's CSV
(byte order mark, CRLF, semicolons), a TSV file, a gzip-compressed file, a header in another
case, a delimiter given; a did-you-mean for a column name, a warning for numbers ingested as
labels, an empty set as a multi-label answer. Bad input: one line, exit 2, nothing written."""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, func, select

from monitor.cli import main
from monitor.core.errors import UsageError
from monitor.ingest.api import create_campaign, ingest_file
from monitor.ingest.files import detect_delimiter
from monitor.ingest.readers import read_csv
from monitor.ingest.rows import SourceRow
from monitor.store.campaigns import CampaignSpec
from monitor.store.engine import transaction
from monitor.store.models import Judgment, JudgmentAnnotation, Worker
from tests.hypothesis_profiles import examples

ROWS = [("w1", "i1", "3"), ("w2", "i1", "4"), ("w1", "i2", "5"), ("w3", "i2", "1")]


def _text(delimiter: str, header: str = "worker,item,value", end: str = "\n") -> str:
    lines = [header.replace(",", delimiter), *(delimiter.join(r) for r in ROWS)]
    return "".join(line + end for line in lines)


def _stored(engine: Engine) -> list[tuple[str, float]]:
    with transaction(engine) as s:
        return sorted(
            s.execute(
                select(Worker.external_id, Judgment.value_num).join(
                    Worker, Worker.id == Judgment.worker_id
                )
            ).all()
        )


WHOLE = sorted((w, float(v)) for w, _, v in ROWS)


@pytest.fixture
def rating(engine: Engine) -> Engine:
    create_campaign(engine, CampaignSpec("r", "rating", scale_min=1, scale_max=5))
    return engine


@pytest.mark.parametrize(
    ("name", "data", "delimiter"),
    [
        ("sheet.csv", ("\ufeff" + _text(";", end="\r\n")).encode(), None),  # a spreadsheet's
        ("sheet-comma.csv", ("\ufeff" + _text(",", end="\r\n")).encode(), None),
        ("plain.tsv", _text("\t").encode(), None),
        ("tabs.txt", _text("\t").encode(), None),  # no known extension: its header tells
        ("bars.csv", _text("|").encode(), None),
        ("packed.csv.gz", gzip.compress(("\ufeff" + _text(";", end="\r\n")).encode()), None),
        ("packed.tsv.gz", gzip.compress(_text("\t").encode()), None),
        ("upper.csv", _text(",", header="Worker,Item,Value").encode(), None),
        ("shouting.tsv", _text("\t", header="WORKER,ITEM,VALUE").encode(), None),
        ("given.csv", _text(";").encode(), ";"),
        ("given-tab.csv", _text("\t").encode(), "tab"),
    ],
)
def test_each_file_is_stored_whole(
    rating: Engine, tmp_path: Path, name: str, data: bytes, delimiter: str | None
) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    summary = ingest_file(rating, path, "r", delimiter=delimiter)
    assert (summary.format, summary.n_rows, summary.n_new, summary.n_rejected) == ("csv", 4, 4, 0)
    assert _stored(rating) == WHOLE


def test_a_header_matched_without_case_leaves_exact_names_first(
    rating: Engine, tmp_path: Path
) -> None:
    """``worker`` and ``Worker`` both present: the exact one is the worker, the other a payload
    column; a mapped source column is matched without case too."""
    path = tmp_path / "both.csv"
    path.write_text("Worker,worker,ITEM,value\nx,w1,i1,3\n")
    assert ingest_file(rating, path, "r").n_new == 1
    mapped = tmp_path / "mapped.csv"
    mapped.write_text("PID,item,value\nw9,i1,2\n")
    assert ingest_file(rating, mapped, "r", mapping={"worker": "pid"}).n_new == 1
    with transaction(rating) as s:
        payloads = s.scalars(select(Judgment.payload).order_by(Judgment.id)).all()
        workers = sorted(s.scalars(select(Worker.external_id)))
    assert payloads[0] == {"Worker": "x"}
    assert workers == ["w1", "w9"]


def test_the_delimiter_of_a_header(tmp_path: Path) -> None:
    csv_path = tmp_path / "x.csv"
    assert detect_delimiter(csv_path, b"a;b;c\n1;2;3\n") == ";"
    assert detect_delimiter(csv_path, b'"a;b",c,d\n') == ","  # outside quotes only
    assert detect_delimiter(csv_path, b"\xef\xbb\xbfworker\titem\tvalue\r\n") == "\t"
    assert detect_delimiter(csv_path, b"worker\n") == ","
    assert detect_delimiter(tmp_path / "x.tsv.gz", b"a,b;c\n") == "\t"


def test_bad_files_and_delimiters_are_one_line_each(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ["--db", db_url]
    assert (
        main(["campaign", "create", "r", "--kind", "rating", "--min", "1", "--max", "5", *db]) == 0
    )
    capsys.readouterr()
    good = tmp_path / "good.csv"
    good.write_text(_text(","))
    cut = tmp_path / "cut.csv.gz"
    cut.write_bytes(gzip.compress(_text(",").encode() * 50)[:70])
    typo = tmp_path / "typo.csv"
    typo.write_text(_text(",", header="wrker,item,value"))
    prose = tmp_path / "notes.txt"
    prose.write_text("some words\nmore words\n")
    cases = [
        ([str(cut)], [f"{cut}: a damaged gzip file (", "nothing was written"]),
        ([str(typo)], [f"{typo}:1: column 'worker': not in the header (did you mean 'wrker'? "
                       "rename it or pass --map worker=wrker; columns: wrker, item, value",
                       "nothing was written"]),
        ([str(good), "--delimiter", "ab"], ["monitor: error: --delimiter 'ab': one character"]),
        ([str(good), "--delimiter", "x"], ["monitor: error: --delimiter 'x': one character"]),
        ([str(good), "--format", "jsonl", "--delimiter", ";"],
         ["monitor: error: --delimiter is for CSV files, not jsonl"]),
        ([str(prose)], [f"monitor: error: cannot tell the format of {prose}"]),
    ]  # fmt: skip
    for argv, starts in cases:
        code = main(["ingest", *argv, "--campaign", "r", *db])
        out, err = capsys.readouterr()
        lines = [line for line in err.splitlines() if not line.startswith("hint: ")]
        assert code == 2, argv
        assert out == "", argv
        assert len(lines) == len(starts), (argv, err)
        assert all(line.startswith(start) for line, start in zip(lines, starts, strict=True)), (
            argv,
            err,
        )
    assert main(["campaign", "list", *db]) == 0
    assert "0 judgments, 0 workers, 0 items" in capsys.readouterr().out


def test_ratings_ingested_as_labels_draw_a_warning(engine: Engine, tmp_path: Path) -> None:
    create_campaign(engine, CampaignSpec("l", "label"))
    create_campaign(engine, CampaignSpec("yesno", "label"))
    path = tmp_path / "scores.csv"
    values = ["0", "00", "7", "15", "100", "42"]
    path.write_text("worker,item,value\n" + "".join(f"w{k},i1,{v}\n" for k, v in enumerate(values)))
    summary = ingest_file(engine, path, "l")
    assert summary.n_new == len(values)  # stored whole all the same
    (warning,) = [n for n in summary.notes if n.startswith("warning:")]
    assert "6 categories of this label campaign all look like numbers" in warning
    assert "one number written twice" in warning
    assert "--kind rating" in warning
    binary = tmp_path / "binary.csv"
    binary.write_text("worker,item,value\nw1,i1,0\nw2,i1,1\nw3,i2,1\n")
    assert not [n for n in ingest_file(engine, binary, "yesno").notes if n.startswith("warning")]
    many = tmp_path / "many.csv"
    many.write_text("worker,item,value\n" + "".join(f"w{k},i2,{k * 3}\n" for k in range(12)))
    assert [n for n in ingest_file(engine, many, "yesno").notes if n.startswith("warning")]


def test_an_empty_set_is_a_multilabel_answer(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    create_campaign(engine, CampaignSpec("m", "multilabel", categories=("cat", "dog")))
    rows = ["w1,i1,cat|dog", "w2,i1,[]", "w3,i1,dog", "w1,i2,[]", "w2,i2,[]", "w3,i2,cat"]
    path = tmp_path / "m.csv"
    path.write_text("worker,item,value\n" + "\n".join(rows) + "\n")
    assert ingest_file(engine, path, "m").n_new == 6
    lines = tmp_path / "m.jsonl"
    lines.write_text(json.dumps({"worker": "w4", "item": "i1", "value": []}) + "\n")
    assert ingest_file(engine, lines, "m").n_new == 1
    assert ingest_file(engine, path, "m").n_new == 0  # an empty set is deduplicated too
    with transaction(engine) as s:
        assert s.scalar(select(func.count(Judgment.id))) == 7
        assert s.scalar(select(func.count()).select_from(JudgmentAnnotation)) == 4
    from monitor.core.settings import Settings
    from monitor.pipeline.run import recompute

    settings = Settings(bootstrap_samples=0, cache_dir="", phi="off")
    (outcome,) = recompute(engine, settings, campaign="m")
    assert outcome.status == "ok"
    assert outcome.n_judgments == 7


def test_a_delimiter_option_that_is_no_delimiter(rating: Engine, tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    path.write_text(_text(","))
    with pytest.raises(UsageError, match="one character"):
        ingest_file(rating, path, "r", delimiter='"')


_cell = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\x00"),
    max_size=8,
)


@settings(max_examples=examples(60), deadline=None)
@given(
    delimiter=st.sampled_from([",", ";", "\t", "|"]),
    header=st.permutations(["worker", "item", "value", "note"]),
    rows=st.lists(st.tuples(_cell, _cell, _cell, _cell), max_size=6),
    bom=st.booleans(),
    crlf=st.booleans(),
    packed=st.booleans(),
    case=st.sampled_from([str.lower, str.upper, str.title]),
)
def test_any_spreadsheet_csv_is_read_whole(
    tmp_path_factory: pytest.TempPathFactory,
    delimiter: str,
    header: list[str],
    rows: list[tuple[str, ...]],
    bom: bool,
    crlf: bool,
    packed: bool,
    case: Callable[[str], str],
) -> None:
    """Whatever a spreadsheet writes (its delimiter, quoting, a byte order mark, CRLF, gzip, the
    header's case), the delimiter is found and every row comes back field for field."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter, lineterminator="\r\n" if crlf else "\n")
    writer.writerow([case(h) for h in header])
    kept = [r for r in rows if any(c.strip() for c in r)]  # blank lines are skipped
    writer.writerows(kept)
    data = (("\ufeff" if bom else "") + buffer.getvalue()).encode()
    path = tmp_path_factory.mktemp("sheet") / ("x.csv.gz" if packed else "x.csv")
    path.write_bytes(gzip.compress(data) if packed else data)
    got = list(read_csv(path, columns=("worker", "item", "value")))
    assert all(isinstance(r, SourceRow) for r in got)
    names = [h if h != "note" else case(h) for h in header]  # a payload column keeps its name
    back = [
        tuple({**r.fields, **r.extra}[h] for h in names) for r in got if isinstance(r, SourceRow)
    ]
    assert back == [tuple(r) for r in kept]


def test_analyze_reads_the_same_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MONITOR_BOOTSTRAP_SAMPLES", "0")
    monkeypatch.setenv("MONITOR_PHI", "off")
    path = tmp_path / "sheet.csv.gz"
    path.write_bytes(gzip.compress(("\ufeff" + _text(";", "Worker,Item,Value", "\r\n")).encode()))
    scale = ["--kind", "rating", "--min", "1", "--max", "5", "--json"]
    for extra in ([], ["--delimiter", ";"]):
        assert main(["analyze", str(path), *scale, *extra]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc["campaign"]["n_judgments"] == len(ROWS)
