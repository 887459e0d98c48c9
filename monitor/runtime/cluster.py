"""Campaigns recomputed as jobs on a Dask distributed cluster (``--cluster tcp://HOST:PORT``).

The process that dispatches (``monitor schedule`` or ``monitor recompute``) decides which
campaigns are due and sends one job per campaign; a worker runs it with
:func:`monitor.pipeline.recompute` against the same database, under the campaign's lock
(:func:`monitor.store.locks.campaign_lock`), so two dispatchers, or a job retried after its
worker was lost, never run one campaign twice at once. A run is saved in one transaction: a
worker lost mid-job leaves the previous run as the latest, and Dask's scheduler runs the job
again on another worker (``distributed.scheduler.allowed-failures``; an exception escaping a
job is retried ``RETRIES`` times). A job that fails records the failure on its campaign's run,
as in one process, and the others go on.

Each worker keeps its run caches for its life (:class:`RunCaches`, a worker plugin): a
campaign's job goes to the worker that ran it last, where that worker is alive, so its arrays
and warm starts are still in memory; elsewhere it starts from the snapshot files under
``cache_dir`` (on shared storage) or from the database. A worker whose monitor version or
schema revision differs from the dispatcher's refuses the job.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from distributed import Client, WorkerPlugin, get_worker

from monitor.core.errors import MonitorError, UsageError
from monitor.core.version import __version__

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from monitor.core.settings import Settings
    from monitor.incremental.cache import RunCache
    from monitor.pipeline import RunOutcome
    from monitor.report.index import CampaignReport, Written

PLUGIN = "monitor-run-caches"
CONNECT_TIMEOUT = 5.0
"""Seconds to wait for the cluster's scheduler before giving up (nothing is done then)."""
RETRIES = 2
"""Retries of a job whose exception escaped it (a lost worker is Dask's allowed-failures)."""
LOCK_WAIT = 10.0
"""Seconds a job waits for its campaign's lock: a job retried after its worker died may start
before the database has dropped the dead worker's connection, and with it the lock."""


POLL = 1.0
"""Seconds between two looks at the cluster's workers while jobs wait."""
LIBRARY_LOGGERS = ("distributed", "tornado", "asyncio")
"""Whose messages and tracebacks go to the ``cluster_log`` file, never to the terminal."""


def check_database(url: str) -> None:
    """Refuse a database the cluster's workers cannot share (:class:`UsageError`): SQLite is
    a file on one machine (a relative path would name another file in each worker's folder),
    and its locks are not safe on network file systems; the workers need PostgreSQL."""
    if url.split(":", 1)[0].split("+", 1)[0] == "sqlite":
        raise UsageError(
            "--cluster needs a database every worker reaches, and SQLite is a file on one "
            "machine (its locking is unsafe on network storage)",
            "use PostgreSQL (database_url = postgresql+psycopg://...), or drop --cluster",
        )


def keep_library_logs(path: str) -> None:
    """Send Dask's (and its event loop's) log messages and tracebacks to the file ``path``
    (appended; ``''``: dropped), never to the terminal: what the dispatcher has to say is its
    own one line per job."""
    import logging

    handler: logging.Handler
    if path:
        try:
            handler = logging.FileHandler(path, encoding="utf-8", delay=True)
        except OSError:
            handler = logging.NullHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    else:
        handler = logging.NullHandler()
    # Dask's logging configuration gives some loggers (distributed.client, tornado.application)
    # handlers of their own: every one under these names is sent to the parent's file
    names = [n for n in logging.root.manager.loggerDict if n.split(".", 1)[0] in LIBRARY_LOGGERS]
    for name in {*LIBRARY_LOGGERS, *names}:
        logger = logging.getLogger(name)
        for old in list(logger.handlers):
            logger.removeHandler(old)
        if name in LIBRARY_LOGGERS:
            logger.addHandler(handler)
            logger.propagate = False
        else:
            logger.propagate = True


class ClusterUnavailable(MonitorError):
    """No Dask scheduler answers at the address given."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


@dataclass(frozen=True)
class Versions:
    """What a worker must share with the dispatcher: monitor's version and the schema revision
    its migrations lead to (the Alembic head)."""

    monitor: str
    schema: str

    @classmethod
    def here(cls) -> Versions:
        from monitor.store.migrate import head_revision

        return cls(__version__, head_revision())

    def __str__(self) -> str:
        return f"monitor {self.monitor} at schema {self.schema}"


@dataclass(frozen=True)
class Job:
    """One campaign's recompute as a worker runs it. ``settings`` holds the database URL: it
    travels to the worker but is never shown (no repr, no log line)."""

    campaign: str
    versions: Versions
    settings: Settings = field(repr=False)
    full: bool = False
    full_since: datetime | None = None
    lock_wait: float = LOCK_WAIT
    stem: str | None = None
    """A report job's file name without extension (:func:`monitor.report.render.report_stems`)."""


