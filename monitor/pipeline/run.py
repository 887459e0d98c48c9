"""The recompute loop: per campaign, under its lock, one run in one transaction.

A run is incremental unless ``full``: it is skipped when nothing arrived since the last run
(newest judgment id and count unchanged), and otherwise warm-starts the iterative measures from
the last run's scores. Every run sees all judgments committed when it starts (reading only the new
ones when the arrays kept by :mod:`monitor.store.array_cache` still hold), so an ingest that
commits during a run is neither missed (the next run sees it: its rows are above the watermark or
change the count) nor counted twice (a run never adds to a previous run's numbers).
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from monitor import __version__
from monitor.errors import Busy
from monitor.flags import evaluate
from monitor.pipeline.collect import WarmStart
from monitor.pipeline.compute import compute_values
from monitor.policy import apply_policy
from monitor.results import Column, FlagRecord, State, Value
from monitor.settings import Settings
from monitor.store.array_cache import ArrayCache
from monitor.store.campaigns import CampaignInfo, campaign_counts, get_campaign, list_campaigns
from monitor.store.column_cache import ColumnSnapshot
from monitor.store.column_deltas import column_delta
from monitor.store.engine import snapshot, transaction
from monitor.store.history import worker_history
from monitor.store.locks import campaign_lock
from monitor.store.models import utcnow
from monitor.store.runs import (
    DELTA_SCOPES,
    MAX_FLAG_CHAIN,
    RunInfo,
    flag_chain,
    flag_delta,
    latest_run,
    mark_failed,
    prune_item_values,
    run_columns,
    run_flags,
    run_states,
    run_values,
    save_run,
)

log = logging.getLogger("monitor.pipeline")


@dataclass(frozen=True)
class RunOutcome:
    """What happened to one campaign: ``status`` is ``ok``, ``up_to_date``, ``busy``,
    ``empty`` or ``failed``."""

    campaign: str
    status: str
    run_id: int | None = None
    n_judgments: int = 0
    n_new: int = 0
    seconds: float = 0.0
    n_flags: int = 0
    message: str = ""
    flag_counts: dict[str, int] = field(default_factory=dict)
    run_number: int | None = None
    """The run's number in its campaign (``run_id`` is the database's)."""

    def line(self) -> str:
        """One log line: campaign, new judgments, seconds, flags raised."""
        if self.status != "ok":
            return f"{self.campaign}: {self.message or self.status}"
        rules = ", ".join(f"{k} {v}" for k, v in sorted(self.flag_counts.items())) or "none"
        return (
            f"{self.campaign}: run {self.run_number}, {self.n_new} new of {self.n_judgments} "
            f"judgments, {self.seconds:.2f} s, flags: {rules}"
        )


def recompute(
    engine: Engine, settings: Settings, *, campaign: str | None = None, full: bool = False
) -> list[RunOutcome]:
    """Bring the metrics of one campaign (or all) up to date."""
    with transaction(engine) as s:
        campaigns = [get_campaign(s, campaign)] if campaign else list_campaigns(s)
    outcomes = []
    for info in campaigns:
        try:
            with campaign_lock(engine, info.id):
                outcome = _recompute_one(engine, settings, info, full=full)
        except Busy as exc:
            outcome = RunOutcome(info.name, "busy", message=str(exc))
        except CampaignFailed as exc:
            # One campaign's failure (bad data, a bug in a measure) is recorded on its run
            # and must not stop the others.
            outcome = RunOutcome(info.name, "failed", message=f"failed: {exc.error}")
            log.info(outcome.line())
            log.debug("campaign %s failed", info.name, exc_info=exc.__cause__)
            outcomes.append(outcome)
            continue
        log.info(outcome.line())
        outcomes.append(outcome)
    return outcomes


class CampaignFailed(Exception):
    """A campaign's recompute failed and was recorded as a failed run (``error``)."""

    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


# The item and pair flags of each campaign's last run, as this process saved them (a
# scheduler's next run takes them as its base without reading them back).
_KEPT_FLAGS: dict[tuple[str, int], tuple[int, int, list[FlagRecord]]] = {}
# Likewise the columns of that run as readers see them (deltas resolved).
_KEPT_COLUMNS: dict[tuple[str, int], tuple[int, dict[tuple[str, str], Column]]] = {}
# And what the next run starts from: that run's warm-start values and its states.
_KEPT_WARM: dict[tuple[str, int], tuple[int, list[Value], dict[str, State]]] = {}


def _as_stored(meta: dict) -> dict:
    """``meta`` as the store gives it back (JSON: tuples become lists)."""
    return json.loads(json.dumps(meta))


