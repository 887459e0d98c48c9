"""Figure Eight (Appen, formerly CrowdFlower) full report: one CSV row per judgment.

The full report's platform columns start with ``_``: ``_worker_id`` is the worker, ``_unit_id``
the item, ``_id`` the judgment id, ``_created_at`` the time (``3/14/2017 10:35:07``, UTC) and
``_created_at - _started_at`` the duration. The answer is the column named by ``--map value``, else
the only column without ``_`` that has a ``<name>_gold`` sibling. Rows of ``_golden`` units give
the unit's gold value from ``<name>_gold`` (as an items file would); ``_tainted`` rows (judgments
of workers Figure Eight stopped trusting) are skipped unless the option ``keep_tainted`` is set.
``_trust``, ``_missed``, ``_golden`` and ``_channel`` are kept in the payload. See
``docs/platforms/figure-eight.md``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from monitor.ingest.platforms.mapping import (
    Kind,
    Rows,
    Where,
    canonical_value,
    check_args,
    flag,
    missing_column,
    open_table,
    pairwise_codes,
    parse_iso,
    resolve_column,
    truthy_cell,
    utc_iso,
    utc_time,
)
from monitor.ingest.rows import SourceRow

OPTIONS = ("keep_tainted",)
REQUIRED = ("_unit_id", "_worker_id")
PAYLOAD = {"_trust": "trust", "_missed": "missed", "_golden": "golden", "_channel": "channel"}
TIME_HINT = "expected Figure Eight's format like 3/14/2017 10:35:07"


def is_full_report(header: list[str]) -> bool:
    """A full report has one row per judgment: a unit id and a worker id."""
    return set(REQUIRED) <= {h.strip() for h in header}


def parse_time(text: str) -> datetime:
    """Figure Eight's ``M/D/YYYY HH:MM:SS`` (UTC; without seconds, a two-digit year, or ISO 8601
    also accepted). Raises ValueError."""
    text = text.strip()
    if "/" not in text:
        return parse_iso(text)
    # The report writes the first; the others are what a spreadsheet re-save leaves.
    for pattern in ("%m/%d/%Y %H:%M:%S", "%m/%d/%Y %H:%M", "%m/%d/%y %H:%M:%S", "%m/%d/%y %H:%M"):
        try:
            return datetime.strptime(text, pattern).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise ValueError(f"cannot read {text!r}")


@dataclass
class _Plan:
    worker: str
    value: str
    gold: str  # the answer's ``_gold`` column, "" when there is none
    item: str = "_unit_id"
    left: str = ""
    right: str = ""
    text: str = ""


def read(
    path: Path,
    *,
    kind: Kind,
    mapping: dict[str, str] | None = None,
    options: dict[str, str] | None = None,
) -> Iterator[SourceRow]:
    """Stream a Figure Eight full report as judgment rows and gold/text item rows."""
    mapping, options = check_args("Figure Eight", kind, mapping, options, option_names=OPTIONS)
    keep_tainted = flag(options, "keep_tainted")
    codes = pairwise_codes(mapping.get("pairwise"))
    path = Path(path)
    return Rows(lambda notes: _rows(path, kind, mapping, keep_tainted, codes, notes))


def _rows(
    path: Path,
    kind: str,
    mapping: dict[str, str],
    keep_tainted: bool,
    codes: dict[str, str],
    notes: list[str],
) -> Iterator[SourceRow]:
    name = str(path)
    with open_table(path, ",") as (header, records):
        plan = _plan(name, header, kind, mapping)
        seen_gold: set[str] = set()
        seen_text: set[str] = set()
        tainted = several_gold = 0
        for line, rec in records:
            where = Where(name, line)
            if truthy_cell(rec.get("_tainted", "")) and not keep_tainted:
                tainted += 1
                continue
            worker = rec[plan.worker].strip()
            if not worker:
                raise where.at(plan.worker).error("empty worker id")
            value = _answer(kind, rec[plan.value], codes, where.at(plan.value))
            fields: dict[str, Any] = {"worker": worker}
            if kind == "pairwise":
                fields["left"] = rec[plan.left].strip()
                fields["right"] = rec[plan.right].strip()
                fields["preference"] = value
            else:
                item = rec[plan.item].strip()
                if not item:
                    raise where.at(plan.item).error("empty unit id")
                fields["item"] = item
                fields["value"] = value
                item_fields: dict[str, Any] = {"item": item}
                golden = truthy_cell(rec.get("_golden", ""))
                if golden and plan.gold and item not in seen_gold and rec[plan.gold].strip():
                    seen_gold.add(item)
                    gold = _gold(kind, rec[plan.gold], codes, where.at(plan.gold))
                    if gold is None:
                        several_gold += 1
                    else:
                        item_fields["gold"] = gold
                if plan.text and item not in seen_text:
                    seen_text.add(item)
                    item_fields["text"] = rec[plan.text]
                if len(item_fields) > 1:
                    yield SourceRow(line, item_fields, table="item")
            fields.update(_times(rec, where))
            extra = {key: rec[column] for column, key in PAYLOAD.items() if column in rec}
            yield SourceRow(line, fields, table="judgment", extra=extra)
        if tainted:
            notes.append(
                f"{tainted} tainted judgments skipped (--option keep_tainted=1 keeps them)"
            )
        if several_gold:
            notes.append(
                f"{several_gold} golden units accept several answers in {plan.gold}: "
                "no gold value kept for them"
            )


def _cells(text: str) -> list[str]:
    """Figure Eight joins several answers (checkboxes, accepted gold answers) with line breaks."""
    return [part.strip() for part in text.replace("\r\n", "\n").split("\n") if part.strip()]


def _answer(kind: str, text: str, codes: dict[str, str], where: Where) -> Any:
    if kind == "multilabel" and "\n" in text:
        return canonical_value(kind, _cells(text), codes, where)
    return canonical_value(kind, text, codes, where)


def _gold(kind: str, text: str, codes: dict[str, str], where: Where) -> Any:
    """The unit's gold value; None when a single-answer unit accepts several answers."""
    if kind != "multilabel" and len(_cells(text)) > 1:
        return None
    return _answer(kind, text, codes, where)


