"""The malformed-file corpus (tests/data/bad/): every rule's exact message, nothing written."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select

from monitor.core.errors import InputError
from monitor.ingest.api import create_campaign, ingest_file
from monitor.ingest.rows import SourceRow
from monitor.ingest.validate import Validator
from monitor.store.campaigns import CampaignInfo, CampaignSpec
from monitor.store.models import IngestBatch, Item, Judgment, Preference, RejectedRow, Worker

BAD = Path(__file__).resolve().parents[1] / "data" / "bad"
NEEDS = "a rating judgment needs worker, item, value"
QUOTE = "a value holding a comma, a quote or a line break must be quoted"
TIME = "ISO 8601, e.g. 2025-11-03T09:12:45Z"

# file -> the exact problems ({f} is the path as given). The campaign is the file's prefix.
EXPECTED: dict[str, list[str]] = {
    "rating_not_number.csv": ["{f}:3: column 'value': expected a number in 1..5, got 'four'"],
    "rating_out_of_scale.csv": [
        "{f}:2: column 'value': expected a number in 1..5, got '7' (outside the campaign's scale)"
    ],
    "rating_missing_column.csv": [
        f"{{f}}:1: column 'value': not in the header (columns: worker, item; {NEEDS})"
    ],
    "rating_missing_key.jsonl": [f"{{f}}:1: column 'value': missing ({NEEDS})"],
    "rating_empty_worker.csv": [f"{{f}}:2: column 'worker': empty ({NEEDS})"],
    "rating_long_id.csv": [
        "{f}:2: column 'worker': 256 characters, more than the limit of 255 "
        "(ids are at most 255 characters)"
    ],
    "rating_bad_time.csv": [
        f"{{f}}:2: column 'created_at': cannot read '03/11/2025 09:14' as a time ({TIME})"
    ],
    "rating_negative_duration.csv": [
        "{f}:2: column 'duration_s': expected a non-negative number of seconds, got '-3'"
    ],
    "rating_too_many_fields.csv": [f"{{f}}:2: 4 fields where the header has 3 ({QUOTE})"],
    "rating_too_few_fields.csv": [f"{{f}}:2: 2 fields where the header has 3 ({QUOTE})"],
    "rating_duplicate_header.csv": ["{f}:1: column 'item': appears twice in the header"],
    "rating_empty.csv": ["{f}:1: no header row (the first line names the columns)"],
    "rating_json_in.csv": [
        "{f}:1: looks like JSON, not CSV (name a JSON Lines file .jsonl, or pass --format jsonl)"
    ],
    "rating_binary.csv": [
        "{f}: a binary file, not CSV text (give a CSV file: UTF-8 text, header row, comma)"
    ],
    "rating_latin1.csv": ["{f}:3: not UTF-8 text (save the file as UTF-8)"],
    "rating_latin1.jsonl": ["{f}:2: not UTF-8 text (save the file as UTF-8)"],
    "rating_not_object.jsonl": [
        '{f}:2: expected a JSON object, got an array (write one object a line: {"worker": ..., ...})'
    ],
    "rating_bad_json.jsonl": ["{f}:2:1: not valid JSON: Expecting value"],
    "rating_csv_in.jsonl": [
        "{f}:1: does not look like JSON Lines (a CSV file is named .csv, or pass --format csv)"
    ],
    "rating_many_problems.csv": [
        "{f}:3: column 'value': expected a number in 1..5, got 'four'",
        f"{{f}}:3: column 'created_at': cannot read 'yesterday' as a time ({TIME})",
        "{f}:3: column 'duration_s': expected a non-negative number of seconds, got '-1'",
        f"{{f}}:4: column 'worker': empty ({NEEDS})",
        "{f}:5: column 'value': expected a number in 1..5, got '9' (outside the campaign's scale)",
    ],
    "label_unknown.csv": ["{f}:3: column 'value': unknown category 'maybe' (categories: yes, no)"],
    "label_list.jsonl": [
        """{f}:1: column 'value': expected one category, got ["yes", "no"] """
        "(a label judgment is one category; sets go in a multilabel campaign)"
    ],
    "multilabel_unknown.csv": ["{f}:2: column 'value': unknown option 'bird' (options: cat, dog)"],
    "multilabel_unknown.jsonl": [
        "{f}:1: column 'value': unknown option 'bird' (options: cat, dog)"
    ],
    "multilabel_not_list.jsonl": [
        """{f}:1: column 'value': expected a list of strings, got 3 """
        """(write ["cat", "dog"] (JSON Lines) or cat|dog (CSV))"""
    ],
    "multilabel_empty.jsonl": [
        "{f}:1: column 'value': no annotation (an empty set ('none of these apply') is written [] (CSV or JSON))"
    ],
    "pairwise_same_item.csv": [
        "{f}:2: column 'right': the same item as left ('a') "
        "(a preference compares two different items)"
    ],
    "pairwise_tie_strict.csv": [
        "{f}:2: column 'preference': a tie in a strict campaign "
        "(the campaign was created with --strict: ties are not allowed)"
    ],
    "pairwise_bad_preference.csv": [
        "{f}:2: column 'preference': expected left, right or tie, got 'L'"
    ],
    "pairwise_missing_column.csv": [
        "{f}:1: column 'right': not in the header (columns: worker, left, preference; "
        "a pairwise judgment needs worker, left, right, preference)"
    ],
}


def make_campaigns(engine: Engine) -> None:
    create_campaign(engine, CampaignSpec("rating", "rating", scale_min=1, scale_max=5))
    create_campaign(engine, CampaignSpec("label", "label", categories=("yes", "no")))
    create_campaign(engine, CampaignSpec("multilabel", "multilabel", categories=("cat", "dog")))
    create_campaign(engine, CampaignSpec("pairwise", "pairwise", strict=True))


def count_rows(engine: Engine) -> dict[str, int]:
    with engine.connect() as c:
        return {
            m.__tablename__: c.scalar(select(func.count()).select_from(m))
            for m in (Judgment, Preference, Worker, Item, IngestBatch, RejectedRow)
        }


def test_corpus_is_complete() -> None:
    assert sorted(p.name for p in BAD.iterdir()) == sorted(EXPECTED)


def test_every_malformed_file_is_refused_with_its_message(engine: Engine) -> None:
    make_campaigns(engine)
    got: dict[str, list[str]] = {}
    for name in EXPECTED:
        path = BAD / name
        with pytest.raises(InputError) as info:
            ingest_file(engine, path, name.split("_")[0])
        got[name] = [str(p).replace(str(path), "{f}") for p in info.value.problems]
    assert got == EXPECTED
    assert set(count_rows(engine).values()) == {0}


def test_skip_invalid_keeps_every_malformed_row(engine: Engine) -> None:
    """Row-level problems are skipped and kept with their reasons; no row is lost."""
    make_campaigns(engine)
    path = BAD / "rating_many_problems.csv"
    summary = ingest_file(engine, path, "rating", skip_invalid=True)
    assert (summary.n_rows, summary.n_new, summary.n_duplicate, summary.n_rejected) == (4, 1, 0, 3)
    with engine.connect() as c:
        rejected = c.execute(
            select(RejectedRow.line, RejectedRow.reasons).order_by(RejectedRow.line)
        ).all()
    expected = [p.replace("{f}", str(path)) for p in EXPECTED["rating_many_problems.csv"]]
    assert [line for line, _ in rejected] == [3, 4, 5]
    assert [r for _, reasons in rejected for r in reasons] == expected


def _info(**kw: object) -> CampaignInfo:
    base: dict[str, object] = dict(
        id=1, name="c", kind="rating", level="interval", scale_min=1.0, scale_max=5.0,
        categories=None, open=False, strict=False, settings={},
    )  # fmt: skip
    base.update(kw)
    return CampaignInfo(**base)  # type: ignore[arg-type]


def test_validator_values_and_keys() -> None:
    v = Validator(_info(), "f.csv")
    kind, rec = v.check(SourceRow(2, {"worker": " w1 ", "item": "i1", "value": "2.50"}))
    assert kind == "judgment"
    assert rec[:4] == ("w1", "i1", 2.5, None)
    again = v.check(SourceRow(9, {"worker": "w1", "item": "i1", "value": 2.5}))
    assert again[1][4] == rec[4]
    assert rec[4].startswith("sha256:")  # same canonical row
    _, with_id = v.check(
        SourceRow(3, {"worker": "w1", "item": "i1", "value": "3", "judgment_id": 17})
    )
    assert with_id[4] == "id:17"
    assert with_id[5] == "17"
    _, timed = v.check(
        SourceRow(
            4, {"worker": "w", "item": "i", "value": "1", "created_at": "2025-11-03T10:00:00+01:00"}
        )
    )
    assert timed[6].isoformat() == "2025-11-03T09:00:00+00:00"
    assert v.check(SourceRow(5, {"worker": "w", "item": "i", "value": "nan"})) == [
        v.problem(5, "value", "expected a number in 1..5, got 'nan'")
    ]
    assert v.check(SourceRow(5, {"worker": "w", "item": "i", "value": True}))[0].message == (
        "expected a number in 1..5, got true"
    )


def test_validator_labels_from_data_and_mapping_names() -> None:
    v = Validator(_info(kind="label", level="nominal"), "f.csv", {"worker": "PID"})
    assert v.check(SourceRow(2, {"worker": "w", "item": "i", "value": 3}))[1][3] == "3"
    assert list(v.new_categories) == ["3"]
    [problem] = v.check(SourceRow(3, {"worker": "", "item": "i", "value": "x"}))
    assert (
        str(problem) == "f.csv:3: column 'PID': empty (a label judgment needs worker, item, value)"
    )


def test_validator_multilabel_counts_and_open_tokens() -> None:
    v = Validator(_info(kind="multilabel", level="nominal", open=True), "f.jsonl")
    _, rec = v.check(SourceRow(1, {"worker": "w", "item": "i", "value": ["b", "a", "b", " "]}))
    assert rec[9] == (("a", 1), ("b", 2))
    _, same = v.check(SourceRow(2, {"worker": "w", "item": "i", "value": "b|b|a"}))
    assert same[4] == rec[4]


def _kind_info(kind: str, **kw: object) -> CampaignInfo:
    if kind != "rating":
        kw = {"scale_min": None, "scale_max": None, **kw}
    if kind == "label":
        kw = {"categories": ("cat", "dog"), **kw}
    return _info(kind=kind, **kw)


TRICKY = [
    "",
    " ",
    "3",
    " 3 ",
    "3.0",
    "2.50",
    "-0",
    "0",
    "5",
    "5.0000001",
    "1e0",
    "1_0",
    "nan",
    "inf",
    "-inf",
    "1e400",
    "four",
    "cat",
    " dog ",
    "Cat",
    "left",
    " RIGHT ",
    "tie",
    "Tie",
    "x" * 256,
    "x" * 255,
    "é",
    "a\u00a0",
    "2025-11-03T09:12:45Z",
    "2025-11-03 09:12:45",
    "2025-11-03T09:12:45",
    "2025-11-03T09:12:45+00:00",
    "2025-11-03T10:12:45+01:00",
    "2025-11-03T09:12:45.250Z",
    "2025-11-03",
    "03/11/2025 09:14",
    "0001-01-01T00:00:00Z",
    "12",
    "-1",
    "-0.0",
    "90.5",
    "\u0663",
    "\uff13",
    "0_3",
    "+3",
    ".5e1",
    "1e309",
    "9999-12-31T23:30:00-01:00",
    "0001-01-01T00:30:00+01:00",
    "9999-12-31T23:59:59Z",
]

GOOD = {
    "worker": ["w1", " w2 ", "w3"],
    "item": ["i1", "i2 ", "i3"],
    "left": ["i1", "i2 ", "i3"],
    "right": ["i1", "i2", " i3"],
    "value": ["3", " 2.5 ", "5", "cat", " dog ", "bird", "fish"],
    "preference": ["left", " RIGHT ", "tie", "Left"],
    "judgment_id": ["", "j1", " j2 ", "j3"],
    "created_at": ["", "2025-11-03T09:12:45Z", "2025-11-03T10:12:45+01:00", "2025-11-03 09:12"],
    "duration_s": ["", "3", "4.5", "-0.0", "0"],
    "extra": ["x", ""],
}


@pytest.mark.parametrize(
    ("kind", "columns", "options"),
    [
        ("rating", ("worker", "item", "value", "judgment_id", "created_at", "duration_s"), {}),
        ("rating", ("item", "extra", "value", "worker", "created_at"), {}),
        ("label", ("worker", "item", "value", "created_at", "duration_s"), {}),
        ("label", ("worker", "item", "value", "judgment_id"), {"categories": None}),
        ("pairwise", ("worker", "left", "right", "preference", "created_at", "judgment_id"), {}),
        ("pairwise", ("worker", "left", "right", "preference", "duration_s"), {"strict": True}),
    ],
)
def test_csv_fast_path_gives_what_check_gives(
    kind: str, columns: tuple[str, ...], options: dict[str, object]
) -> None:
    """Every row the fast path accepts gets exactly the record check() gives it; the same
    categories come from the data, in the same order."""
    rng = random.Random(len(columns) * 7 + len(kind))
    fast_v, slow_v = (
        Validator(_kind_info(kind, **options), "f"),
        Validator(_kind_info(kind, **options), "f"),
    )
    canonical = {"worker", "item", "value", "left", "right", "preference"}
    canonical |= {"judgment_id", "created_at", "duration_s"}
    positions = {c: i for i, c in enumerate(columns) if c in canonical}
    rest = [(i, c) for i, c in enumerate(columns) if c not in canonical]
    fast = fast_v.csv_fast(positions, rest)
    assert fast is not None
    accepted = 0
    for _ in range(3000):
        row = [rng.choice(GOOD[c]) if rng.random() < 0.8 else rng.choice(TRICKY) for c in columns]
        source = SourceRow(
            1, {c: row[i] for c, i in positions.items()}, extra={c: row[i] for i, c in rest}
        )
        got = fast(row, 1)
        want = slow_v.check(source)
        if got is None:
            fast_v.check(source)  # the reader hands it on to check()
            continue
        accepted += 1
        assert not isinstance(want, list)
        assert got == want[1]
    assert accepted > 50
    assert list(fast_v.new_categories) == list(slow_v.new_categories)
