"""The Python API of ingestion (the CLI wraps it): campaigns, judgment files, item files.

One file is one transaction: it is read in chunks of :data:`CHUNK_SIZE` rows, each validated,
then loaded (workers and items upserted, the judgments whose dedup key is new stored: see
:mod:`monitor.ingest.load`). When a row is bad and ``skip_invalid`` is false, reading goes on to
collect the problems (the first :data:`MAX_PROBLEMS`; the others and their rows are counted),
nothing more is loaded, and the transaction is rolled back: nothing is written. With
``skip_invalid`` the bad rows are kept in ``rejected_rows`` with their reasons, in the same
transaction. A crash or Ctrl-C rolls everything back.
"""

from __future__ import annotations

import hashlib
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from monitor.core.errors import InputError, NotFound, Problem, UsageError
from monitor.core.progress import Progress
from monitor.ingest.chunks import MAX_PROBLEMS, FileRun, chunks
from monitor.ingest.files import DELIMITERS, ByteCounter, is_gzip, plain_suffix, sniff
from monitor.ingest.load import Loader
from monitor.ingest.platforms import READERS, Rows, detect
from monitor.ingest.readers import BadRecord, read_csv, read_items, read_jsonl
from monitor.ingest.rows import JUDGMENT_COLUMNS, PREFERENCE_COLUMNS, SourceRow
from monitor.ingest.validate import Validator, raw_text
from monitor.store import campaigns as store
from monitor.store.batches import id_marks
from monitor.store.campaigns import CampaignInfo, CampaignSpec
from monitor.store.engine import transaction
from monitor.store.models import IngestBatch
from monitor.store.plans import mark_answered, newest_preference_id, planned_items

__all__ = [
    "CHUNK_SIZE",
    "FORMATS",
    "MAX_PROBLEMS",
    "IngestSummary",
    "create_campaign",
    "ingest_file",
    "ingest_items",
    "load_records",
]

CHUNK_SIZE = 50_000
FORMATS = ("csv", "jsonl", *READERS)
EXTENSIONS = {".csv": "csv", ".tsv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}
"""Formats by extension (a ``.gz`` after it left out: ``x.csv.gz`` is a CSV file)."""


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
    by_extension = EXTENSIONS.get(plain_suffix(path))
    if by_extension != "jsonl":
        platform = detect(path)
        if platform is not None:
            return platform, platform
    if by_extension is None:
        by_extension = _sniffed_format(path)
    if by_extension is None:
        raise UsageError(
            f"cannot tell the format of {path}",
            hint="name it .csv, .tsv or .jsonl, or pass --format " + "|".join(FORMATS),
        )
    return by_extension, None


def _sniffed_format(path: Path) -> str | None:
    """The format of a file whose name does not tell it, from its first line: JSON Lines for
    an object, CSV for a header with a comma, semicolon, tab or bar; None otherwise."""
    head = sniff(path)
    text = head.decode("utf-8", errors="replace").lstrip()
    if text.startswith("{"):
        return "jsonl"
    first = text.splitlines()[0] if text else ""
    if b"\x00" not in head and any(d in first for d in DELIMITERS):
        return "csv"
    return None


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
    delimiter: str | None = None,
) -> Iterator[SourceRow | BadRecord | tuple[Any, ...]]:
    """The file's rows; those of a CSV file that are clean come already validated (tuples)."""
    if delimiter is not None and fmt != "csv":
        raise UsageError(f"--delimiter is for CSV files, not {fmt}")
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
            delimiter=delimiter,
        )
    return read_jsonl(path, columns=columns, mapping=mapping, counter=counter)


def file_checksum(path: Path) -> str:
    """sha256 of the file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _batch(
    session: Session, info: CampaignInfo, path: Path, checksum: str, fmt: str
) -> tuple[IngestBatch, Loader]:
    """A new ingest batch of ``path`` (counts set when it ends) and the loader of its rows."""
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
    batch.workers_before, batch.items_before = id_marks(session, info.id)
    session.flush()
    return batch, Loader(session.connection(), info, batch.id)


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
    delimiter: str | None = None,
) -> IngestSummary:
    """Ingest one file of judgments (and optionally its items file) into ``campaign``.

    Raises InputError with the first :data:`MAX_PROBLEMS` problems (and the number of all the
    problems and bad rows) when a row is bad and ``skip_invalid`` is false; nothing is written
    then. NotFound for a missing file or campaign, UsageError for a bad format, mapping or
    option.
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
        if info.kind == "pairwise":
            validator.planned = planned_items(session, info.id)
            validator.reject_mismatch = skip_invalid
        rows = _open_rows(path, fmt, info, mapping, options, counter, validator, delimiter)
        seen = session.scalars(
            select(IngestBatch.id)
            .where(IngestBatch.campaign_id == info.id, IngestBatch.checksum == checksum)
            .order_by(IngestBatch.id)
            .limit(1)
        ).first()
        if seen is not None:
            notes.append(f"the same file was ingested before (batch {seen})")
        batch, loader = _batch(session, info, path, checksum, fmt)
        before = newest_preference_id(session, info.id) if info.kind == "pairwise" else None
        n_items = 0
        if items is not None:
            n_items = _items_into(loader, info, Path(items), skip_invalid, notes)
        state = FileRun(loader, validator, str(path), skip_invalid)
        with Progress(
            path.name,
            total=path.stat().st_size if plain and not is_gzip(path) else None,
            enabled=progress,
        ) as bar:
            state.run(rows, bar, counter, CHUNK_SIZE)
        notes.extend(_settle_rows(session, info, state, validator, rows))
        loader.close()
        if state.n_unanswered:
            n = state.n_unanswered
            notes.append(
                f"{'1 row' if n == 1 else f'{n} rows'} not answered yet (blank preference) skipped"
            )
        if before is not None:
            notes.extend(_planned_answers(session, info.id, before))
        if validator.n_mismatch_rejected:
            n = validator.n_mismatch_rejected
            notes.append(
                f"{'1 row' if n == 1 else f'{n} rows'} rejected: a pair_id that names a planned "
                "pair of other items"
            )
        if fmt in READERS and store.set_platform_if_unknown(session, info.id, fmt):
            notes.append(f"campaign platform set to {fmt} (workers' history is per platform)")
        elif fmt in READERS and info.platform not in ("none", fmt):
            notes.append(
                f"warning: a {fmt} file in campaign {info.name} of platform {info.platform}: "
                f"its worker ids are {fmt}'s, and a worker's history is read from the other "
                f"campaigns of {info.platform} (ingest it into a {fmt} campaign if it is not "
                f"the same workers: monitor ingest undo --campaign {shlex.quote(info.name)} --batch "
                f"{batch.id})"
            )
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
        batch.workers_after, batch.items_after = id_marks(session, info.id)
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


