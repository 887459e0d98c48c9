"""Saving a run: its values, columns, flags and states in the caller's transaction.

An incremental run stores its item and pair flags, and its item columns, as changes from a base
run (``docs/store-values.md``): :func:`save_run` takes that base as readers see it
(:class:`Base`), stores only what moved beyond the tolerances, and returns what readers now see
(:class:`Saved`), the next run's base. Readers (:mod:`monitor.store.runs`) resolve the chains:
nobody outside the store sees a delta.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table
from sqlalchemy.orm import Session

from monitor.core.results import Column, FlagRecord, State, Value
from monitor.store import column_deltas, runs
from monitor.store.engine import psycopg_connection
from monitor.store.models import Base as Tables
from monitor.store.models import MetricColumn, MetricRun, RunState, utcnow
from monitor.store.runs import (
    DELTA_SCOPES,
    RunInfo,
    flag_chain,
    run_columns,
    run_flags,
    run_info,
)


def insert_run(
    session: Session,
    *,
    campaign_id: int,
    watermark: int,
    full: bool,
    started_at: datetime,
    parameters: dict[str, Any],
    code_version: str,
    n_judgments: int,
    n_new: int,
    seconds: float,
    values: Iterable[Value],
    flags: Iterable[FlagRecord],
    columns: Iterable[Column] = (),
    states: Mapping[str, State] | None = None,
    base_run_id: int | None = None,
    cleared: Iterable[tuple[str, str, str]] = (),
    positions: Mapping[tuple[str, str], Any] | None = None,
) -> RunInfo:
    """Insert a finished run with its values, columns, flags and states as given (the caller's
    transaction makes it atomic: a crash before commit leaves the previous run as the
    latest); :func:`save_run` computes what to store against a base run. With ``base_run_id``, ``flags`` holds the run's worker and campaign flags and
    only the item and pair flags that changed from the base run's (see :func:`flag_delta`);
    ``cleared`` the (scope, subject, rule) of the base's that no longer hold. ``positions``:
    the columns (by scope and metric) that are deltas on the base run's, with the rows they
    replace or add (:mod:`monitor.store.column_deltas`)."""
    run = MetricRun(
        campaign_id=campaign_id,
        watermark=watermark,
        full=full,
        status="ok",
        started_at=started_at,
        finished_at=utcnow(),
        parameters=parameters,
        code_version=code_version,
        n_judgments=n_judgments,
        n_new=n_new,
        seconds=seconds,
        base_run_id=base_run_id,
    )
    session.add(run)
    session.flush()
    run_id = run.id
    value_rows = (
        (run_id, v.scope, v.subject, v.metric, v.value, v.low, v.high, v.n, _json(v.detail))
        for v in values
    )
    _bulk_insert(session, "metric_values", VALUE_COLUMNS, value_rows)
    flag_rows = (
        (run_id, f.scope, f.subject, f.rule, f.value, f.threshold, _json(f.evidence), False)
        for f in flags
    )
    _bulk_insert(session, "flags", FLAG_COLUMNS, flag_rows)
    cleared_rows = ((run_id, sc, su, ru, None, None, "{}", True) for sc, su, ru in cleared)
    _bulk_insert(session, "flags", FLAG_COLUMNS, cleared_rows)
    if positions and base_run_id is None:
        raise ValueError("delta columns need the base run they apply to.")
    column_rows = []
    for c in columns:
        meta, data = column_deltas.encode(c, (positions or {}).get((c.scope, c.metric)))
        column_rows.append(
            {
                "run_id": run_id,
                "scope": c.scope,
                "metric": c.metric,
                "subjects": json.dumps(c.subjects, ensure_ascii=False),
                "meta": meta,
                "data": data,
            }
        )
    if column_rows:
        session.execute(cast(Table, MetricColumn.__table__).insert(), column_rows)
    state_rows = [
        {"run_id": run_id, "name": name, "meta": state.meta, "data": state.to_bytes()}
        for name, state in (states or {}).items()
    ]
    if state_rows:
        session.execute(cast(Table, RunState.__table__).insert(), state_rows)
    return run_info(run)


VALUE_COLUMNS = ("run_id", "scope", "subject", "metric", "value", "low", "high", "n", "detail")
FLAG_COLUMNS = (
    "run_id",
    "scope",
    "subject",
    "rule",
    "value",
    "threshold",
    "evidence",
    "cleared",
)


def _same(a: Any, b: Any, tolerance: float) -> bool:
    """Equal, numbers within ``tolerance`` (recursively through dicts and lists)."""
    if a == b:  # the common case, compared in C
        return True
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return abs(float(a) - float(b)) <= tolerance
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k], tolerance) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y, tolerance) for x, y in zip(a, b, strict=True))
    return a == b


def _numbers(evidence: dict[str, Any] | None) -> dict[str, Any] | None:
    """The evidence without its ``message`` (the numbers put in words)."""
    if not evidence or "message" not in evidence:
        return evidence
    return {k: v for k, v in evidence.items() if k != "message"}


def flag_delta(
    base: Iterable[FlagRecord], flags: Iterable[FlagRecord], tolerance: float
) -> tuple[list[FlagRecord], list[tuple[str, str, str]]]:
    """What a run stores against a base run with item and pair flags ``base``: its worker and
    campaign flags, the item and pair flags that are new or changed (value, threshold or a
    number of the evidence by more than ``tolerance``, or any other part of the evidence but
    its ``message``, which says those numbers in words: 1.59 and 1.6 within the tolerance do
    not make a new flag), and the keys of the base's that no longer hold. A reader then sees the
    base's flag where nothing changed beyond the tolerance."""
    known = {(f.scope, f.subject, f.rule): f for f in base}
    out: list[FlagRecord] = []
    seen: set[tuple[str, str, str]] = set()
    for f in flags:
        if f.scope not in DELTA_SCOPES:
            out.append(f)
            continue
        key = (f.scope, f.subject, f.rule)
        seen.add(key)
        old = known.get(key)
        if (
            old is None
            or not _same(old.value, f.value, tolerance)
            or not _same(old.threshold, f.threshold, tolerance)
            or not _same(_numbers(old.evidence), _numbers(f.evidence), tolerance)
        ):
            out.append(f)
    return out, [k for k in known if k not in seen]


