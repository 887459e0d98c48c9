"""The run cache: what one process keeps between runs so that a run reads and computes only
what arrived.

The CLI builds one per command and the scheduler one for its life, and they pass it to
:func:`monitor.pipeline.recompute`; nothing is kept in module globals. Per campaign it keeps:

- the coded arrays (:class:`~monitor.incremental.arrays.ArrayCache`: in memory, and as a
  snapshot file under ``directory`` for the next process);
- the last run as readers see it (its item and pair flags and columns): the base the next run
  stores its changes against (:mod:`monitor.store.save`), in memory and, for the columns, in a
  file for the next process (:class:`~monitor.incremental.columns.ColumnSnapshot`);
- what the next run starts from: the last run's warm-start values and its states
  (:class:`~monitor.incremental.warm.WarmStart`);
- the preference triangles of pairwise campaigns (:mod:`monitor.incremental.triangles`).

:meth:`RunCache.plain` is the plain full path: nothing is kept or read back, every run starts
from the database, every iterative measure from scratch, every value and flag is stored whole.
The incremental tests compare with it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from monitor.core.results import State, Value
from monitor.incremental.arrays import ArrayCache, cache_key
from monitor.incremental.columns import ColumnSnapshot, PendingWrite
from monitor.incremental.warm import WarmStart
from monitor.store.arrays import CampaignArrays
from monitor.store.campaigns import CampaignCounts, CampaignInfo, get_campaign
from monitor.store.engine import snapshot
from monitor.store.runs import RunInfo, run_columns, run_states, run_values
from monitor.store.save import Base, Plan, Saved, chain_full, read_base

log = logging.getLogger("monitor.incremental")

# The files a run cache writes under its directory: ``<database digest>-<campaign id>.npz``
# (arrays), ``….columns.npz`` (columns) and the temporary files of either while it is written.
_CACHE_FILE = re.compile(r"[0-9a-f]{20}-[0-9]+\.(?:columns\.)?npz(?:.*\.tmp)?", re.DOTALL)


@dataclass(frozen=True)
class Cleared:
    """What :func:`clear_files` removed: how many files and bytes, and those it could not."""

    n_files: int
    n_bytes: int
    failed: tuple[str, ...] = ()


def clear_files(
    directory: str | Path | None,
    session: Session | None = None,
    campaign: CampaignInfo | None = None,
) -> Cleared:
    """Remove the run cache's files under ``directory``: every campaign's of every database,
    or with ``campaign`` only that campaign's of the database ``session`` is bound to. Other
    files are left alone; a missing directory has nothing to remove. The next run of a campaign
    reads its arrays from the database again (a missed shortcut, never a wrong result)."""
    if not directory or not Path(directory).is_dir():
        return Cleared(0, 0)
    prefix = ""
    if campaign is not None:
        if session is None:
            raise ValueError("a campaign's files are named after its database: give the session")
        digest, cid = cache_key(session, campaign)
        prefix = f"{digest}-{cid}."
    n_files = n_bytes = 0
    failed: list[str] = []
    for path in sorted(Path(directory).iterdir()):
        name = path.name
        if not _CACHE_FILE.fullmatch(name) or not name.startswith(prefix) or not path.is_file():
            continue
        try:
            size = path.stat().st_size
            path.unlink()
        except FileNotFoundError:  # removed meanwhile (a run replacing its snapshot)
            continue
        except OSError as exc:
            failed.append(f"{path}: {exc.strerror or exc}")
            continue
        n_files, n_bytes = n_files + 1, n_bytes + size
    return Cleared(n_files, n_bytes, tuple(failed))


def clear_cache(
    directory: str | Path | None, engine: Engine | None = None, campaign: str | None = None
) -> Cleared:
    """``monitor cache clear``: every run cache file under ``directory``, or with ``campaign``
    (a name in the database of ``engine``; NotFound if none) only that campaign's."""
    if campaign is None:
        return clear_files(directory)
    if engine is None:
        raise ValueError("a campaign is named in a database: give the engine")
    with snapshot(engine) as session:
        return clear_files(directory, session, get_campaign(session, campaign))


