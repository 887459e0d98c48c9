"""What both databases store, and messages that stay one short printable line."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.core.errors import Problem, capped, printable
from monitor.ingest.rows import SourceRow
from monitor.ingest.safe import (
    MAX_DEPTH,
    NUMBER,
    DuplicateKey,
    JsonLines,
    storable_text,
    unstorable,
)
from monitor.ingest.validate import Validator
from tests.ingest.test_validate import _info

# Any code point, lone surrogates included (what a \\u escape of JSON can make).
ANY_TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()))


@settings(max_examples=300, deadline=None)
@given(ANY_TEXT)
def test_printable_is_printable_and_keeps_printable_text(text: str) -> None:
    shown = printable(text)
    assert shown.isprintable()
    shown.encode("utf-8")  # raises on a lone surrogate left
    if text.isprintable():
        assert shown == text


@settings(max_examples=300, deadline=None)
@given(ANY_TEXT)
def test_storable_text_has_no_nul_and_is_unicode(text: str) -> None:
    stored = storable_text(text)
    assert "\x00" not in stored
    stored.encode("utf-8")  # raises on a lone surrogate left
    if "\x00" not in text and "\\" not in text and unstorable(text) is None:
        assert stored == text


@settings(max_examples=300, deadline=None)
@given(ANY_TEXT)
def test_unstorable_text_is_exactly_nul_or_surrogate(text: str) -> None:
    try:
        text.encode("utf-8")
        encodable = True
    except UnicodeEncodeError:
        encodable = False
    assert (unstorable(text) is None) == (encodable and "\x00" not in text)


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.floats() | st.integers() | ANY_TEXT,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ANY_TEXT, inner, max_size=3),
        max_leaves=10,
    )
)
def test_a_storable_value_survives_strict_json(value: object) -> None:
    """What unstorable() lets through is strict JSON (no NaN), UTF-8, without NUL: what
    PostgreSQL's JSONB takes; what it refuses fails one of these."""
    why = unstorable(value)
    try:
        text = json.dumps(value, allow_nan=False, ensure_ascii=False)
        text.encode("utf-8")
        ok = "\\u0000" not in text
        ok = ok and all(math.isfinite(float(x)) for x in _numbers(value) if not isinstance(x, bool))
    except (ValueError, UnicodeEncodeError, OverflowError):
        ok = False
    assert (why is None) == ok, (value, why)


def _numbers(value: object) -> list[object]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _numbers(v)]
    if isinstance(value, list):
        return [x for v in value for x in _numbers(v)]
    return [value] if isinstance(value, int | float) else []


def test_depth_and_ranges() -> None:
    deep: object = 1
    for _ in range(MAX_DEPTH):
        deep = [deep]
    assert unstorable(deep) is None
    assert unstorable([deep]) == (
        f"JSON nested deeper than {MAX_DEPTH} levels",
        "flatten the value",
    )
    assert unstorable(10**308) is None
    assert unstorable(-(10**309)) is not None
    assert unstorable({"\x00": 1})[0].startswith("a key holding a NUL")


def test_numbers_are_ascii_decimal() -> None:
    good = ["3", "+3", "-0", "2.5", ".5", "5.", "1e0", "1E-3", "1e309"]
    bad = ["", "١", "３", "1_0", "0x3", "nan", "inf", "Infinity", "1e", "--1", "1.2.3", "٣.٥"]
    assert [t for t in good if not NUMBER.fullmatch(t)] == []
    assert [t for t in bad if NUMBER.fullmatch(t)] == []


