"""Writes tests/data/hostile/: small files a hostile user (or a broken export) would hand in.

    python tests/data/make_hostile.py

Each file's name says which campaign it goes to (``rating_``, ``label_``, ``labelopen_``,
``multilabel_``, ``pairwise_``), or ``gold-<campaign>_`` for an items file (``--items``). Every
file must be refused with FILE:LINE and exit 2, nothing stored, on SQLite and PostgreSQL
(tests/ingest/test_hostile.py). Files of megabytes (a 1e6-column header, deep nesting, a long
line) are made inside the test instead.
"""

from __future__ import annotations

import gzip
import io
import json
import random
import zipfile
from pathlib import Path

OUT = Path(__file__).resolve().parent / "hostile"
HEAD = "worker,item,value,judgment_id,created_at,duration_s,note\n"
GOOD = "w1,i1,3,j1,2025-11-03T09:12:45Z,12,fine\n"
PAD = "".join(f"w{k},i{k},{1 + k % 5},j{k},2025-11-03T09:12:45Z,3,padding\n" for k in range(300))
assert len(PAD) > 9000  # past the 8 KB the binary sniff looks at  # noqa: S101


def row(**kw: object) -> str:
    base = {"worker": "w1", "item": "i1", "value": 3}
    base.update(kw)
    return json.dumps(base, ensure_ascii=False) + "\n"


def raw_row(text: str) -> str:
    """A JSON line written by hand (escapes as given)."""
    return text + "\n"