@dataclass(frozen=True)
class Tolerances:
    """How far a value or flag may move before an incremental run stores it again (negative:
    store everything whole)."""

    flag: float = 0.001
    value: float = 0.001


@dataclass
class _Kept:
    """One campaign's last run, as this process saved it."""

    saved: Saved | None = None
    warm_values: list[Value] = field(default_factory=list)
    states: dict[str, State] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


class RunCache:
    """What a process keeps between the runs of its campaigns (module docstring).

    ``directory``: where snapshot files go ('' or None: none); ``memory``: keep arrays and the
    last runs in this process (False: as a new process would each time)."""

    def __init__(
        self,
        directory: str | Path | None = None,
        *,
        memory: bool = True,
        tolerances: Tolerances = Tolerances(),
        enabled: bool = True,
    ) -> None:
        self.enabled = enabled
        self.memory = memory and enabled
        self.tolerances = tolerances
        self.directory = Path(directory) if directory and enabled else None
        self.arrays = ArrayCache(self.directory, memory=self.memory)
        self._kept: dict[tuple[str, int], _Kept] = {}

    @classmethod
    def plain(cls) -> RunCache:
        """The plain full path: nothing kept, nothing read back, everything stored whole."""
        return cls(None, memory=False, tolerances=Tolerances(-1.0, -1.0), enabled=False)

    @classmethod
    def from_settings(cls, settings: Any, *, memory: bool = True) -> RunCache:
        """A cache for ``settings`` (``cache_dir``, ``flag_tolerance``, ``value_tolerance``)."""
        tolerances = Tolerances(settings.flag_tolerance, settings.value_tolerance)
        return cls(settings.cache_dir, memory=memory, tolerances=tolerances)

    # --- before the run -----------------------------------------------------------------

    def load_arrays(
        self,
        session: Session,
        info: CampaignInfo,
        counts: CampaignCounts,
        *,
        full: bool,
    ) -> CampaignArrays:
        """The campaign's arrays up to ``counts.max_id`` (read afresh on the plain path)."""
        return self.arrays.load(
            session, info, counts.max_id, full=full or not self.enabled, counted=counts
        )

    def base(
        self, session: Session, info: CampaignInfo, last: RunInfo | None, *, full: bool
    ) -> Base | None:
        """The run this one stores its item and pair flags and columns against: the last run
        as readers see it, from this process's memory, the column file or the store; None to
        store everything whole (a full run, the first run, negative tolerances, a chain at
        its longest)."""
        t = self.tolerances
        if full or not self.enabled or last is None or t.flag < 0:
            return None
        kept = self._kept.get(self._key(session, info))
        if kept is not None and kept.saved is not None and kept.saved.run.id == last.id:
            return kept.saved.base(columns=t.value >= 0)
        base = read_base(session, last, columns=False)
        if chain_full(base.depth):
            return None
        if t.value < 0:
            return base
        columns = self._snapshot(session, info).read(last)
        if columns is None:
            columns = {(c.scope, c.metric): c for c in run_columns(session, last.id)}
        return Base(base.run_id, base.depth, base.flags, columns)

    def warm(
        self, session: Session, info: CampaignInfo, last: RunInfo | None, base: Base | None,
        *, full: bool,
    ) -> WarmStart | None:  # fmt: skip
        """What this run starts from: the last run's warm-start values, columns and states;
        None for a full run, the first run, or on the plain path."""
        if full or not self.enabled or last is None:
            return None
        metrics = WarmStart.METRICS
        if base is not None and base.columns is not None and base.run_id == last.id:
            columns = [c for c in base.columns.values() if c.metric in metrics]
        else:
            columns = run_columns(session, last.id, metrics=metrics)
        kept = self._kept.get(self._key(session, info))
        if kept is not None and kept.saved is not None and kept.saved.run.id == last.id:
            values, states = kept.warm_values, kept.states
        else:
            values = run_values(session, last.id, metrics=metrics, columns=False)
            states = run_states(session, last.id)
        memory = (
            kept.extra
            if kept is not None and kept.saved is not None and kept.saved.run.id == last.id
            else {}
        )
        return WarmStart.from_values(
            values, columns, watermark=last.watermark, n_judgments=last.n_judgments,
            states=states, memory=memory,
        )  # fmt: skip

    # --- around saving --------------------------------------------------------------------

    def saving(self, session: Session, info: CampaignInfo) -> Saving:
        """What happens around the transaction that saves the campaign's run (:class:`Saving`):
        made while the run's snapshot of the database is open."""
        snapshot = self._snapshot(session, info)
        self._sweep(snapshot)
        return Saving(self, self._key(session, info), snapshot)

    def _keep(self, key: tuple[str, int], saved: Saved, values: list[Value],
              states: dict[str, State], memory: dict[str, Any]) -> None:  # fmt: skip
        if not self.memory:
            return
        kept = self._kept.setdefault(key, _Kept())
        kept.saved = saved
        kept.extra = dict(memory)
        kept.warm_values = [v for v in values if v.metric in WarmStart.METRICS]
        # as the store gives them back (JSON: tuples become lists)
        kept.states = {n: State(json.loads(json.dumps(s.meta)), s.array) for n, s in states.items()}

    def _snapshot(self, session: Session, info: CampaignInfo) -> ColumnSnapshot:
        return ColumnSnapshot(self.directory, session, info)

    def _sweep(self, snapshot: ColumnSnapshot) -> None:
        """Remove the temporary files of this campaign that a process killed while writing
        left behind (the caller holds the campaign's lock: nobody else writes them now)."""
        if snapshot.path is None or not snapshot.path.parent.is_dir():
            return
        stem = snapshot.path.name.split(".", 1)[0]
        for tmp in snapshot.path.parent.glob(f"{stem}.*.tmp"):
            with contextlib.suppress(OSError):
                tmp.unlink()

    @staticmethod
    def _key(session: Session, info: CampaignInfo) -> tuple[str, int]:
        return cache_key(session, info)


