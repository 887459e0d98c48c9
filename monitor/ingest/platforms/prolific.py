"""Prolific: participants' statuses and times from the submissions export, joined with answers.

Prolific records who took part, not what they answered (the answers live in the survey or
annotation tool). Read alone, the export yields one worker row per participant (status, start,
completion, time taken). With the option ``export=PATH``, the file read is a canonical CSV or
JSON Lines file of answers whose worker column holds the Prolific participant id: its rows are
kept or dropped by the participant's status (APPROVED and AWAITING REVIEW kept; REJECTED only
with ``keep_rejected``; RETURNED, TIMED-OUT, SCREENED OUT and ACTIVE dropped). See
``docs/platforms/prolific.md``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from monitor.core.errors import InputError, NotFound, Problem, UsageError
from monitor.ingest.jsondoc import decode_problem
from monitor.ingest.platforms.export import Clock, Export, Statuses, status_word
from monitor.ingest.platforms.mapping import (
    Record,
    Request,
    Where,
    canonical_value,
    decode_preference,
    parse_iso,
    reader,
    utc_iso,
)
from monitor.ingest.platforms.table import missing_column, open_table
from monitor.ingest.rows import JUDGMENT_COLUMNS, PREFERENCE_COLUMNS, BadRecord, SourceRow
from monitor.ingest.safe import JsonLines

OPTIONS = ("export", "keep_rejected", "keep_unknown")
MAPPING_KEYS = (*dict.fromkeys(JUDGMENT_COLUMNS + PREFERENCE_COLUMNS), "pairwise")
# Column names are compared lower case with spaces for "_" (see _norm). Exports before 2023
# wrote session_id, participant_id, status, started_datetime, completed_date_time, time_taken.
PROLIFIC = Export(
    platform="Prolific",
    delimiter=",",
    exact=True,  # Prolific writes every field: a short row is a damaged one
    worker="participant id",
    required=("participant id", "status"),
    expected="expected Prolific's submissions export (Participant id, Status, ...)",
    judgment="submission id",
    worked="time taken",
    clock=Clock(parse_iso, "expected ISO 8601"),
    statuses=Statuses(
        "status",
        rejected=frozenset({"REJECTED"}),
        skipped=frozenset({"RETURNED", "TIMED OUT", "SCREENED OUT", "ACTIVE"}),
        kept=frozenset({"APPROVED", "AWAITING REVIEW"}),
        expected="expected APPROVED, AWAITING REVIEW, REJECTED, RETURNED, TIMED-OUT, "
        "SCREENED OUT or ACTIVE",
    ),
)
# Other names of the export's columns -> the declared ones; the times go to the worker rows.
ALIASES = {"session id": "submission id"}
TIMES = {
    "started at": "started_at", "started datetime": "started_at",
    "completed at": "completed_at", "completed date time": "completed_at",
}  # fmt: skip
RANK = {"kept": 2, "rejected": 1, "skipped": 0}


@dataclass(frozen=True)
class _Participant:
    rank: int  # of the status: kept 2, rejected 1, dropped 0
    row: SourceRow


def _check(request: Request) -> None:
    if "export" in request.options and not request.options["export"].strip():
        raise UsageError("option export: empty path", hint="write export=PATH")


def is_export(header: list[str]) -> bool:
    """A Prolific submissions export has a participant id and a status column."""
    names = {_norm(h) for h in header}
    return {"participant id", "status"} <= names


def _norm(name: str) -> str:
    return " ".join(name.strip().lower().replace("_", " ").split())


def _rows(path: Path, request: Request, notes: list[str]) -> Iterator[Record]:
    """Worker rows from a Prolific export, then (with ``export=``) the joined answer rows."""
    mapping, kind = request.mapping, request.kind
    codes = request.codes if "pairwise" in mapping else None
    text = request.options.get("export", "").strip()
    export = Path(text) if text else None
    id_column = mapping.get("worker")
    participants = _read_export(export or path, alone=export is None, id_column=id_column)
    for known in participants.values():
        yield known.row
    if export is None:
        return
    least = RANK["rejected"] if request.flag("keep_rejected") else RANK["kept"]
    keep_unknown = request.flag("keep_unknown")
    name = str(path)
    worker_column = mapping.get("worker", "worker")
    for answer in _answers(path, kind, mapping, codes):
        if isinstance(answer, BadRecord):
            yield answer
            continue
        line, fields, extra = answer
        try:
            fields["worker"] = worker = _participant_id(fields, Where(name, line, worker_column))
        except InputError as exc:
            yield BadRecord(line, _raw({**fields, **extra}), exc.problems[0])
            continue
        participant = participants.get(worker)
        if participant is None and not keep_unknown:
            where = Where(name, line, worker_column)
            problem = where.error(
                f"participant '{worker}' is not in the Prolific export {export}",
                hint="check the study, or keep such answers with the option keep_unknown",
            ).problems[0]
            yield BadRecord(line, _raw({**fields, **extra}), problem)
        elif participant is None or participant.rank >= least:
            yield SourceRow(line, fields, table="judgment", extra=extra)


def _participant_id(fields: dict[str, Any], where: Where) -> str:
    raw = fields.get("worker")
    if raw is not None and (not isinstance(raw, str | int) or isinstance(raw, bool)):
        raise where.error(f"expected a participant id, got {json.dumps(raw)}")
    worker = str(raw or "").strip()
    if not worker:
        raise where.error("no participant id")
    return worker


read = reader(
    "Prolific",
    _rows,
    keys=MAPPING_KEYS,
    options=OPTIONS,
    flags=("keep_rejected", "keep_unknown"),
    check=_check,
)


def _read_export(path: Path, *, alone: bool, id_column: str | None) -> dict[str, _Participant]:
    """One worker row per participant (their best submission: kept, then rejected, then last).

    The participant id is the ``Participant id`` column, else the column ``--map worker`` names
    when the export has it (an export whose id column is ``PROLIFIC_PID``).
    """
    name = str(path)
    participants: dict[str, _Participant] = {}
    with open_table(path, PROLIFIC.delimiter, exact=PROLIFIC.exact) as (header, records):
        columns = {ALIASES.get(_norm(h), _norm(h)): h for h in header}
        if "participant id" not in columns and id_column in header and "status" in columns:
            columns["participant id"] = id_column
        elif not is_export(header):
            if alone:
                raise UsageError(
                    f"{name} is not a Prolific export (no 'Participant id' and 'Status' columns)",
                    hint="to join answers with the export, pass the option export=PATH",
                )
            missing = next(c for c in PROLIFIC.required if c not in columns)
            where = Where(name, 1, "Participant id" if missing == "participant id" else "Status")
            raise where.error("not in the header", hint=PROLIFIC.expected)
        assert PROLIFIC.statuses is not None  # noqa: S101 - declared above
        statuses = replace(PROLIFIC.statuses, column=columns["status"])
        for line, rec in records:
            if isinstance(rec, BadRecord):  # the export is the reference: it must be whole
                raise InputError(rec.problem)
            participant = _participant(rec, columns, statuses, Where(name, line))
            pid = participant.row.fields["worker"]
            before = participants.get(pid)
            if before is None or participant.rank >= before.rank:
                participants[pid] = participant
    return participants


def _participant(
    rec: dict[str, str], columns: dict[str, str], statuses: Statuses, where: Where
) -> _Participant:
    """One submission of the export as the participant's worker row."""
    pid = rec[columns["participant id"]].strip()
    if not pid:
        raise where.at(columns["participant id"]).error("empty participant id")
    rank = RANK[statuses.of(rec, where)]
    status = status_word(rec[statuses.column])
    fields: dict[str, Any] = {"worker": pid, "status": status.lower().replace(" ", "_")}
    for column, key in TIMES.items():
        if column in columns and (moment := PROLIFIC.clock.read(rec, columns[column], where)):
            fields[key] = utc_iso(moment)
    taken = columns.get(PROLIFIC.worked)
    if taken is not None and (text := rec[taken].strip()):
        fields["duration_s"] = PROLIFIC.seconds(text, where.at(taken))
    submission = rec.get(columns.get(PROLIFIC.judgment, ""), "")
    extra = {"submission_id": submission, "file": where.path}
    return _Participant(rank, SourceRow(where.line or 0, fields, table="worker", extra=extra))


