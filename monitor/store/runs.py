"""Metric runs with their values and flags: written in one transaction, read as dataclasses.

Naming of the stored values (``scope``, ``subject``, ``metric``) is documented in
``docs/store-values.md``; the report and the JSON document read them by these names.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from monitor.core.results import Column, FlagRecord, State, Value
from monitor.store import column_deltas
from monitor.store.models import (
    Flag,
    MetricColumn,
    MetricRun,
    MetricValue,
    RunState,
    row_info,
    utcnow,
)


@dataclass(frozen=True)
class RunInfo:
    id: int
    campaign_id: int
    watermark: int
    full: bool
    status: str
    started_at: datetime
    finished_at: datetime | None
    parameters: dict[str, Any]
    code_version: str
    n_judgments: int
    n_new: int
    seconds: float | None
    error: str | None
    number: int = 0
    """The run's number in its campaign (1 for its first): what users see; ``id`` is internal."""


def run_info(r: MetricRun) -> RunInfo:
    return row_info(RunInfo, r, parameters=dict(r.parameters or {}))


def latest_run(session: Session, campaign_id: int) -> RunInfo | None:
    """The newest successful run of a campaign (a failed or crashed run never counts)."""
    row = session.scalars(
        select(MetricRun)
        .where(MetricRun.campaign_id == campaign_id, MetricRun.status == "ok")
        .order_by(MetricRun.id.desc())
        .limit(1)
    ).one_or_none()
    return run_info(row) if row else None


def run_history(session: Session, campaign_id: int, limit: int = 60) -> list[RunInfo]:
    """Successful runs, oldest first (for trends)."""
    rows = session.scalars(
        select(MetricRun)
        .where(MetricRun.campaign_id == campaign_id, MetricRun.status == "ok")
        .order_by(MetricRun.id.desc())
        .limit(limit)
    ).all()
    return [run_info(r) for r in reversed(rows)]


DELTA_SCOPES = ("item", "pair")
"""The scopes whose flags a run may store as changes from its base run."""
MAX_FLAG_CHAIN = 10
"""Most runs in a chain of deltas (item and pair flags, columns); the next run stores all."""


def flag_chain(session: Session, run_id: int) -> list[int]:
    """The run and its bases, newest first (its item and pair flags are resolved from
    the oldest, which holds them all)."""
    chain = [run_id]
    while len(chain) <= MAX_FLAG_CHAIN + 1:
        base = session.scalar(select(MetricRun.base_run_id).where(MetricRun.id == chain[-1]))
        if base is None:
            return chain
        chain.append(int(base))
    raise RuntimeError(f"run {run_id}: the chain of flag deltas is longer than expected")


def mark_failed(
    session: Session,
    campaign_id: int,
    watermark: int,
    error: str,
    code_version: str,
    *,
    started_at: datetime | None = None,
) -> None:
    """Record a run that failed (its values are not kept): started at ``started_at`` (default
    now), finished now."""
    finished_at = utcnow()
    session.add(
        MetricRun(
            campaign_id=campaign_id,
            watermark=watermark,
            status="failed",
            started_at=min(started_at or finished_at, finished_at),
            finished_at=finished_at,
            code_version=code_version,
            error=error[:4000],
        )
    )


VALUE_FIELDS = (  # a Value's fields, in its order
    MetricValue.scope,
    MetricValue.subject,
    MetricValue.metric,
    MetricValue.value,
    MetricValue.low,
    MetricValue.high,
    MetricValue.n,
    MetricValue.detail,
)


def run_values(
    session: Session,
    run_id: int,
    scope: str | None = None,
    metrics: Sequence[str] | None = None,
    *,
    columns: bool = True,
    scopes: Sequence[str] | None = None,
) -> list[Value]:
    """Every value of a run, optionally of one scope (or of ``scopes``) and some metrics; those
    stored as columns are expanded unless ``columns`` is false."""
    q = select(*VALUE_FIELDS).where(MetricValue.run_id == run_id)
    if scope is not None:
        q = q.where(MetricValue.scope == scope)
    if scopes is not None:
        q = q.where(MetricValue.scope.in_(list(scopes)))
    if metrics is not None:
        q = q.where(MetricValue.metric.in_(list(metrics)))
    # rows, not ORM objects: a run of a large campaign holds 10^5 values, and building an
    # object for each took most of the time of reading them
    values = [Value(*row) for row in session.execute(q.order_by(MetricValue.id))]
    for column in run_columns(session, run_id, scope, metrics) if columns else ():
        values.extend(column.expand())
    return values


