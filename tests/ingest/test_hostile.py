"""The hostile corpus (tests/data/hostile/, written by tests/data/make_hostile.py): files a
hostile user or a broken export hands in. Every one is refused with FILE:LINE and exit 2, and
nothing is stored, on SQLite and PostgreSQL alike; with --skip-invalid the same rows are
rejected with the same reasons on both. Files of megabytes are made here, in tmp_path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select

from monitor.cli import main
from monitor.core.errors import InputError
from monitor.ingest.api import create_campaign, ingest_file
from monitor.store.campaigns import CampaignSpec
from monitor.store.models import Campaign, Item, Judgment, Preference, RejectedRow, Worker
from tests.ingest.test_validate import count_rows

HOSTILE = Path(__file__).resolve().parents[1] / "data" / "hostile"
# A clean judgments file per campaign, for the items files (gold-<campaign>_...).
GOOD = {
    "rating": "worker,item,value\nw,i1,3\n",
    "label": "worker,item,value\nw,i1,yes\n",
    "labelopen": "worker,item,value\nw,i1,x\n",
    "multilabel": "worker,item,value\nw,i1,cat\n",
    "pairwise": "worker,left,right,preference\nw,i1,i2,left\n",
}

EXPECTED: dict[str, list[str]] = {
    "gold-label_surrogate.jsonl": [
        "{f}:1: column 'gold': a lone surrogate (\\ud800), which is not Unicode text (write the character itself, or both halves of a \\u escape pair)"
    ],
    "gold-label_unknown.csv": [
        "{f}:3: column 'gold': unknown category 'maybe' (categories: yes, no)"
    ],
    "gold-multilabel_unknown.jsonl": [
        "{f}:1: column 'gold': unknown option 'bird' (options: cat, dog)"
    ],
    "gold-pairwise_not_number.csv": [
        "{f}:2: column 'gold': expected a number, got 'left' (the gold value of a pairwise item is its known score)"
    ],
    "gold-rating_arabic_digit.csv": ["{f}:2: column 'gold': expected a number in 1..5, got '٣'"],
    "gold-rating_bigint.jsonl": [
        "{f}:1: column 'gold': a number past the range of a double (about 1.8e308) (write such a number as a string)"
    ],
    "gold-rating_nan.csv": ["{f}:2: column 'gold': expected a number in 1..5, got 'nan'"],
    "gold-rating_no_item_column.csv": [
        "{f}:1: column 'item': not in the header (columns: thing, gold; an items file has item, optional gold and text)"
    ],
    "gold-rating_not_number.csv": ["{f}:2: column 'gold': expected a number in 1..5, got 'high'"],
    "gold-rating_nul.jsonl": [
        "{f}:1: column 'gold': a NUL character (\\x00), which cannot be stored (remove the NUL characters: a text file holds none)"
    ],
    "gold-rating_out_of_scale.csv": [
        "{f}:3: column 'gold': expected a number in 1..5, got '7' (outside the campaign's scale)"
    ],
    "label_1e309.jsonl": [
        "{f}:1: column 'value': a number past the range of a double (about 1.8e308), or Infinity, which JSON does not allow (write such a number as a string)"
    ],
    "label_ansi_category.csv": [
        "{f}:2: column 'value': unknown category '\\x1b[1myes' (categories: yes, no)"
    ],
    "label_nul_after_8k.csv": [
        "{f}:902: a NUL character (\\x00), which cannot be stored (remove the NUL characters: a text file holds none)"
    ],
    "label_nul_escape.jsonl": [
        "{f}:1: column 'value': a NUL character (\\x00), which cannot be stored (remove the NUL characters: a text file holds none)"
    ],
    "labelopen_surrogate_label.jsonl": [
        "{f}:1: column 'value': a lone surrogate (\\ud800), which is not Unicode text (write the character itself, or both halves of a \\u escape pair)"
    ],
    "multilabel_nan.jsonl": [
        "{f}:1: column 'value': NaN, which JSON does not allow (write null for no value)"
    ],
    "multilabel_nested_list.jsonl": [
        "{f}:1: column 'value': expected a list of strings, got [[\"cat\"]]"
    ],
    "multilabel_surrogate.jsonl": [
        "{f}:1: column 'value': a lone surrogate (\\ud800), which is not Unicode text (write the character itself, or both halves of a \\u escape pair)"
    ],
    "pairwise_ansi_preference.csv": [
        "{f}:2: column 'preference': expected left, right or tie, got '\\x1b[2Jleft'"
    ],
    "pairwise_nul_preference.jsonl": [
        "{f}:1: column 'preference': a NUL character (\\x00), which cannot be stored (remove the NUL characters: a text file holds none)"
    ],
    "pairwise_same_after_strip.csv": [
        "{f}:2: column 'right': the same item as left ('a') (a preference compares two different items)"
    ],
    "pairwise_surrogate_left.jsonl": [
        "{f}:1: column 'left': a lone surrogate (\\ud800), which is not Unicode text (write the character itself, or both halves of a \\u escape pair)"
    ],
    "rating_1e309.csv": ["{f}:2: column 'value': expected a number in 1..5, got '1e309'"],
    "rating_1e309_in_note.jsonl": [
        "{f}:1: column 'x': a number past the range of a double (about 1.8e308), or Infinity, which JSON does not allow (write such a number as a string)"
    ],
    "rating_1e309_value.jsonl": [
        "{f}:1: column 'value': a number past the range of a double (about 1.8e308), or Infinity, which JSON does not allow (write such a number as a string)"
    ],
    "rating_ansi_value.csv": [
        "{f}:2: column 'value': expected a number in 1..5, got '\\x1b[31mfour\\x1b[0m'"
    ],
    "rating_arabic_digit.csv": ["{f}:2: column 'value': expected a number in 1..5, got '٣'"],
    "rating_array_first.jsonl": [
        "{f}:1: a JSON array, not JSON Lines (write one JSON object a line)"
    ],
    "rating_array_of_rows.jsonl": [
        '{f}:1: expected a JSON object, got an array (write one object a line: {"worker": ..., ...})'
    ],
    "rating_bidi_value.csv": [
        "{f}:2: column 'value': expected a number in 1..5, got '\\u202efour'"
    ],
    "rating_bidi_worker_too_long.jsonl": [
        "{f}:1: column 'worker': 300 characters, more than the limit of 255 (ids are at most 255 characters)"
    ],
    "rating_bigint_in_note.jsonl": [
        "{f}:1: column 'x': a number past the range of a double (about 1.8e308) (write such a number as a string)"
    ],
    "rating_bigint_value.jsonl": [
        "{f}:1: column 'value': a number past the range of a double (about 1.8e308) (write such a number as a string)"
    ],
    "rating_bigint_worker.jsonl": [
        "{f}:1: column 'worker': a number past the range of a double (about 1.8e308) (write such a number as a string)"
    ],
    "rating_bom_twice.csv": [
        "{f}:1: column 'worker': not in the header (did you mean '\\ufeffworker'? rename it or pass --map worker=\\ufeffworker; columns: \\ufeffworker, item, value, judgment_id, created_at, duration_s, note; a rating judgment needs worker, item, value)"
    ],
    "rating_comment_line.jsonl": [
        "{f}:1: does not look like JSON Lines (a CSV file is named .csv, or pass --format csv)"
    ],
    "rating_cr_only.csv": [
        "{f}:1: cannot read the header: new-line character seen in unquoted field - do you need to open the file in universal-newline mode?"
    ],
    "rating_crlf_bare_cr.csv": [
        "{f}:2: cannot read the record: new-line character seen in unquoted field - do you need to open the file in universal-newline mode? (a value holding a comma, a quote or a line break must be quoted)"
    ],
    "rating_duplicate_key.jsonl": [
        "{f}:2: the key 'worker' appears twice in one object (a key names one value: which one is meant?)"
    ],
    "rating_duplicate_nested_key.jsonl": [
        "{f}:1: the key 'a' appears twice in one object (a key names one value: which one is meant?)"
    ],
    "rating_duration_arabic.csv": [
        "{f}:2: column 'duration_s': expected a non-negative number of seconds, got '٣'"
    ],
    "rating_duration_fullwidth.jsonl": [
        "{f}:1: column 'duration_s': expected a non-negative number of seconds, got '３'"
    ],
    "rating_duration_inf.csv": [
        "{f}:2: column 'duration_s': expected a non-negative number of seconds, got '1e309'"
    ],
    "rating_duration_nan.csv": [
        "{f}:2: column 'duration_s': expected a non-negative number of seconds, got 'nan'"
    ],
    "rating_duration_tiny_negative.csv": [
        "{f}:2: column 'duration_s': expected a non-negative number of seconds, got '-1e-300'"
    ],
    "rating_duration_underscore.csv": [
        "{f}:2: column 'duration_s': expected a non-negative number of seconds, got '1_0'"
    ],
    "rating_encoded_surrogate.csv": ["{f}:2: not UTF-8 text (save the file as UTF-8)"],
    "rating_formula_value.csv": ["{f}:2: column 'value': expected a number in 1..5, got '=1+2'"],
    "rating_fullwidth_digit.csv": ["{f}:2: column 'value': expected a number in 1..5, got '３'"],
    "rating_garbage.csv": [
        "{f}: a binary file, not CSV text (give a CSV file: UTF-8 text, header row, comma)"
    ],
    "rating_gzip.csv": [
        "{f}: a damaged gzip file (Compressed file ended before the end-of-stream marker was "
        "reached) (compress it again, or give the file uncompressed)"
    ],
    "rating_header_commas.csv": ["{f}:1: no header row (the first line names the columns)"],
    "rating_header_empty_twice.csv": [
        "{f}:1: two columns without a name (name every column, or delete the empty ones)"
    ],
    "rating_header_only_blank.csv": ["{f}:1: no header row (the first line names the columns)"],
    "rating_header_worker_twice.csv": ["{f}:1: column 'worker': appears twice in the header"],
    "rating_header_wrong.csv": [
        "{f}:1: column 'worker': not in the header (columns: a, b, c; a rating judgment needs worker, item, value)",
        "{f}:1: column 'item': not in the header (columns: a, b, c; a rating judgment needs worker, item, value)",
        "{f}:1: column 'value': not in the header (columns: a, b, c; a rating judgment needs worker, item, value)",
    ],
    "rating_hex_number.csv": ["{f}:2: column 'value': expected a number in 1..5, got '0x3'"],
    "rating_html_value.csv": [
        "{f}:2: column 'value': expected a number in 1..5, got '<script>alert(1)</script>'"
    ],
    "rating_hugeint_in_note.jsonl": [
        "{f}:1: a number past the range of a double (about 1.8e308) (write such a number as a string)"
    ],
    "rating_id_10k.csv": [
        "{f}:2: column 'worker': 10000 characters, more than the limit of 255 (ids are at most 255 characters)"
    ],
    "rating_inf.csv": ["{f}:2: column 'value': expected a number in 1..5, got 'inf'"],
    "rating_infinity_in_note.jsonl": [
        "{f}:1: column 'score': a number past the range of a double (about 1.8e308), or Infinity, which JSON does not allow (write such a number as a string)"
    ],
    "rating_item_multibyte_long.csv": [
        "{f}:2: column 'item': 256 characters, more than the limit of 255 (ids are at most 255 characters)"
    ],
    "rating_json_array.csv": [
        "{f}:1: looks like JSON, not CSV (name a JSON Lines file .jsonl, or pass --format jsonl)"
    ],
    "rating_judgment_id_long.csv": [
        "{f}:2: column 'judgment_id': 300 characters, more than the limit of 255 (ids are at most 255 characters)"
    ],
    "rating_latin1_after_8k.csv": ["{f}:302: not UTF-8 text (save the file as UTF-8)"],
    "rating_minus_zero.csv": [
        "{f}:2: column 'value': expected a number in 1..5, got '-0' (outside the campaign's scale)"
    ],
    "rating_nan.csv": ["{f}:2: column 'value': expected a number in 1..5, got 'NaN'"],
    "rating_nan_duration.jsonl": [
        "{f}:1: column 'duration_s': a number past the range of a double (about 1.8e308), or Infinity, which JSON does not allow (write such a number as a string)"
    ],
    "rating_nan_in_note.jsonl": [
        "{f}:1: column 'score': NaN, which JSON does not allow (write null for no value)"
    ],
    "rating_nan_value.jsonl": [
        "{f}:1: column 'value': NaN, which JSON does not allow (write null for no value)"
    ],
    "rating_nested_100.jsonl": [
        "{f}:1: column 'x': JSON nested deeper than 64 levels (flatten the value)"
    ],
    "rating_newline_in_value.csv": [
        "{f}:3: column 'value': expected a number in 1..5, got '3\\x0a4'"
    ],
    "rating_nul_escape_in_key.jsonl": [
        "{f}:1: a key holding a NUL character (\\x00), which cannot be stored (remove the NUL characters: a text file holds none)"
    ],
    "rating_nul_escape_in_note.jsonl": [
        "{f}:2: column 'note': a NUL character (\\x00), which cannot be stored (remove the NUL characters: a text file holds none)"
    ],
    "rating_nul_escape_in_worker.jsonl": [
        "{f}:1: column 'worker': a NUL character (\\x00), which cannot be stored (remove the NUL characters: a text file holds none)"
    ],
    "rating_nul_in_header.csv": [
        "{f}: a binary file, not CSV text (give a CSV file: UTF-8 text, header row, comma)"
    ],
    "rating_nul_in_note_after_8k.csv": [
        "{f}:302: a NUL character (\\x00), which cannot be stored (remove the NUL characters: a text file holds none)"
    ],
    "rating_nul_in_value_after_8k.csv": [
        "{f}:302: a NUL character (\\x00), which cannot be stored (remove the NUL characters: a text file holds none)"
    ],
    "rating_nul_raw_after_8k.jsonl": [
        "{f}:201: a NUL character (\\x00), which cannot be stored (remove the NUL characters: a text file holds none)"
    ],
    "rating_overlong_utf8.csv": ["{f}:2: not UTF-8 text (save the file as UTF-8)"],
    "rating_short_row_quoted.csv": [
        "{f}:2: 2 fields where the header has 7 (a value holding a comma, a quote or a line break must be quoted)"
    ],
    "rating_single_quotes.jsonl": [
        "{f}:2:2: not valid JSON: Expecting property name enclosed in double quotes"
    ],
    "rating_sql_value.csv": [
        "{f}:2: column 'value': expected a number in 1..5, got '3; DROP TABLE judgments; --'"
    ],
    "rating_string_line.jsonl": [
        "{f}:1: does not look like JSON Lines (a CSV file is named .csv, or pass --format csv)"
    ],
    "rating_surrogate_in_item.jsonl": [
        "{f}:1: column 'item': a lone surrogate (\\udbff), which is not Unicode text (write the character itself, or both halves of a \\u escape pair)"
    ],
    "rating_surrogate_in_judgment_id.jsonl": [
        "{f}:1: column 'judgment_id': a lone surrogate (\\ud83d), which is not Unicode text (write the character itself, or both halves of a \\u escape pair)"
    ],
    "rating_surrogate_in_key.jsonl": [
        "{f}:1: a key holding a lone surrogate (\\ud800), which is not Unicode text (write the character itself, or both halves of a \\u escape pair)"
    ],
    "rating_surrogate_in_note.jsonl": [
        "{f}:1: column 'note': a lone surrogate (\\ud800), which is not Unicode text (write the character itself, or both halves of a \\u escape pair)"
    ],
    "rating_surrogate_in_worker.jsonl": [
        "{f}:1: column 'worker': a lone surrogate (\\udc00), which is not Unicode text (write the character itself, or both halves of a \\u escape pair)"
    ],
    "rating_surrogate_nested.jsonl": [
        "{f}:1: column 'meta': a lone surrogate (\\udfff), which is not Unicode text (write the character itself, or both halves of a \\u escape pair)"
    ],
    "rating_text_after_quote.csv": [
        "{f}:2: cannot read the record: ',' expected after '\"' (a value holding a comma, a quote or a line break must be quoted)"
    ],
    "rating_time_before_year_1.csv": [
        "{f}:2: column 'created_at': '0001-01-01T00:30:00+01:00' is outside the years 1 to 9999 in UTC (ISO 8601, e.g. 2025-11-03T09:12:45Z)"
    ],
    "rating_time_month_13.csv": [
        "{f}:2: column 'created_at': cannot read '2025-13-01T00:00:00Z' as a time (ISO 8601, e.g. 2025-11-03T09:12:45Z)"
    ],
    "rating_time_no_hash_path.csv": [
        "{f}:2: column 'created_at': '9999-12-31T23:59:59-00:01' is outside the years 1 to 9999 in UTC (ISO 8601, e.g. 2025-11-03T09:12:45Z)"
    ],
    "rating_time_number.jsonl": [
        "{f}:1: column 'created_at': cannot read 1700000000 as a time (ISO 8601, e.g. 2025-11-03T09:12:45Z)"
    ],
    "rating_time_overflow.jsonl": [
        "{f}:1: column 'created_at': '9999-12-31T23:59:59-00:01' is outside the years 1 to 9999 in UTC (ISO 8601, e.g. 2025-11-03T09:12:45Z)"
    ],
    "rating_time_past_9999.csv": [
        "{f}:2: column 'created_at': '9999-12-31T23:30:00-01:00' is outside the years 1 to 9999 in UTC (ISO 8601, e.g. 2025-11-03T09:12:45Z)"
    ],
    "rating_time_year_10000.csv": [
        "{f}:2: column 'created_at': cannot read '10000-01-01T00:00:00Z' as a time (ISO 8601, e.g. 2025-11-03T09:12:45Z)"
    ],
    "rating_trailing_garbage.jsonl": ["{f}:2:44: not valid JSON: Extra data"],
    "rating_unbalanced_quote.csv": [
        "{f}:2: cannot read the record: unexpected end of data (a value holding a comma, a quote or a line break must be quoted)"
    ],
    "rating_underscore_number.csv": ["{f}:2: column 'value': expected a number in 1..5, got '0_3'"],
    "rating_unterminated.jsonl": ["{f}:2:29: not valid JSON: Invalid control character at"],
    "rating_utf16.jsonl": [
        "{f}: UTF-16 text, not JSON Lines text in UTF-8 (save the file as UTF-8)"
    ],
    "rating_utf16be.csv": ["{f}: UTF-16 text, not CSV text in UTF-8 (save the file as UTF-8)"],
    "rating_utf16le.csv": ["{f}: UTF-16 text, not CSV text in UTF-8 (save the file as UTF-8)"],
    "rating_value_arabic.jsonl": ["{f}:1: column 'value': expected a number in 1..5, got '٣'"],
    "rating_value_fullwidth.jsonl": ["{f}:1: column 'value': expected a number in 1..5, got '３'"],
    "rating_value_object.jsonl": [
        "{f}:1: column 'value': expected a number in 1..5, got {\"a\": 1}"
    ],
    "rating_value_string_nan.jsonl": [
        "{f}:1: column 'value': expected a number in 1..5, got 'NaN'"
    ],
    "rating_value_true.jsonl": ["{f}:1: column 'value': expected a number in 1..5, got true"],
    "rating_value_under_unnamed.csv": [
        "{f}:3: 5 fields where the header has 3 (a value holding a comma, a quote or a line break must be quoted)"
    ],
    "rating_worker_list.jsonl": ["{f}:1: column 'worker': expected an id (a string), got [\"w1\"]"],
    "rating_zip.csv": [
        "{f}: a binary file, not CSV text (give a CSV file: UTF-8 text, header row, comma)"
    ],
    # Platform exports (issue 16): the format is in the name (see PLATFORMS).
    "labelopen_f8_hugeint.csv": [
        "{f}:2: column 'label': a number past the range of a double (about 1.8e308) (write such a number as a string)"
    ],
    "labelopen_f8_time_past_9999.csv": [
        "{f}:2: column '_created_at': '9999-12-31T23:30:00-01:00' is outside the years 1 to 9999 in UTC (expected Figure Eight's format like 3/14/2017 10:35:07)"
    ],
    "labelopen_f8_year_10000.csv": [
        "{f}:2: column '_created_at': cannot read '1/1/10000 00:00:00' as a time (expected Figure Eight's format like 3/14/2017 10:35:07)"
    ],
    "labelopen_ls_duplicate_key.json": [
        "{f}:2: the key 'choices' appears twice in one object (a key names one value: which one is meant?)"
    ],
    "labelopen_ls_duplicate_task_key.json": [
        "{f}:2: the key 'id' appears twice in one object (a key names one value: which one is meant?)"
    ],
    "labelopen_ls_hugeint.json": [
        "{f}:2: a number past the range of a double (about 1.8e308) (write such a number as a string)"
    ],
    "labelopen_ls_nan_item.json": [
        "{f}:2: column 'data.id': NaN, which JSON does not allow (write null for no value)"
    ],
    "labelopen_ls_infinite_item.json": [
        "{f}:2: column 'data.id': a number past the range of a double (about 1.8e308), or Infinity, which JSON does not allow (write such a number as a string)"
    ],
    "labelopen_ls_lead_time_bigint.json": [
        "{f}:2: column 'lead_time': cannot read '999999999999999999999999999999999999999999999999999999999...' as seconds"
    ],
    "labelopen_ls_time_before_year_1.json": [
        "{f}:2: column 'created_at': '0001-01-01T00:30:00+01:00' is outside the years 1 to 9999 in UTC (expected ISO 8601)"
    ],
    "labelopen_ls_time_past_9999.json": [
        "{f}:2: column 'created_at': '9999-12-31T23:30:00-01:00' is outside the years 1 to 9999 in UTC (expected ISO 8601)"
    ],
    "labelopen_mturk_duplicate_key.csv": [
        "{f}:2: column 'Answer.taskAnswers': the key 'label' appears twice in one object (a key names one value: which one is meant?)"
    ],
    "labelopen_mturk_hugeint.csv": [
        "{f}:2: column 'Answer.taskAnswers': a number past the range of a double (about 1.8e308) (write such a number as a string)"
    ],
    "labelopen_mturk_time_past_9999.csv": [
        "{f}:2: column 'SubmitTime': 'Fri Dec 31 23:30:00 PST 9999' is outside the years 1 to 9999 in UTC (expected MTurk's format like 'Mon Nov 03 09:12:45 PST 2025')"
    ],
    "labelopen_prolific_duplicate_key.jsonl": [
        "{f}:1: the key 'value' appears twice in one object (a key names one value: which one is meant?)"
    ],
    "labelopen_prolific_hugeint.jsonl": [
        "{f}:1: a number past the range of a double (about 1.8e308) (write such a number as a string)"
    ],
    "labelopen_prolific_time_past_9999.csv": [
        "{f}:2: column 'Started at': '9999-12-31T23:30:00-01:00' is outside the years 1 to 9999 in UTC (expected ISO 8601)"
    ],
    "multilabel_f8_duplicate_key.csv": [
        "{f}:2: column 'label': the key 'cat' appears twice in one object (a key names one value: which one is meant?)"
    ],
    "multilabel_toloka_duplicate_key.tsv": [
        "{f}:2: column 'OUTPUT:label': the key 'cat' appears twice in one object (a key names one value: which one is meant?)"
    ],
    "multilabel_toloka_hugeint.tsv": [
        "{f}:2: column 'OUTPUT:label': a number past the range of a double (about 1.8e308) (write such a number as a string)"
    ],
    "multilabel_toloka_time_past_9999.tsv": [
        "{f}:2: column 'ASSIGNMENT:submitted': '9999-12-31T23:30:00-01:00' is outside the years 1 to 9999 in UTC (expected ISO 8601 like 2025-11-03T09:12:45.123)"
    ],
}
PLATFORMS = {"ls": "labelstudio", "mturk": "mturk", "toloka": "toloka", "f8": "figure-eight",
             "prolific": "prolific"}  # fmt: skip
PROLIFIC_EXPORT = HOSTILE.parent / "platforms" / "prolific_export.csv"


def _platform(name: str) -> tuple[str | None, dict[str, str] | None]:
    """(format, reader options) of a corpus file: (None, None) for a canonical file."""
    fmt = PLATFORMS.get(name.split("_")[1]) if not name.startswith("gold-") else None
    if fmt == "prolific" and name.endswith(".jsonl"):  # answers joined with an export
        return fmt, {"export": str(PROLIFIC_EXPORT), "keep_unknown": "1"}
    return fmt, None


def make_campaigns(engine: Engine) -> None:
    create_campaign(engine, CampaignSpec("rating", "rating", scale_min=1, scale_max=5))
    create_campaign(engine, CampaignSpec("label", "label", categories=("yes", "no")))
    create_campaign(engine, CampaignSpec("labelopen", "label"))
    create_campaign(engine, CampaignSpec("multilabel", "multilabel", categories=("cat", "dog")))
    create_campaign(engine, CampaignSpec("pairwise", "pairwise", strict=True))


def _target(name: str, tmp_path: Path) -> tuple[str, Path, Path | None]:
    """(campaign, judgments file, items file or None) of a corpus file."""
    path = HOSTILE / name
    if not name.startswith("gold-"):
        return name.split("_")[0], path, None
    campaign = name.removeprefix("gold-").split("_")[0]
    good = tmp_path / f"good_{campaign}.csv"
    good.write_text(GOOD[campaign], encoding="utf-8")
    return campaign, good, path


def test_corpus_is_complete_and_large() -> None:
    names = sorted(p.name for p in HOSTILE.iterdir())
    assert names == sorted(EXPECTED)
    assert len(names) >= 80


def test_every_hostile_file_exits_2_with_its_lines_and_stores_nothing(
    db_url: str, engine: Engine, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Through the command line (in this process: a traceback would fail the test): exit 2,
    the exact FILE:LINE lines on stderr, and every table as it was."""
    make_campaigns(engine)
    before = count_rows(engine)
    got: dict[str, list[str]] = {}
    for name in EXPECTED:
        campaign, path, items = _target(name, tmp_path)
        words = ["ingest", str(path), "--campaign", campaign, "--db", db_url]
        if items is not None:
            words += ["--items", str(items)]
        fmt, options = _platform(name)
        if fmt is not None:
            words += ["--format", fmt]
        words += [f"--option={k}={v}" for k, v in (options or {}).items()]
        code = main(words)
        out, err = capsys.readouterr()
        lines = err.splitlines()
        assert (code, out, lines[-1:]) == (2, "", ["nothing was written"]), name
        got[name] = [line.replace(str(HOSTILE / name), "{f}") for line in lines[:-1]]
        assert count_rows(engine) == before, name
    assert got == EXPECTED