Answer = tuple[int, dict[str, Any], dict[str, Any]]


def _answers(
    path: Path, kind: str, mapping: dict[str, str], codes: dict[str, str] | None
) -> Iterator[Answer | BadRecord]:
    """Canonical answer records (CSV or JSON Lines by extension), columns renamed by mapping;
    a record that cannot be read is a BadRecord."""
    columns = PREFERENCE_COLUMNS if kind == "pairwise" else JUDGMENT_COLUMNS
    sources = {c: mapping.get(c, c) for c in columns}
    name = str(path)
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        yield from _canonical(name, _jsonl(path), kind, sources, codes)
        return
    with open_table(path, ",") as (header, rows):
        for key in ("worker", *mapping):
            if key in sources and sources[key] not in header:
                raise missing_column(name, key, sources[key], header)
        yield from _canonical(name, rows, kind, sources, codes)


def _canonical(
    name: str,
    records: Iterator[tuple[int, dict[str, Any] | BadRecord]],
    kind: str,
    sources: dict[str, str],
    codes: dict[str, str] | None,
) -> Iterator[Answer | BadRecord]:
    used = set(sources.values())
    for line, rec in records:
        if isinstance(rec, BadRecord):
            yield rec
            continue
        fields = {c: rec[src] for c, src in sources.items() if src in rec}
        where = Where(name, line)
        try:
            if kind == "multilabel" and "value" in fields:
                at = where.at(sources["value"])
                fields["value"] = canonical_value(kind, fields["value"], {}, at)
            if codes is not None and "preference" in fields:
                at = where.at(sources["preference"])
                fields["preference"] = decode_preference(fields["preference"], codes, at)
        except InputError as exc:
            yield BadRecord(line, _raw(rec), exc.problems[0])
            continue
        yield line, fields, {k: v for k, v in rec.items() if k not in used}


def _raw(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, default=str)


def _jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any] | BadRecord]]:
    """The objects of a JSON Lines file with their lines; a line that is not UTF-8, not JSON
    (the problem at its line and character) or not an object is a BadRecord."""
    name = str(path)
    try:
        handle = open(path, "rb")  # noqa: SIM115 (closed below)
    except FileNotFoundError:
        raise NotFound(f"no such file: {name}") from None
    decoder = JsonLines()
    with handle:
        for line, data in enumerate(handle, 1):
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                raw = data.decode("utf-8", "replace").rstrip("\r\n")
                problem = Problem(name, line, None, "not UTF-8 text", "save the file as UTF-8")
                yield line, BadRecord(line, raw, problem)
                continue
            text = text.removeprefix("\ufeff") if line == 1 else text
            if not text.strip():
                continue
            try:
                record = decoder.loads(text)
            except (ValueError, RecursionError) as exc:
                why, hint, char = decode_problem(exc)
                problem = Problem(name, line, None, why, hint, char)
                yield line, BadRecord(line, text.rstrip("\r\n"), problem)
                continue
            if not isinstance(record, dict):
                problem = Problem(name, line, None, "expected a JSON object")
                yield line, BadRecord(line, text.rstrip("\r\n"), problem)
                continue
            yield line, record