def _flags_key(engine: Engine, info: CampaignInfo) -> tuple[str, int]:
    return engine.url.render_as_string(hide_password=True), info.id


def _flag_base(
    engine: Engine,
    session: Session,
    info: CampaignInfo,
    last: RunInfo | None,
    settings: Settings,
    *,
    full: bool,
) -> tuple[int, list[FlagRecord], int] | None:
    """The run whose item and pair flags this run stores its own as changes to, with those
    flags and the length of its chain; None to store them all (a full run, no last run, a
    negative tolerance, or a chain at its longest)."""
    if full or last is None or settings.flag_tolerance < 0:
        return None
    kept = _KEPT_FLAGS.get(_flags_key(engine, info))
    if kept is not None and kept[0] == last.id:
        depth, flags = kept[1], kept[2]
    else:
        depth = len(flag_chain(session, last.id))
        flags = [f for f in run_flags(session, last.id) if f.scope in DELTA_SCOPES]
    if depth >= MAX_FLAG_CHAIN:
        return None
    return last.id, flags, depth


def _column_base(
    engine: Engine,
    session: Session,
    info: CampaignInfo,
    base: tuple[int, list[FlagRecord], int] | None,
    settings: Settings,
    last: RunInfo | None,
    snapshot: ColumnSnapshot,
) -> dict[tuple[str, str], Column] | None:
    """The base run's columns as readers see them, by scope and metric (None: no base, or a
    negative value tolerance: every column is stored whole): kept in this process's memory,
    else in the column snapshot file when it is the base run's, else read from the store."""
    if base is None or settings.value_tolerance < 0:
        return None
    kept = _KEPT_COLUMNS.get(_flags_key(engine, info))
    if kept is not None and kept[0] == base[0]:
        return kept[1]
    if last is not None and last.id == base[0]:
        columns = snapshot.read(last)
        if columns is not None:
            return columns
    return {(c.scope, c.metric): c for c in run_columns(session, base[0])}


APPROXIMATE = ("uqs", "uas", "phi_mu")
"""Item measures (with the reliability models' ``model_*``) that an iteration or a quadrature
gives to within a tolerance anyway: their deltas may store float32 numbers
(:mod:`monitor.store.column_deltas`)."""


def _column_deltas(
    columns: list[Column],
    base: dict[tuple[str, str], Column] | None,
    settings: Settings,
) -> tuple[list[Column], dict[tuple[str, str], object], dict[tuple[str, str], Column]]:
    """The columns to store (deltas where the base allows), their positions, and the columns
    readers will see."""
    stored, positions, seen = [], {}, {}
    memo: dict = {}
    for c in columns:
        key = (c.scope, c.metric)
        prev = None if base is None else base.get(key)
        narrow = c.metric.startswith("model_") or c.metric in APPROXIMATE
        out, pos, resolved = column_delta(
            prev, c, settings.value_tolerance, narrow=narrow, memo=memo
        )
        stored.append(out)
        seen[key] = resolved
        if pos is not None:
            positions[key] = pos
    return stored, positions, seen


def _recompute_one(
    engine: Engine, settings: Settings, info: CampaignInfo, *, full: bool
) -> RunOutcome:
    """One campaign's run; any error is recorded as a failed run and raised as
    :class:`CampaignFailed`. When even that cannot be written (the database is gone), the
    original error propagates."""
    watermark = [0]
    try:
        return _compute_and_save(engine, settings, info, full=full, watermark=watermark)
    except Exception as exc:
        error = f"{type(exc).__name__}: {_one_line(exc)}"
        try:
            with transaction(engine) as s:
                mark_failed(s, info.id, watermark[0], error, __version__)
        except Exception:  # noqa: BLE001 - the first error is the one to report
            raise exc from None
        raise CampaignFailed(error) from exc


def _one_line(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None) or exc  # SQLAlchemy wraps the driver's error
    lines = str(orig).strip().splitlines()
    return lines[0] if lines else type(orig).__name__


