"""The schema on both backends: migrations, drift, round-trips."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, inspect, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from monitor.core.errors import SchemaOutOfDate
from monitor.store.engine import make_engine, transaction
from monitor.store.migrate import (
    alembic_config,
    current_revision,
    ensure_schema,
    head_revision,
    revisions,
    upgrade,
)
from monitor.store.models import (
    Base,
    Campaign,
    Flag,
    IngestBatch,
    Item,
    Judgment,
    JudgmentAnnotation,
    MetricRun,
    MetricValue,
    Preference,
    RejectedRow,
    Worker,
    WorkerDecision,
)


def test_exactly_one_head() -> None:
    assert len(ScriptDirectory.from_config(alembic_config()).get_heads()) == 1


def test_upgrade_empty_database_to_head(empty_db_url: str) -> None:
    engine = make_engine(empty_db_url)
    assert current_revision(engine) is None
    upgrade(engine)
    assert current_revision(engine) == head_revision()
    tables = set(inspect(engine).get_table_names())
    assert {t.name for t in Base.metadata.sorted_tables} <= tables
    engine.dispose()


def test_no_drift_between_models_and_migrations(engine: Engine) -> None:
    command.check(alembic_config(engine))  # raises if autogenerate finds a difference


def test_downgrade_to_base_and_back(empty_db_url: str) -> None:
    engine = make_engine(empty_db_url)
    upgrade(engine)
    command.downgrade(alembic_config(engine), "base")
    assert current_revision(engine) is None
    upgrade(engine)
    assert current_revision(engine) == head_revision()
    engine.dispose()


def test_postgres_refuses_out_of_date_schema(backend: str, empty_db_url: str) -> None:
    """A new database gets its schema on first use on both backends (issue 29); a PostgreSQL
    schema that is behind is refused with the command to run, SQLite's is upgraded."""
    engine = make_engine(empty_db_url)
    assert ensure_schema(engine) is True
    assert current_revision(engine) == head_revision()
    assert ensure_schema(engine) is False
    command.downgrade(alembic_config(engine), revisions()[-2])
    if backend == "sqlite":
        ensure_schema(engine)  # the embedded default upgrades itself
        assert current_revision(engine) == head_revision()
    else:
        with pytest.raises(SchemaOutOfDate) as info:
            ensure_schema(engine)
        assert "monitor --db URL db upgrade" in info.value.hint
    engine.dispose()


def _campaign(session: Session, name: str = "c", kind: str = "rating") -> Campaign:
    c = Campaign(name=name, kind=kind, level="interval", scale_min=1, scale_max=5)
    session.add(c)
    session.flush()
    return c