def _json(obj: dict[str, Any] | None) -> str | None:
    return None if obj is None else json.dumps(obj, allow_nan=False, separators=(",", ":"))


def _bulk_insert(
    session: Session, table: str, columns: tuple[str, ...], rows: Iterable[tuple]
) -> None:
    """Insert many rows fast: ``COPY`` on PostgreSQL, the driver's executemany on SQLite.

    A run writes one row per worker, item and measure (hundreds of thousands at scale); the
    generic parameter processing would cost more than the metrics. Table and column names are
    the constants above; the values always travel as parameters.
    """
    connection = session.connection()
    target = Tables.metadata.tables[table]
    if connection.dialect.name == "postgresql":
        from psycopg import sql

        copy_sql = sql.SQL("COPY {} ({}) FROM STDIN").format(
            sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, columns))
        )
        with psycopg_connection(session).cursor() as cursor, cursor.copy(copy_sql) as copy:
            for row in rows:
                copy.write_row(row)
        return
    insert_sql = str(target.insert().compile(dialect=connection.dialect, column_keys=list(columns)))
    batch: list[tuple] = []
    for row in rows:
        batch.append(row)
        if len(batch) == 20_000:
            connection.exec_driver_sql(insert_sql, batch)
            batch = []
    if batch:
        connection.exec_driver_sql(insert_sql, batch)


@dataclass(frozen=True)
class Base:
    """The run an incremental run stores its item and pair flags and columns against, as
    readers see it: its id, the runs in its chain, its item and pair flags and, unless every
    column is to be stored whole, its columns by scope and metric."""

    run_id: int
    depth: int
    flags: list[FlagRecord]
    columns: dict[tuple[str, str], Column] | None = None


@dataclass(frozen=True)
class Saved:
    """A saved run and what readers see of it: its item and pair flags, its columns (the next
    run's :class:`Base`), and the runs in its chain."""

    run: RunInfo
    depth: int
    flags: list[FlagRecord]
    columns: dict[tuple[str, str], Column] = field(default_factory=dict)

    def base(self, *, columns: bool = True) -> Base | None:
        """This run as the next one's base; None once its chain is at its longest."""
        if chain_full(self.depth):
            return None
        return Base(self.run.id, self.depth, self.flags, self.columns if columns else None)