def csv_files() -> dict[str, bytes | str]:
    f: dict[str, bytes | str] = {}
    f["rating_nul_in_note_after_8k.csv"] = HEAD + PAD + "w9,i9,3,j9,,,bad\x00note\n"
    f["rating_nul_in_value_after_8k.csv"] = HEAD + PAD + "w9,i9,3\x00,j9,,,\n"
    f["rating_nul_in_header.csv"] = "worker,item,value,no\x00te\nw1,i1,3,x\n"
    f["rating_utf16le.csv"] = (HEAD + GOOD).encode("utf-16")
    f["rating_utf16be.csv"] = b"\xfe\xff" + (HEAD + GOOD).encode("utf-16-be")
    # a gzip stream cut short (a whole one is read: issue 40)
    f["rating_gzip.csv"] = gzip.compress((HEAD + GOOD).encode(), mtime=0)[:60]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("ratings.csv", HEAD + GOOD)
    f["rating_zip.csv"] = buffer.getvalue()
    f["rating_garbage.csv"] = random.Random(7).randbytes(3000)
    f["rating_bom_twice.csv"] = "\ufeff\ufeff" + HEAD + GOOD
    f["rating_crlf_bare_cr.csv"] = HEAD.replace("\n", "\r\n") + "w1,i1,3\rw2,i2,4,,,,\r\n"
    f["rating_cr_only.csv"] = (HEAD + GOOD).replace("\n", "\r")
    f["rating_unbalanced_quote.csv"] = HEAD + 'w1,"i1,3,j1,,,\nw2,i2,4,j2,,,\n'
    f["rating_text_after_quote.csv"] = HEAD + 'w1,"i1"x,3,j1,,,\n'
    f["rating_newline_in_value.csv"] = HEAD + GOOD + 'w2,i2,"3\n4",j2,,,\n'
    f["rating_ansi_value.csv"] = HEAD + "w1,i1,\x1b[31mfour\x1b[0m,j1,,,\n"
    f["rating_bidi_value.csv"] = HEAD + "w1,i1,\u202efour,j1,,,\n"
    f["rating_arabic_digit.csv"] = HEAD + "w1,i1,\u0663,j1,,,\n"
    f["rating_fullwidth_digit.csv"] = HEAD + "w1,i1,\uff13,j1,,,\n"
    f["rating_underscore_number.csv"] = HEAD + "w1,i1,0_3,j1,,,\n"
    f["rating_hex_number.csv"] = HEAD + "w1,i1,0x3,j1,,,\n"
    f["rating_duration_underscore.csv"] = HEAD + "w1,i1,3,j1,,1_0,\n"
    f["rating_duration_arabic.csv"] = HEAD + "w1,i1,3,j1,,\u0663,\n"
    f["rating_duration_nan.csv"] = HEAD + "w1,i1,3,j1,,nan,\n"
    f["rating_duration_inf.csv"] = HEAD + "w1,i1,3,j1,,1e309,\n"
    f["rating_duration_tiny_negative.csv"] = HEAD + "w1,i1,3,j1,,-1e-300,\n"
    f["rating_nan.csv"] = HEAD + "w1,i1,NaN,j1,,,\n"
    f["rating_inf.csv"] = HEAD + "w1,i1,inf,j1,,,\n"
    f["rating_1e309.csv"] = HEAD + "w1,i1,1e309,j1,,,\n"
    f["rating_minus_zero.csv"] = HEAD + "w1,i1,-0,j1,,,\n"
    f["rating_sql_value.csv"] = HEAD + "w1,i1,3; DROP TABLE judgments; --,j1,,,\n"
    f["rating_formula_value.csv"] = HEAD + "w1,i1,=1+2,j1,,,\n"
    f["rating_time_past_9999.csv"] = HEAD + "w1,i1,3,j1,9999-12-31T23:30:00-01:00,,\n"
    f["rating_time_before_year_1.csv"] = HEAD + "w1,i1,3,j1,0001-01-01T00:30:00+01:00,,\n"
    f["rating_time_year_10000.csv"] = HEAD + "w1,i1,3,j1,10000-01-01T00:00:00Z,,\n"
    f["rating_time_month_13.csv"] = HEAD + "w1,i1,3,j1,2025-13-01T00:00:00Z,,\n"
    f["rating_time_no_hash_path.csv"] = (
        "worker,item,value,created_at\nw1,i1,3,9999-12-31T23:59:59-00:01\n"
    )
    f["rating_id_10k.csv"] = HEAD + "w" * 10_000 + ",i1,3,j1,,,\n"
    f["rating_judgment_id_long.csv"] = HEAD + "w1,i1,3," + "j" * 300 + ",,,\n"
    f["rating_item_multibyte_long.csv"] = HEAD + "w1," + "é" * 256 + ",3,j1,,,\n"
    f["rating_header_only_blank.csv"] = "\n\n\n"
    f["rating_header_commas.csv"] = " , , \nw1,i1,3\n"
    f["rating_header_wrong.csv"] = "a,b,c\n1,2,3\n"
    f["rating_header_worker_twice.csv"] = "worker,item,value,worker\nw1,i1,3,w2\n"
    f["rating_header_empty_twice.csv"] = "worker,,item,,value\nw1,,i1,,3\n"
    f["rating_value_under_unnamed.csv"] = "worker,item,value,,\nw1,i1,3,,\nw2,i2,4,x,\n"
    f["rating_json_array.csv"] = '[{"worker": "w1", "item": "i1", "value": 3}]\n'
    f["rating_short_row_quoted.csv"] = HEAD + '"w1,i1,3",j1\n'
    f["rating_latin1_after_8k.csv"] = (HEAD + PAD).encode() + b"w9,i9,3,j9,,,caf\xe9\n"
    f["rating_overlong_utf8.csv"] = HEAD.encode() + b"w1,i\xc0\xaf1,3,j1,,,\n"
    f["rating_encoded_surrogate.csv"] = HEAD.encode() + b"w1,i\xed\xa0\x801,3,j1,,,\n"
    f["rating_html_value.csv"] = HEAD + "w1,i1,<script>alert(1)</script>,j1,,,\n"
    f["label_ansi_category.csv"] = "worker,item,value\nw1,i1,\x1b[1myes\n"
    f["label_nul_after_8k.csv"] = (
        "worker,item,value\n" + "".join(f"w{k},i{k},yes\n" for k in range(900)) + "w9,i9,y\x00es\n"
    )
    f["pairwise_ansi_preference.csv"] = "worker,left,right,preference\nw1,a,b,\x1b[2Jleft\n"
    f["pairwise_same_after_strip.csv"] = "worker,left,right,preference\nw1,a, a ,left\n"
    f["gold-rating_out_of_scale.csv"] = "item,gold\ni1,3\ni2,7\n"
    f["gold-rating_not_number.csv"] = "item,gold\ni1,high\n"
    f["gold-rating_arabic_digit.csv"] = "item,gold\ni1,\u0663\n"
    f["gold-rating_nan.csv"] = "item,gold\ni1,nan\n"
    f["gold-label_unknown.csv"] = "item,gold\ni1,yes\ni2,maybe\n"
    f["gold-pairwise_not_number.csv"] = "item,gold\ni1,left\n"
    f["gold-rating_no_item_column.csv"] = "thing,gold\ni1,3\n"
    return f


