"""Ingestion end to end on both backends: each kind, items, idempotency, --skip-invalid,
atomicity, unicode and long fields, platform exports."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select

from monitor.core.errors import InputError, NotFound, UsageError
from monitor.ingest import api
from monitor.ingest.api import create_campaign, ingest_file, ingest_items
from monitor.ingest.load import Loader
from monitor.store.campaigns import CampaignSpec
from monitor.store.engine import transaction
from monitor.store.models import (
    Campaign,
    IngestBatch,
    Item,
    Judgment,
    JudgmentAnnotation,
    Preference,
    RejectedRow,
    Worker,
    dedup_digest,
)

GOOD = Path(__file__).resolve().parents[1] / "data" / "good"
PLATFORMS = Path(__file__).resolve().parents[1] / "data" / "platforms"


def rating(engine: Engine, name: str = "r") -> None:
    create_campaign(engine, CampaignSpec(name, "rating", scale_min=1, scale_max=5))


def count(engine: Engine, model: type) -> int:
    with engine.connect() as c:
        return int(c.scalar(select(func.count()).select_from(model)) or 0)


def judgments(engine: Engine) -> list[tuple]:
    with engine.connect() as c:
        return c.execute(
            select(
                Worker.external_id,
                Item.external_id,
                Judgment.value_num,
                Judgment.value_label,
                Judgment.external_id,
                Judgment.duration_s,
                Judgment.payload,
            )
            .join(Worker, Worker.id == Judgment.worker_id)
            .join(Item, Item.id == Judgment.item_id)
            .order_by(Judgment.id)
        ).all()


def utc(value: datetime | None) -> datetime | None:
    """SQLite hands back naive UTC times."""
    return value if value is None or value.tzinfo else value.replace(tzinfo=UTC)


def test_ratings_csv_and_jsonl(engine: Engine) -> None:
    rating(engine)
    s = ingest_file(engine, GOOD / "ratings.csv", "r")
    assert (s.format, s.n_rows, s.n_new, s.n_duplicate, s.n_rejected) == ("csv", 4, 4, 0, 0)
    assert s.detected_platform is None
    s = ingest_file(engine, GOOD / "ratings.jsonl", "r")
    assert (s.format, s.n_rows, s.n_new) == ("jsonl", 2, 2)
    assert judgments(engine) == [
        ("w1", "i1", 3.0, None, "j1", 12.5, {"comment": "fine"}),
        ("w2", "i1", 4.0, None, "j2", 7.0, {"comment": ""}),
        ("w1", "i2", 1.5, None, "j3", None, {"comment": "a comment, with a comma"}),
        ("w3", "i2", 5.0, None, None, None, {"comment": ""}),
        ("w1", "i3", 2.0, None, None, None, None),
        ("w2", "i3", 4.5, None, None, 3.0, {"source": {"tool": "x"}}),
    ]
    with engine.connect() as c:
        times = [utc(t) for t in c.scalars(select(Judgment.created_at).order_by(Judgment.id))]
        keys = list(c.scalars(select(Judgment.dedup_key).order_by(Judgment.id)))
    assert times[:3] == [
        datetime(2025, 11, 3, 8, 12, 45, tzinfo=UTC),  # +01:00 stored as UTC
        datetime(2025, 11, 3, 9, 13, tzinfo=UTC),
        datetime(2025, 11, 3, 10, 0, tzinfo=UTC),  # naive means UTC
    ]
    # Stored as digests of "id:<judgment_id>" or, without an id, of "sha256:<hash of the row>".
    assert keys[:3] == [dedup_digest("id:j1"), dedup_digest("id:j2"), dedup_digest("id:j3")]
    assert len(keys[3]) == 16
    assert len(set(keys)) == 6


def test_labels_take_categories_from_the_data(engine: Engine) -> None:
    create_campaign(engine, CampaignSpec("l", "label"))
    s = ingest_file(engine, GOOD / "labels.csv", "l")
    assert s.notes == ["categories taken from the data: neg, pos"]
    ingest_file(engine, GOOD / "labels_more.csv", "l")
    with engine.connect() as c:
        campaign = c.execute(select(Campaign.categories, Campaign.settings)).one()
        labels = list(c.scalars(select(Judgment.value_label).order_by(Judgment.id)))
    assert campaign.categories == ["neg", "pos", "neutral"]  # known codes keep their place
    assert campaign.settings == {"categories_from_data": True}
    assert labels == ["pos", "neg", "pos", "neutral", "pos"]
    assert {r[2] for r in judgments(engine)} == {None}


def test_closed_label_campaign_keeps_its_categories(engine: Engine) -> None:
    create_campaign(engine, CampaignSpec("l", "label", categories=("pos", "neg")))
    assert ingest_file(engine, GOOD / "labels.csv", "l").notes == []
    with pytest.raises(InputError, match="unknown category 'neutral'"):
        ingest_file(engine, GOOD / "labels_more.csv", "l")


def test_multilabel_annotations_with_counts(engine: Engine) -> None:
    create_campaign(engine, CampaignSpec("m", "multilabel", open=True))
    assert ingest_file(engine, GOOD / "multilabel.csv", "m").n_new == 3
    assert ingest_file(engine, GOOD / "multilabel.jsonl", "m").n_new == 2
    with engine.connect() as c:
        rows = c.execute(
            select(
                JudgmentAnnotation.judgment_id,
                JudgmentAnnotation.annotation,
                JudgmentAnnotation.count,
            ).order_by(JudgmentAnnotation.judgment_id, JudgmentAnnotation.annotation)
        ).all()
        ids = list(c.scalars(select(Judgment.id).order_by(Judgment.id)))
    first = ids[0]
    assert [(j - first, a, n) for j, a, n in rows] == [
        (0, "cat", 1), (0, "dog", 1),
        (1, "dog", 1),
        (2, "bird", 1), (2, "cat", 2),
        (ids[3] - first, "cat", 1), (ids[3] - first, "dog", 1),
        (ids[4] - first, "dog", 2),
    ]  # fmt: skip
    assert {r[2:4] for r in judgments(engine)} == {(None, None)}
    # re-ingest adds no annotation
    assert ingest_file(engine, GOOD / "multilabel.csv", "m").n_new == 0
    assert count(engine, JudgmentAnnotation) == 8


def test_pairwise_preferences(engine: Engine) -> None:
    create_campaign(engine, CampaignSpec("p", "pairwise"))
    assert ingest_file(engine, GOOD / "pairwise.csv", "p").n_new == 4
    assert ingest_file(engine, GOOD / "pairwise.jsonl", "p").n_new == 1
    with engine.connect() as c:
        left, right = Item.__table__.alias("l"), Item.__table__.alias("r")
        rows = c.execute(
            select(Worker.external_id, left.c.external_id, right.c.external_id, Preference.outcome)
            .join(Worker, Worker.id == Preference.worker_id)
            .join(left, left.c.id == Preference.left_item_id)
            .join(right, right.c.id == Preference.right_item_id)
            .order_by(Preference.id)
        ).all()
    assert rows == [
        ("w1", "a", "b", "left"),
        ("w1", "b", "c", "right"),
        ("w1", "a", "c", "tie"),
        ("w2", "a", "b", "right"),
        ("w2", "b", "c", "tie"),
    ]
    assert count(engine, Item) == 3
    assert count(engine, Judgment) == 0


def test_items_file_gold_and_text(engine: Engine) -> None:
    rating(engine)
    s = ingest_file(engine, GOOD / "ratings.csv", "r", items=GOOD / "items.csv")
    assert s.n_items == 2
    assert ingest_items(engine, GOOD / "items.jsonl", "r") == 1
    # an items file without a gold keeps the stored one
    assert ingest_items(engine, GOOD / "items.csv", "r") == 2
    with engine.connect() as c:
        rows = c.execute(
            select(Item.external_id, Item.gold, Item.text).order_by(Item.external_id)
        ).all()
    assert rows == [
        ("i1", "3", "The first document"),
        ("i2", None, "Zweites Dokument, mit Komma"),
        ("i3", "4.5", "third"),
    ]


def test_bad_gold_is_refused(engine: Engine, tmp_path: Path) -> None:
    rating(engine)
    path = tmp_path / "items.csv"
    path.write_text("item,gold\ni1,9\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        ingest_items(engine, path, "r")
    assert str(info.value) == (
        f"{path}:2: column 'gold': expected a number in 1..5, got '9' (outside the campaign's scale)"
    )
    assert count(engine, Item) == 0


def test_reingest_and_overlap_store_nothing_twice(engine: Engine, tmp_path: Path) -> None:
    rating(engine)
    first = ingest_file(engine, GOOD / "ratings.csv", "r")
    again = ingest_file(engine, GOOD / "ratings.csv", "r")
    assert (again.n_rows, again.n_new, again.n_duplicate) == (4, 0, 4)
    assert again.notes == [f"the same file was ingested before (batch {first.batch_id})"]
    overlap = tmp_path / "overlap.csv"
    overlap.write_text(
        "worker,item,value,judgment_id\n"
        "w1,i1,5,j1\n"  # same id, other content: the id wins, a duplicate
        "w3,i2,5,\n"  # same canonical row as the first file's, without an id
        "w9,i9,2,\n",  # new
        encoding="utf-8",
    )
    s = ingest_file(engine, overlap, "r")
    assert (s.n_rows, s.n_new, s.n_duplicate, s.n_rejected) == (3, 1, 2, 0)
    assert count(engine, Judgment) == 5
    with engine.connect() as c:
        batches = c.execute(
            select(
                IngestBatch.n_rows, IngestBatch.n_new, IngestBatch.n_duplicate, IngestBatch.checksum
            ).order_by(IngestBatch.id)
        ).all()
    assert [b[:3] for b in batches] == [(4, 4, 0), (4, 0, 4), (3, 1, 2)]
    assert batches[0].checksum == batches[1].checksum == api.file_checksum(GOOD / "ratings.csv")


def test_identical_rows_without_ids_are_one_judgment(engine: Engine, tmp_path: Path) -> None:
    rating(engine)
    path = tmp_path / "twice.csv"
    path.write_text("worker,item,value\nw1,i1,3\nw1,i1,3.0\nw1,i1,4\n", encoding="utf-8")
    s = ingest_file(engine, path, "r")
    assert (s.n_rows, s.n_new, s.n_duplicate) == (3, 2, 1)


def test_skip_invalid_accounts_for_every_row(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(api, "CHUNK_SIZE", 3)
    rating(engine)
    ingest_file(engine, GOOD / "ratings.csv", "r")
    path = tmp_path / "mixed.csv"
    path.write_text(
        "worker,item,value,judgment_id\n"
        "w1,i1,3,j1\n"  # duplicate of the first file
        "w1,i5,six,\n"  # rejected
        "w2,i5,2,\n"  # new
        "w2,i5,2,\n"  # duplicate within the file
        "w3,i5,2,x,y\n"  # rejected: too many fields
        "w4,i5,5,j9\n",  # new
        encoding="utf-8",
    )
    s = ingest_file(engine, path, "r", skip_invalid=True)
    assert (s.n_rows, s.n_new, s.n_duplicate, s.n_rejected) == (6, 2, 2, 2)
    assert s.n_new + s.n_duplicate + s.n_rejected == s.n_rows
    with engine.connect() as c:
        rejected = c.execute(
            select(
                RejectedRow.batch_id, RejectedRow.line, RejectedRow.raw, RejectedRow.reasons
            ).order_by(RejectedRow.line)
        ).all()
        batch = c.execute(
            select(
                IngestBatch.n_rows,
                IngestBatch.n_new,
                IngestBatch.n_duplicate,
                IngestBatch.n_rejected,
            ).where(IngestBatch.id == s.batch_id)
        ).one()
    assert tuple(batch) == (6, 2, 2, 2)
    assert [(r.batch_id, r.line) for r in rejected] == [(s.batch_id, 3), (s.batch_id, 6)]
    assert rejected[0].reasons == [
        f"{path}:3: column 'value': expected a number in 1..5, got 'six'"
    ]
    assert '"value": "six"' in rejected[0].raw
    assert rejected[1].raw == "w3,i5,2,x,y"
    assert count(engine, Judgment) == 6


def test_bad_row_in_a_late_chunk_writes_nothing(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(api, "CHUNK_SIZE", 2)
    rating(engine)
    path = tmp_path / "late.csv"
    path.write_text(
        "worker,item,value\n" + "".join(f"w{k},i{k},3\n" for k in range(7)) + "w7,i7,0\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError, match=r"late.csv:9: column 'value'"):
        ingest_file(engine, path, "r")
    for model in (Judgment, Worker, Item, IngestBatch):
        assert count(engine, model) == 0


def test_crash_after_the_first_chunk_leaves_the_database_as_before(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    rating(engine)
    monkeypatch.setattr(api, "CHUNK_SIZE", 2)
    original = Loader.load
    calls = []

    def failing(self: Loader, records):  # noqa: ANN001, ANN202
        calls.append(len(records))
        if len(calls) > 1:
            raise KeyboardInterrupt  # Ctrl-C mid-way
        return original(self, records)

    monkeypatch.setattr(Loader, "load", failing)
    with pytest.raises(KeyboardInterrupt):
        ingest_file(engine, GOOD / "ratings.csv", "r", items=GOOD / "items.csv")
    assert calls == [2, 2]
    for model in (Judgment, Worker, Item, IngestBatch):
        assert count(engine, model) == 0
    monkeypatch.setattr(Loader, "load", original)
    assert ingest_file(engine, GOOD / "ratings.csv", "r").n_new == 4  # and it still works


def test_unicode_and_very_long_fields(engine: Engine, tmp_path: Path) -> None:
    rating(engine)
    s = ingest_file(engine, GOOD / "unicode.csv", "r")
    assert (s.n_rows, s.n_new) == (2, 2)
    rows = judgments(engine)
    assert [(r[0], r[1], r[6]) for r in rows] == [
        ("ワーカー1", "éclair 🍰", {"comment": "«ça va» — 日本語"}),
        ("työntekijä", "éclair 🍰", {"comment": "multi\nline"}),
    ]
    long_text = "ü" * 300_000
    path = tmp_path / "long.csv"
    path.write_text(
        f'worker,item,value,comment\n{"w" * 255},{"é" * 255},4,"{long_text}"\n', encoding="utf-8"
    )
    items = tmp_path / "items.jsonl"
    items.write_text(f'{{"item": "{"é" * 255}", "text": "{long_text}"}}\n', encoding="utf-8")
    assert ingest_file(engine, path, "r", items=items).n_new == 1
    with engine.connect() as c:
        payload = c.scalar(select(Judgment.payload).order_by(Judgment.id.desc()).limit(1))
        text = c.scalar(select(Item.text).where(Item.external_id == "é" * 255))
    assert payload == {"comment": long_text}
    assert text == long_text


def test_mapping_renames_columns(engine: Engine, tmp_path: Path) -> None:
    rating(engine)
    path = tmp_path / "answers.csv"
    path.write_text("PID,doc,score\np1,d1,2\n", encoding="utf-8")
    s = ingest_file(engine, path, "r", mapping={"worker": "PID", "item": "doc", "value": "score"})
    assert s.n_new == 1
    assert judgments(engine)[0][:3] == ("p1", "d1", 2.0)
    with pytest.raises(UsageError, match="--map answer: not a column of a rating campaign"):
        ingest_file(engine, path, "r", mapping={"answer": "score"})
    with pytest.raises(UsageError, match="--option is for platform formats"):
        ingest_file(engine, path, "r", options={"keep_rejected": "true"})


def test_platform_export_is_detected(engine: Engine) -> None:
    rating(engine)
    s = ingest_file(
        engine, PLATFORMS / "mturk_batch.csv", "r", mapping={"value": "relevance", "item": "doc_id"}
    )
    assert (s.format, s.detected_platform) == ("mturk", "mturk")
    assert s.n_new > 0
    assert s.n_rejected == 0
    with engine.connect() as c:
        key = c.scalar(select(Judgment.dedup_key).order_by(Judgment.id).limit(1))
    assert key == dedup_digest("id:3A9AA95ATWLQ8")


def test_prolific_statuses_go_to_worker_platform(engine: Engine) -> None:
    rating(engine)
    s = ingest_file(engine, PLATFORMS / "prolific_export.csv", "r")
    assert s.detected_platform == "prolific"
    assert s.n_rows == 0
    assert s.notes[-1].endswith("worker rows (platform statuses) stored")
    with engine.connect() as c:
        platform = c.scalar(
            select(Worker.platform).where(Worker.external_id == "5f1e2d3c4b5a69788796a5b4")
        )
    assert platform["status"] == "approved"
    assert platform["duration_s"] == 870


def test_unknown_campaign_file_and_format(engine: Engine, tmp_path: Path) -> None:
    rating(engine)
    with pytest.raises(NotFound, match="no campaign named 'nope'"):
        ingest_file(engine, GOOD / "ratings.csv", "nope")
    with pytest.raises(NotFound, match="no such file"):
        ingest_file(engine, tmp_path / "missing.csv", "r")
    odd = tmp_path / "data.txt"
    odd.write_text("a few words\nw1 i1 3\n", encoding="utf-8")
    with pytest.raises(UsageError, match="cannot tell the format"):
        ingest_file(engine, odd, "r")
    odd.write_text("worker,item,value\nw1,i1,3\n", encoding="utf-8")  # its header tells
    assert ingest_file(engine, odd, "r").n_new == 1
    with transaction(engine) as s:
        assert s.scalar(select(func.count()).select_from(Judgment)) == 1


def test_a_large_load_refreshes_the_planner_statistics(engine: Engine, tmp_path: Path) -> None:
    """PostgreSQL: after a load of STATISTICS_AFTER rows or more (and a tenth of the table) the
    planner knows the table's size; a small load after it does not analyse again."""
    from sqlalchemy import text

    from monitor.store.campaigns import STATISTICS_AFTER

    if engine.dialect.name != "postgresql":
        pytest.skip("planner statistics are PostgreSQL's")
    rating(engine)
    n = STATISTICS_AFTER
    path = tmp_path / "big.csv"
    path.write_text(
        "worker,item,value\n" + "".join(f"w{k % 50},i{k // 5},{k % 5 + 1}\n" for k in range(n))
    )

    def analysed() -> float:
        with engine.connect() as c:
            return float(
                c.scalar(text("SELECT reltuples FROM pg_class WHERE oid = 'judgments'::regclass"))
            )

    ingest_file(engine, path, "r")
    assert analysed() == n
    small = tmp_path / "small.csv"
    small.write_text("worker,item,value\nw1,new,3\n")
    ingest_file(engine, small, "r")
    assert analysed() == n  # not analysed again (it would count n + 1)
