"""The Python API of ingestion (the CLI wraps it): campaigns, judgment files, item files.

One file is one transaction: it is read in chunks of :data:`CHUNK_SIZE` rows, each validated,
then loaded (workers and items upserted, the judgments whose dedup key is new stored: see
:mod:`monitor.ingest.load`). When a row is bad and ``skip_invalid`` is false, reading goes on to collect
the problems (up to :data:`MAX_PROBLEMS`), nothing more is loaded, and the transaction is rolled
back: nothing is written. With ``skip_invalid`` the bad rows are kept in ``rejected_rows`` with
their reasons, in the same transaction. A crash or Ctrl-C rolls everything back.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, select

from monitor.errors import InputError, NotFound, Problem, UsageError
from monitor.ingest.load import Loader
from monitor.ingest.platforms import READERS, detect
from monitor.ingest.readers import BadRecord, ByteCounter, read_csv, read_items, read_jsonl
from monitor.ingest.rows import JUDGMENT_COLUMNS, PREFERENCE_COLUMNS, SourceRow
from monitor.ingest.validate import Validator, raw_text
from monitor.progress import Progress
from monitor.store import campaigns as store
from monitor.store.campaigns import CampaignInfo, CampaignSpec
from monitor.store.engine import transaction
from monitor.store.models import IngestBatch

__all__ = [
    "CHUNK_SIZE",
    "FORMATS",
    "MAX_PROBLEMS",
    "IngestSummary",
    "create_campaign",
    "ingest_file",
    "ingest_items",
]

CHUNK_SIZE = 50_000
MAX_PROBLEMS = 200
FORMATS = ("csv", "jsonl", *READERS)
EXTENSIONS = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}


@dataclass(frozen=True)
class IngestSummary:
    """What became of one file: rows read, new, duplicate (already stored), rejected."""

    path: str
    format: str
    batch_id: int
    n_rows: int
    n_new: int
    n_duplicate: int
    n_rejected: int
    n_items: int
    detected_platform: str | None
    notes: list[str] = field(default_factory=list)


def create_campaign(engine: Engine, spec: CampaignSpec) -> CampaignInfo:
    """Define a campaign (UsageError when the spec is wrong or the name is taken)."""
    with transaction(engine) as session:
        return store.create_campaign(session, spec)


def list_campaigns(engine: Engine) -> list[CampaignInfo]:
    with transaction(engine) as session:
        return store.list_campaigns(session)


def choose_format(
    path: Path, format: str | None, options: dict[str, str] | None
) -> tuple[str, str | None]:
    """``(format, detected platform)``: ``--format`` if given, else the platform the file's
    first bytes show (for any extension but .jsonl/.ndjson), else the extension."""
    if format is not None:
        if format not in FORMATS:
            raise UsageError(f"unknown format '{format}'", hint="one of: " + ", ".join(FORMATS))
        return format, None
    if not path.is_file():
        raise NotFound(f"no such file: {path}")
    if options and "export" in options:
        return "prolific", "prolific"
    by_extension = EXTENSIONS.get(path.suffix.lower())
    if by_extension != "jsonl":
        platform = detect(path)
        if platform is not None:
            return platform, platform
    if by_extension is None:
        raise UsageError(
            f"cannot tell the format of {path}",
            hint="name it .csv or .jsonl, or pass --format " + "|".join(FORMATS),
        )
    return by_extension, None


def _check_plain_args(
    kind: str, mapping: dict[str, str] | None, options: dict[str, str] | None
) -> None:
    if options:
        raise UsageError(
            "--option is for platform formats",
            hint="platforms: " + ", ".join(READERS) + " (pass --format)",
        )
    columns = PREFERENCE_COLUMNS if kind == "pairwise" else JUDGMENT_COLUMNS
    for key, value in (mapping or {}).items():
        if key not in columns:
            raise UsageError(
                f"--map {key}: not a column of a {kind} campaign",
                hint="columns: " + ", ".join(columns),
            )
        if not value.strip():
            raise UsageError(f"--map {key}: empty value", hint=f"write --map {key}=COLUMN")


def _open_rows(
    path: Path,
    fmt: str,
    campaign: CampaignInfo,
    mapping: dict[str, str] | None,
    options: dict[str, str] | None,
    counter: ByteCounter,
    validator: Validator,
) -> Iterator[SourceRow | BadRecord | tuple[Any, ...]]:
    """The file's rows; those of a CSV file that are clean come already validated (tuples)."""
    if fmt in READERS:
        rows = READERS[fmt](path, kind=campaign.kind, mapping=mapping, options=options)
        rows.strict = False  # a record it cannot read comes as a BadRecord, like a CSV row's
        return rows
    _check_plain_args(campaign.kind, mapping, options)
    columns = PREFERENCE_COLUMNS if campaign.kind == "pairwise" else JUDGMENT_COLUMNS
    if fmt == "csv":
        return read_csv(
            path,
            columns=columns,
            mapping=mapping,
            counter=counter,
            check_header=validator.missing_columns,
            fast=validator.csv_fast,
        )
    return read_jsonl(path, columns=columns, mapping=mapping, counter=counter)