class Saving:
    """Around the transaction that saves a run: the column file for the next process is
    written meanwhile (:meth:`begin`) and put in place once the run committed (:meth:`done`),
    which also keeps the run for this process's next one; dropped if the run fails."""

    def __init__(self, cache: RunCache, key: tuple[str, int], snapshot: ColumnSnapshot) -> None:
        self.cache, self.key, self.snapshot = cache, key, snapshot
        self.pending: PendingWrite | None = None

    def __enter__(self) -> Saving:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is not None and self.pending is not None:
            self.pending.abandon()

    def begin(self, plan: Plan) -> None:
        """Start writing the columns readers will see of the planned run, for the next
        process, when that will store its columns as changes from them."""
        t = self.cache.tolerances
        if t.value >= 0 and t.flag >= 0 and not chain_full(plan.depth):
            self.pending = self.snapshot.begin(plan.seen_columns)

    def done(self, saved: Saved, values: list[Value], states: dict[str, State],
             memory: dict[str, Any]) -> None:  # fmt: skip
        """The run committed: put the column file in place (or remove an older one that no
        longer describes the last run) and keep the run for this process's next one."""
        if self.pending is not None:
            self.pending.finish(saved.run)
        else:
            self.snapshot.discard()
        self.cache._keep(self.key, saved, values, states, memory)


def remove_campaign_files(
    directory: str | Path | None, session: Session, info: CampaignInfo
) -> int:
    """Remove the files the run cache keeps for a campaign of the database ``session`` is
    bound to (its arrays, its column file and any temporary file a killed process left);
    how many. Made before the campaign is deleted (the names hold its id)."""
    if not directory or not Path(directory).is_dir():
        return 0
    digest, cid = cache_key(session, info)
    n = 0
    for path in Path(directory).glob(f"{digest}-{cid}.*"):
        with contextlib.suppress(OSError):
            path.unlink()
            n += 1
    return n