def _planned_answers(session: Session, campaign_id: int, before: int) -> list[str]:
    """Map the new preferences back to the pairs ``monitor pairs plan`` planned; the notes
    count the rows that answer none, by kind."""
    found = mark_answered(session, campaign_id, before)
    n, kinds = found.n, found.mismatches
    notes = [f"{n} planned pair{'s' if n > 1 else ''} answered"] if n else []
    if kinds["other_items"]:
        notes.append(
            f"{_rows(kinds['other_items'])} a pair_id that names a planned pair of other items: "
            "kept as ordinary preferences, answering no planned pair (--skip-invalid rejects "
            "them)"
        )
    if kinds["again"]:
        notes.append(
            f"{_rows(kinds['again'])} a pair_id of a planned pair answered before: kept as "
            "ordinary preferences (the pair counts its first answer)"
        )
    if kinds["unknown"]:
        notes.append(f"{_rows(kinds['unknown'])} a pair_id that names no planned pair")
    return notes


def _rows(n: int) -> str:
    return "1 row carries" if n == 1 else f"{n} rows carry"


def _items_into(
    loader: Loader, info: CampaignInfo, path: Path, skip_invalid: bool, notes: list[str]
) -> int:
    """Load an items file through ``loader`` (same transaction); the number of items stored."""
    validator = Validator(info, str(path))
    stored = rejected = n_problems = n_bad = 0
    problems: list[Problem] = []
    for chunk in chunks(read_items(path), CHUNK_SIZE):
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
                n_problems, n_bad = n_problems + len(found), n_bad + 1
                problems.extend(found[: MAX_PROBLEMS - len(problems)])
        if not problems:
            stored += loader.upsert_items(good)
            loader.reject(bad)
            rejected += len(bad)
    if problems:
        raise InputError(problems, n_problems=n_problems, n_rows=n_bad)
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
        batch, loader = _batch(session, info, path, file_checksum(path), "items")
        n = _items_into(loader, info, path, False, [])
        loader.close()
        batch.workers_after, batch.items_after = id_marks(session, info.id)
        batch.finished_at = datetime.now(UTC)
        return n


def _settle_rows(
    session: Session, info: CampaignInfo, state: FileRun, validator: Validator, rows: object
) -> list[str]:
    """After the rows of a file or a pull ran: an InputError with the problems when a row was
    bad (the caller rolls back), else the categories the data added stored; the notes (the
    reader's remarks, the categories taken, the label warnings)."""
    if state.problems:
        raise InputError(
            state.problems,
            n_problems=state.n_problems,
            n_rows=state.n_rejected + state.n_other_rejected,
        )
    notes = list(getattr(rows, "notes", ()))  # a platform reader's remarks
    if validator.new_categories or (info.kind == "label" and validator.open_labels):
        cats = store.add_data_categories(session, info.id, list(validator.new_categories))
        if validator.new_categories:
            notes.append(f"categories taken from the data: {', '.join(cats)}")
        notes.extend(validator.label_notes())
    return notes


def load_records(
    session: Session,
    info: CampaignInfo,
    rows: Rows,
    *,
    source: str,
    checksum: str,
    fmt: str,
) -> IngestSummary:
    """Validate and load a platform reader's rows that did not come from a file (a pull from a
    platform's API) in the caller's transaction, as one ingest batch named ``source``: an
    InputError with the problems when a row is bad (the caller rolls back)."""
    rows.strict = False
    validator = Validator(info, source, None)
    batch, loader = _batch(session, info, Path(source), checksum, fmt)
    batch.path = source
    state = FileRun(loader, validator, source, False)
    with Progress(source, total=None, enabled=False) as bar:
        state.run(rows, bar, ByteCounter(), CHUNK_SIZE)
    notes = _settle_rows(session, info, state, validator, rows)
    loader.close()
    if store.set_platform_if_unknown(session, info.id, fmt):
        notes.append(f"campaign platform set to {fmt} (workers' history is per platform)")
    n_duplicate = state.n_valid - state.n_new
    batch.n_rows, batch.n_new = state.n_rows, state.n_new
    batch.n_duplicate, batch.n_rejected = n_duplicate, state.n_rejected
    batch.workers_after, batch.items_after = id_marks(session, info.id)
    batch.finished_at = datetime.now(UTC)
    session.flush()
    return IngestSummary(
        path=source,
        format=fmt,
        batch_id=batch.id,
        n_rows=state.n_rows,
        n_new=state.n_new,
        n_duplicate=n_duplicate,
        n_rejected=state.n_rejected,
        n_items=state.n_items,
        detected_platform=None,
        notes=notes,
    )