def test_skip_invalid_rejects_the_same_rows_on_every_backend(
    engine: Engine, tmp_path: Path
) -> None:
    """With --skip-invalid a file-level problem still refuses the file (nothing stored); a
    row-level one rejects exactly the rows named, each kept with its reasons (the raw text
    with any NUL or lone surrogate escaped, so that both databases take it)."""
    make_campaigns(engine)
    n_skipped = 0
    for name, expected in EXPECTED.items():
        campaign, path, items = _target(name, tmp_path)
        want = [line.replace("{f}", str(HOSTILE / name)) for line in expected]
        before = count_rows(engine)
        fmt, options = _platform(name)
        try:
            ingest_file(
                engine, path, campaign, items=items, skip_invalid=True, format=fmt, options=options
            )
        except InputError as exc:
            assert [str(p) for p in exc.problems] == want, name
            assert count_rows(engine) == before, name
            continue
        n_skipped += 1
        with engine.connect() as c:
            rows = c.execute(
                select(RejectedRow.line, RejectedRow.raw, RejectedRow.reasons).order_by(
                    RejectedRow.id
                )
            ).all()
            c.execute(RejectedRow.__table__.delete())
            c.commit()
        assert [r for _, _, reasons in rows for r in reasons] == want, name
        assert all("\x00" not in raw for _, raw, _ in rows), name
        raws = [raw for _, raw, _ in rows]
        assert [raw.encode("utf-8") for raw in raws], name  # no lone surrogate
    assert n_skipped >= 60


