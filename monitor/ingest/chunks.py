"""One file's ingest, chunk after chunk: validation, the rows a file repeats with other
judgments, counts and problems, and the loading (on PostgreSQL in a helper thread while the
next chunk is read)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Any

from monitor.core.errors import Problem
from monitor.core.progress import Progress
from monitor.ingest.files import ByteCounter
from monitor.ingest.load import Loader
from monitor.ingest.repeats import Repeats, clash_words
from monitor.ingest.rows import BadRecord, SourceRow
from monitor.ingest.validate import Validator, id_text, raw_text, record_text

__all__ = ["MAX_PROBLEMS", "FileRun", "chunks"]

MAX_PROBLEMS = 200


def chunks(rows: Iterable[Any], size: int) -> Iterator[list[Any]]:
    """``rows`` in lists of ``size``."""
    iterator = iter(rows)
    while chunk := list(islice(iterator, size)):
        yield chunk


class FileRun:
    """The state of one file's ingest: counts, problems, and the chunk processing."""

    def __init__(self, loader: Loader, validator: Validator, path: str, skip_invalid: bool) -> None:
        self.loader = loader
        self.validator = validator
        self.path = path
        self.skip_invalid = skip_invalid
        self.problems: list[Problem] = []
        self.n_problems = 0  # every problem found, kept (the first MAX_PROBLEMS) or only counted
        self.n_rows = self.n_valid = self.n_new = self.n_rejected = 0
        self.n_items = self.n_workers = self.n_other_rejected = 0
        self.n_unanswered = 0  # rows whose answer cell is blank (tasks not answered yet)
        self.repeats = Repeats(pairwise=validator.kind == "pairwise")

    def process(
        self, chunk: list[SourceRow | BadRecord | tuple[Any, ...]]
    ) -> Callable[[], tuple[int, int, int]] | None:
        """Validate one chunk; the function that loads it (and returns the numbers of items,
        workers and new judgments stored), or None when a problem has been found (and not
        skipped)."""
        judgments: list[tuple[Any, ...]] = []
        items: list[tuple[Any, ...]] = []
        workers: list[tuple[Any, ...]] = []
        rejected: list[tuple[int | None, str, list[str]]] = []
        check, append = self.validator.check, judgments.append
        for record in chunk:
            if isinstance(record, tuple):  # validated by the reader's fast path
                append(record)
                continue
            if isinstance(record, BadRecord):
                problems, raw, table = [record.problem], record.raw, "judgment"
            else:
                table = record.table
                out = check(record)
                if not isinstance(out, list):
                    kind, data = out
                    if kind == "item":
                        items.append(data)
                    elif kind == "worker":
                        workers.append(data)
                    elif kind == "unanswered":
                        self.n_unanswered += 1
                    else:
                        append(data)
                    continue
                problems, raw = out, raw_text(record)
            if table == "judgment":
                self.n_rows += 1
                self.n_rejected += 1
            else:
                self.n_other_rejected += 1
            if self.skip_invalid:
                rejected.append((record.line, raw, [str(p) for p in problems]))
            else:
                self._problems(problems)
        withdrawn: list[bytes] = []
        digests: dict[str, bytes] = {}
        if judgments:
            judgments = self._repeated(judgments, rejected, withdrawn, digests)
        self.n_rows += len(judgments)
        self.n_valid += len(judgments)
        if self.problems:  # the rest of the file is only validated, to count its problems
            return None
        loader = self.loader
        chunk = loader.prepare(judgments, digests)  # here, while the previous chunk is stored

        def load() -> tuple[int, int, int]:
            n_taken_back = loader.withdraw(withdrawn)
            n_items = loader.upsert_items(items)
            n_workers = loader.upsert_workers(workers)
            loader.reject(rejected)
            n_new = loader.load(chunk)  # last: it may leave the COPY to Loader.finish
            return n_items, n_workers, n_new - n_taken_back

        return load

    def _repeated(
        self,
        judgments: list[tuple[Any, ...]],
        rejected: list[tuple[int | None, str, list[str]]],
        withdrawn: list[bytes],
        digests: dict[str, bytes],
    ) -> list[tuple[Any, ...]]:
        """The chunk's judgments without those whose id the file gives to different
        judgments (:mod:`~monitor.ingest.repeats`): each such row is a problem naming the
        others, or with ``skip_invalid`` a rejected row, and so is the first of them when an
        earlier chunk had it (taken back from the store in ``withdrawn``). ``digests`` gets
        the digests of the keys with an id, for the loader."""
        clashes, known = self.repeats.clashes(judgments)
        digests.update(known)
        if not clashes:
            return judgments
        pairwise = self.validator.kind == "pairwise"
        aside: set[int] = set()
        for clash in clashes:
            external = judgments[clash.indices[0]][5]
            places: list[tuple[int, tuple[Any, ...] | None]] = [
                (judgments[i][-1], judgments[i]) for i in clash.indices
            ]
            if clash.earlier is not None:
                places.insert(0, (clash.earlier, None))
                if self.skip_invalid:
                    withdrawn.append(clash.digest)
                    self.n_valid -= 1  # counted valid with its chunk, rejected now
                    self.n_rejected += 1
            for line, record in places:
                others = [n for n in clash.lines if n != line]
                problem = self.validator.problem(
                    line, "judgment_id", *clash_words(external, others)
                )
                if self.skip_invalid:
                    raw = record_text(record, pairwise) if record else id_text(external)
                    rejected.append((line, raw, [str(problem)]))
                else:
                    self._problems([problem])
            aside.update(clash.indices)
        if not self.skip_invalid:
            return judgments
        self.n_rows += len(aside)
        self.n_rejected += len(aside)
        return [r for i, r in enumerate(judgments) if i not in aside]

    def _problems(self, problems: list[Problem]) -> None:
        """Keep the first :data:`MAX_PROBLEMS` problems, count them all."""
        self.n_problems += len(problems)
        self.problems.extend(problems[: MAX_PROBLEMS - len(self.problems)])

    def loaded(self, counts: tuple[int, int, int] | None) -> None:
        """Count what a chunk's load stored."""
        if counts is not None:
            self.n_items += counts[0]
            self.n_workers += counts[1]
            self.n_new += counts[2]

    def run(
        self,
        rows: Iterable[SourceRow | BadRecord | tuple[Any, ...]],
        bar: Progress,
        counter: ByteCounter,
        size: int,
    ) -> None:
        """Validate and load the chunks. The storing of a chunk's judgments
        (:meth:`Loader.finish`: on PostgreSQL the lookup of the stored digests and the COPY, on
        SQLite the one statement from the staged rows into the table) runs in a helper thread
        while the next chunk is read, validated and prepared (the connection is only ever used
        by one thread at a time: the helper is waited for before the next load and before
        leaving). Multi-label judgments load in turn.
        """
        loader = self.loader
        background = loader.defer = loader.pg or loader.campaign.kind != "multilabel"
        pending: _Job | None = None
        try:
            for chunk in chunks(rows, size):
                load = self.process(chunk)
                if pending is not None:
                    job, pending = pending, None
                    self.n_new += job.wait()
                if load is not None:
                    self.loaded(load())
                    if background:
                        pending = _Job(loader.finish)
                bar.update(self.n_rows, counter.n)
            if pending is not None:
                job, pending = pending, None
                self.n_new += job.wait()
        finally:
            if pending is not None:  # leaving on an error: let the COPY end before rollback
                pending.join()
            loader.abort()  # a chunk not stored (an error came before its helper started)
            loader.defer = False


class _Job:
    """A function run in a helper thread; :meth:`wait` gives its result or raises its error."""

    def __init__(self, function: Callable[[], Any]) -> None:
        self.result: Any = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(
            target=self._run, args=(function,), name="monitor-load", daemon=True
        )
        self.thread.start()

    def _run(self, function: Callable[[], Any]) -> None:
        try:
            self.result = function()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            self.error = exc

    def join(self) -> None:
        while self.thread.is_alive():
            try:
                self.thread.join()
            except KeyboardInterrupt:  # the connection is busy until the load ends
                continue

    def wait(self) -> Any:  # noqa: ANN401
        self.join()
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        return self.result