def jsonl_files() -> dict[str, bytes | str]:
    f: dict[str, bytes | str] = {}
    f["rating_nul_escape_in_note.jsonl"] = row() + raw_row(
        '{"worker": "w2", "item": "i1", "value": 3, "note": "a\\u0000b"}'
    )
    f["rating_nul_escape_in_worker.jsonl"] = raw_row(
        '{"worker": "w\\u0000", "item": "i1", "value": 3}'
    )
    f["rating_nul_escape_in_key.jsonl"] = raw_row(
        '{"worker": "w1", "item": "i1", "value": 3, "no\\u0000te": 1}'
    )
    f["rating_nul_raw_after_8k.jsonl"] = (
        "".join(row(worker=f"w{k}", item=f"i{k}") for k in range(200))
        + '{"worker": "w9", "item": "i9", "value": 3}\x00\n'
    )
    f["rating_surrogate_in_note.jsonl"] = raw_row(
        '{"worker": "w1", "item": "i1", "value": 3, "note": "\\ud800"}'
    )
    f["rating_surrogate_in_worker.jsonl"] = raw_row(
        '{"worker": "\\udc00x", "item": "i1", "value": 3}'
    )
    f["rating_surrogate_in_item.jsonl"] = raw_row(
        '{"worker": "w1", "item": "i\\udbff", "value": 3}'
    )
    f["rating_surrogate_in_judgment_id.jsonl"] = raw_row(
        '{"worker": "w1", "item": "i1", "value": 3, "judgment_id": "\\ud83d"}'
    )
    f["rating_surrogate_in_key.jsonl"] = raw_row(
        '{"worker": "w1", "item": "i1", "value": 3, "\\ud800": 1}'
    )
    f["rating_surrogate_nested.jsonl"] = raw_row(
        '{"worker": "w1", "item": "i1", "value": 3, "meta": {"a": ["x", "\\udfff"]}}'
    )
    f["rating_nan_in_note.jsonl"] = raw_row(
        '{"worker": "w1", "item": "i1", "value": 3, "score": NaN}'
    )
    f["rating_infinity_in_note.jsonl"] = raw_row(
        '{"worker": "w1", "item": "i1", "value": 3, "score": -Infinity}'
    )
    f["rating_nan_value.jsonl"] = raw_row('{"worker": "w1", "item": "i1", "value": NaN}')
    f["rating_nan_duration.jsonl"] = raw_row(
        '{"worker": "w1", "item": "i1", "value": 3, "duration_s": Infinity}'
    )
    f["rating_1e309_in_note.jsonl"] = raw_row(
        '{"worker": "w1", "item": "i1", "value": 3, "x": 1e309}'
    )
    f["rating_1e309_value.jsonl"] = raw_row('{"worker": "w1", "item": "i1", "value": -1e309}')
    big = "9" * 400
    f["rating_bigint_in_note.jsonl"] = raw_row(
        '{"worker": "w1", "item": "i1", "value": 3, "x": ' + big + "}"
    )
    f["rating_bigint_value.jsonl"] = raw_row('{"worker": "w1", "item": "i1", "value": ' + big + "}")
    f["rating_bigint_worker.jsonl"] = raw_row('{"worker": ' + big + ', "item": "i1", "value": 3}')
    f["rating_hugeint_in_note.jsonl"] = raw_row(
        '{"worker": "w1", "item": "i1", "value": 3, "x": ' + "7" * 5000 + "}"
    )
    f["rating_duplicate_key.jsonl"] = row() + raw_row(
        '{"worker": "w1", "worker": "w2", "item": "i1", "value": 3}'
    )
    f["rating_duplicate_nested_key.jsonl"] = raw_row(
        '{"worker": "w1", "item": "i1", "value": 3, "meta": {"a": 1, "a": 2}}'
    )
    f["rating_nested_100.jsonl"] = raw_row(
        '{"worker": "w1", "item": "i1", "value": 3, "x": ' + "[" * 100 + "]" * 100 + "}"
    )
    f["rating_array_first.jsonl"] = '[\n{"worker": "w1", "item": "i1", "value": 3}\n]\n'
    f["rating_array_of_rows.jsonl"] = '[{"worker": "w1", "item": "i1", "value": 3}]\n'
    f["rating_string_line.jsonl"] = '"worker"\n'
    f["rating_trailing_garbage.jsonl"] = row() + raw_row(
        '{"worker": "w2", "item": "i1", "value": 3} xyz'
    )
    f["rating_unterminated.jsonl"] = row() + raw_row('{"worker": "w2", "item": "i1')
    f["rating_single_quotes.jsonl"] = row() + raw_row("{'worker': 'w2', 'item': 'i1', 'value': 3}")
    f["rating_comment_line.jsonl"] = "// ratings\n" + row()
    f["rating_value_true.jsonl"] = row(value=True)
    f["rating_value_object.jsonl"] = row(value={"a": 1})
    f["rating_value_string_nan.jsonl"] = row(value="NaN")
    f["rating_value_arabic.jsonl"] = row(value="\u0663")
    f["rating_value_fullwidth.jsonl"] = row(value="\uff13")
    f["rating_time_overflow.jsonl"] = row(created_at="9999-12-31T23:59:59-00:01")
    f["rating_time_number.jsonl"] = row(created_at=1700000000)
    f["rating_duration_fullwidth.jsonl"] = row(duration_s="\uff13")
    f["rating_worker_list.jsonl"] = row(worker=["w1"])
    f["rating_utf16.jsonl"] = row().encode("utf-16")
    f["rating_bidi_worker_too_long.jsonl"] = row(worker="\u202e" * 300)
    f["label_nul_escape.jsonl"] = raw_row('{"worker": "w1", "item": "i1", "value": "yes\\u0000"}')
    f["label_1e309.jsonl"] = raw_row('{"worker": "w1", "item": "i1", "value": 1e309}')
    f["labelopen_surrogate_label.jsonl"] = raw_row(
        '{"worker": "w1", "item": "i1", "value": "\\ud800"}'
    )
    f["multilabel_surrogate.jsonl"] = raw_row(
        '{"worker": "w1", "item": "i1", "value": ["cat", "\\ud800"]}'
    )
    f["multilabel_nested_list.jsonl"] = row(value=[["cat"]])
    f["multilabel_nan.jsonl"] = raw_row('{"worker": "w1", "item": "i1", "value": [NaN]}')
    f["pairwise_surrogate_left.jsonl"] = raw_row(
        '{"worker": "w1", "left": "\\ud800", "right": "b", "preference": "left"}'
    )
    f["pairwise_nul_preference.jsonl"] = raw_row(
        '{"worker": "w1", "left": "a", "right": "b", "preference": "left\\u0000"}'
    )
    f["gold-rating_nul.jsonl"] = raw_row('{"item": "i1", "gold": "3\\u0000"}')
    f["gold-label_surrogate.jsonl"] = raw_row('{"item": "i1", "gold": "\\ud800"}')
    f["gold-multilabel_unknown.jsonl"] = raw_row('{"item": "i1", "gold": ["cat", "bird"]}')
    f["gold-rating_bigint.jsonl"] = raw_row('{"item": "i1", "gold": ' + "9" * 400 + "}")
    return f


