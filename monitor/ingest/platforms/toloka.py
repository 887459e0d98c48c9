"""Toloka assignments export (TSV with ``INPUT:``, ``OUTPUT:``, ``GOLDEN:``, ``ASSIGNMENT:`` columns).

One row is one assignment of one task: ``ASSIGNMENT:worker_id`` is the worker,
``ASSIGNMENT:assignment_id`` + ``/`` + ``ASSIGNMENT:task_id`` the judgment id (one assignment is
a task suite of one or more tasks), ``ASSIGNMENT:submitted`` the time (Toloka writes UTC without
an offset) and ``submitted - started`` the duration. SUBMITTED, ACCEPTED and APPROVED rows are
kept; REJECTED only with the option ``keep_rejected``; SKIPPED, EXPIRED and ACTIVE rows carry no
answer and are skipped. A filled ``GOLDEN:`` column becomes the item's gold value. See
``docs/platforms/toloka.md``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from monitor.ingest.platforms.mapping import (
    Kind,
    Where,
    canonical_value,
    check_args,
    flag,
    missing_column,
    open_table,
    pairwise_codes,
    resolve_column,
    truthy_cell,
    utc_iso,
    utc_time,
)
from monitor.ingest.rows import SourceRow

OPTIONS = ("keep_rejected",)
WORKER = "ASSIGNMENT:worker_id"
STATUS = "ASSIGNMENT:status"
KEPT = frozenset({"SUBMITTED", "ACCEPTED", "APPROVED"})
SKIPPED = frozenset({"SKIPPED", "EXPIRED", "ACTIVE"})
ITEM_DEFAULTS = ("INPUT:item", "INPUT:item_id", "INPUT:id", "ASSIGNMENT:task_id")
TIME_HINT = "expected ISO 8601 like 2025-11-03T09:12:45.123"


@dataclass
class _Plan:
    worker: str
    value: tuple[str, ...]  # one OUTPUT column, or the columns of a checkbox group
    group: bool  # a group of checkbox columns: the labels are the names after ``prefix``
    prefix: str  # the group's common start after ``OUTPUT:``/``GOLDEN:``
    gold: tuple[str, ...]  # matching GOLDEN: columns (may be empty)
    item: str = ""
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
    """Stream a Toloka assignments TSV as canonical judgment rows and gold/text item rows."""
    mapping, options = check_args("Toloka", kind, mapping, options, option_names=OPTIONS)
    keep_rejected = flag(options, "keep_rejected")
    codes = pairwise_codes(mapping.get("pairwise"))
    return _rows(Path(path), kind, mapping, keep_rejected, codes)


def _rows(
    path: Path, kind: str, mapping: dict[str, str], keep_rejected: bool, codes: dict[str, str]
) -> Iterator[SourceRow]:
    name = str(path)
    with open_table(path, "\t") as (header, records):
        plan = _plan(name, header, kind, mapping)
        seen_gold: set[str] = set()
        seen_text: set[str] = set()
        for line, rec in records:
            where = Where(name, line)
            status = rec.get(STATUS, "").strip().upper()
            if status in SKIPPED or (status == "REJECTED" and not keep_rejected):
                continue
            if status and status not in KEPT and status != "REJECTED":
                raise where.at(STATUS).error(
                    f"unknown status '{rec[STATUS].strip()}'",
                    hint="expected SUBMITTED, ACCEPTED, APPROVED, REJECTED, SKIPPED, EXPIRED or ACTIVE",
                )
            worker = rec[plan.worker].strip()
            if not worker:
                raise where.at(plan.worker).error(
                    "empty worker id", hint="export assignments, not tasks"
                )
            value = _value(kind, plan, plan.value, rec, codes, where)
            fields: dict[str, Any] = {"worker": worker}
            if kind == "pairwise":
                fields["left"] = rec[plan.left].strip()
                fields["right"] = rec[plan.right].strip()
                fields["preference"] = value
            else:
                item = rec[plan.item].strip()
                fields["item"] = item
                fields["value"] = value
                yield from _item_rows(kind, plan, rec, item, codes, where, seen_gold, seen_text)
            fields.update(_times(rec, where))
            extra = {"task_id": rec.get("ASSIGNMENT:task_id", ""), "status": status}
            yield SourceRow(line, fields, table="judgment", extra=extra)


def _item_rows(
    kind: str,
    plan: _Plan,
    rec: Mapping[str, str],
    item: str,
    codes: dict[str, str],
    where: Where,
    seen_gold: set[str],
    seen_text: set[str],
) -> Iterator[SourceRow]:
    """One item row with the gold value (first golden row) and the text (first row) if new."""
    fields: dict[str, Any] = {"item": item}
    if plan.gold and item not in seen_gold and any(rec[c].strip() for c in plan.gold):
        seen_gold.add(item)
        fields["gold"] = _value(kind, plan, plan.gold, rec, codes, where)
    if plan.text and item not in seen_text:
        seen_text.add(item)
        fields["text"] = rec[plan.text]
    if len(fields) > 1:
        yield SourceRow(where.line or 0, fields, table="item")


def _value(
    kind: str,
    plan: _Plan,
    columns: tuple[str, ...],
    rec: Mapping[str, str],
    codes: dict[str, str],
    where: Where,
) -> Any:
    if not plan.group:
        return canonical_value(kind, rec[columns[0]], codes, where.at(columns[0]))
    space = columns[0].split(":", 1)[0]
    chosen = [c.split(":", 1)[1][len(plan.prefix) :] for c in columns if truthy_cell(rec[c])]
    return canonical_value(kind, chosen, codes, where.at(f"{space}:{plan.prefix}*"))


def _times(rec: Mapping[str, str], where: Where) -> dict[str, Any]:
    out: dict[str, Any] = {}
    assignment = rec.get("ASSIGNMENT:assignment_id", "").strip()
    if assignment:
        # A task suite is one assignment of several tasks: the task tells its answers apart.
        task = rec.get("ASSIGNMENT:task_id", "").strip()
        out["judgment_id"] = f"{assignment}/{task}" if task else assignment
    moments = {}
    for column in ("ASSIGNMENT:started", "ASSIGNMENT:submitted"):
        text = rec.get(column, "").strip()
        if text:
            moments[column] = utc_time(text, where.at(column), TIME_HINT)
    submitted = moments.get("ASSIGNMENT:submitted")
    if submitted is not None:
        out["created_at"] = utc_iso(submitted)
        started = moments.get("ASSIGNMENT:started")
        if started is not None:
            spent = (submitted - started).total_seconds()
            if spent < 0:
                raise where.at("ASSIGNMENT:submitted").error("submitted before started")
            out["duration_s"] = int(spent) if spent.is_integer() else spent
    return out


def _plan(name: str, header: list[str], kind: str, mapping: dict[str, str]) -> _Plan:
    inputs = [c for c in header if c.startswith("INPUT:")]
    outputs = [c for c in header if c.startswith("OUTPUT:")]
    worker = mapping.get("worker", WORKER)
    if worker not in header:
        hint = "expected a Toloka assignments TSV (INPUT:..., OUTPUT:..., ASSIGNMENT:worker_id)"
        if "worker" in mapping:
            raise missing_column(name, "worker", worker, [WORKER, *inputs])
        raise Where(name, 1, WORKER).error("not in the header", hint=hint)
    spec = mapping.get("value")
    if spec is None:
        if len(outputs) != 1:
            raise Where(name, 1).error(
                ("several output columns: " + ", ".join(outputs))
                if outputs
                else "no OUTPUT column",
                hint="choose one with --map value=COLUMN",
            )
        value, group, prefix = (outputs[0],), False, ""
    elif spec.endswith("*"):
        group, prefix = True, spec[:-1].removeprefix("OUTPUT:")
        value = tuple(c for c in outputs if c.startswith("OUTPUT:" + prefix))
        if not value:
            raise missing_column(name, "value", spec, outputs)
    else:
        found = resolve_column(spec, outputs, ("OUTPUT:",))
        if found is None:
            raise missing_column(name, "value", spec, outputs)
        value, group, prefix = (found,), False, ""
    gold = tuple("GOLDEN:" + c.split(":", 1)[1] for c in value if c.startswith("OUTPUT:"))
    gold = gold if kind != "pairwise" and all(g in header for g in gold) else ()
    plan = _Plan(worker=worker, value=value, group=group, prefix=prefix, gold=gold)

    def column(key: str, spec: str, candidates: list[str]) -> str:
        found = resolve_column(spec, header, ("INPUT:",))
        if found is None:
            raise missing_column(name, key, spec, candidates)
        return found

    if kind == "pairwise":
        plan.left = column("left", mapping.get("left", "INPUT:left"), inputs)
        plan.right = column("right", mapping.get("right", "INPUT:right"), inputs)
        return plan
    if "item" in mapping:
        plan.item = column("item", mapping["item"], [*inputs, "ASSIGNMENT:task_id"])
    else:
        plan.item = next((c for c in ITEM_DEFAULTS if c in header), "")
        if not plan.item:
            raise missing_column(name, "item", "ASSIGNMENT:task_id", inputs)
    if "text" in mapping:
        plan.text = column("text", mapping["text"], inputs)
    return plan
