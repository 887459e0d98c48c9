"""MTurk batch results: mapping, rejected assignments, crowd-form JSON, exact error messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.core.errors import InputError
from monitor.ingest.platforms import READERS
from monitor.ingest.rows import SourceRow

DATA = Path(__file__).resolve().parents[1] / "data" / "platforms"
read = READERS["mturk"]


def error_of(path: Path, **kwargs: object) -> str:
    with pytest.raises(InputError) as info:
        list(read(path, **kwargs))  # type: ignore[arg-type]
    return str(info.value)


def test_batch_maps_assignments_and_skips_rejected() -> None:
    path = DATA / "mturk_batch.csv"
    rows = list(read(path, kind="rating", mapping={"value": "relevance", "item": "doc_id"}))
    assert rows == [
        SourceRow(
            2,
            {
                "worker": "A1B2C3D4E5F6G7", "item": "doc-17", "value": "4",
                "judgment_id": "3A9AA95ATWLQ8", "created_at": "2025-11-03T17:12:45Z",
                "duration_s": 163,
            },
            extra={"hit_id": "3KQ7H2RWDAX1", "assignment_status": "Approved"},
        ),
        # The comment of this assignment holds a quoted line break: the record spans 3-4.
        SourceRow(
            3,
            {
                "worker": "A9Z8Y7X6W5V4U3", "item": "doc-17", "value": "5",
                "judgment_id": "3B1CC07BUXMR2", "created_at": "2025-11-03T17:20:07Z",
                "duration_s": 7,
            },
            extra={"hit_id": "3KQ7H2RWDAX1", "assignment_status": "Submitted"},
        ),
        # Line 5 is the rejected assignment, skipped. PDT is UTC-7.
        SourceRow(
            6,
            {
                "worker": "A1B2C3D4E5F6G7", "item": "doc-42", "value": "2",
                "judgment_id": "3D5EE29DWZOT4", "created_at": "2025-11-01T07:02:30Z",
                "duration_s": 90,
            },
            extra={"hit_id": "3LZ0YQ2M4EH6", "assignment_status": "Approved"},
        ),
    ]  # fmt: skip


def test_keep_rejected_and_text_items() -> None:
    rows = list(
        read(
            DATA / "mturk_batch.csv",
            kind="label",
            mapping={"value": "Answer.comment", "item": "Input.doc_id", "text": "text"},
            options={"keep_rejected": "true"},
        )
    )
    items = [(r.line, r.fields) for r in rows if r.table == "item"]
    assert items == [
        (2, {"item": "doc-17", "text": "Cheap flights to Lisbon"}),
        (6, {"item": "doc-42", "text": "Lisbon weather in March"}),
    ]
    judgments = [r for r in rows if r.table == "judgment"]
    assert [r.line for r in judgments] == [2, 3, 5, 6]
    assert judgments[1].fields["value"] == "The page lists fares,\nbut only for March."
    assert judgments[2].extra["assignment_status"] == "Rejected"
    assert judgments[3].fields["value"] == 'Mostly about the weather, "not" flights.'


def test_default_item_is_hit_id_without_an_item_input() -> None:
    first = next(read(DATA / "mturk_bad_time.csv", kind="rating"))
    assert first.fields["item"] == "3BT000000001"
    assert first.fields["value"] == "3"  # the only Answer.* column is the default


def test_crowd_form_radio_group() -> None:
    rows = list(read(DATA / "mturk_crowd_form.csv", kind="label", mapping={"value": "sentiment"}))
    assert [(r.line, r.fields["worker"], r.fields["value"]) for r in rows] == [
        (2, "A3PETS0001AAAA", "positive"),
        (3, "A3PETS0002BBBB", "neutral"),
        (4, "A3PETS0001AAAA", "negative"),
    ]
    assert rows[0].fields["item"] == "3PA1W6R0BAT1"
    assert rows[1].fields["created_at"] == "2025-11-04T18:05:12Z"


def test_crowd_form_checkbox_group() -> None:
    rows = read(
        DATA / "mturk_crowd_form.csv",
        kind="multilabel",
        mapping={"value": "Answer.topic_*", "item": "image_url"},
    )
    assert [(r.fields["item"], r.fields["value"]) for r in rows] == [
        ("https://img.example.org/p/1001.jpg", ["cat", "dog"]),
        ("https://img.example.org/p/1001.jpg", ["cat"]),
        ("https://img.example.org/p/1002.jpg", ["bird"]),
    ]


def test_crowd_form_needs_a_choice_among_several_answers() -> None:
    path = DATA / "mturk_crowd_form.csv"
    assert error_of(path, kind="label") == (
        f"{path}:2: column 'Answer.taskAnswers': several answers: comment, sentiment,"
        " topic_bird, topic_cat, topic_dog (choose one with --map value=NAME)"
    )
    assert error_of(path, kind="label", mapping={"value": "mood"}) == (
        f"{path}:2: column 'Answer.taskAnswers': no answer 'mood' (answers here: comment,"
        " sentiment, topic_bird, topic_cat, topic_dog)"
    )


def test_crowd_form_single_answer_and_checkbox_defaults(tmp_path: Path) -> None:
    path = tmp_path / "b.csv"
    path.write_text(
        "HITId,AssignmentId,WorkerId,AssignmentStatus,Answer.taskAnswers\n"
        'H1,A1,W1,Submitted,"[{""relevance"":{""1"":false,""3"":true}}]"\n'
        'H1,A2,W2,Submitted,"[{""relevance"":{""1"":true,""3"":false}}]"\n',
        encoding="utf-8",
    )
    assert [r.fields["value"] for r in read(path, kind="rating")] == ["3", "1"]
    path.write_text(
        "HITId,AssignmentId,WorkerId,AssignmentStatus,Answer.taskAnswers\n"
        'H1,A1,W1,Submitted,"[{""cat"":{""on"":true},""dog"":{""on"":true}}]"\n'
        'H1,A2,W2,Submitted,"[{""cat"":{""on"":false},""dog"":{""on"":false}}]"\n'
        'H1,A3,W3,Submitted,"[{""cat"":{""on"":true},""dog"":{""on"":true}}]"\n',
        encoding="utf-8",
    )
    assert [r.fields["value"] for r in read(path, kind="multilabel")] == [
        ["cat", "dog"],
        [],
        ["cat", "dog"],
    ]
    assert error_of(path, kind="label") == (
        f"{path}:2: column 'Answer.taskAnswers': several options chosen (cat, dog) where one"
        " answer is expected (a multi-label campaign takes sets of answers)"
    )


def test_classic_checkbox_columns(tmp_path: Path) -> None:
    path = tmp_path / "c.csv"
    path.write_text(
        "HITId,AssignmentId,WorkerId,Input.id,Answer.tag_cat,Answer.tag_dog,Answer.notes\n"
        "H1,A1,W1,img-1,on,,\n"
        "H1,A2,W2,img-1,true,false,\n"
        "H1,A3,W3,img-1,,,\n",
        encoding="utf-8",
    )
    rows = list(read(path, kind="multilabel", mapping={"value": "tag_*"}))
    assert [(r.fields["item"], r.fields["value"]) for r in rows] == [
        ("img-1", ["cat"]),
        ("img-1", ["cat"]),
        ("img-1", []),
    ]


def test_pairwise_encoding() -> None:
    path = DATA / "mturk_pairwise.csv"
    mapping = {"left": "left_id", "right": "Input.right_id", "pairwise": "left=A,right=B,tie=same"}
    rows = read(path, kind="pairwise", mapping=mapping)
    first = next(rows)
    assert first.fields == {
        "worker": "A1PAIR00000001", "left": "sys-a/17", "right": "sys-b/17",
        "preference": "left", "judgment_id": "3PWA00000001",
        "created_at": "2025-11-05T22:00:20Z", "duration_s": 20,
    }  # fmt: skip
    assert [next(rows).fields["preference"] for _ in range(2)] == ["tie", "right"]
    with pytest.raises(InputError) as info:
        next(rows)
    assert str(info.value) == (
        f"{path}:5: column 'Answer.better': cannot read 'both good' as a preference (known"
        " answers: a, b, left, right, same, tie; set the encoding with"
        " --map pairwise=left=A,right=B,tie=C)"
    )


def test_pairwise_default_columns_missing() -> None:
    path = DATA / "mturk_pairwise.csv"
    assert error_of(path, kind="pairwise") == (
        f"{path}:1: column 'Input.left': not in the header (columns: Input.left_id,"
        " Input.right_id; choose one with --map left=COLUMN)"
    )


def test_header_errors() -> None:
    batch = DATA / "mturk_batch.csv"
    assert error_of(batch, kind="rating") == (
        f"{batch}:1: several answer columns: Answer.relevance, Answer.comment"
        " (choose one with --map value=COLUMN)"
    )
    assert error_of(batch, kind="rating", mapping={"value": "score"}) == (
        f"{batch}:1: column 'score': not in the header (columns: Answer.relevance,"
        " Answer.comment; choose one with --map value=COLUMN)"
    )
    assert error_of(batch, kind="rating", mapping={"value": "relevance", "item": "doc"}) == (
        f"{batch}:1: column 'doc': not in the header (columns: Input.doc_id, Input.text,"
        " HITId; choose one with --map item=COLUMN)"
    )
    no_worker = DATA / "mturk_no_worker.csv"
    assert error_of(no_worker, kind="rating") == (
        f"{no_worker}:1: column 'WorkerId': not in the header (expected an MTurk batch"
        " results CSV (HITId, AssignmentId, WorkerId, ...))"
    )


def test_unreadable_timestamp() -> None:
    path = DATA / "mturk_bad_time.csv"
    rows = read(path, kind="rating")
    assert next(rows).fields["created_at"] == "2025-11-03T17:12:45Z"
    with pytest.raises(InputError) as info:
        next(rows)
    assert str(info.value) == (
        f"{path}:3: column 'SubmitTime': cannot read '03/11/2025 09:14' as a time"
        " (expected MTurk's format like 'Mon Nov 03 09:12:45 PST 2025')"
    )


def test_row_problems(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    head = "HITId,AssignmentId,WorkerId,WorkTimeInSeconds,Answer.x\n"
    path.write_text(head + "H1,A1,,5,3\n", encoding="utf-8")
    assert error_of(path, kind="rating") == f"{path}:2: column 'WorkerId': empty worker id"
    path.write_text(head + "\nH1,A1,W1,five,3\n", encoding="utf-8")
    assert error_of(path, kind="rating") == (
        f"{path}:3: column 'WorkTimeInSeconds': cannot read 'five' as seconds"
        " (expected a number like 93)"
    )
    path.write_text(head + "H1,A1,W1,5,3,extra\n", encoding="utf-8")
    assert error_of(path, kind="rating") == (
        f"{path}:2: 6 fields where the header has 5 (a value holding the separator or a line"
        " break must be quoted)"
    )
    path.write_text(
        "HITId,AssignmentId,WorkerId,Answer.taskAnswers\nH1,A1,W1,\"[{'x': 1}]\"\n",
        encoding="utf-8",
    )
    assert error_of(path, kind="rating") == (
        f"{path}:2: column 'Answer.taskAnswers': not valid JSON: Expecting property name"
        " enclosed in double quotes"
    )
    path.write_bytes(b"")
    assert (
        error_of(path, kind="rating") == f"{path}:1: no header row (export the file with headers)"
    )


def test_crlf_and_quoted_line_breaks_keep_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "crlf.csv"
    path.write_bytes(
        b"HITId,AssignmentId,WorkerId,Input.id,Answer.note\r\n"
        b'H1,A1,W1,i1,"one\r\ntwo\r\nthree"\r\n'
        b"\r\n"
        b"H1,A2,W2,i1,plain\r\n"
    )
    rows = list(read(path, kind="label"))
    assert [(r.line, r.fields["value"]) for r in rows] == [(2, "one\r\ntwo\r\nthree"), (6, "plain")]


MULTI = {"item": "Input.id{n}", "value": "Answer.q{n}", "text": "text{n}"}


def test_several_questions_per_hit_with_one_mapping() -> None:
    rows = read(DATA / "mturk_multi_question.csv", kind="label", mapping=MULTI)
    listed = list(rows)
    judgments = [r for r in listed if r.table == "judgment"]
    # 3 + 2 (q2 left blank) + 2 (the last HIT has two items: slot 3 empty) judgments.
    assert [(r.line, r.fields["item"], r.fields["value"]) for r in judgments] == [
        (2, "t-101", "positive"), (2, "t-102", "negative"), (2, "t-103", "neutral"),
        (3, "t-101", "positive"), (3, "t-103", "neutral"),
        (4, "t-104", "positive"), (4, "t-105", "negative"),
    ]  # fmt: skip
    first = judgments[0]
    assert first.fields == {
        "worker": "A2W3H1KJ0T1HYU", "item": "t-101", "value": "positive",
        "judgment_id": "3A1PQ49WVHHAPEL2WUZ7ZA0J3F2H9D/1",
        "created_at": "2017-03-14T17:32:30Z", "duration_s": 30,
    }  # fmt: skip
    assert first.extra == {
        "hit_id": "3YKP7CX6G2CW",
        "assignment_status": "Approved",
        "question": "1",
    }
    # 45 s shared by the two answered questions of line 3.
    assert [r.fields["duration_s"] for r in judgments[3:5]] == [22.5, 22.5]
    assert judgments[4].fields["judgment_id"] == "3B2QR5A0XWIIBQFM3XVA8B1K4G3I0E/3"
    texts = [r.fields for r in listed if r.table == "item"]
    assert texts[0] == {"item": "t-101", "text": "Loving the new update!"}
    assert len(texts) == 5
    assert rows.notes == ["1 unanswered questions skipped (blank answer cells)"]


def test_several_questions_mismatched_numbers(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    path.write_text(
        "HITId,AssignmentId,WorkerId,Input.item1,Input.item2,Input.item3,Answer.q1,Answer.q2\n"
        "H,A,W,a,b,c,1,2\n",
        encoding="utf-8",
    )
    mapping = {"item": "item{n}", "value": "q{n}"}
    assert error_of(path, kind="rating", mapping=mapping) == (
        f"{path}:1: 'item{{n}}' and 'q{{n}}' do not have the same numbers"
        " (n only in item{n}: 3; n only in q{n}: none)"
    )
    assert error_of(path, kind="rating", mapping={"value": "score{n}"}) == (
        f"{path}:1: column 'score{{n}}': no column in the header matches"
        " ({n} stands for a number: e.g. --map value=Input.item{n})"
    )
    path.write_text(
        "HITId,AssignmentId,WorkerId,Input.item1,Input.item2,Answer.q1,Answer.q2\nH,A,W,a,,1,2\n",
        encoding="utf-8",
    )
    assert error_of(path, kind="rating", mapping=mapping) == (
        f"{path}:2: column 'Input.item2': an answer in Answer.q2 but no item (is the HIT complete?)"
    )


def test_bounding_boxes_are_refused_not_turned_into_labels() -> None:
    path = DATA / "mturk_bounding_boxes.csv"
    message = error_of(path, kind="multilabel", mapping={"value": "annotatedResult.boundingBoxes"})
    assert message == (
        f"{path}:2: column 'Answer.annotatedResult.boundingBoxes': a JSON object is not a label:"
        ' {"height": 120, "label": "car", "left": 33, "top": 54, "w...'
        " (this answer holds structured annotations (bounding boxes, spans, ...);"
        " map a column of labels, numbers or choices)"
    )
    message = error_of(path, kind="label", mapping={"value": "annotatedResult.boundingBoxes"})
    assert "a JSON object is not a label" in message