ids = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=1,
    max_size=255,
)
floats = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(
    [5e-324, -5e-324, 1.7976931348623157e308, -1.7976931348623157e308, 0.0]
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(worker=ids, item=ids, value=floats, text_=ids)
def test_round_trip_every_table(
    engine: Engine, worker: str, item: str, value: float, text_: str
) -> None:
    now = datetime(2026, 11, 22, 3, 4, 5, 123456, tzinfo=UTC)
    with transaction(engine) as s:
        s.query(Campaign).delete()
        c = _campaign(s, name=text_[:200])
        w = Worker(campaign_id=c.id, external_id=worker, platform={"status": text_})
        i = Item(campaign_id=c.id, external_id=item, gold=text_, text=text_)
        i2 = Item(campaign_id=c.id, external_id=item + "2")
        b = IngestBatch(campaign_id=c.id, path=text_, checksum="0" * 64, format="csv")
        s.add_all([w, i, i2, b])
        s.flush()
        s.add(RejectedRow(batch_id=b.id, line=3, raw=text_, reasons=[text_]))
        j = Judgment(
            campaign_id=c.id,
            worker_id=w.id,
            item_id=i.id,
            value_num=value,
            value_label=text_,
            dedup_key="id:" + worker,
            external_id=worker,
            created_at=now,
            duration_s=abs(value),
            batch_id=b.id,
            payload={"k": text_},
        )
        s.add(j)
        s.flush()
        s.add(JudgmentAnnotation(judgment_id=j.id, annotation=item, count=2))
        s.add(
            Preference(
                campaign_id=c.id,
                worker_id=w.id,
                left_item_id=i.id,
                right_item_id=i2.id,
                outcome="tie",
                dedup_key="h",
                created_at=now,
            )
        )
        r = MetricRun(campaign_id=c.id, watermark=j.id, code_version="t", parameters={"x": value})
        s.add(r)
        s.flush()
        s.add(
            MetricValue(
                run_id=r.id,
                scope="worker",
                subject=worker,
                metric="wqs",
                value=value,
                low=-value,
                high=value,
                n=2**40,
                detail={"a": [value]},
            )
        )
        s.add(
            Flag(
                run_id=r.id,
                scope="item",
                subject=item,
                rule="ambiguous",
                value=value,
                threshold=0.5,
                evidence={"t": text_},
            )
        )
        s.add(
            WorkerDecision(
                campaign_id=c.id,
                worker_id=w.id,
                action="block",
                reason=text_,
                actor="test",
                run_id=r.id,
                evidence={"v": value},
            )
        )
    with transaction(engine) as s:
        w2 = s.scalars(select(Worker)).one()
        assert w2.external_id == worker
        assert w2.platform == {"status": text_}
        j2 = s.scalars(select(Judgment)).one()
        assert j2.value_num == value
        assert j2.value_label == text_
        assert j2.payload == {"k": text_}
        assert j2.created_at.replace(tzinfo=UTC) == now
        assert s.scalars(select(Item.external_id).order_by(Item.id)).all() == [item, item + "2"]
        assert s.scalars(select(JudgmentAnnotation.annotation)).one() == item
        mv = s.scalars(select(MetricValue)).one()
        assert (mv.value, mv.low, mv.high, mv.n) == (value, -value, value, 2**40)
        # JSONB keeps numbers as numeric: an integral float may come back as an int.
        assert [float(x) for x in mv.detail["a"]] == [value]
        assert s.scalars(select(Flag.evidence)).one() == {"t": text_}
        assert s.scalars(select(RejectedRow.reasons)).one() == [text_]
        assert s.scalars(select(WorkerDecision.reason)).one() == text_
        assert not math.isnan(s.scalars(select(Preference.id)).one())


def test_constraints(engine: Engine) -> None:
    with transaction(engine) as s:
        c = _campaign(s)
        w = Worker(campaign_id=c.id, external_id="w")
        i = Item(campaign_id=c.id, external_id="i")
        s.add_all([w, i])
    cases = [
        Preference(
            campaign_id=c.id,
            worker_id=w.id,
            left_item_id=i.id,
            right_item_id=i.id,
            outcome="left",
            dedup_key="a",
        ),
        Preference(
            campaign_id=c.id,
            worker_id=w.id,
            left_item_id=i.id,
            right_item_id=i.id + 99,
            outcome="left",
            dedup_key="b",
        ),
        Worker(campaign_id=c.id, external_id="w"),
        Worker(campaign_id=c.id, external_id="x", status="banned"),
        Judgment(campaign_id=c.id, worker_id=w.id, item_id=i.id, dedup_key="d", duration_s=-1),
    ]
    for row in cases:
        with pytest.raises(IntegrityError), transaction(engine) as s:
            s.add(row)


def test_worker_decisions_are_append_only(engine: Engine) -> None:
    with transaction(engine) as s:
        c = _campaign(s)
        w = Worker(campaign_id=c.id, external_id="w")
        s.add(w)
        s.flush()
        s.add(
            WorkerDecision(campaign_id=c.id, worker_id=w.id, action="block", reason="r", actor="me")
        )
    with pytest.raises(ValueError, match="audit trail"), transaction(engine) as s:
        d = s.scalars(select(WorkerDecision)).one()
        d.reason = "rewritten"
    with pytest.raises(ValueError, match="audit trail"), transaction(engine) as s:
        s.delete(s.scalars(select(WorkerDecision)).one())
