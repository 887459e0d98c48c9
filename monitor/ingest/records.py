"""The records ingestion validates rows into, their dedup keys, and how rows are written in
messages and in the rejected_rows table.

Records are plain tuples (millions of them pass through); their last element is the line the
row starts on, so that a later check can name it. The dedup key of a judgment is
``id:<judgment_id>`` when the row has one, else ``sha256:<hex>`` of the canonical row (worker,
item or left/right, value or preference, created_at in UTC).
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any

from monitor.ingest.rows import SourceRow

MAX_ID = 255
SEP = "\x1f"
SHOWN = 20
_sha256 = hashlib.sha256

# (worker, item, value_num, value_label, dedup_key, external_id, created_at, duration_s,
#  payload, annotations, line) - annotations: ((annotation, count), ...) for multilabel, else
#  None; line: where the row starts in its file.
JudgmentRecord = tuple[
    str,
    str,
    float | None,
    str | None,
    str,
    str | None,
    datetime | None,
    float | None,
    dict[str, Any] | None,
    tuple[tuple[str, int], ...] | None,
    int,
]
# (worker, left, right, outcome, dedup_key, external_id, created_at, duration_s, payload, line)
PreferenceRecord = tuple[
    str, str, str, str, str, str | None, datetime | None, float | None, dict[str, Any] | None, int
]
ItemRecord = tuple[str, str | None, str | None]  # (item, gold, text)
WorkerRecord = tuple[str, dict[str, Any]]  # (worker, platform)


def dedup_key(external: str | None, judged: tuple[str, ...], created: datetime | None) -> str:
    """``id:<external>``, else ``sha256:`` of the judgment (``judged``: worker, item(s) and
    answer as text) and its time in UTC."""
    if external is not None:
        return "id:" + external
    stamp = created.isoformat() if created is not None else ""
    return "sha256:" + _sha256(SEP.join((*judged, stamp)).encode()).hexdigest()


def fmt_number(x: float | None) -> str:
    """1.0 -> '1', 2.5 -> '2.5'."""
    if x is None:
        return "?"
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def shown(value: Any) -> str:
    """A raw value as written in a message: strings quoted, JSON values as JSON."""
    if isinstance(value, str):
        text = value if len(value) <= 60 else value[:57] + "..."
        return f"'{text}'"
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def listing(values: tuple[str, ...] | list[str]) -> str:
    head = ", ".join(values[:SHOWN])
    return head + (f", ... ({len(values)} in all)" if len(values) > SHOWN else "")


def raw_text(row: SourceRow) -> str:
    """The row as JSON, for the rejected_rows table (NaN stays NaN: it is evidence)."""
    try:
        return json.dumps({**row.fields, **row.extra}, ensure_ascii=False, default=str)
    except (ValueError, RecursionError):  # a circular or too deep value (platform exports)
        return repr(sorted({**row.fields, **row.extra}))


def record_text(record: tuple[Any, ...], pairwise: bool) -> str:
    """A validated record as JSON, for the rejected_rows table."""
    if pairwise:
        names = ("worker", "left", "right", "preference")
        fields: dict[str, Any] = dict(zip(names, record[:4], strict=True))
    else:
        value = record[3] if record[2] is None else record[2]
        if record[9] is not None:
            value = [a for a, n in record[9] for _ in range(n)]
        fields = {"worker": record[0], "item": record[1], "value": value}
    fields["judgment_id"] = record[5]
    if record[6] is not None:
        fields["created_at"] = record[6].isoformat()
    if record[7] is not None:
        fields["duration_s"] = record[7]
    return json.dumps({**fields, **(record[8] or {})}, ensure_ascii=False, default=str)


def id_text(external: str) -> str:
    """The raw text of a row known only by its judgment id (read in an earlier chunk)."""
    return json.dumps({"judgment_id": external}, ensure_ascii=False)