def _stderr(capsys: pytest.CaptureFixture[str], words: list[str]) -> tuple[int, str]:
    code = main(words)
    out, err = capsys.readouterr()
    assert out == ""
    return code, err


def test_big_hostile_files(
    db_url: str, engine: Engine, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A 1e6-column header (the hint lists 20 columns and counts the rest), JSON nested 100,000
    deep, a 10-million-character id on one 10 MB line: short messages, exit 2, nothing
    stored."""
    make_campaigns(engine)
    before = count_rows(engine)
    wide = tmp_path / "wide.csv"
    wide.write_text(",".join(f"c{k}" for k in range(1_000_000)) + "\n1\n", encoding="utf-8")
    deep = tmp_path / "deep.jsonl"
    deep.write_text(
        '{"worker": "w", "item": "i", "value": 3, "x": ' + "[" * 100_000 + "]" * 100_000 + "}\n"
    )
    long = tmp_path / "long.csv"
    long.write_text("worker,item,value\n" + "w" * 10_000_000 + ",i,3\nw,i,3\n", encoding="utf-8")
    hint = (
        "columns: " + ", ".join(f"c{k}" for k in range(20)) + ", ... and 999980 more; "
        "a rating judgment needs worker, item, value"
    )
    cases = {
        wide: [f"{wide}:1: column '{c}': not in the header ({hint})" for c in ("worker", "item", "value")],
        deep: [f"{deep}:1: JSON nested deeper than 64 levels (flatten the value)"],
        long: [
            f"{long}:2: column 'worker': 10000000 characters, more than the limit of 255 "
            "(ids are at most 255 characters)"
        ],
    }  # fmt: skip
    for path, lines in cases.items():
        code, err = _stderr(capsys, ["ingest", str(path), "--campaign", "rating", "--db", db_url])
        assert (code, err.splitlines()) == (2, [*lines, "nothing was written"])
        assert count_rows(engine) == before
    summary = ingest_file(engine, long, "rating", skip_invalid=True)
    assert (summary.n_rows, summary.n_new, summary.n_rejected) == (2, 1, 1)
    with engine.connect() as c:
        assert c.scalar(select(RejectedRow.line)) == 2
        assert len(c.scalar(select(RejectedRow.raw))) > 10_000_000


def test_what_a_hostile_user_may_store(engine: Engine, tmp_path: Path) -> None:
    """Accepted, stored verbatim on both backends: ids that look like SQL, HTML or formulas,
    a trailing empty header column (as spreadsheets write it), a header with no rows, a BOM,
    CRLF line ends, letters of any script; numbers such as 1e0 or +3."""
    make_campaigns(engine)
    sqlish = "x'); DROP TABLE judgments; --"
    files = {
        "trailing.csv": "worker,item,value,,\r\nw1,i1,3,,\r\nw2,i1,4,,\r\n",
        "header_only.csv": "worker,item,value\n",
        "sql.csv": '\ufeffworker,item,value,note\n"' + sqlish.replace("'", "'") + '",<b>i</b>,1e0,=1+2\n'
        + "Straße,日本,+3,\n",
        "sql.jsonl": json.dumps({"worker": "Robert'); --", "item": "i2", "value": 5, "n": -0, "m": 1e20})
        + "\n",
    }  # fmt: skip
    summaries = {}
    for name, text in files.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        summaries[name] = ingest_file(engine, path, "rating")
    assert {n: (s.n_rows, s.n_new, s.n_rejected) for n, s in summaries.items()} == {
        "trailing.csv": (2, 2, 0),
        "header_only.csv": (0, 0, 0),
        "sql.csv": (2, 2, 0),
        "sql.jsonl": (1, 1, 0),
    }
    with engine.connect() as c:
        workers = set(c.scalars(select(Worker.external_id)))
        items = set(c.scalars(select(Item.external_id)))
        payloads = [p for p in c.scalars(select(Judgment.payload).order_by(Judgment.id)) if p]
        assert c.scalar(select(Preference.id)) is None
    assert workers == {"w1", "w2", sqlish, "Straße", "Robert'); --"}
    assert items == {"i1", "<b>i</b>", "日本", "i2"}
    assert payloads == [
        {"note": "=1+2"},
        {"note": ""},
        {"n": 0, "m": 1e20},
    ]  # PostgreSQL: 10**20, equal


def test_gold_values_inside_the_campaign_are_stored(engine: Engine, tmp_path: Path) -> None:
    """Gold values (issue 15): a rating's inside [min, max], a label's one of the categories
    (any label when the categories come from the data), a closed multilabel task's among its
    options, a pairwise item's a number (its known score); stored in canonical form."""
    make_campaigns(engine)
    golds = {
        "rating": "item,gold\ni1,1\ni2,5.0\ni3,\n",
        "label": "item,gold\ni1,yes\n",
        "labelopen": "item,gold\ni1,anything\n",
        "multilabel": 'item,gold\ni1,"dog|cat|dog"\n',
        "pairwise": "item,gold\ni1,2.50\ni2,-1\n",
    }
    stored = {}
    for campaign, text in golds.items():
        items = tmp_path / f"gold_{campaign}.csv"
        items.write_text(text, encoding="utf-8")
        good = tmp_path / f"good_{campaign}.csv"
        good.write_text(GOOD[campaign], encoding="utf-8")
        ingest_file(engine, good, campaign, items=items)
        with engine.connect() as c:
            stored[campaign] = sorted(
                (i, g)
                for i, g in c.execute(
                    select(Item.external_id, Item.gold)
                    .join(Campaign, Campaign.id == Item.campaign_id)
                    .where(Campaign.name == campaign)
                )
            )
    assert stored == {
        "rating": [("i1", "1"), ("i2", "5"), ("i3", None)],
        "label": [("i1", "yes")],
        "labelopen": [("i1", "anything")],
        "multilabel": [("i1", "dog|cat")],
        "pairwise": [("i1", "2.5"), ("i2", "-1")],
    }


def test_platform_rows_get_the_same_answer_on_every_backend(
    db_url: str, engine: Engine, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Rows of a platform export (here Label Studio) are screened by the validator: a lone
    surrogate in an item id and a NUL in an item text are refused, or rejected with
    --skip-invalid, with their lines, on both backends."""
    platforms = HOSTILE.parent / "platforms"
    source = (platforms / "labelstudio_export.json").read_text(encoding="utf-8")
    bad = source.replace("The battery", "The \\u0000battery", 1).replace('"d-1"', '"d\\ud800"')
    path = tmp_path / "ls.json"
    path.write_text(bad, encoding="utf-8")
    create_campaign(
        engine, CampaignSpec("ls", "label", categories=("positive", "negative", "neutral"))
    )
    words = ["ingest", str(path), "--campaign", "ls", "--format", "labelstudio"]
    words += ["--map", "text=data.text", "--map", "item=data.doc", "--db", db_url]
    surrogate = (
        f"{path}:2: column 'item': a lone surrogate (\\ud800), which is not Unicode text "
        "(write the character itself, or both halves of a \\u escape pair)"
    )
    nul = (
        f"{path}:2: column 'text': a NUL character (\\x00), which cannot be stored "
        "(remove the NUL characters: a text file holds none)"
    )
    before = count_rows(engine)
    assert main(words) == 2
    assert capsys.readouterr().err.splitlines() == [
        surrogate,
        nul,
        surrogate,
        surrogate,
        "nothing was written",
    ]
    assert count_rows(engine) == before
    assert main([*words, "--skip-invalid"]) == 0
    capsys.readouterr()
    with engine.connect() as c:
        reasons = [r for rs in c.scalars(select(RejectedRow.reasons)) for r in rs]
        assert c.scalar(select(func.count()).select_from(Judgment)) == 1
    assert sorted(reasons) == sorted([surrogate, nul, surrogate, surrogate])


def test_platform_exports_nested_100000_deep(
    db_url: str, engine: Engine, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Issue 16: JSON nested 100,000 deep in a platform export (a Label Studio task, MTurk's
    Answer.taskAnswers, a Toloka or Figure Eight answer cell, a Prolific answers line) was a
    RecursionError traceback: now one line at the record, exit 2, nothing stored."""
    from tests.data.make_hostile import f8, ls_task, mturk, toloka

    make_campaigns(engine)
    before = count_rows(engine)
    deep = "[" * 100_000 + "]" * 100_000
    files = {
        "deep.json": ("labelstudio", "labelopen", ls_task(data=', "x": ' + deep), None),
        "deep_mturk.csv": ("mturk", "labelopen", mturk(f'[{{"label": "a", "x": {deep}}}]'), None),
        "deep.tsv": ("toloka", "multilabel", toloka(deep), "OUTPUT:label"),
        "deep_f8.csv": ("figure-eight", "labelopen", f8(deep), "label"),
        "deep.jsonl": ("prolific", "labelopen", '{"worker": "p1", "x": ' + deep + "}\n", None),
    }
    line = {"deep.jsonl": 1}
    for name, (fmt, campaign, text, column) in files.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        words = ["ingest", str(path), "--campaign", campaign, "--format", fmt, "--db", db_url]
        if fmt == "prolific":
            words += [f"--option=export={PROLIFIC_EXPORT}", "--option=keep_unknown=1"]
        if fmt == "mturk":
            column = "Answer.taskAnswers"
        where = f"{path}:{line.get(name, 2)}:" + (f" column '{column}':" if column else "")
        code, err = _stderr(capsys, words)
        assert (code, err.splitlines()) == (
            2,
            [
                f"{where} JSON nested deeper than 64 levels (flatten the value)",
                "nothing was written",
            ],
        ), name
        assert count_rows(engine) == before


def test_detecting_a_deep_label_studio_export(
    engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Without --format, the platform is told from the first bytes: a task nested 100,000 deep
    there was a RecursionError traceback; now it is detected and refused at its line."""
    make_campaigns(engine)
    before = count_rows(engine)
    task = (
        '[\n{"id": 1, "annotations": [{"id": 7, "completed_by": 3, "result": [{"from_name": '
        '"label", "value": {"choices": ["a"]}}]}], "data": {"id": "i1", "x": '
    )
    path = tmp_path / "deep.json"
    path.write_text(task + "[" * 100_000 + "]" * 100_000 + "}}\n]\n", encoding="utf-8")
    code, err = _stderr(capsys, ["ingest", str(path), "--campaign", "labelopen", "--db", db_url])
    assert (code, err.splitlines()) == (
        2,
        [f"{path}:2: JSON nested deeper than 64 levels (flatten the value)", "nothing was written"],
    )
    assert count_rows(engine) == before
