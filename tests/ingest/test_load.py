"""The bulk loader: duplicates across chunks, the Bloom filter of a fresh campaign, the ingest
lock, the multilabel and pairwise copies, on both backends where they apply."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import Engine, func, select, text
from sqlalchemy.pool import StaticPool

from monitor.core.errors import InputError
from monitor.ingest import api
from monitor.ingest.api import create_campaign, ingest_file
from monitor.ingest.bloom import SeenKeys
from monitor.ingest.load import INGEST_LOCK_CLASS, Loader
from monitor.ingest.staging import BULK_CACHE_KIB, SQLITE_TIME_SQL, epoch_microseconds, sqlite_time
from monitor.store.campaigns import CampaignSpec
from monitor.store.engine import make_engine
from monitor.store.migrate import upgrade
from monitor.store.models import Judgment, JudgmentAnnotation, Preference, dedup_digest
from tests.conftest import _truncate


def _count(engine: Engine, model: type) -> int:
    with engine.connect() as c:
        return int(c.scalar(select(func.count()).select_from(model)) or 0)


def test_seen_keys_never_miss_a_key_seen_before() -> None:
    seen = SeenKeys()
    first = [os.urandom(16) for _ in range(5000)]
    assert not seen.add(first).any()
    again = first[::7] + [os.urandom(16) for _ in range(5000)]
    maybe = seen.add(again)
    assert maybe[: len(first[::7])].all()
    assert maybe[len(first[::7]) :].sum() <= 2  # false positives: rare at this size
    assert seen.add([]).shape == (0,)


@pytest.mark.parametrize("fresh", [True, False])
def test_duplicates_in_later_chunks_are_found(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh: bool
) -> None:
    """A row repeated three chunks later is a duplicate, in a fresh campaign (no lookup but
    for the filter's "maybe") and in one with judgments already (a lookup per chunk)."""
    monkeypatch.setattr(api, "CHUNK_SIZE", 2)
    create_campaign(engine, CampaignSpec("r", "rating", scale_min=1, scale_max=5))
    if not fresh:
        old = tmp_path / "old.csv"
        old.write_text("worker,item,value\nw0,i0,1\n", encoding="utf-8")
        assert ingest_file(engine, old, "r").n_new == 1
    path = tmp_path / "repeats.csv"
    rows = [f"w{k},i{k},3" for k in range(6)]
    rows += [rows[0], rows[3], "w0,i0,1", "w9,i9,2", rows[5]]
    path.write_text("worker,item,value\n" + "\n".join(rows) + "\n", encoding="utf-8")
    s = ingest_file(engine, path, "r")
    # "w0,i0,1" is new in a fresh campaign, stored already in the other.
    assert (s.n_rows, s.n_new, s.n_duplicate) == ((11, 8, 3) if fresh else (11, 7, 4))
    assert _count(engine, Judgment) == 8
    assert ingest_file(engine, path, "r").n_new == 0


def test_multilabel_and_pairwise_copies(engine: Engine, tmp_path: Path) -> None:
    create_campaign(engine, CampaignSpec("m", "multilabel", categories=["a", "b", "c"]))
    path = tmp_path / "m.csv"
    path.write_text("worker,item,value\nw1,i1,a|b\nw2,i1,c\nw1,i1,a|b\n", encoding="utf-8")
    s = ingest_file(engine, path, "m")
    assert (s.n_new, s.n_duplicate) == (2, 1)
    with engine.connect() as c:
        pairs = c.execute(
            select(Judgment.id, JudgmentAnnotation.annotation)
            .join(JudgmentAnnotation, JudgmentAnnotation.judgment_id == Judgment.id)
            .order_by(Judgment.id, JudgmentAnnotation.annotation)
        ).all()
    first = pairs[0][0]
    assert [(j - first, a) for j, a in pairs] == [(0, "a"), (0, "b"), (1, "c")]

    create_campaign(engine, CampaignSpec("p", "pairwise"))
    path = tmp_path / "p.csv"
    path.write_text(
        "worker,left,right,preference,judgment_id\nw1,x,y,left,1\nw1,y,z,tie,2\nw1,x,y,left,1\n",
        encoding="utf-8",
    )
    s = ingest_file(engine, path, "p")
    assert (s.n_new, s.n_duplicate) == (2, 1)
    with engine.connect() as c:
        keys = c.scalars(select(Preference.dedup_key).order_by(Preference.id)).all()
    assert keys == [dedup_digest("id:1"), dedup_digest("id:2")]


@pytest.fixture
def pg_engine(pg_head_url: str) -> Iterator[Engine]:
    """The PostgreSQL database at head (advisory locks are PostgreSQL's), emptied after."""
    engine = make_engine(pg_head_url)
    yield engine
    _truncate(engine)
    engine.dispose()


@pytest.mark.postgres
def test_ingest_holds_the_campaign_lock_until_commit(
    pg_engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = pg_engine
    create_campaign(engine, CampaignSpec("r", "rating", scale_min=1, scale_max=5))
    original = Loader.load
    held: list[int] = []

    def spying(self: Loader, records):  # noqa: ANN001, ANN202
        with engine.connect() as other:
            held.append(
                int(
                    other.scalar(
                        text(
                            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
                            " AND granted AND classid::bigint = :k1 AND objid::bigint = :k2"
                            " AND database = (SELECT oid FROM pg_database"
                            " WHERE datname = current_database())"  # not another database's
                        ),
                        {"k1": INGEST_LOCK_CLASS, "k2": self.campaign.id},
                    )
                )
            )
            # Another ingest into the campaign would wait: the lock is not free.
            free = other.scalar(
                text("SELECT pg_try_advisory_xact_lock(:k1, :k2)"),
                {"k1": INGEST_LOCK_CLASS, "k2": self.campaign.id},
            )
            held.append(int(bool(free)))
            other.rollback()
        return original(self, records)

    monkeypatch.setattr(Loader, "load", spying)
    path = tmp_path / "r.csv"
    path.write_text("worker,item,value\nw1,i1,3\n", encoding="utf-8")
    assert ingest_file(engine, path, "r").n_new == 1
    assert held == [1, 0]
    with engine.connect() as other:  # released at commit
        assert other.scalar(
            text("SELECT pg_try_advisory_xact_lock(:k1, 1)"), {"k1": INGEST_LOCK_CLASS}
        )


@given(
    moment=st.datetimes(timezones=st.none() | st.timezones()),
)
def test_sqlite_time_is_what_the_column_type_binds(moment: datetime) -> None:
    """The SQLite loader binds times itself: the same text SQLAlchemy's column type binds."""
    from sqlalchemy.dialects import sqlite

    if moment.utcoffset() and not datetime.min.replace(tzinfo=UTC) + timedelta(
        days=1
    ) < moment < datetime.max.replace(tzinfo=UTC) - timedelta(days=1):
        return  # out of range once in UTC
    bind = Judgment.__table__.c.created_at.type._cached_bind_processor(sqlite.dialect())
    assert bind is not None
    assert sqlite_time(moment) == bind(moment)
    assert sqlite_time(None) is None


@given(
    moment=st.datetimes(timezones=st.none() | st.timezones()),
)
def test_staged_times_become_the_text_the_column_type_binds(moment: datetime) -> None:
    """The SQLite loader stages a time as microseconds since 1970 and SQLite writes its text
    (before 1970 and to the years' ends too): the text :func:`sqlite_time` gives."""
    if moment.utcoffset() and not datetime.min.replace(tzinfo=UTC) + timedelta(
        days=1
    ) < moment < datetime.max.replace(tzinfo=UTC) - timedelta(days=1):
        return  # out of range once in UTC
    with closing(sqlite3.connect(":memory:")) as db:
        got = db.execute(
            f"SELECT {SQLITE_TIME_SQL} FROM (SELECT ? AS created_at)",  # noqa: S608 - a constant
            (epoch_microseconds(moment),),
        ).fetchone()[0]
    assert got == sqlite_time(moment)


def test_times_and_payloads_read_back_alike(engine: Engine, tmp_path: Path) -> None:
    """Times with an offset, without one, durations and extra columns (the payload) read back
    the same on both backends, for judgments and preferences; a re-ingest adds nothing."""
    create_campaign(engine, CampaignSpec("r", "rating", scale_min=1, scale_max=5))
    path = tmp_path / "r.csv"
    path.write_text(
        "worker,item,value,created_at,duration_s,note\n"
        "w1,i1,3,2025-01-02T03:04:05+02:00,1.5,x\n"
        "w2,i1,4,2025-01-02T03:04:05.250,,\n"
        "w3,i2,5,,7,y\n",
        encoding="utf-8",
    )
    assert ingest_file(engine, path, "r").n_new == 3
    assert ingest_file(engine, path, "r").n_new == 0
    create_campaign(engine, CampaignSpec("p", "pairwise"))
    pairs = tmp_path / "p.csv"
    pairs.write_text(
        "worker,left,right,preference,created_at,note\nw1,x,y,left,2025-01-02T01:04:05Z,z\n",
        encoding="utf-8",
    )
    assert ingest_file(engine, pairs, "p").n_new == 1
    with engine.connect() as c:
        got = c.execute(
            select(Judgment.created_at, Judgment.duration_s, Judgment.payload).order_by(Judgment.id)
        ).all()
        pref = c.execute(select(Preference.created_at, Preference.payload)).one()
    first = datetime(2025, 1, 2, 1, 4, 5, tzinfo=UTC)
    assert [tuple(r) for r in got] == [
        (first, 1.5, {"note": "x"}),
        (datetime(2025, 1, 2, 3, 4, 5, 250000, tzinfo=UTC), None, {"note": ""}),
        (None, 7.0, {"note": "y"}),
    ]
    assert tuple(pref) == (first, {"note": "z"})


def test_sqlite_page_cache_back_to_its_size_after_a_load(tmp_path: Path) -> None:
    """The loader's larger page cache is the load's only: the pooled connection gets its
    size back whether the file loads or fails."""
    engine = make_engine(f"sqlite:///{tmp_path / 'c.db'}", poolclass=StaticPool)
    upgrade(engine)
    create_campaign(engine, CampaignSpec("r", "rating", scale_min=1, scale_max=5))
    with engine.connect() as c:
        before = c.exec_driver_sql("PRAGMA cache_size").scalar()
    assert before != -BULK_CACHE_KIB
    good, bad = tmp_path / "good.csv", tmp_path / "bad.csv"
    good.write_text("worker,item,value\nw1,i1,3\n", encoding="utf-8")
    bad.write_text("worker,item,value\nw1,i1,3\nw1,i2,9\n", encoding="utf-8")
    seen: list[int] = []
    original = Loader.load

    def spying(self: Loader, records):  # noqa: ANN001, ANN202
        seen.append(self.conn.exec_driver_sql("PRAGMA cache_size").scalar())
        return original(self, records)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Loader, "load", spying)
        assert ingest_file(engine, good, "r").n_new == 1
    assert seen == [-BULK_CACHE_KIB]
    with pytest.raises(InputError):
        ingest_file(engine, bad, "r")
    with engine.connect() as c:
        assert c.exec_driver_sql("PRAGMA cache_size").scalar() == before
    engine.dispose()