@settings(max_examples=300, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.floats() | st.integers() | ANY_TEXT,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ANY_TEXT, inner, max_size=3),
        max_leaves=10,
    ),
    st.sampled_from([(0, 0), (1, 1), (150, 0), (0, 150)]),
    st.booleans(),
)
def test_a_line_that_is_not_suspect_is_storable(
    value: object, padding: tuple[int, int], ascii_only: bool
) -> None:
    """The screen never lets an unstorable value through: what it does not suspect, a walk
    with unstorable() would not refuse (deep nesting and long numbers made likely)."""
    nested, digits = padding
    for _ in range(nested // 2):
        value = [value]
    record = {"v": value, "n": int("9" * digits) if digits else 0}
    text = json.dumps(record, ensure_ascii=ascii_only)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a raw surrogate: never decoded from a UTF-8 file
        text = json.dumps(record)
    lines = JsonLines()
    try:
        parsed = lines.loads(text)
    except (ValueError, RecursionError):
        return  # refused while decoding
    if not lines.suspect(text):
        assert unstorable(parsed) is None, text


def test_screen_of_single_lines() -> None:
    lines = JsonLines()
    hits = ['"\\u0000"', '"\\ud800"', '"\\uDFFF"', "NaN", "-Infinity", "1e309", "9" * 310]
    misses = ['"\\u00e9"', '"\\ud7ff"', '"\\ue000"', "1e308", "9" * 299, '"nan"']
    for text in hits + misses:
        lines.loads(f'{{"x": {text}}}')
        assert lines.suspect(f'{{"x": {text}}}') == (text in hits), text
    with pytest.raises(DuplicateKey):
        lines.loads('{"a": {"b": 1, "b": 2}}')


def test_problem_lines_are_escaped_and_capped() -> None:
    problem = Problem("f.csv", 3, "va\x1blue", "got '\x1b[2J\x00\u202eé'", "h" * 10_000)
    text = str(problem)
    assert text.startswith("f.csv:3: column 'va\\x1blue': got '\\x1b[2J\\x00\\u202eé' (hhh")
    assert text.endswith("... (9640 more characters))")
    assert len(text) < 500
    assert capped("abc", 5) == "abc"


def test_rows_no_reader_screened_are_checked_value_by_value() -> None:
    """Platform exports build their own rows: the validator walks them (a NUL in the payload,
    a surrogate in an id, NaN in a nested field, a worker row's platform fields)."""
    v = Validator(_info(), "f.json", {"worker": "PID"})
    row = SourceRow(
        4,
        {"worker": "w\ud800", "item": "i", "value": 3},
        extra={"note": "a\x00b", "meta": {"x": [float("nan")]}, "ok": "fine"},
    )
    assert [str(p) for p in v.check(row)] == [
        "f.json:4: column 'PID': a lone surrogate (\\ud800), which is not Unicode text "
        "(write the character itself, or both halves of a \\u escape pair)",
        "f.json:4: column 'note': a NUL character (\\x00), which cannot be stored "
        "(remove the NUL characters: a text file holds none)",
        "f.json:4: column 'meta': NaN, which JSON does not allow (write null for no value)",
    ]
    worker = SourceRow(5, {"worker": "w"}, table="worker", extra={"age": 10**400})
    assert [p.message for p in v.check(worker)] == [
        "a number past the range of a double (about 1.8e308)"
    ]
    # The same values from a reader that screened them would never reach check(); a clean
    # row is not touched.
    assert v.check(SourceRow(6, {"worker": "w", "item": "i", "value": 3}, extra={"n": 1}))[0] == (
        "judgment"
    )


def test_times_out_of_range_and_odd_digits_are_problems_not_tracebacks() -> None:
    v = Validator(_info(), "f.jsonl")
    cases = {
        "created_at": "9999-12-31T23:30:00-01:00",
        "duration_s": "\uff13",
        "value": 10**400,
    }
    for column, value in cases.items():
        fields = {"worker": "w", "item": "i", "value": 3, column: value}
        [problem] = v.check(SourceRow(1, fields, checked=True))
        assert problem.column == column


def test_one_json_decoder_and_its_refusals_in_words() -> None:
    """safe.loads (every platform reader) and JsonLines (the JSON Lines reader) refuse the same
    documents; refusal() words each error as the problem lines do."""
    from monitor.ingest.safe import JsonLines, loads, refusal

    cases = {
        '{"a": 1, "a": 2}': (
            "the key 'a' appears twice in one object",
            "a key names one value: which one is meant?",
        ),
        "[" + "7" * 5000 + "]": (
            "a number past the range of a double (about 1.8e308)",
            "write such a number as a string",
        ),
        "[" * 100_000 + "]" * 100_000: ("JSON nested deeper than 64 levels", "flatten the value"),
        '{"a": ': ("not valid JSON: Expecting value", None),
    }
    for text, words in cases.items():
        for decode in (loads, JsonLines().loads, lambda t: JsonLines().raw_decode(t)[0]):
            with pytest.raises((ValueError, RecursionError)) as info:
                decode(text)
            assert refusal(info.value) == words, text[:20]
    assert loads('{"a": [1, {"b": 2}]}') == {"a": [1, {"b": 2}]}
    assert JsonLines().raw_decode("[1] [2]", 4) == ([2], 7)


def test_platform_times_in_utc_or_refused_at_their_place() -> None:
    """utc_time (every platform reader): the time in UTC; past year 9999 or before year 1 once
    in UTC, or unreadable, an InputError naming the file, line and column."""
    from datetime import UTC, datetime

    from monitor.core.errors import InputError
    from monitor.ingest.platforms.figure_eight import parse_time
    from monitor.ingest.platforms.mapping import Where, parse_mturk_time, utc_time

    at = Where("f.csv", 3, "t")
    assert utc_time("12/31/9999 23:59:59", at, "h", parse_time) == datetime(
        9999, 12, 31, 23, 59, 59, tzinfo=UTC
    )
    assert utc_time("Mon Nov 03 09:12:45 PST 2025", at, "h", parse_mturk_time) == datetime(
        2025, 11, 3, 17, 12, 45, tzinfo=UTC
    )
    for text, what in [
        ("Fri Dec 31 23:30:00 PST 9999", "is outside the years 1 to 9999 in UTC"),
        ("Sat Jan 01 00:00:00 PST 10000", "cannot read"),  # datetime has no year 10000
    ]:
        with pytest.raises(InputError) as info:
            utc_time(text, at, "h", parse_mturk_time)
        assert str(info.value).startswith("f.csv:3: column 't': ")
        assert what in str(info.value)
    with pytest.raises(InputError, match="'0001-01-01T00:30:00\\+01:00' is outside the years"):
        utc_time("0001-01-01T00:30:00+01:00", at, "h")
