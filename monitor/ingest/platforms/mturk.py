"""Amazon Mechanical Turk batch results (the CSV the requester site downloads) to canonical rows.

One assignment is one judgment: ``WorkerId`` is the worker, ``AssignmentId`` the judgment id,
``SubmitTime`` the time (MTurk's ``Mon Nov 03 09:12:45 PST 2025``, converted to UTC) and
``WorkTimeInSeconds`` the duration. The answer is an ``Answer.*`` column or a key of the JSON in
``Answer.taskAnswers`` (crowd-html-elements forms). Rejected assignments are skipped unless the
option ``keep_rejected`` is set. A HIT asking several questions (``Input.item1..N``,
``Answer.q1..N``) is read with ``{n}`` in the mapping: one judgment per (assignment, n), id
``AssignmentId/n``. See ``docs/platforms/mturk.md``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from monitor.ingest.platforms.mapping import (
    Kind,
    Rows,
    Where,
    canonical_value,
    check_args,
    flag,
    json_value,
    missing_column,
    on_shaped,
    open_table,
    pairwise_codes,
    parse_mturk_time,
    resolve_column,
    seconds,
    truthy_cell,
    utc_iso,
    utc_time,
)
from monitor.ingest.rows import SourceRow

OPTIONS = ("keep_rejected",)
TASK_ANSWERS = "Answer.taskAnswers"
ITEM_DEFAULTS = ("Input.item", "Input.item_id", "Input.id", "HITId")
TIME_HINT = "expected MTurk's format like 'Mon Nov 03 09:12:45 PST 2025'"


@dataclass
class _Answer:
    """Where the answer lives: a column, a group of checkbox columns, or taskAnswers JSON."""

    how: str  # "column" | "columns" | "json" | "json_group" | "json_auto"
    name: str = ""  # column name, JSON key, or prefix of a group
    columns: tuple[str, ...] = ()


@dataclass
class _Plan:
    worker: str
    answer: _Answer
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
    """Stream an MTurk batch results CSV as canonical judgment (and item text) rows."""
    mapping, options = check_args("MTurk", kind, mapping, options, option_names=OPTIONS)
    keep_rejected = flag(options, "keep_rejected")
    codes = pairwise_codes(mapping.get("pairwise"))
    path = Path(path)
    return Rows(lambda notes: _rows(path, kind, mapping, keep_rejected, codes, notes))


def _rows(
    path: Path,
    kind: str,
    mapping: dict[str, str],
    keep_rejected: bool,
    codes: dict[str, str],
    notes: list[str],
) -> Iterator[SourceRow]:
    name = str(path)
    with open_table(path, ",") as (header, records):
        slots = _slots(name, header, mapping)
        plans = [(n, _plan(name, header, kind, m)) for n, m in slots]
        multi = slots[0][0] is not None
        seen: set[str] = set()
        blank = 0
        for line, rec in records:
            status = rec.get("AssignmentStatus", "").strip()
            if status.lower() == "rejected" and not keep_rejected:
                continue
            where = Where(name, line)
            answered = []
            for n, plan in plans:
                worker = rec[plan.worker].strip()
                if not worker:
                    raise where.at(plan.worker).error("empty worker id")
                raw, column = _raw_answer(plan, rec, where)
                if multi and _blank(raw):
                    if any(rec[c].strip() for c in (plan.item, plan.left, plan.right) if c):
                        blank += 1  # an unanswered question of the HIT
                    continue
                fields: dict[str, Any] = {"worker": worker}
                value = canonical_value(kind, raw, codes, where.at(column))
                if kind == "pairwise":
                    fields["left"] = rec[plan.left].strip()
                    fields["right"] = rec[plan.right].strip()
                    fields["preference"] = value
                else:
                    item = rec[plan.item].strip()
                    if multi and not item:
                        raise where.at(plan.item).error(
                            f"an answer in {column} but no item", hint="is the HIT complete?"
                        )
                    fields["item"] = item
                    fields["value"] = value
                    if plan.text and item not in seen:
                        seen.add(item)
                        yield SourceRow(line, {"item": item, "text": rec[plan.text]}, table="item")
                answered.append((n, fields))
            times = _times(rec, where)
            extra = {"hit_id": rec.get("HITId", ""), "assignment_status": status}
            if not multi:
                [(_, fields)] = answered
                fields.update(times)
                yield SourceRow(line, fields, table="judgment", extra=extra)
                continue
            for n, fields in answered:
                fields.update(_slot_times(times, n, len(answered)))
                yield SourceRow(line, fields, table="judgment", extra={**extra, "question": n})
        if blank:
            notes.append(f"{blank} unanswered questions skipped (blank answer cells)")


def _blank(raw: Any) -> bool:
    """An empty answer cell (an empty checkbox selection is an answer: none chosen)."""
    return raw is None or (isinstance(raw, str) and not raw.strip())


def _slot_times(times: dict[str, Any], n: str, answered: int) -> dict[str, Any]:
    """One question's share of an assignment: its own id, the time, an even share of the work."""
    out = dict(times)
    if "judgment_id" in out:
        out["judgment_id"] = f"{out['judgment_id']}/{n}"
    if "duration_s" in out:
        share = out["duration_s"] / answered
        out["duration_s"] = int(share) if float(share).is_integer() else round(share, 3)
    return out


