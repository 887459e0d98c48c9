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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from monitor.errors import NotFound, UsageError
from monitor.ingest.platforms.mapping import (
    Kind,
    Where,
    canonical_value,
    check_args,
    decode_preference,
    flag,
    json_value,
    missing_column,
    open_table,
    pairwise_codes,
    seconds,
    utc_iso,
    utc_time,
)
from monitor.ingest.rows import JUDGMENT_COLUMNS, PREFERENCE_COLUMNS, SourceRow

OPTIONS = ("export", "keep_rejected", "keep_unknown")
MAPPING_KEYS = (*dict.fromkeys(JUDGMENT_COLUMNS + PREFERENCE_COLUMNS), "pairwise")
KEPT = frozenset({"APPROVED", "AWAITING REVIEW"})
DROPPED = frozenset({"RETURNED", "TIMED OUT", "SCREENED OUT", "ACTIVE"})
# Export column -> worker field; names are compared lower case with spaces for "_". Exports
# before 2023 wrote session_id, participant_id, status, started_datetime, completed_date_time,
# time_taken.
TIMES = {
    "started at": "started_at", "started datetime": "started_at",
    "completed at": "completed_at", "completed date time": "completed_at",
}  # fmt: skip
SUBMISSION = ("submission id", "session id")
RANK = {"kept": 2, "rejected": 1, "dropped": 0}


@dataclass(frozen=True)
class _Participant:
    line: int
    status: str  # upper case, "-" and "_" as spaces: "TIMED OUT"
    row: SourceRow


def read(
    path: Path,
    *,
    kind: Kind,
    mapping: dict[str, str] | None = None,
    options: dict[str, str] | None = None,
) -> Iterator[SourceRow]:
    """Worker rows from a Prolific export, then (with ``export=``) the joined answer rows."""
    mapping, options = check_args(
        "Prolific", kind, mapping, options, keys=MAPPING_KEYS, option_names=OPTIONS
    )
    keep_rejected = flag(options, "keep_rejected")
    keep_unknown = flag(options, "keep_unknown")
    codes = pairwise_codes(mapping.get("pairwise")) if "pairwise" in mapping else None
    export = options.get("export", "").strip()
    if "export" in options and not export:
        raise UsageError("option export: empty path", hint="write export=PATH")
    return _rows(
        Path(path), Path(export) if export else None, kind, mapping, codes,
        keep_rejected, keep_unknown,
    )  # fmt: skip


def is_export(header: list[str]) -> bool:
    """A Prolific submissions export has a participant id and a status column."""
    names = {_norm(h) for h in header}
    return {"participant id", "status"} <= names


def _norm(name: str) -> str:
    return " ".join(name.strip().lower().replace("_", " ").split())


def _status_key(text: str) -> str:
    return " ".join(text.strip().upper().replace("-", " ").replace("_", " ").split())


def _rows(
    path: Path,
    export: Path | None,
    kind: str,
    mapping: dict[str, str],
    codes: dict[str, str] | None,
    keep_rejected: bool,
    keep_unknown: bool,
) -> Iterator[SourceRow]:
    id_column = mapping.get("worker")
    if export is None:
        participants = _read_export(path, alone=True, id_column=id_column)
    else:
        participants = _read_export(export, alone=False, id_column=id_column)
    for participant in participants.values():
        yield participant.row
    if export is None:
        return
    kept = KEPT | {"REJECTED"} if keep_rejected else KEPT
    name = str(path)
    worker_column = mapping.get("worker", "worker")
    for line, fields, extra in _answers(path, kind, mapping, codes):
        where = Where(name, line, worker_column)
        raw = fields.get("worker")
        if raw is not None and (not isinstance(raw, str | int) or isinstance(raw, bool)):
            raise where.error(f"expected a participant id, got {json.dumps(raw)}")
        worker = str(raw or "").strip()
        if not worker:
            raise where.error("no participant id")
        fields["worker"] = worker
        participant = participants.get(worker)
        if participant is None:
            if not keep_unknown:
                raise where.error(
                    f"participant '{worker}' is not in the Prolific export {export}",
                    hint="check the study, or keep such answers with the option keep_unknown",
                )
        elif participant.status not in kept:
            continue
        yield SourceRow(line, fields, table="judgment", extra=extra)


