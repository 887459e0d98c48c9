"""The recompute loop: per campaign, under its lock, one run in one transaction:
load -> measure -> rules -> save.

A run is incremental unless ``full``: it is skipped when nothing arrived since the last run
(newest judgment id and count unchanged), and otherwise starts from what the run cache kept
(:class:`~monitor.incremental.cache.RunCache`: the arrays, the last run's scores and states, the
base its item values and flags are stored against). Every run sees all judgments committed
when it starts (reading only the new ones when the kept arrays still hold), so an ingest that
commits during a run is neither missed (the next run sees it: its rows are above the watermark
or change the count) nor counted twice (a run never adds to a previous run's numbers).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from monitor.core import catalog
from monitor.core.catalog import Kind
from monitor.core.errors import Busy, LockLost
from monitor.core.progress import Progress
from monitor.core.settings import Settings, run_settings
from monitor.core.thresholds import DecisionOptions
from monitor.core.version import __version__
from monitor.incremental.cache import RunCache
from monitor.incremental.live import LIVE_KINDS, update_live
from monitor.pipeline.decisions import apply_policy
from monitor.pipeline.measure import measure
from monitor.pipeline.params import Coded, LiveScores, Params
from monitor.rules import PolicyOptions, RunValues, Thresholds, evaluate
from monitor.rules.decision import decide_workers
from monitor.rules.item import without_gold
from monitor.store.arrays import gold_signature
from monitor.store.campaigns import (
    CampaignInfo,
    campaign_counts,
    changed_at,
    get_campaign,
    list_campaigns,
)
from monitor.store.connect import described, step
from monitor.store.engine import snapshot, transaction
from monitor.store.history import worker_history
from monitor.store.live import save_scores, stored_ids, worker_scores
from monitor.store.locks import Lease, campaign_lock
from monitor.store.models import utcnow
from monitor.store.runs import latest_run, mark_failed, prune_item_values
from monitor.store.save import NewRun, plan_run, save_run

log = logging.getLogger("monitor.pipeline")


@dataclass(frozen=True)
class RunOutcome:
    """What happened to one campaign: ``status`` is ``ok``, ``up_to_date``, ``busy``,
    ``empty``, ``lock_lost`` (another process took the campaign during the run, which saved
    nothing) or ``failed``."""

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
    engine: Engine,
    settings: Settings,
    *,
    campaign: str | None = None,
    full: bool = False,
    cache: RunCache | None = None,
    full_since: datetime | None = None,
    progress: bool = False,
) -> list[RunOutcome]:
    """Bring the metrics of one campaign (or all) up to date; ``cache``: what this process
    keeps between runs (default: a new one for this call, as a new process has);
    ``full_since``: a full run skips a campaign whose latest run is a full one started since
    then that counted every judgment (another scheduler's nightly run); ``progress``: a
    progress bar on stderr when it is a terminal (:class:`RecomputeProgress`)."""
    if cache is None:
        cache = RunCache.from_settings(settings)
    with transaction(engine) as s:
        campaigns = [get_campaign(s, campaign)] if campaign else list_campaigns(s)
    outcomes = []
    with RecomputeProgress(engine, campaigns, enabled=progress) as bar:
        for info in campaigns:
            try:
                with campaign_lock(engine, info.id) as lease:
                    outcome = _recompute_one(engine, settings, cache, info, full=full,
                                             full_since=full_since, lease=lease,
                                             stage=bar.step(info))  # fmt: skip
            except Busy as exc:
                outcome = RunOutcome(info.name, "busy", message=str(exc))
            except LockLost as exc:
                outcome = RunOutcome(info.name, "lock_lost", message=str(exc))
            except CampaignFailed as exc:
                # One campaign's failure (bad data, a bug in a measure) is recorded on its run
                # and must not stop the others.
                outcome = RunOutcome(info.name, "failed", message=f"failed: {exc.error}")
                log.debug("campaign %s failed", info.name, exc_info=exc.__cause__)
            bar.finished(info)
            log.info(outcome.line())
            outcomes.append(outcome)
    return outcomes


Step = Callable[[str, float], None]
"""What a campaign's run says of itself: the step under way and its share of the run done."""

# The share of a campaign's run done when each step starts (measured at 1-4 million
# judgments: the measures take most of it).
STEPS = {"reading": 0.0, "measuring": 0.15, "flagging": 0.85, "saving": 0.9}


class RecomputeProgress:
    """The progress bar of a recompute: the campaigns' judgments as the total, each campaign's
    counted as its steps (:data:`STEPS`) pass, with the step under way, the rate and the time
    left; redrawn every second between steps. Nothing when disabled or not on a terminal."""

    def __init__(self, engine: Engine, campaigns: list[CampaignInfo], *, enabled: bool) -> None:
        self.bar = Progress("recompute", enabled=enabled, unit="judgments", tick=True, interval=1)
        self.sizes: dict[int, int] = {}
        if self.bar.enabled:
            with snapshot(engine) as s:
                self.sizes = {c.id: max(campaign_counts(s, c).n_judgments, 1) for c in campaigns}
            self.bar.total = sum(self.sizes.values()) or None
        self.count = 0  # judgments of the campaigns finished

    def __enter__(self) -> RecomputeProgress:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.bar.close()

    def step(self, info: CampaignInfo) -> Step:
        size = self.sizes.get(info.id, 0)

        def step(name: str, share: float) -> None:
            done = self.count + share * size
            self.bar.update(round(done), done, f"{info.name}: {name}")

        return step

    def finished(self, info: CampaignInfo) -> None:
        self.count += self.sizes.get(info.id, 0)
        self.bar.update(self.count, self.count)


def _quiet(_name: str, _share: float) -> None:
    """A :data:`Step` that says nothing."""


class CampaignFailed(Exception):
    """A campaign's recompute failed and was recorded as a failed run (``error``)."""

    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


def _recompute_one(
    engine: Engine,
    settings: Settings,
    cache: RunCache,
    info: CampaignInfo,
    *,
    full: bool,
    full_since: datetime | None = None,
    lease: Lease | None = None,
    stage: Step = _quiet,
) -> RunOutcome:
    """One campaign's run; any error is recorded as a failed run and raised as
    :class:`CampaignFailed`. When even that cannot be written (the database is gone), the
    original error propagates. A lost lock (:class:`LockLost`) is no failure of the run's: it
    propagates, and nothing is recorded. ``lease``: the campaign's lock, confirmed by the
    transaction that saves."""
    progress = _Progress(started_at=utcnow())
    try:
        return _run(engine, settings, cache, info, full=full, progress=progress,
                    full_since=full_since, lease=lease, stage=stage)  # fmt: skip
    except LockLost:
        raise
    except Exception as exc:
        error = described(exc, engine)
        try:
            with transaction(engine) as s, step(f"recording the failed run of {info.name}"):
                mark_failed(
                    s,
                    info.id,
                    progress.watermark,
                    error,
                    __version__,
                    started_at=progress.started_at,
                )
        except Exception:  # noqa: BLE001 - the first error is the one to report
            raise exc from None
        raise CampaignFailed(error) from exc


@dataclass
class _Progress:
    """What a run has reached, for the failed run it may have to record."""

    started_at: datetime
    watermark: int = 0


def _run(
    engine: Engine,
    settings: Settings,
    cache: RunCache,
    info: CampaignInfo,
    *,
    full: bool,
    progress: _Progress,
    full_since: datetime | None = None,
    lease: Lease | None = None,
    stage: Step = _quiet,
) -> RunOutcome:
    started = time.perf_counter()
    started_at = progress.started_at
    settings = settings.for_campaign(info.own_settings)
    if info.kind in LIVE_KINDS:  # what arrived since the last run, scored as the live path does
        update_live(engine, info.name)
    # One snapshot for the count and every array: ingests that commit meanwhile are left
    # whole to the next run (never half-seen, never a judgment without its worker).
    with snapshot(engine) as s, step(f"reading the judgments of campaign {info.name}"):
        counts = campaign_counts(s, info)
        last = latest_run(s, info.id)
        if counts.n_judgments == 0:
            return RunOutcome(info.name, "empty", message="no judgments yet: nothing to do")
        # judgments taken out since the last run (ingest undo): ids may come again, so the
        # last run is no base to extend
        changed = changed_at(s, info.id)
        if last is not None and changed is not None and last.started_at < changed:
            full = True
        gold = gold_signature(s, info.id)
        gold_changed = last is not None and (last.parameters or {}).get("gold") != gold
        covered = (
            last is not None
            and last.watermark >= counts.max_id
            and last.n_judgments == counts.n_judgments
            and not (changed is not None and last.started_at < changed)
            and not gold_changed
        )
        full = full or gold_changed  # new gold: every measure that reads it starts afresh
        if covered and not full:
            assert last is not None
            return RunOutcome(
                info.name,
                "up_to_date",
                n_judgments=counts.n_judgments,
                message=f"nothing new since run {last.number}: nothing to do",
            )
        if (
            covered
            and full_since is not None
            and last is not None
            and last.full
            and last.started_at >= full_since
        ):
            return RunOutcome(
                info.name,
                "up_to_date",
                n_judgments=counts.n_judgments,
                message=f"full run {last.number} since {full_since.isoformat(timespec='minutes')} "
                "counted every judgment: nothing to do",
            )
        progress.watermark = counts.max_id
        stage("reading", STEPS["reading"])
        arrays = cache.load_arrays(s, info, counts, full=full)
        history = worker_history(s, info, arrays.worker_ids.tolist())
        base = cache.base(s, info, last, full=full)
        warm = cache.warm(s, info, last, base, full=full)
        saving = cache.saving(s, info)
        live = live_scores(s, info) if info.kind in FROZEN else None
    n_new = max(arrays.n - (last.n_judgments if last is not None else 0), 0)
    stage("measuring", STEPS["measuring"])
    values = measure(Coded(info, arrays, history, live), Params.of(settings, info.kind, warm=warm))
    values.parameters["settings"] = run_settings(settings)
    if info.own_settings:
        values.parameters["own_settings"] = sorted(info.own_settings)
    values.parameters["gold"] = gold
    stage("flagging", STEPS["flagging"])
    thresholds = Thresholds.of(settings)
    flags = evaluate(values.values, thresholds, kind=info.kind, columns=values.columns)
    known = {
        str(i) for i, g in zip(arrays.item_ids, arrays.item_gold, strict=True) if g is not None
    }
    flags = without_gold(flags, known)  # a gold item is never sent back
    advice = decide_workers(
        RunValues(info.kind, values.values, values.columns),
        flags,
        thresholds,
        DecisionOptions.of(settings),
    )
    values.values.extend(d.value() for d in advice)
    for f in flags:
        if f.rule in ("model_not_converged", "model_fallback"):
            log.warning("%s: %s", info.name, f.evidence.get("message"))
    plan = plan_run(
        NewRun(
            campaign_id=info.id,
            watermark=arrays.watermark,
            full=full or last is None,
            started_at=started_at,
            parameters=values.parameters,
            code_version=__version__,
            n_judgments=arrays.n,
            n_new=n_new,
            seconds=time.perf_counter() - started,
            values=values.values,
            flags=flags,
            columns=values.columns,
            states=values.states,
        ),
        base,
        flag_tolerance=cache.tolerances.flag,
        value_tolerance=cache.tolerances.value,
        approximate=catalog.APPROXIMATE,
    )
    stage("saving", STEPS["saving"])
    with saving as writer:
        writer.begin(plan)
        with transaction(engine) as s, step(f"saving the run of campaign {info.name}"):
            if lease is not None:
                lease.confirm(s)
            saved = save_run(s, plan)
            save_scores(s, info.id, saved.run.id, values.live_rows)
            apply_policy(s, info.id, saved.run.id, flags, PolicyOptions.of(settings), advice)
            prune_item_values(s, info.id, settings.keep_item_runs)
        writer.done(saved, values.values, values.states, values.memory)
    counts_by_rule: dict[str, int] = {}
    for f in flags:
        counts_by_rule[f.rule] = counts_by_rule.get(f.rule, 0) + 1
    return RunOutcome(
        info.name,
        "ok",
        saved.run.id,
        arrays.n,
        n_new,
        time.perf_counter() - started,
        len(flags),
        flag_counts=counts_by_rule,
        run_number=saved.run.number,
    )


FROZEN = LIVE_KINDS | {Kind.PAIRWISE}
"""The kinds whose stop test runs over frozen scores (labels, ratings and multi-label sets:
given by the live path; preferences: by the first run that can score an answer)."""


def live_scores(session: Session, info: CampaignInfo) -> LiveScores:
    """The campaign's frozen stop-test scores, and every judgment given a row."""
    return LiveScores(worker_scores(session, info.id), stored_ids(session, info.id))