def _slots(
    name: str, header: list[str], mapping: dict[str, str]
) -> list[tuple[str | None, dict[str, str]]]:
    """The mapping once per question number ``n`` when a value holds ``{n}``, else once.

    Each ``{n}`` spec matches the header columns (written in full or without ``Input.`` or
    ``Answer.``) it stands for; every such spec must find the same numbers.
    """
    templated = {k: v for k, v in mapping.items() if "{n}" in v}
    if not templated:
        return [(None, mapping)]
    found: dict[str, dict[str, str]] = {}
    for key, spec in templated.items():
        numbers: dict[str, str] = {}
        for prefix in ("", "Input.", "Answer."):
            head, _, tail = (prefix + spec).partition("{n}")
            star = tail.endswith("*")
            tail = tail.removesuffix("*")
            pattern = re.compile(
                re.escape(head) + r"(\d+)" + re.escape(tail) + (".*" if star else "")
            )
            for column in header:
                match = pattern.fullmatch(column)
                if match:
                    numbers.setdefault(str(int(match.group(1))), match.group(1))
            if numbers:
                break
        if not numbers:
            raise Where(name, 1, spec).error(
                "no column in the header matches",
                hint=f"{{n}} stands for a number: e.g. --map {key}=Input.item{{n}}",
            )
        found[key] = numbers
    keys = list(found)
    first = set(found[keys[0]])
    for key in keys[1:]:
        if set(found[key]) != first:
            a, b = templated[keys[0]], templated[key]
            only_a = sorted(first - set(found[key]), key=int)
            only_b = sorted(set(found[key]) - first, key=int)
            raise Where(name, 1).error(
                f"'{a}' and '{b}' do not have the same numbers",
                hint=f"n only in {a}: {', '.join(only_a) or 'none'}; "
                f"n only in {b}: {', '.join(only_b) or 'none'}",
            )
    return [
        (n, {k: v.replace("{n}", found[k][n]) if k in found else v for k, v in mapping.items()})
        for n in sorted(first, key=int)
    ]


def _times(rec: Mapping[str, str], where: Where) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if rec.get("AssignmentId", "").strip():
        out["judgment_id"] = rec["AssignmentId"].strip()
    submitted = rec.get("SubmitTime", "").strip()
    if submitted:
        moment = utc_time(submitted, where.at("SubmitTime"), TIME_HINT, parse_mturk_time)
        out["created_at"] = utc_iso(moment)
    worked = rec.get("WorkTimeInSeconds", "").strip()
    if worked:
        try:
            out["duration_s"] = seconds(worked)
        except ValueError:
            raise where.at("WorkTimeInSeconds").error(
                f"cannot read '{worked}' as seconds", hint="expected a number like 93"
            ) from None
    return out


