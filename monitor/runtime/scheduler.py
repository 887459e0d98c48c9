"""APScheduler wiring only: the incremental recompute every few minutes, the nightly full run
and reports. One instance of each job at a time, missed runs coalesced, clean shutdown on
SIGTERM and SIGINT."""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Engine

from monitor.core.settings import Settings
from monitor.runtime.memory import collect_between_runs, keep_freed_memory
from monitor.store.connect import described, error_line

if TYPE_CHECKING:
    from distributed import Client

    from monitor.incremental.cache import RunCache

log = logging.getLogger("monitor.scheduler")


def incremental_job(
    engine: Engine,
    settings: Settings,
    cache: RunCache | None = None,
    cluster: Client | None = None,
) -> None:
    """Pull the connected campaigns, then recompute what is due; a database that cannot be read
    fails the job in one line (the next run of the job tries again)."""
    from monitor.connectors.labelstudio import PLATFORM
    from monitor.store.engine import transaction
    from monitor.store.sources import connected_campaigns

    try:
        with transaction(engine) as session:
            names = connected_campaigns(session, PLATFORM)
    except Exception as exc:  # noqa: BLE001 - the scheduler must outlive a lost database
        log.error("incremental recompute failed: %s", described(exc, engine))
        return
    pull_connected(engine, settings, names)
    _recompute_all(engine, settings, cache, "incremental", full=False, cluster=cluster)


def pull_connected(engine: Engine, settings: Settings, names: list[str]) -> None:
    """Pull the campaigns ``names`` connected to Label Studio (``monitor campaign connect``)
    and bring their stop tests up to date (the live path), one log line each; a campaign whose pull fails is logged and the others go on (its next
    pull reads from its cursor, so nothing is lost)."""
    from monitor.connectors.labelstudio import pull_campaign
    from monitor.incremental.live import update_live

    for name in names:
        try:
            summary = pull_campaign(engine, settings, name)
            live = update_live(engine, name)
        except Exception as exc:  # noqa: BLE001
            hint = getattr(exc, "hint", None)
            log.warning(
                "pull %s failed: %s%s", name, described(exc, engine), f" ({hint})" if hint else ""
            )
            continue
        log.info("pull %s; %s", summary.line(), live.line())


def nightly_job(
    engine: Engine,
    settings: Settings,
    cache: RunCache | None = None,
    cluster: Client | None = None,
) -> None:
    """The nightly full recompute and reports; a campaign whose full run another scheduler
    already made tonight (since the last ``nightly_at``) is not computed again."""
    since = nightly_since(settings.nightly_at, datetime.now().astimezone())
    _recompute_all(engine, settings, cache, "nightly", full=True, full_since=since, cluster=cluster)
    write_reports(engine, settings, cluster)


def nightly_since(nightly_at: str, now: datetime) -> datetime:
    """The latest time of day ``nightly_at`` (HH:MM, ``now``'s time zone) at or before
    ``now``: when tonight's nightly job was due."""
    hour, minute = (int(x) for x in nightly_at.split(":"))
    due = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    return due if due <= now else due - timedelta(days=1)


def _recompute_all(
    engine: Engine,
    settings: Settings,
    cache: RunCache | None,
    job: str,
    *,
    full: bool,
    full_since: datetime | None = None,
    cluster: Client | None = None,
) -> None:
    """Recompute every campaign; a campaign that fails is logged (its run records the error)
    and the others go on. A failure of the whole job (the database unreachable) is logged in
    one line, and the next run of the job tries again. With a ``cluster``, each due campaign
    is a job on it (:mod:`monitor.runtime.cluster`), logged with the worker that ran it."""
    from monitor.pipeline import recompute

    if cluster is not None:
        _dispatch(engine, settings, cluster, job, full=full, full_since=full_since)
        return
    try:
        outcomes = recompute(engine, settings, full=full, cache=cache, full_since=full_since)
    except Exception as exc:  # noqa: BLE001 - the scheduler must outlive a bad run
        log.error("%s recompute failed: %s", job, described(exc, engine))
        return
    finally:
        collect_between_runs()
    for outcome in outcomes:
        level = logging.WARNING if outcome.status in ("failed", "lock_lost") else logging.INFO
        log.log(level, "%s %s", job, outcome.line())
    _notify(engine, settings, [(o.campaign, o.run_id) for o in outcomes
                               if o.status == "ok" and o.run_id])  # fmt: skip


def _notify(engine: Engine, settings: Settings, runs: list[tuple[str, int]]) -> None:
    """The one notification of a job's runs (settings notify_*); never stops the scheduler."""
    from monitor.connectors.notify import enabled, notify

    if not runs or not enabled(settings):
        return
    try:
        notify(engine, settings, runs)
    except Exception as exc:  # noqa: BLE001 - a notification never stops the scheduler
        log.warning("notification failed: %s: %s", type(exc).__name__, error_line(exc))