def _times(rec: Mapping[str, str], where: Where) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if rec.get("_id", "").strip():
        out["judgment_id"] = rec["_id"].strip()
    moments = {}
    for column in ("_started_at", "_created_at"):
        text = rec.get(column, "").strip()
        if text:
            moments[column] = utc_time(text, where.at(column), TIME_HINT, parse_time)
    created = moments.get("_created_at")
    if created is not None:
        out["created_at"] = utc_iso(created)
        started = moments.get("_started_at")
        if started is not None:
            spent = (created - started).total_seconds()
            if spent < 0:
                raise where.at("_created_at").error("created before started")
            out["duration_s"] = int(spent) if spent.is_integer() else spent
    return out


def _answer_columns(header: list[str]) -> list[str]:
    """Columns without ``_`` that have a ``<name>_gold`` sibling: the job's questions."""
    names = set(header)
    return [c for c in header if not c.startswith("_") and f"{c}_gold" in names]


def _plan(name: str, header: list[str], kind: str, mapping: dict[str, str]) -> _Plan:
    for required in REQUIRED:
        if required not in header and not (required == "_worker_id" and "worker" in mapping):
            hint = "expected a Figure Eight full report (_unit_id, _worker_id, ...)"
            if required == "_worker_id" and "_unit_id" in header:
                hint = "this looks like an aggregated report: download the full report"
            raise Where(name, 1, required).error("not in the header", hint=hint)
    inputs = [c for c in header if not c.startswith("_") and not c.endswith("_gold")]
    worker = mapping.get("worker", "_worker_id")
    if worker not in header:
        raise missing_column(name, "worker", worker, ["_worker_id", *inputs])
    questions = _answer_columns(header)
    spec = mapping.get("value")
    if spec is None:
        if len(questions) != 1:
            raise Where(name, 1).error(
                ("several answer columns: " + ", ".join(questions))
                if questions
                else "no answer column (a column with a <name>_gold sibling)",
                hint="choose one with --map value=COLUMN",
            )
        value = questions[0]
    else:
        if spec not in header:
            raise missing_column(name, "value", spec, questions or inputs)
        value = spec
    gold = f"{value}_gold" if kind != "pairwise" and f"{value}_gold" in header else ""
    plan = _Plan(worker=worker, value=value, gold=gold)

    def column(key: str, spec: str) -> str:
        found = resolve_column(spec, header)
        if found is None:
            raise missing_column(name, key, spec, inputs)
        return found

    if kind == "pairwise":
        plan.left = column("left", mapping.get("left", "left"))
        plan.right = column("right", mapping.get("right", "right"))
        return plan
    if "item" in mapping:
        plan.item = column("item", mapping["item"])
    if "text" in mapping:
        plan.text = column("text", mapping["text"])
    return plan