def _compute_and_save(
    engine: Engine, settings: Settings, info: CampaignInfo, *, full: bool, watermark: list[int]
) -> RunOutcome:
    started = time.perf_counter()
    started_at = utcnow()
    # One snapshot for the count and every array: ingests that commit meanwhile are left
    # whole to the next run (never half-seen, never a judgment without its worker).
    with snapshot(engine) as s:
        counts = campaign_counts(s, info)
        last = latest_run(s, info.id)
        if counts.n_judgments == 0:
            return RunOutcome(info.name, "empty", message="no judgments yet: nothing to do")
        if (
            not full
            and last is not None
            and last.watermark >= counts.max_id
            and last.n_judgments == counts.n_judgments
        ):
            return RunOutcome(
                info.name,
                "up_to_date",
                n_judgments=counts.n_judgments,
                message=f"nothing new since run {last.number}: nothing to do",
            )
        watermark[0] = counts.max_id
        arrays = ArrayCache(settings.cache_dir).load(
            s, info, counts.max_id, full=full, counted=counts
        )
        history = worker_history(s, info, arrays.worker_ids.tolist())
        warm = None
        base = _flag_base(engine, s, info, last, settings, full=full)
        kept_columns = ColumnSnapshot(settings.cache_dir, s, info)
        base_columns = _column_base(engine, s, info, base, settings, last, kept_columns)
        if not full and last is not None:
            metrics = WarmStart.COLUMNS
            warm_columns = (
                run_columns(s, last.id, metrics=metrics)
                if base_columns is None
                else [c for c in base_columns.values() if c.metric in metrics]
            )
            kept = _KEPT_WARM.get(_flags_key(engine, info))
            if kept is not None and kept[0] == last.id:
                warm_values, warm_states = kept[1], kept[2]
            else:
                warm_values = run_values(s, last.id, metrics=WarmStart.METRICS, columns=False)
                warm_states = run_states(s, last.id)
            warm = WarmStart.from_values(
                warm_values,
                warm_columns,
                watermark=last.watermark,
                n_judgments=last.n_judgments,
                states=warm_states,
            )
    n_new = arrays.n - (last.n_judgments if last is not None else 0)
    values, columns, states, parameters = compute_values(
        info, arrays, settings, warm=warm, history=history
    )
    flags = evaluate(values, settings, kind=info.kind, strict=info.strict, columns=columns)
    for f in flags:
        if f.rule == "model_not_converged":
            log.warning("%s: %s", info.name, f.evidence.get("message"))
    stored, cleared = flags, []
    if base is not None:
        stored, cleared = flag_delta(base[1], flags, settings.flag_tolerance)
    stored_columns, positions, seen_columns = _column_deltas(columns, base_columns, settings)
    depth = 1 if base is None else base[2] + 1
    # The next process may take these columns as its base (unless it will store every column
    # whole): written while the run is saved, put in place only once it committed.
    next_delta = settings.value_tolerance >= 0 and settings.flag_tolerance >= 0
    writing = kept_columns.begin(seen_columns) if next_delta and depth < MAX_FLAG_CHAIN else None
    try:
        with transaction(engine) as s:
            run = save_run(
                s,
                campaign_id=info.id,
                watermark=arrays.watermark,
                full=full or last is None,
                started_at=started_at,
                parameters=parameters,
                code_version=__version__,
                n_judgments=arrays.n,
                n_new=max(n_new, 0),
                seconds=time.perf_counter() - started,
                values=values,
                flags=stored,
                columns=stored_columns,
                states=states,
                base_run_id=None if base is None else base[0],
                cleared=cleared,
                positions=positions,
            )
            apply_policy(s, info, run.id, flags, settings)
            prune_item_values(s, info.id, settings.keep_item_runs)
    except BaseException:
        if writing is not None:
            writing.abandon()
        raise
    if writing is not None:
        writing.finish(run)
    else:
        kept_columns.discard()
    # What readers now see: the base's flags where nothing moved beyond the tolerance
    # (the next delta is taken against these, so the difference never accumulates).
    seen = [f for f in flags if f.scope in DELTA_SCOPES]
    if base is not None:
        resolved = {(f.scope, f.subject, f.rule): f for f in base[1]}
        resolved.update({(f.scope, f.subject, f.rule): f for f in stored})
        seen = [resolved[(f.scope, f.subject, f.rule)] for f in seen]
    _KEPT_FLAGS[_flags_key(engine, info)] = (run.id, depth, seen)
    _KEPT_COLUMNS[_flags_key(engine, info)] = (run.id, seen_columns)
    _KEPT_WARM[_flags_key(engine, info)] = (
        run.id,
        [v for v in values if v.metric in WarmStart.METRICS],
        {name: State(_as_stored(st.meta), st.array) for name, st in states.items()},
    )
    counts_by_rule: dict[str, int] = {}
    for f in flags:
        counts_by_rule[f.rule] = counts_by_rule.get(f.rule, 0) + 1
    return RunOutcome(
        info.name,
        "ok",
        run.id,
        arrays.n,
        max(n_new, 0),
        time.perf_counter() - started,
        len(flags),
        flag_counts=counts_by_rule,
        run_number=run.number,
    )