def file_checksum(path: Path) -> str:
    """sha256 of the file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _chunks(rows: Iterable[Any], size: int) -> Iterator[list[Any]]:
    iterator = iter(rows)
    while chunk := list(islice(iterator, size)):
        yield chunk


class _Run:
    """The state of one file's ingest: counts, problems, and the chunk processing."""

    def __init__(self, loader: Loader, validator: Validator, path: str, skip_invalid: bool) -> None:
        self.loader = loader
        self.validator = validator
        self.path = path
        self.skip_invalid = skip_invalid
        self.problems: list[Problem] = []
        self.capped = False
        self.n_rows = self.n_valid = self.n_new = self.n_rejected = 0
        self.n_items = self.n_workers = self.n_other_rejected = 0

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
            if type(record) is tuple:  # validated by the reader's fast path
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
                self.problems.extend(problems)
                if len(self.problems) >= MAX_PROBLEMS:
                    self.capped = True
                    break
        self.n_rows += len(judgments)
        self.n_valid += len(judgments)
        if self.problems:
            return None
        loader = self.loader
        chunk = loader.prepare(judgments)  # here, while the previous chunk is stored

        def load() -> tuple[int, int, int]:
            n_items = loader.upsert_items(items)
            n_workers = loader.upsert_workers(workers)
            loader.reject(rejected)
            n_new = loader.load(chunk)  # last: it may leave the COPY to Loader.finish
            return n_items, n_workers, n_new

        return load

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
    ) -> None:
        """Validate and load the chunks. On PostgreSQL the storing of a chunk's judgments
        (:meth:`Loader.finish`: the lookup of the stored digests, the COPY) runs in a helper
        thread while the next chunk is read, validated and prepared (the connection is only
        ever used by one thread at a time: the helper is waited for before the next load and
        before leaving).
        """
        loader = self.loader
        background = loader.defer = loader.pg
        pending: _Job | None = None
        try:
            for chunk in _chunks(rows, CHUNK_SIZE):
                load = self.process(chunk)
                if pending is not None:
                    job, pending = pending, None
                    self.n_new += job.wait()
                if load is not None:
                    self.loaded(load())
                    if background:
                        pending = _Job(loader.finish)
                bar.update(self.n_rows, counter.n)
                if self.capped:
                    self.problems.append(
                        Problem(
                            self.path, None, None, f"stopped reading after {MAX_PROBLEMS} problems"
                        )
                    )
                    break
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


