"""Readers for crowdsourcing platform exports: each maps one platform's file onto canonical rows.

Every reader has the same signature (see :class:`~monitor.ingest.platforms.mapping.Reader`) and
yields :class:`~monitor.ingest.rows.SourceRow` objects: judgments (or preferences), item rows for
gold values and texts found in the export, worker rows for platform statuses. The tabular
exports (MTurk, Toloka, Figure Eight, Prolific's submissions) are declarations read by one
engine (:mod:`~monitor.ingest.platforms.export`). Validation against the campaign (scale,
categories, ties) happens downstream on these rows; a reader refuses what it cannot map: a
problem of the file (a missing platform column, a mapping that fits nothing) with an
``InputError``, a problem of one record (an unreadable timestamp, an empty worker id, ...) as a
:class:`~monitor.ingest.rows.BadRecord` (see :class:`~monitor.ingest.platforms.mapping.Rows`).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from monitor.ingest.platforms import figure_eight, labelstudio, mturk, prolific, toloka
from monitor.ingest.platforms.mapping import Reader, Rows
from monitor.ingest.safe import JsonLines

__all__ = ["READERS", "Reader", "Rows", "detect"]

READERS: dict[str, Reader] = {
    "mturk": mturk.read,
    "labelstudio": labelstudio.read,
    "toloka": toloka.read,
    "prolific": prolific.read,
    "figure-eight": figure_eight.read,
}

_HEAD_BYTES = 1 << 16
_TOLOKA_PREFIXES = ("INPUT:", "OUTPUT:", "GOLDEN:", "ASSIGNMENT:")


def detect(path: Path | str) -> str | None:
    """The platform whose export ``path`` is, judged from its first bytes; None when unsure.

    MTurk: a CSV header with HITId, AssignmentId and WorkerId. Toloka: a tab-separated header
    with INPUT:/OUTPUT:/ASSIGNMENT: columns. Label Studio: a JSON array of tasks with
    ``annotations``. Prolific: a CSV header with Participant id and Status. Figure Eight: a CSV
    header with ``_unit_id`` and ``_worker_id`` (a full report).
    """
    try:
        with open(path, "rb") as handle:
            head = handle.read(_HEAD_BYTES)
    except OSError:
        return None
    text = head.decode("utf-8-sig", errors="replace").lstrip()
    if text.startswith("["):
        return (
            "labelstudio"
            if _looks_like_labelstudio(text, complete=len(head) < _HEAD_BYTES)
            else None
        )
    lines = text.splitlines()
    if not lines:
        return None
    first = lines[0]
    if "\t" in first:
        columns = next(csv.reader([first], delimiter="\t"))
        if any(c.strip().startswith(_TOLOKA_PREFIXES) for c in columns):
            return "toloka"
        return None
    columns = [c.strip() for c in next(csv.reader([first]))]
    if {"HITId", "AssignmentId", "WorkerId"} <= set(columns):
        return "mturk"
    if prolific.is_export(columns):
        return "prolific"
    if figure_eight.is_full_report(columns):
        return "figure-eight"
    return None


def _looks_like_labelstudio(text: str, *, complete: bool) -> bool:
    body = text[1:].lstrip()
    if not body.startswith("{"):
        return False
    try:
        first, _ = JsonLines().raw_decode(body)
    except json.JSONDecodeError:
        # The first task is longer than the bytes read (Label Studio writes "annotations"
        # before "data"): judge by the keys seen so far.
        return not complete and '"annotations"' in body
    except (ValueError, RecursionError):
        # JSON the reader refuses at its line (a key twice, a huge integer, deep nesting).
        return '"annotations"' in body
    return isinstance(first, dict) and "annotations" in first and "data" in first