LS_TASK = (
    '[\n{{"id": 1, "data": {{"id": "i1"{data}}}, "annotations": [{{"id": 7, "completed_by": 3, '
    '"result": [{{"from_name": "label", "value": {value}}}], "created_at": "{created}"{rest}}}]}}\n]\n'
)
MTURK = "HITId,AssignmentId,WorkerId,SubmitTime,WorkTimeInSeconds,Input.item,Answer.taskAnswers\n"
TOLOKA = (
    "INPUT:item\tOUTPUT:label\tASSIGNMENT:worker_id\tASSIGNMENT:assignment_id\t"
    "ASSIGNMENT:status\tASSIGNMENT:started\tASSIGNMENT:submitted\n"
)
F8 = "_unit_id,_id,_worker_id,_started_at,_created_at,label,label_gold\n"
PROLIFIC = "Submission id,Participant id,Status,Started at,Completed at,Time taken\n"
HUGE = "7" * 5000  # more digits than Python converts to an int


def ls_task(
    value: str = '{"choices": ["a"]}',
    created: str = "2025-11-03T09:12:45Z",
    data: str = "",
    rest: str = "",
) -> str:
    """A Label Studio export of one task with one annotation (its task starts on line 2)."""
    return LS_TASK.format(value=value, created=created, data=data, rest=rest)