def run_columns(
    session: Session, run_id: int, scope: str | None = None, metrics: Sequence[str] | None = None
) -> list[Column]:
    """The values of a run stored as columns, as arrays (a column stored as a delta is
    resolved from its base runs: the numbers a reader sees)."""
    return list(iter_run_columns(session, run_id, scope, metrics))


_COLUMN_FIELDS = (
    MetricColumn.run_id,
    MetricColumn.scope,
    MetricColumn.metric,
    MetricColumn.subjects,
    MetricColumn.meta,
    MetricColumn.data,
)


def iter_run_columns(
    session: Session, run_id: int, scope: str | None = None, metrics: Sequence[str] | None = None
) -> Iterator[Column]:
    """:func:`run_columns` one at a time, read as they come: a reader that keeps only the
    arrays of each never holds every column at once. Columns stored with the same subjects
    share one list of them (read once); a delta is resolved from the runs it builds on."""
    q = select(*_COLUMN_FIELDS).where(MetricColumn.run_id == run_id)
    if scope is not None:
        q = q.where(MetricColumn.scope == scope)
    if metrics is not None:
        q = q.where(MetricColumn.metric.in_(list(metrics)))
    text, subjects = None, []
    chain: list[int] | None = None
    rows = session.execute(q.order_by(MetricColumn.id).execution_options(yield_per=2))
    for c in rows:
        if (c.meta or {}).get(column_deltas.DELTA_KEY):
            if chain is None:
                chain = flag_chain(session, run_id)
            yield _resolved(session, c, chain)
            continue
        if c.subjects != text:
            text, subjects = c.subjects, json.loads(c.subjects)
        yield Column.from_bytes(c.scope, c.metric, subjects, dict(c.meta or {}), c.data)


def _resolved(session: Session, row: Any, chain: list[int]) -> Column:
    """The column a stored delta describes: its links down to the whole one, oldest first."""
    older = {
        r.run_id: r
        for r in session.execute(
            select(*_COLUMN_FIELDS).where(
                MetricColumn.run_id.in_(chain[1:]),
                MetricColumn.scope == row.scope,
                MetricColumn.metric == row.metric,
            )
        )
    }
    links = [row]
    for older_id in chain[1:]:
        if not (links[-1].meta or {}).get(column_deltas.DELTA_KEY) or older_id not in older:
            break
        links.append(older[older_id])
    column = column_deltas.resolve(
        (
            Column.from_bytes(
                x.scope, x.metric, json.loads(x.subjects), dict(x.meta or {}), x.data
            ),
            column_deltas.decode_positions(x.meta or {}, x.data),
        )
        for x in reversed(links)
    )
    if column is None:
        raise RuntimeError(f"run {row.run_id}: the base of column {row.scope}/{row.metric} is gone")
    return column


def run_states(session: Session, run_id: int) -> dict[str, State]:
    """The states a run kept for the next one, by name."""
    return {
        r.name: State.from_bytes(dict(r.meta or {}), r.data)
        for r in session.scalars(select(RunState).where(RunState.run_id == run_id))
    }