def _plan(name: str, header: list[str], kind: str, mapping: dict[str, str]) -> _Plan:
    inputs = [c for c in header if c.startswith("Input.")]
    for required in ("AssignmentId", "WorkerId"):
        if required not in header and not (required == "WorkerId" and "worker" in mapping):
            raise Where(name, 1, required).error(
                "not in the header",
                hint="expected an MTurk batch results CSV (HITId, AssignmentId, WorkerId, ...)",
            )
    worker = mapping.get("worker", "WorkerId")
    if worker not in header:
        raise missing_column(name, "worker", worker, ["WorkerId", *inputs])
    plan = _Plan(worker=worker, answer=_answer_plan(name, header, mapping.get("value")))

    def column(key: str, spec: str, candidates: list[str]) -> str:
        found = resolve_column(spec, header, ("Input.",))
        if found is None:
            raise missing_column(name, key, spec, candidates)
        return found

    if kind == "pairwise":
        plan.left = column("left", mapping.get("left", "Input.left"), inputs)
        plan.right = column("right", mapping.get("right", "Input.right"), inputs)
        return plan
    if "item" in mapping:
        plan.item = column("item", mapping["item"], [*inputs, "HITId"])
    else:
        plan.item = next((c for c in ITEM_DEFAULTS if c in header), "")
        if not plan.item:
            raise missing_column(name, "item", "HITId", inputs)
    if "text" in mapping:
        plan.text = column("text", mapping["text"], inputs)
    return plan


def _answer_plan(name: str, header: list[str], spec: str | None) -> _Answer:
    answers = [c for c in header if c.startswith("Answer.") and c != TASK_ANSWERS]
    has_json = TASK_ANSWERS in header
    if spec is None:
        if len(answers) == 1:
            return _Answer("column", answers[0])
        if len(answers) > 1:
            raise Where(name, 1).error(
                "several answer columns: " + ", ".join(answers),
                hint="choose one with --map value=COLUMN",
            )
        if has_json:
            return _Answer("json_auto")
        raise Where(name, 1).error(
            "no answer column (Answer.*)", hint="is this an MTurk batch results file?"
        )
    if spec.endswith("*"):
        prefix = spec[:-1]
        for full in (prefix, "Answer." + prefix):
            group = tuple(c for c in header if c.startswith(full) and c != TASK_ANSWERS)
            if group and full:
                return _Answer("columns", full, group)
        if has_json:
            return _Answer("json_group", prefix.removeprefix("Answer."))
        raise missing_column(name, "value", spec, answers)
    found = resolve_column(spec, header, ("Answer.",))
    if found is not None:
        return _Answer("column", found)
    if has_json:
        return _Answer("json", spec.removeprefix("Answer."))
    raise missing_column(name, "value", spec, answers)


def _raw_answer(plan: _Plan, rec: Mapping[str, str], where: Where) -> tuple[Any, str]:
    """The raw answer of one record and the column it is reported under."""
    answer = plan.answer
    if answer.how == "column":
        return rec[answer.name], answer.name
    if answer.how == "columns":
        chosen = [c[len(answer.name) :] for c in answer.columns if truthy_cell(rec[c])]
        return chosen, answer.name + "*"
    where = where.at(TASK_ANSWERS)
    found = _task_answers(rec[TASK_ANSWERS], where)
    if answer.how == "json_auto":
        plain = [k for k, v in found.items() if not on_shaped(v)]
        if len(plain) == 1:
            answer.how, answer.name = "json", plain[0]
        elif not plain and found:
            answer.how, answer.name = "json_group", ""
        else:
            raise where.error(
                "several answers: " + ", ".join(found) if found else "no answers",
                hint="choose one with --map value=NAME",
            )
    if answer.how == "json":
        if answer.name not in found:
            raise where.error(
                f"no answer '{answer.name}'",
                hint="answers here: " + (", ".join(found) or "none"),
            )
        return found[answer.name], TASK_ANSWERS
    group = {k[len(answer.name) :]: v for k, v in found.items() if k.startswith(answer.name)}
    if not group:
        raise where.error(
            f"no answer '{answer.name}*'", hint="answers here: " + (", ".join(found) or "none")
        )
    return group, TASK_ANSWERS


def _task_answers(text: str, where: Where) -> dict[str, Any]:
    """The one object of ``Answer.taskAnswers`` (a JSON list holding one object)."""
    parsed = json_value(text, where) if text.strip() else []
    if isinstance(parsed, list) and len(parsed) == 1:
        parsed = parsed[0]
    if not isinstance(parsed, dict):
        raise where.error(
            "expected a JSON list holding one object", hint='like [{"relevance": {"3": true}}]'
        )
    return parsed