@dataclass(frozen=True)
class JobResult:
    """What came of one job: ``status`` is a :class:`~monitor.pipeline.RunOutcome` status, or
    ``refused`` (versions differ) or ``lost`` (no worker could finish it)."""

    campaign: str
    worker: str
    status: str
    message: str
    outcome: RunOutcome | None = None
    report: CampaignReport | None = None
    """A report job's (summary for the index, None) or (None, error)."""

    @property
    def failed(self) -> bool:
        return self.status in ("failed", "refused", "lost")

    def line(self) -> str:
        """One log line: the campaign, the worker, the outcome."""
        return f"{self.campaign} on {self.worker}: {self.message}"


class RunCaches(WorkerPlugin):
    """What a worker keeps between its jobs: one engine per database, one run cache per
    database and cache settings, and when it last ran each campaign (what makes it the
    campaign's warm worker)."""

    name = PLUGIN

    def __init__(self) -> None:
        self.engines: dict[str, Engine] = {}
        self.caches: dict[tuple[str, str, float, float], RunCache] = {}
        self.warm: dict[tuple[str, str], float] = {}

    def setup(self, worker: Any) -> None:  # noqa: ANN401 - a distributed Worker
        """Keep freed memory for the next job, as ``monitor schedule`` does (the nanny's
        default ``MALLOC_TRIM_THRESHOLD_`` hands it back after every large array)."""
        from monitor.runtime.memory import keep_freed_memory

        keep_freed_memory()

    def engine(self, url: str) -> Engine:
        if url not in self.engines:
            from monitor.store.engine import make_engine

            self.engines[url] = make_engine(url)
        return self.engines[url]

    def cache(self, settings: Settings) -> RunCache:
        from monitor.incremental.cache import RunCache

        key = (
            settings.database_url,
            settings.cache_dir,
            settings.flag_tolerance,
            settings.value_tolerance,
        )
        if key not in self.caches:
            self.caches[key] = RunCache.from_settings(settings)
        return self.caches[key]

    def teardown(self, worker: Any) -> None:  # noqa: ANN401 - a distributed Worker
        for engine in self.engines.values():
            engine.dispose()
        self.engines.clear()
        self.caches.clear()


def _database(url: str) -> str:
    """The database a URL names, without its credentials (the key of a worker's warm set)."""
    from monitor.store.engine import redact

    return redact(url)


def _refusal(job: Job, address: str) -> JobResult | None:
    here = Versions.here()
    if here == job.versions:
        return None
    return JobResult(
        job.campaign,
        address,
        "refused",
        f"refused: this worker runs {here}, the scheduler {job.versions}; "
        "install the same monitor on every machine",
    )


def _caches(worker: Any) -> RunCaches:  # noqa: ANN401 - a distributed Worker
    plugin = worker.plugins.get(PLUGIN)
    return plugin if isinstance(plugin, RunCaches) else RunCaches()


def run_job(job: Job) -> JobResult:
    """Run one campaign's recompute on this worker (a Dask task). Never raises for the
    campaign's own failure (recorded on its run), so no argument of the job reaches a log."""
    worker = get_worker()
    refused = _refusal(job, worker.address)
    if refused is not None:
        return refused
    from monitor.pipeline import recompute

    caches = _caches(worker)
    url = job.settings.database_url
    deadline = time.monotonic() + job.lock_wait
    try:
        while True:
            [outcome] = recompute(
                caches.engine(url),
                job.settings,
                campaign=job.campaign,
                full=job.full,
                cache=caches.cache(job.settings),
                full_since=job.full_since,
            )
            if outcome.status != "busy" or time.monotonic() >= deadline:
                break
            time.sleep(0.2)
    except MonitorError as exc:  # the campaign is gone, the database unreachable
        return JobResult(job.campaign, worker.address, "failed", f"failed: {exc}")
    except Exception as exc:  # noqa: BLE001 - told to the dispatcher in one line
        first = (str(getattr(exc, "orig", None) or exc).strip().splitlines() or [""])[0]
        return JobResult(
            job.campaign, worker.address, "failed", f"failed: {type(exc).__name__}: {first}"
        )
    if outcome.status == "ok":
        caches.warm[(_database(url), job.campaign)] = time.time()
        from monitor.runtime.memory import collect_between_runs

        collect_between_runs()
    message = outcome.line().removeprefix(f"{job.campaign}: ")
    return JobResult(job.campaign, worker.address, outcome.status, message, outcome)