def run_flags(session: Session, run_id: int, scope: str | None = None) -> list[FlagRecord]:
    """Every flag of a run: its own, and for items and pairs those of its base runs that it
    did not change or clear (in the order they were first raised)."""
    if scope is not None and scope not in DELTA_SCOPES:
        chain = [run_id]
    else:
        chain = flag_chain(session, run_id)
    cols = (Flag.run_id, Flag.scope, Flag.subject, Flag.rule, Flag.value, Flag.threshold)
    q = select(*cols, Flag.evidence, Flag.cleared).where(Flag.run_id.in_(chain))
    if scope is not None:
        q = q.where(Flag.scope == scope)
    elif len(chain) > 1:  # a base's worker and campaign flags are its own, not this run's
        q = q.where((Flag.run_id == run_id) | Flag.scope.in_(DELTA_SCOPES))
    rows = session.execute(q.order_by(Flag.run_id, Flag.id)).all()
    if len(chain) == 1:
        return [_flag_record(r) for r in rows]
    flags: dict[tuple[str, str, str], FlagRecord] = {}
    for r in rows:  # oldest run first: later runs change or clear what earlier ones raised
        key = (r[1], r[2], r[3])
        if r[7]:
            flags.pop(key, None)
        else:
            flags[key] = _flag_record(r)
    return list(flags.values())


def _flag_record(r: Sequence[Any]) -> FlagRecord:
    """A stored flag (the columns after its run id: scope .. evidence) as a record."""
    return FlagRecord(r[1], r[2], r[3], r[4], r[5], dict(r[6] or {}))


def campaign_value_history(
    session: Session, campaign_id: int, metric: str, limit: int = 60
) -> list[tuple[RunInfo, Value]]:
    """A campaign-scope metric over the successful runs, oldest first (for trend charts)."""
    runs = run_history(session, campaign_id, limit)
    if not runs:
        return []
    by_run = {
        v.run_id: v
        for v in session.scalars(
            select(MetricValue).where(
                MetricValue.run_id.in_([r.id for r in runs]),
                MetricValue.scope == "campaign",
                MetricValue.metric == metric,
            )
        )
    }
    return [
        (r, Value(v.scope, v.subject, v.metric, v.value, v.low, v.high, v.n, v.detail))
        for r in runs
        if (v := by_run.get(r.id)) is not None
    ]


def prune_item_values(session: Session, campaign_id: int, keep: int) -> None:
    """Drop the per-item values (columns), item and pair flags, and states of a campaign's
    runs older than its ``keep`` latest successful ones: at scale they are tens of megabytes
    per run, and a scheduler runs every few minutes. Campaign and worker values and flags stay
    (the trends and the evidence behind decisions on workers)."""
    recent = select(MetricRun.id).where(
        MetricRun.campaign_id == campaign_id, MetricRun.status == "ok"
    )
    cutoff = session.scalar(recent.order_by(MetricRun.id.desc()).offset(max(keep, 1) - 1).limit(1))
    if cutoff is None:
        return
    old = select(MetricRun.id).where(MetricRun.campaign_id == campaign_id, MetricRun.id < cutoff)
    # The flags and columns of a run older than the cutoff stay while a kept run's deltas
    # build on them.
    bases = dict(
        session.execute(
            select(MetricRun.id, MetricRun.base_run_id).where(
                MetricRun.campaign_id == campaign_id, MetricRun.base_run_id.is_not(None)
            )
        ).all()
    )
    needed: set[int] = set()
    for run_id in [r for r in bases if r >= cutoff]:
        while (base := bases.get(run_id)) is not None and base not in needed:
            needed.add(base)
            run_id = base
        if base is not None:
            needed.add(base)
    bases_kept = sorted(needed)
    q_columns = delete(MetricColumn).where(MetricColumn.run_id.in_(old))
    q_flags = delete(Flag).where(Flag.run_id.in_(old), Flag.scope.in_(list(DELTA_SCOPES)))
    if bases_kept:
        q_columns = q_columns.where(MetricColumn.run_id.not_in(bases_kept))
        q_flags = q_flags.where(Flag.run_id.not_in(bases_kept))
    session.execute(q_columns)
    session.execute(delete(RunState).where(RunState.run_id.in_(old)))
    session.execute(q_flags)


__all__ = [
    "Column",
    "FlagRecord",
    "RunInfo",
    "Value",
    "campaign_value_history",
    "flag_chain",
    "iter_run_columns",
    "latest_run",
    "mark_failed",
    "prune_item_values",
    "run_columns",
    "run_flags",
    "run_history",
    "run_states",
    "run_values",
]