def _dispatch(
    engine: Engine,
    settings: Settings,
    cluster: Client,
    job: str,
    *,
    full: bool,
    full_since: datetime | None,
) -> None:
    from monitor.runtime.cluster import due_campaigns, recompute_on

    def logged(result) -> None:  # noqa: ANN001 - a monitor.runtime.cluster.JobResult
        log.log(logging.WARNING if result.failed else logging.INFO, "%s %s", job, result.line())

    try:
        due = due_campaigns(engine, full=full)
        results = recompute_on(
            cluster, settings, due, full=full, full_since=full_since, on_result=logged
        )
    except Exception as exc:  # noqa: BLE001 - the scheduler must outlive a bad run
        log.error("%s recompute failed: %s: %s", job, type(exc).__name__, error_line(exc))
        return
    _notify(engine, settings, [(r.campaign, r.outcome.run_id) for r in results
                               if r.outcome and r.outcome.status == "ok" and r.outcome.run_id])  # fmt: skip


def write_reports(engine: Engine, settings: Settings, cluster: Client | None = None) -> list[Path]:
    """Every campaign's HTML report and JSON document in ``settings.report_dir``, and the
    index of campaigns linking to each (:func:`monitor.report.index.write_all`); a campaign
    whose report fails is logged and listed in the index, and the others go on. With a
    ``cluster``, each report is a job on it (``report_dir`` on storage the workers share)."""
    if cluster is not None:
        from monitor.runtime.cluster import reports_on

        def logged(result) -> None:  # noqa: ANN001 - a monitor.runtime.cluster.JobResult
            level = logging.WARNING if result.failed else logging.INFO
            log.log(level, "nightly %s", result.line())

        try:
            written = reports_on(cluster, engine, settings, on_result=logged)
        except Exception as exc:  # noqa: BLE001 - the scheduler must outlive a bad run
            log.error("nightly reports failed: %s: %s", type(exc).__name__, error_line(exc))
            return []
        for warning in written.warnings:
            log.warning("nightly %s", warning)
        log.info("index %s", written.index)
        return written.reports
    from monitor.report.index import write_all

    try:
        written = write_all(engine, Path(settings.report_dir))
    except Exception as exc:  # noqa: BLE001 - the scheduler must outlive a bad run
        log.error("nightly reports failed: %s: %s", type(exc).__name__, error_line(exc))
        return []
    for warning in written.warnings:
        log.warning("nightly %s", warning)
    for p in written.reports:
        log.info("report %s", p)
    for name, error in written.failed.items():
        log.warning("nightly report of campaign %s failed: %s", name, error)
    log.info("index %s", written.index)
    return written.reports


def build_scheduler(
    engine: Engine, settings: Settings, cluster: Client | None = None
):  # -> BlockingScheduler
    """A BlockingScheduler with the two jobs, sharing one run cache for the process's life
    (its runs after the first read and compute only what arrived), or sending the campaigns'
    recomputes to ``cluster``; not started."""
    from apscheduler.schedulers.blocking import BlockingScheduler
    from apscheduler.triggers.cron import CronTrigger
    from apscheduler.triggers.interval import IntervalTrigger

    from monitor.incremental.cache import RunCache

    cache = RunCache.from_settings(settings)

    hour, minute = (int(x) for x in settings.nightly_at.split(":"))
    scheduler = BlockingScheduler()
    # One instance of a job at a time; runs missed while busy or down are coalesced into one.
    once = {"max_instances": 1, "coalesce": True, "misfire_grace_time": 300}
    scheduler.add_job(
        incremental_job,
        IntervalTrigger(minutes=settings.recompute_every_minutes),
        args=(engine, settings, cache, cluster),
        id="incremental",
        name="incremental recompute",
        next_run_time=_now(),
        **once,
    )
    scheduler.add_job(
        nightly_job,
        CronTrigger(hour=hour, minute=minute),
        args=(engine, settings, cache, cluster),
        id="nightly",
        name="nightly full recompute and reports",
        **once,
    )
    return scheduler


def _now() -> datetime:
    return datetime.now().astimezone()


def run_forever(
    engine: Engine,
    settings: Settings,
    *,
    on_start: Callable[[], None] | None = None,
    cluster: Client | None = None,
) -> None:
    """Run until SIGTERM or SIGINT; a job under way finishes before the process exits."""
    if not keep_freed_memory():
        log.debug("mallopt unavailable: freed memory goes back to the system")
    scheduler = build_scheduler(engine, settings, cluster)
    stopping = threading.Event()

    def stop(signum: int, _frame: object) -> None:
        if not stopping.is_set():
            stopping.set()
            log.info("signal %s: stopping after the job under way", signal.Signals(signum).name)
            threading.Thread(target=scheduler.shutdown, kwargs={"wait": True}, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if on_start:
        on_start()
    started = time.monotonic()
    scheduler.start()  # blocks until shutdown
    log.info("scheduler stopped after %.0f s", time.monotonic() - started)