def ingest_file(
    engine: Engine,
    path: Path,
    campaign: str,
    *,
    items: Path | None = None,
    format: str | None = None,  # noqa: A002 - the CLI option's name
    skip_invalid: bool = False,
    mapping: dict[str, str] | None = None,
    options: dict[str, str] | None = None,
    progress: bool = False,
) -> IngestSummary:
    """Ingest one file of judgments (and optionally its items file) into ``campaign``.

    Raises InputError with every problem (up to :data:`MAX_PROBLEMS`) when a row is bad and
    ``skip_invalid`` is false; nothing is written then. NotFound for a missing file or campaign,
    UsageError for a bad format, mapping or option.
    """
    path = Path(path)
    fmt, detected = choose_format(path, format, options)
    if not path.is_file():
        raise NotFound(f"no such file: {path}")
    if items is not None and not Path(items).is_file():
        raise NotFound(f"no such file: {items}")
    checksum = file_checksum(path)
    notes: list[str] = []
    with transaction(engine) as session:
        info = store.get_campaign(session, campaign)
        counter = ByteCounter()
        plain = fmt in ("csv", "jsonl")
        validator = Validator(info, str(path), mapping if plain else None)
        rows = _open_rows(path, fmt, info, mapping, options, counter, validator)
        seen = session.scalars(
            select(IngestBatch.id)
            .where(IngestBatch.campaign_id == info.id, IngestBatch.checksum == checksum)
            .order_by(IngestBatch.id)
            .limit(1)
        ).first()
        if seen is not None:
            notes.append(f"the same file was ingested before (batch {seen})")
        batch = IngestBatch(
            campaign_id=info.id,
            path=str(path),
            checksum=checksum,
            format=fmt,
            n_rows=0,
            n_new=0,
            n_duplicate=0,
            n_rejected=0,
        )
        session.add(batch)
        session.flush()
        loader = Loader(session.connection(), info, batch.id)
        n_items = 0
        if items is not None:
            n_items = _items_into(loader, info, Path(items), skip_invalid, notes)
        state = _Run(loader, validator, str(path), skip_invalid)
        with Progress(
            path.name, total=path.stat().st_size if plain else None, enabled=progress
        ) as bar:
            state.run(rows, bar, counter)
        if state.problems:
            raise InputError(state.problems)
        notes.extend(getattr(rows, "notes", ()))  # a platform reader's remarks
        if validator.new_categories or (info.kind == "label" and validator.open_labels):
            cats = store.add_data_categories(session, info.id, list(validator.new_categories))
            if validator.new_categories:
                notes.append(f"categories taken from the data: {', '.join(cats)}")
        loader.close()
        if fmt in READERS and store.set_platform_if_unknown(session, info.id, fmt):
            notes.append(f"campaign platform set to {fmt} (workers' history is per platform)")
        n_items += state.n_items
        if state.n_workers:
            notes.append(f"{state.n_workers} worker rows (platform statuses) stored")
        if state.n_other_rejected:
            notes.append(f"{state.n_other_rejected} item or worker rows rejected")
        n_duplicate = state.n_valid - state.n_new
        batch.n_rows = state.n_rows
        batch.n_new = state.n_new
        batch.n_duplicate = n_duplicate
        batch.n_rejected = state.n_rejected
        batch.finished_at = datetime.now(UTC)
        batch_id = batch.id
    store.refresh_statistics(engine, info.kind, state.n_new)
    return IngestSummary(
        path=str(path),
        format=fmt,
        batch_id=batch_id,
        n_rows=state.n_rows,
        n_new=state.n_new,
        n_duplicate=n_duplicate,
        n_rejected=state.n_rejected,
        n_items=n_items,
        detected_platform=detected,
        notes=notes,
    )


def _items_into(
    loader: Loader, info: CampaignInfo, path: Path, skip_invalid: bool, notes: list[str]
) -> int:
    """Load an items file through ``loader`` (same transaction); the number of items stored."""
    validator = Validator(info, str(path))
    stored = rejected = 0
    problems: list[Problem] = []
    for chunk in _chunks(read_items(path), CHUNK_SIZE):
        good: list[Any] = []
        bad: list[tuple[int | None, str, list[str]]] = []
        for record in chunk:
            if isinstance(record, BadRecord):
                found, raw = [record.problem], record.raw
            else:
                out = validator.check(record)
                if not isinstance(out, list):
                    good.append(out[1])
                    continue
                found, raw = out, raw_text(record)
            if skip_invalid:
                bad.append((record.line, raw, [str(p) for p in found]))
            else:
                problems.extend(found)
        if len(problems) >= MAX_PROBLEMS:
            break
        if not problems:
            stored += loader.upsert_items(good)
            loader.reject(bad)
            rejected += len(bad)
    if problems:
        raise InputError(problems[:MAX_PROBLEMS])
    if rejected:
        notes.append(f"{rejected} rows of the items file {path} rejected")
    return stored


def ingest_items(engine: Engine, path: Path, campaign: str) -> int:
    """Load an items file (``item``, optional ``gold``, ``text``); the number of items stored.

    Existing items keep the gold value or text the file does not give. All or nothing.
    """
    path = Path(path)
    if not path.is_file():
        raise NotFound(f"no such file: {path}")
    with transaction(engine) as session:
        info = store.get_campaign(session, campaign)
        batch = IngestBatch(
            campaign_id=info.id,
            path=str(path),
            checksum=file_checksum(path),
            format="items",
            n_rows=0,
            n_new=0,
            n_duplicate=0,
            n_rejected=0,
        )
        session.add(batch)
        session.flush()
        loader = Loader(session.connection(), info, batch.id)
        n = _items_into(loader, info, path, False, [])
        loader.close()
        batch.finished_at = datetime.now(UTC)
        return n