def mturk(answers: str, submitted: str = "Mon Nov 03 09:12:45 PST 2025") -> str:
    cell = '"' + answers.replace('"', '""') + '"'
    return MTURK + f"H1,A1,W1,{submitted},41,i1,{cell}\n"


def toloka(label: str, submitted: str = "2025-11-03T09:12:45") -> str:
    return TOLOKA + f"i1\t{label}\tw1\ta1\tACCEPTED\t2025-11-03T09:12:00\t{submitted}\n"


def f8(label: str, created: str = "3/14/2017 10:35:07") -> str:
    cell = '"' + label.replace('"', '""') + '"'
    return F8 + f"u1,j1,w1,3/14/2017 10:34:41,{created},{cell},\n"


def platform_files() -> dict[str, bytes | str]:
    """Platform exports (the format is in the name: _ls_, _mturk_, _toloka_, _f8_, _prolific_)
    that ended in a traceback or were accepted silently (issue 16)."""
    f: dict[str, bytes | str] = {}
    f["labelopen_ls_duplicate_key.json"] = ls_task(value='{"choices": ["a"], "choices": ["b"]}')
    f["labelopen_ls_duplicate_task_key.json"] = ls_task(data=', "id": "i2"')
    f["labelopen_ls_hugeint.json"] = ls_task(data=', "n": ' + HUGE)
    f["labelopen_ls_nan_item.json"] = ls_task().replace('"id": "i1"', '"id": NaN')
    f["labelopen_ls_infinite_item.json"] = ls_task().replace('"id": "i1"', '"id": -1e400')
    f["labelopen_ls_time_past_9999.json"] = ls_task(created="9999-12-31T23:30:00-01:00")
    f["labelopen_ls_time_before_year_1.json"] = ls_task(created="0001-01-01T00:30:00+01:00")
    f["labelopen_ls_lead_time_bigint.json"] = ls_task(rest=', "lead_time": ' + "9" * 400)
    f["labelopen_mturk_duplicate_key.csv"] = mturk('[{"label": "a", "label": "b"}]')
    f["labelopen_mturk_hugeint.csv"] = mturk('[{"label": "a", "n": ' + HUGE + "}]")
    f["labelopen_mturk_time_past_9999.csv"] = mturk(
        '[{"label": "a"}]', submitted="Fri Dec 31 23:30:00 PST 9999"
    )
    f["multilabel_toloka_duplicate_key.tsv"] = toloka('{"cat": true, "cat": false}')
    f["multilabel_toloka_hugeint.tsv"] = toloka('["cat", ' + HUGE + "]")
    f["multilabel_toloka_time_past_9999.tsv"] = toloka(
        '["cat"]', submitted="9999-12-31T23:30:00-01:00"
    )
    f["multilabel_f8_duplicate_key.csv"] = f8('{"cat": true, "cat": false}')
    f["labelopen_f8_hugeint.csv"] = f8('["a", ' + HUGE + "]")
    f["labelopen_f8_time_past_9999.csv"] = f8("a", created="9999-12-31T23:30:00-01:00")
    f["labelopen_f8_year_10000.csv"] = f8("a", created="1/1/10000 00:00:00")
    f["labelopen_prolific_time_past_9999.csv"] = (
        PROLIFIC + "s1,p1,APPROVED,9999-12-31T23:30:00-01:00,,12\n"
    )
    f["labelopen_prolific_duplicate_key.jsonl"] = raw_row(
        '{"worker": "p1", "item": "i1", "value": "a", "value": "b"}'
    )
    f["labelopen_prolific_hugeint.jsonl"] = raw_row(
        '{"worker": "p1", "item": "i1", "value": "a", "n": ' + HUGE + "}"
    )
    return f


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for old in OUT.iterdir():
        old.unlink()
    for name, content in {**csv_files(), **jsonl_files(), **platform_files()}.items():
        data = content.encode("utf-8", "surrogatepass") if isinstance(content, str) else content
        (OUT / name).write_bytes(data)


if __name__ == "__main__":
    main()
