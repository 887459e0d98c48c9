"""The last run's item columns as readers see them, kept in a file for the next process.

An incremental run stores its columns as changes from its base run's
(:mod:`monitor.store.column_deltas`), so it needs the base's columns resolved. A scheduler keeps
them in memory; a cold ``monitor recompute`` would read and resolve the chain from the database
(most of a second at a million judgments). This file, beside the array snapshot under the
``cache_dir`` setting, holds them instead.

A run writes the file while it is saved (a background thread, under a temporary name) and puts
it in place only after its transaction committed, tagged with the run (id, start time,
watermark and count of judgments): a run that failed or rolled back never claims it, and a
database restored to an older state, whose run ids come again, does not match the start time.
The file is used only when its tag is the base run's and it was made for the same database,
campaign (id and creation time), schema revision and format (see
:mod:`monitor.store.array_cache`); anything else, or a file that does not load, is ignored
and the columns are read from the database.

Numbers and JSON only (``.npz`` without pickles), written to a temporary name and renamed. The
subjects (item names: any text) are stored as JSON, each distinct list once.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import threading
import zipfile
from collections.abc import Mapping
from datetime import UTC
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
from numpy.typing import NDArray
from sqlalchemy.orm import Session

from monitor.core.results import Column
from monitor.incremental.arrays import cache_key, cache_meta
from monitor.store.campaigns import CampaignInfo
from monitor.store.runs import RunInfo

log = logging.getLogger("monitor.store")

FORMAT = 1
"""Bump when the layout of the file changes: older files are then ignored."""
_ARRAYS = ("values", "low", "high", "n", "indptr", "indices", "data")

Columns = dict[tuple[str, str], Column]


def run_tag(run: RunInfo) -> dict[str, Any]:
    """What tells this run from any other that had its id (a database restored from a backup
    hands out the same ids again, never the same start time)."""
    return {
        "run": run.id,
        "started": run.started_at.astimezone(UTC).isoformat(),
        "watermark": run.watermark,
        "n_judgments": run.n_judgments,
    }


class ColumnSnapshot:
    """The column file of one campaign of the database ``session`` is bound to (``directory``
    None or empty: no file, :meth:`read` gives None and :meth:`write` does nothing)."""

    def __init__(
        self, directory: str | Path | None, session: Session, campaign: CampaignInfo
    ) -> None:
        self.path: Path | None = None
        self.meta: dict[str, Any] = {}
        if directory:
            digest, cid = cache_key(session, campaign)
            self.path = Path(directory) / f"{digest}-{cid}.columns.npz"
            self.meta = {**cache_meta(session, campaign), "format": f"columns-{FORMAT}"}

    def read(self, run: RunInfo) -> Columns | None:
        """The columns of ``run`` as :func:`monitor.store.runs.run_columns` gives them, by scope
        and metric; None when the file is missing, damaged or made for anything else."""
        if self.path is None or not self.path.is_file():
            return None
        try:
            with np.load(self.path, allow_pickle=False) as z:
                head = json.loads(bytes(z["head"]).decode())
                if head.get("meta") != self.meta or head.get("run") != run_tag(run):
                    return None
                subjects = json.loads(bytes(z["subjects"]).decode())
                out: Columns = {}
                for i, c in enumerate(head["columns"]):
                    arrays = {k: z[f"{i}.{k}"] for k in c["arrays"] if k in _ARRAYS}
                    column = Column(
                        c["scope"],
                        c["metric"],
                        subjects[c["subjects"]],
                        detail_key=c["meta"].get("detail_key"),
                        names=tuple(c["meta"].get("names") or ()),
                        integral=bool(c["meta"].get("integral")),
                        **arrays,
                    )
                    _check(column)
                    out[(column.scope, column.metric)] = column
        except Exception as exc:  # noqa: BLE001 - a damaged file is only a missed shortcut
            log.warning("ignoring column snapshot %s: %s", self.path, exc)
            return None
        return out

    def write(self, run: RunInfo, columns: Mapping[tuple[str, str], Column]) -> None:
        """Keep ``columns`` (what readers see of ``run``, which must have committed) for the
        next process. A failure to write only costs that process a read from the database."""
        pending = self.begin(columns)
        if pending is not None:
            pending.finish(run)

    def begin(self, columns: Mapping[tuple[str, str], Column]) -> PendingWrite | None:
        """Start writing ``columns`` to a temporary file in the background (while the run is
        saved); :meth:`PendingWrite.finish` tags and renames it once the run committed,
        :meth:`PendingWrite.abandon` drops it. None without a directory."""
        if self.path is None:
            return None
        lists: list[list[str]] = []
        index: dict[int, int] = {}  # id of a subjects list -> its place in ``lists``
        described, blobs = [], {}
        for i, c in enumerate(columns.values()):
            k = index.get(id(c.subjects))
            if k is None:
                same = (j for j, s in enumerate(lists) if s == c.subjects)
                k = next(same, len(lists))
                if k == len(lists):
                    lists.append(c.subjects)
                index[id(c.subjects)] = k
            present = [a for a in _ARRAYS if getattr(c, a) is not None]
            described.append(
                {
                    "scope": c.scope,
                    "metric": c.metric,
                    "subjects": k,
                    "meta": c.meta(),
                    "arrays": present,
                }
            )
            blobs.update({f"{i}.{a}": getattr(c, a) for a in present})
        return PendingWrite(self.path, {"meta": self.meta, "columns": described}, lists, blobs)

    def discard(self) -> None:
        """Remove the file (the next run will not take this one's columns as its base)."""
        if self.path is not None:
            try:
                self.path.unlink(missing_ok=True)
            except OSError as exc:
                log.warning("could not remove column snapshot %s: %s", self.path, exc)


class PendingWrite:
    """A column file being written to a temporary name by a background thread (the arrays
    and the subjects); the head, which names the run, is written last, by :meth:`finish`."""

    def __init__(
        self, path: Path, head: dict[str, Any], subjects: list[list[str]], blobs: dict[str, Any]
    ) -> None:
        self.path = path
        self._head = head
        self._error: BaseException | None = None
        self._zip: zipfile.ZipFile | None = None
        self._file: BinaryIO | None = None
        self._tmp: str | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, self._tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
            self._file = os.fdopen(fd, "wb")
            self._zip = zipfile.ZipFile(self._file, "w", allowZip64=True)
        except OSError as exc:
            self._error = exc
        self._thread = threading.Thread(
            target=self._body, args=(subjects, blobs), name="column-snapshot"
        )
        self._thread.start()

    def _body(self, subjects: list[list[str]], blobs: dict[str, Any]) -> None:
        if self._zip is None:
            return
        try:
            # ASCII JSON: any text, lone surrogates included, goes through unchanged
            _member(self._zip, "subjects", np.frombuffer(json.dumps(subjects).encode(), np.uint8))
            for name, array in blobs.items():
                _member(self._zip, name, array)
        except Exception as exc:  # noqa: BLE001 - reported by finish
            self._error = exc

    def finish(self, run: RunInfo) -> None:
        """Tag the file with ``run`` (committed) and put it in place."""
        self._thread.join()
        try:
            if self._error is not None:
                raise self._error
            assert self._zip is not None and self._file is not None and self._tmp is not None
            head = {**self._head, "run": run_tag(run)}
            _member(self._zip, "head", np.frombuffer(json.dumps(head).encode(), np.uint8))
            self._zip.close()
            self._file.close()
            _replace(self._tmp, self.path)
        except Exception as exc:  # noqa: BLE001 - the next process reads the database
            log.warning("could not write column snapshot %s: %s", self.path, exc)
            self.abandon()

    def abandon(self) -> None:
        """Drop the temporary file (the run did not commit)."""
        self._thread.join()
        for handle in (self._zip, self._file):
            with contextlib.suppress(Exception):
                if handle is not None:
                    handle.close()
        if self._tmp is not None:
            Path(self._tmp).unlink(missing_ok=True)


def _replace(tmp: str, path: Path) -> None:
    """Put ``tmp`` in place of ``path``; the old file's blocks are freed by a background thread
    (tens of milliseconds for a large file), which only has a second name of it to drop."""
    old = path.with_name(f"{path.name}.old")
    try:
        old.unlink(missing_ok=True)  # left by a process that stopped before it was freed
        os.link(path, old)
    except OSError:  # no old file, or links not supported: freed here
        os.replace(tmp, path)
        return
    os.replace(tmp, path)
    threading.Thread(target=old.unlink, kwargs={"missing_ok": True}, daemon=True).start()


def _member(zf: zipfile.ZipFile, name: str, array: NDArray) -> None:
    """One ``.npy`` member, as :func:`numpy.savez` writes it (read back by :func:`numpy.load`)."""
    with zf.open(f"{name}.npy", "w", force_zip64=True) as f:
        np.lib.format.write_array(f, np.asanyarray(array), allow_pickle=False)


def _check(c: Column) -> None:
    """Refuse a column whose arrays do not fit its subjects (a file damaged but loadable)."""
    n = len(c.subjects)
    for name in ("values", "low", "high", "n"):
        a = getattr(c, name)
        if a is not None and a.shape != (n,):
            raise ValueError(f"column {c.scope}/{c.metric}: {name} has shape {a.shape}, not ({n},)")
    if c.indptr is not None:
        if c.indices is None or c.data is None or c.indptr.shape != (n + 1,):
            raise ValueError(f"column {c.scope}/{c.metric}: a broken detail matrix")
        if c.indices.shape != c.data.shape or int(c.indptr[-1]) != c.data.size:
            raise ValueError(f"column {c.scope}/{c.metric}: a broken detail matrix")