def report_job(job: Job) -> JobResult:
    """Write one campaign's HTML report and JSON document in ``report_dir`` (shared storage)
    on this worker (a Dask task)."""
    from pathlib import Path

    from monitor.report.index import write_campaign

    worker = get_worker()
    refused = _refusal(job, worker.address)
    if refused is not None:
        return refused
    folder = Path(job.settings.report_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        return JobResult(job.campaign, worker.address, "failed", f"report failed: {folder}: {why}")
    engine = _caches(worker).engine(job.settings.database_url)
    got, error = write_campaign(engine, folder, job.campaign, job.stem)
    if got is None:
        return JobResult(job.campaign, worker.address, "failed", f"report failed: {error}")
    return JobResult(
        job.campaign, worker.address, "ok", f"report {folder / got['report']}", report=(got, None)
    )


def _warm_here(database: str, dask_worker: Any = None) -> dict[str, float]:  # noqa: ANN401
    plugin = dask_worker.plugins.get(PLUGIN) if dask_worker is not None else None
    if not isinstance(plugin, RunCaches):
        return {}
    return {name: t for (db, name), t in plugin.warm.items() if db == database}


def connect(address: str, timeout: float | None = None) -> Client:
    """A client of the cluster at ``address`` with :class:`RunCaches` on every worker;
    :class:`ClusterUnavailable` when no scheduler answers within ``timeout`` seconds
    (default :data:`CONNECT_TIMEOUT`)."""
    timeout = CONNECT_TIMEOUT if timeout is None else timeout
    if "://" not in address or not address.split("://", 1)[1]:
        raise UsageError(
            f"cluster address {address!r} is not a scheduler address",
            "write it as tcp://HOST:PORT (a Dask scheduler listens on 8786 by default)",
        )
    try:
        client = Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise ClusterUnavailable(
            f"no Dask scheduler answers at {address} within {timeout:g} s: nothing was done"
        ) from exc
    except ValueError as exc:
        raise UsageError(f"cluster address {address!r} cannot be used: {exc}") from None
    have = client.run(lambda dask_worker: PLUGIN in dask_worker.plugins)
    if not have or not all(have.values()):
        # Replaces the plugin (and its caches) on the workers that had it; a worker that joins
        # later gets it from the scheduler.
        client.register_plugin(RunCaches(), name=PLUGIN)
    return client


def warm_workers(client: Client, database_url: str) -> dict[str, str]:
    """Campaign name -> the address of the live worker that ran it last."""
    per_worker = client.run(_warm_here, _database(database_url))
    best: dict[str, tuple[float, str]] = {}
    for address, warm in per_worker.items():
        for name, when in warm.items():
            if name not in best or when > best[name][0]:
                best[name] = (when, address)
    return {name: address for name, (_, address) in best.items()}


def due_campaigns(engine: Engine, campaign: str | None = None, *, full: bool = False) -> list[str]:
    """The campaigns a dispatcher sends jobs for: every one with judgments when ``full``,
    else those with judgments their latest run has not counted."""
    from monitor.store.campaigns import campaign_counts, get_campaign, list_campaigns
    from monitor.store.engine import snapshot
    from monitor.store.runs import latest_run

    due = []
    with snapshot(engine) as s:
        for info in [get_campaign(s, campaign)] if campaign else list_campaigns(s):
            counts = campaign_counts(s, info)
            if counts.n_judgments == 0:
                continue
            last = latest_run(s, info.id)
            covered = (
                last is not None
                and last.watermark >= counts.max_id
                and last.n_judgments == counts.n_judgments
            )
            if full or not covered:
                due.append(info.name)
    return due


def recompute_on(
    client: Client,
    settings: Settings,
    campaigns: Sequence[str],
    *,
    full: bool = False,
    full_since: datetime | None = None,
    versions: Versions | None = None,
    lock_wait: float = LOCK_WAIT,
    on_result: Callable[[JobResult], None] | None = None,
) -> list[JobResult]:
    """One job per campaign on the cluster, each sent to its warm worker where alive; the
    results in the order they finish, each handed to ``on_result`` as it comes."""
    check_database(settings.database_url)
    versions = versions or Versions.here()
    warm = warm_workers(client, settings.database_url) if campaigns else {}
    jobs = [Job(name, versions, settings, full, full_since, lock_wait) for name in campaigns]
    return _gather(client, run_job, jobs, warm, on_result, settings.cluster_no_worker_seconds)


def reports_on(
    client: Client,
    engine: Engine,
    settings: Settings,
    *,
    versions: Versions | None = None,
    on_result: Callable[[JobResult], None] | None = None,
) -> Written:
    """Every campaign's report written by a job on the cluster in ``settings.report_dir``
    (shared by the workers and this process), then the index of campaigns here."""
    from pathlib import Path

    from monitor.report.index import write_all
    from monitor.report.render import report_stems
    from monitor.store.campaigns import list_campaigns
    from monitor.store.engine import transaction

    check_database(settings.database_url)
    with transaction(engine) as s:
        names = [c.name for c in list_campaigns(s)]
    versions = versions or Versions.here()
    stems = report_stems(names)
    jobs = [Job(name, versions, settings, stem=stems[name]) for name in names]
    results = _gather(client, report_job, jobs, {}, on_result, settings.cluster_no_worker_seconds)
    written = {r.campaign: r.report or (None, r.message) for r in results}
    return write_all(engine, Path(settings.report_dir), names, written=written)


def _task_states(keys: Sequence[str], dask_scheduler: Any = None) -> dict[str, str]:  # noqa: ANN401
    """Run on the scheduler: the state of each task still there (``no-worker``: it waits for
    a worker that can take it)."""
    tasks = dask_scheduler.tasks if dask_scheduler is not None else {}
    return {k: tasks[k].state for k in keys if k in tasks}


def _workers(client: Client) -> set[str]:
    """The addresses of the cluster's workers now (asked of the scheduler)."""
    return set(client.ncores())


def _gather(
    client: Client,
    fn: Callable[[Job], JobResult],
    jobs: Sequence[Job],
    warm: dict[str, str],
    on_result: Callable[[JobResult], None] | None,
    no_worker: float = 60.0,
) -> list[JobResult]:
    """Submit one task per job (to its warm worker where it has one) and collect the results
    as they come. Never waits for ever: every :data:`POLL` seconds, a job bound to a worker
    that is gone (killed; its nanny restarts it at another address) and that no worker has
    taken since (Dask's scheduler keeps it in ``no-worker``, waiting for the old address) is
    submitted again to any worker, and a cluster without a
    worker for ``no_worker`` seconds, or a scheduler that stops answering, is a
    :class:`ClusterUnavailable` (the jobs not finished are cancelled: their campaigns keep
    their last runs)."""
    pending: dict[Any, tuple[Job, str | None]] = {}

    def submit(job: Job, where: str | None) -> None:
        bound: dict[str, Any] = {}
        if where is not None:
            bound = {"workers": [where], "allow_other_workers": True}
        future = client.submit(
            fn,
            job,
            key=f"{fn.__name__.replace('_', '-')}-{uuid.uuid4().hex[:12]}",
            pure=False,
            retries=RETRIES,
            **bound,
        )
        pending[future] = (job, where)

    for job in jobs:
        submit(job, warm.get(job.campaign))
    results: list[JobResult] = []
    alone_since: float | None = None
    address = getattr(client.scheduler, "address", None) or "the cluster"
    while pending:
        waited = time.monotonic() + POLL
        done = [f for f in pending if f.done()]
        while not done and time.monotonic() < waited:
            time.sleep(0.05)
            done = [f for f in pending if f.done()]
        for future in done:
            job, _ = pending.pop(future)
            try:
                result = future.result()
            except Exception as exc:  # noqa: BLE001 - every worker that took it was lost
                why = (str(exc).strip().splitlines() or [""])[0]
                result = JobResult(job.campaign, "-", "lost", f"lost: {type(exc).__name__}: {why}")
            if on_result is not None:
                on_result(result)
            results.append(result)
        if not pending:
            break
        try:
            workers = _workers(client)
        except Exception as exc:  # noqa: BLE001 - the scheduler is gone: said in one line
            client.cancel(list(pending))
            raise ClusterUnavailable(
                f"the Dask scheduler at {address} stopped answering ({type(exc).__name__}): "
                f"{len(pending)} job(s) not finished, their campaigns keep their last runs"
            ) from None
        gone = [
            f for f, (_, where) in pending.items() if where is not None and where not in workers
        ]
        states = client.run_on_scheduler(_task_states, [f.key for f in gone]) if gone else {}
        for future in gone:
            if states.get(future.key) == "no-worker":  # waits for its gone worker: anywhere
                job, _ = pending.pop(future)
                client.cancel(future)
                submit(job, None)
        if workers:
            alone_since = None
        elif alone_since is None:
            alone_since = time.monotonic()
        elif time.monotonic() - alone_since >= no_worker:
            client.cancel(list(pending))
            raise ClusterUnavailable(
                f"no Dask worker at {address} for {no_worker:g} s: {len(pending)} job(s) not "
                "run, their campaigns keep their last runs",
                hint="start workers (dask worker ADDRESS) or raise cluster_no_worker_seconds",
            )
    return results