def _read_export(path: Path, *, alone: bool, id_column: str | None) -> dict[str, _Participant]:
    """One worker row per participant (their best submission: kept, then rejected, then last).

    The participant id is the ``Participant id`` column, else the column ``--map worker`` names
    when the export has it (an export whose id column is ``PROLIFIC_PID``).
    """
    name = str(path)
    participants: dict[str, _Participant] = {}
    with open_table(path, ",", exact=True) as (header, records):
        columns = {_norm(h): h for h in header}
        if "participant id" not in columns and id_column in header and "status" in columns:
            columns["participant id"] = id_column
        elif not is_export(header):
            if alone:
                raise UsageError(
                    f"{name} is not a Prolific export (no 'Participant id' and 'Status' columns)",
                    hint="to join answers with the export, pass the option export=PATH",
                )
            raise Where(name, 1, "Participant id").error(
                "not in the header",
                hint="expected Prolific's submissions export (Participant id, Status, ...)",
            )
        for line, rec in records:
            where = Where(name, line)
            pid = rec[columns["participant id"]].strip()
            if not pid:
                raise where.at(columns["participant id"]).error("empty participant id")
            raw_status = rec[columns["status"]].strip()
            status = _status_key(raw_status)
            if status in KEPT:
                rank = RANK["kept"]
            elif status == "REJECTED":
                rank = RANK["rejected"]
            elif status in DROPPED:
                rank = RANK["dropped"]
            else:
                raise where.at(columns["status"]).error(
                    f"unknown status '{raw_status}'",
                    hint="expected APPROVED, AWAITING REVIEW, REJECTED, RETURNED, TIMED-OUT, "
                    "SCREENED OUT or ACTIVE",
                )
            fields: dict[str, Any] = {"worker": pid, "status": status.lower().replace(" ", "_")}
            for column, field in TIMES.items():
                text = rec[columns[column]].strip() if column in columns else ""
                if text:
                    at = where.at(columns[column])
                    fields[field] = utc_iso(utc_time(text, at, "expected ISO 8601"))
            taken = rec[columns["time taken"]].strip() if "time taken" in columns else ""
            if taken:
                try:
                    fields["duration_s"] = seconds(taken)
                except ValueError:
                    raise where.at(columns["time taken"]).error(
                        f"cannot read '{taken}' as seconds"
                    ) from None
            submission = next((columns[c] for c in SUBMISSION if c in columns), "")
            extra = {"submission_id": rec.get(submission, ""), "file": name}
            row = SourceRow(line, fields, table="worker", extra=extra)
            before = participants.get(pid)
            if before is None or rank >= _rank(before.status):
                participants[pid] = _Participant(line, status, row)
    return participants


def _rank(status: str) -> int:
    if status in KEPT:
        return RANK["kept"]
    return RANK["rejected"] if status == "REJECTED" else RANK["dropped"]


def _answers(
    path: Path, kind: str, mapping: dict[str, str], codes: dict[str, str] | None
) -> Iterator[tuple[int, dict[str, Any], dict[str, Any]]]:
    """Canonical answer records (CSV or JSON Lines by extension), columns renamed by mapping."""
    columns = PREFERENCE_COLUMNS if kind == "pairwise" else JUDGMENT_COLUMNS
    sources = {c: mapping.get(c, c) for c in columns}
    name = str(path)
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        records: Iterator[tuple[int, dict[str, Any]]] = _jsonl(path)
        yield from _canonical(name, records, kind, sources, codes)
        return
    with open_table(path, ",") as (header, rows):
        for key in ("worker", *mapping):
            if key in sources and sources[key] not in header:
                raise missing_column(name, key, sources[key], header)
        yield from _canonical(name, rows, kind, sources, codes)


def _canonical(
    name: str,
    records: Iterator[tuple[int, dict[str, Any]]],
    kind: str,
    sources: dict[str, str],
    codes: dict[str, str] | None,
) -> Iterator[tuple[int, dict[str, Any], dict[str, Any]]]:
    used = set(sources.values())
    for line, rec in records:
        fields = {c: rec[src] for c, src in sources.items() if src in rec}
        where = Where(name, line)
        if kind == "multilabel" and "value" in fields:
            fields["value"] = canonical_value(kind, fields["value"], {}, where.at(sources["value"]))
        if codes is not None and "preference" in fields:
            column = sources["preference"]
            fields["preference"] = decode_preference(fields["preference"], codes, where.at(column))
        extra = {k: v for k, v in rec.items() if k not in used}
        yield line, fields, extra


def _jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    name = str(path)
    try:
        handle = open(path, encoding="utf-8-sig")  # noqa: SIM115 (closed below)
    except FileNotFoundError:
        raise NotFound(f"no such file: {name}") from None
    with handle:
        try:
            for line, text in enumerate(handle, 1):
                if not text.strip():
                    continue
                record = json_value(text, Where(name, line))
                if not isinstance(record, dict):
                    raise Where(name, line).error("expected a JSON object")
                yield line, record
        except UnicodeDecodeError:
            raise Where(name, None).error("not UTF-8 text", hint="save the file as UTF-8") from None