@dataclass(frozen=True)
class NewRun:
    """A finished run to save (``docs/store-values.md``)."""

    campaign_id: int
    watermark: int
    full: bool
    started_at: datetime
    parameters: dict[str, Any]
    code_version: str
    n_judgments: int
    n_new: int
    seconds: float
    values: Sequence[Value]
    flags: Sequence[FlagRecord]
    columns: Sequence[Column] = ()
    states: Mapping[str, State] = field(default_factory=dict)


def chain_full(depth: int) -> bool:
    """A chain of ``depth`` runs is at its longest: the next run stores everything whole."""
    return depth >= runs.MAX_FLAG_CHAIN


def read_base(session: Session, run: RunInfo, *, columns: bool = True) -> Base:
    """``run`` as a base, read from the store (chains resolved)."""
    depth = len(flag_chain(session, run.id))
    flags = [f for f in run_flags(session, run.id) if f.scope in DELTA_SCOPES]
    kept = {(c.scope, c.metric): c for c in run_columns(session, run.id)} if columns else None
    return Base(run.id, depth, flags, kept)


@dataclass(frozen=True)
class Plan:
    """What saving ``new`` stores against ``base`` (the item and pair flags and the columns
    that moved, the base's flags that no longer hold) and what readers will then see."""

    new: NewRun
    base: Base | None
    flags: list[FlagRecord]
    cleared: list[tuple[str, str, str]]
    columns: list[Column]
    positions: dict[tuple[str, str], Any]
    seen_flags: list[FlagRecord]
    seen_columns: dict[tuple[str, str], Column]

    @property
    def depth(self) -> int:
        """The runs in the chain this run ends."""
        return 1 if self.base is None else self.base.depth + 1


def plan_run(
    new: NewRun,
    base: Base | None,
    *,
    flag_tolerance: float,
    value_tolerance: float,
    approximate: Iterable[str] = (),
) -> Plan:
    """What to store of ``new`` against ``base`` (everything, without one): item and pair
    flags that are new or moved beyond ``flag_tolerance``, columns as changes where they
    extend the base's (:mod:`monitor.store.column_deltas`; ``approximate``: the measures whose
    changes may be float32 numbers)."""
    stored = list(new.flags)
    cleared: list[tuple[str, str, str]] = []
    if base is not None:
        stored, cleared = flag_delta(base.flags, new.flags, flag_tolerance)
    columns, positions, seen = _column_deltas(
        new.columns, None if base is None else base.columns, value_tolerance, set(approximate)
    )
    # What readers will see: the base's flags where nothing moved beyond the tolerance (the
    # next delta is taken against these, so the difference never accumulates).
    flags = [f for f in new.flags if f.scope in DELTA_SCOPES]
    if base is not None:
        resolved = {(f.scope, f.subject, f.rule): f for f in base.flags}
        resolved.update({(f.scope, f.subject, f.rule): f for f in stored})
        flags = [resolved[(f.scope, f.subject, f.rule)] for f in flags]
    return Plan(new, base, stored, cleared, columns, positions, flags, seen)


def save_run(session: Session, plan: Plan) -> Saved:
    """Insert the planned run (in the caller's transaction)."""
    new = plan.new
    run = insert_run(
        session,
        campaign_id=new.campaign_id,
        watermark=new.watermark,
        full=new.full,
        started_at=new.started_at,
        parameters=new.parameters,
        code_version=new.code_version,
        n_judgments=new.n_judgments,
        n_new=new.n_new,
        seconds=new.seconds,
        values=new.values,
        flags=plan.flags,
        columns=plan.columns,
        states=new.states,
        base_run_id=None if plan.base is None else plan.base.run_id,
        cleared=plan.cleared,
        positions=plan.positions,
    )
    return Saved(run, plan.depth, plan.seen_flags, plan.seen_columns)


def _column_deltas(
    columns: Sequence[Column],
    base: Mapping[tuple[str, str], Column] | None,
    tolerance: float,
    approximate: set[str],
) -> tuple[list[Column], dict[tuple[str, str], Any], dict[tuple[str, str], Column]]:
    """The columns to store (deltas where the base allows), their positions, and the columns
    readers will see."""
    stored, positions, seen = [], {}, {}
    memo: dict = {}
    for c in columns:
        key = (c.scope, c.metric)
        prev = None if base is None else base.get(key)
        out, pos, resolved = column_deltas.column_delta(
            prev, c, tolerance, narrow=c.metric in approximate, memo=memo
        )
        stored.append(out)
        seen[key] = resolved
        if pos is not None:
            positions[key] = pos
    return stored, positions, seen
