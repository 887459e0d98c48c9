"""One declarative description of a tabular platform export, and the engine that reads it.

An :class:`Export` says how a platform writes its results file: the delimiter, the prefixes of
its input and answer columns, the worker, the id and the status columns, how the tasks of one
assignment are told apart, the time format, how gold values and several answers of one cell
are written, what goes to the payload. MTurk, Toloka and Figure Eight are each one such
declaration read by :meth:`Export.reader`; Prolific's submissions export uses the same
declaration for its statuses and times.

One record is one judgment, or one per question number when the mapping holds ``{n}`` (see
:mod:`~monitor.ingest.platforms.plan`). A record that breaks a rule is yielded as a
:class:`~monitor.ingest.rows.BadRecord` naming the line, the column and the rule, so that the
ingest lists every such record, or keeps it apart with its reason under ``--skip-invalid``.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from monitor.core.errors import InputError
from monitor.ingest.platforms.mapping import (
    Reader,
    Record,
    Request,
    Where,
    canonical_value,
    parse_iso,
    reader,
    seconds,
    truthy_cell,
    utc_iso,
    utc_time,
)
from monitor.ingest.platforms.plan import (
    Answer,
    Plan,
    checked,
    json_answer,
    plan_slots,
    settle_json,
    task_answers,
)
from monitor.ingest.platforms.table import open_table
from monitor.ingest.rows import BadRecord, SourceRow

__all__ = ["Clock", "Export", "Statuses"]


@dataclass(frozen=True)
class Clock:
    """How an export writes times: the parser (an aware time, naive read as UTC) and the hint
    for a time it cannot read."""

    parse: Callable[[str], datetime]
    hint: str

    def read(self, rec: Mapping[str, str], column: str, where: Where) -> datetime | None:
        """The time in ``column`` in UTC; None when the cell is empty."""
        text = rec.get(column, "").strip()
        return utc_time(text, where.at(column), self.hint, self.parse) if text else None


def status_word(text: str) -> str:
    """A status as compared: upper case, ``-`` and ``_`` as spaces (``TIMED OUT``)."""
    return " ".join(text.strip().upper().replace("-", " ").replace("_", " ").split())


@dataclass(frozen=True)
class Statuses:
    """What the status column says of a record: kept, rejected (kept with the option
    ``option``) or skipped (no answer). ``kept`` None keeps any other status; else another
    status is refused, naming the ``expected`` ones. ``flag``: the column is a yes/no flag,
    yes meaning rejected (``TRUE``). ``note`` counts the rejected records skipped."""

    column: str
    rejected: frozenset[str]
    skipped: frozenset[str] = frozenset()
    kept: frozenset[str] | None = None
    expected: str = ""
    option: str = "keep_rejected"
    note: str = ""
    flag: bool = False

    def of(self, rec: Mapping[str, str], where: Where) -> str:
        """``kept``, ``rejected`` or ``skipped``."""
        cell = rec.get(self.column, "")
        status = ("TRUE" if truthy_cell(cell) else "") if self.flag else status_word(cell)
        if status in self.skipped:
            return "skipped"
        if status in self.rejected:
            return "rejected"
        if self.kept is not None and status not in self.kept:
            raise where.at(self.column).error(f"unknown status '{cell.strip()}'", self.expected)
        return "kept"


@dataclass(frozen=True)
class Export:
    """A platform's tabular results file, declared.

    Columns: ``worker`` and the other ``required`` ones (missing: ``expected`` or the
    column's ``missing_hints`` entry); the task's inputs start with ``inputs``, the answers
    with ``answers`` (or, with ``answers_have_gold``, are the columns that have a gold column);
    columns starting with ``own`` are the platform's; the gold column of an answer column is
    ``gold[0] + name + gold[1]`` (its name without the answers' prefix), read on every row or
    on the rows whose ``gold_rows`` cell is yes; ``items`` are the default item columns (the
    first found; the last is also the fallback named in messages); ``task_answers`` is a
    column holding a JSON object of named answers.

    Ids and times: the judgment id is the ``judgment`` cell; when ``suites`` (an assignment
    is a suite of tasks), followed by ``/`` and a digest of the task's inputs (see
    :meth:`_State.task_key`: the same whichever optional columns the export carries, a task id
    column included; a ``task`` id met twice in an assignment keeps its first key); ``/n``
    for question ``n``. The time
    is ``submitted`` read by ``clock``; the duration the ``worked`` seconds, or
    ``submitted - started`` (``early`` when negative). ``several`` separates several answers
    in one cell; ``payload`` maps columns to payload keys.
    """

    platform: str
    delimiter: str
    worker: str
    required: tuple[str, ...]
    expected: str
    inputs: str = ""
    answers: str = ""
    own: str = ""
    answers_have_gold: bool = False
    gold: tuple[str, str] | None = None
    gold_rows: str = ""
    items: tuple[str, ...] = ("",)
    task_answers: str = ""
    judgment: str = ""
    suites: bool = False
    task: str = ""
    submitted: str = ""
    started: str = ""
    worked: str = ""
    worked_hint: str | None = None
    early: str = "submitted before started"
    clock: Clock = field(default_factory=lambda: Clock(parse_iso, "expected ISO 8601"))
    statuses: Statuses | None = None
    several: str = ""
    payload: Mapping[str, str] = field(default_factory=dict)
    missing_hints: Mapping[str, str] = field(default_factory=dict)
    empty_worker: str | None = None
    empty_item: str = ""
    answer_word: str = "answer"
    no_answer: tuple[str, str] = ("no answer column", "choose one with --map value=COLUMN")
    options: tuple[str, ...] = ()
    exact: bool = False

    # --- columns ------------------------------------------------------------------------

    def input_columns(self, header: list[str]) -> list[str]:
        """The task's input columns."""
        return [
            c
            for c in header
            if c.startswith(self.inputs) and not self._own(c) and not self._is_gold(c)
        ]

    def answer_columns(self, header: list[str]) -> list[str]:
        """The answer columns (the JSON answers column aside)."""
        if self.answers_have_gold:
            names = set(header)
            return [c for c in header if not self._own(c) and self.gold_of(c) in names]
        return [c for c in header if c.startswith(self.answers) and c != self.task_answers]

    def gold_of(self, column: str) -> str | None:
        """The gold column of an answer column (whether or not the header has it)."""
        if self.gold is None or not column.startswith(self.answers):
            return None
        return self.gold[0] + column[len(self.answers) :] + self.gold[1]

    def _own(self, column: str) -> bool:
        return bool(self.own) and column.startswith(self.own)

    def _is_gold(self, column: str) -> bool:
        if self.gold is None:
            return False
        prefix, suffix = self.gold
        return (bool(prefix) and column.startswith(prefix)) or (
            bool(suffix) and column.endswith(suffix)
        )

    # --- the reader -----------------------------------------------------------------------

    def reader(self) -> Reader:
        """The platform's reader (the signature of every reader)."""
        options = (self.statuses.option,) if self.statuses is not None else ()
        return reader(self.platform, self._rows, options=options, flags=options)

    def _rows(self, path: Path, request: Request, notes: list[str]) -> Iterator[Record]:
        """Stream the export as judgment rows and the item rows of gold values and texts."""
        name = str(path)
        keep = self.statuses is not None and request.flag(self.statuses.option)
        with open_table(path, self.delimiter, exact=self.exact) as (header, records):
            slots = plan_slots(self, name, header, request.kind, request.mapping)
            state = _State(self, header, keep)
            for line, rec in records:
                if isinstance(rec, BadRecord):
                    yield rec
                    continue
                where = Where(name, line)
                if slots[0][1].answer.how == "json_auto":
                    settle_json(self, slots[0][1].answer, rec, where)
                try:
                    rows = self._record(slots, rec, where, request, state)
                except InputError as exc:
                    raw = self.delimiter.join(rec.values())
                    yield BadRecord(line, raw, exc.problems[0])
                    continue
                yield from rows
        if state.rejected and self.statuses is not None and self.statuses.note:
            notes.append(self.statuses.note.format(n=state.rejected))
        if state.blank:
            notes.append(f"{state.blank} unanswered questions skipped (blank answer cells)")
        if state.several_gold:
            column = slots[0][1].answer.gold[0]
            notes.append(
                f"{state.several_gold} golden units accept several answers in {column}: "
                "no gold value kept for them"
            )

    def _record(
        self,
        slots: list[tuple[str | None, Plan]],
        rec: Mapping[str, str],
        where: Where,
        request: Request,
        state: _State,
    ) -> list[SourceRow]:
        """The rows of one record (none when its status skips it)."""
        if self.statuses is not None:
            status = self.statuses.of(rec, where)
            if status == "skipped" or (status == "rejected" and not state.keep):
                state.rejected += status == "rejected"
                return []
        multi = slots[0][0] is not None
        items: list[SourceRow] = []
        answered: list[tuple[str | None, dict[str, Any]]] = []
        seen = state.pending()
        for n, plan in slots:
            worker = rec[plan.worker].strip()
            if not worker:
                raise where.at(plan.worker).error("empty worker id", self.empty_worker)
            raw, column = self._raw_answer(plan.answer, rec, where)
            blank = raw is None or (isinstance(raw, str) and not raw.strip())
            if blank and (multi or request.kind == "pairwise"):
                if not multi or any(rec[c].strip() for c in plan.ids()):
                    seen.blank += 1  # an unanswered question of the task, a pair not answered
                continue
            value = self._value(request, raw, where.at(column))
            fields: dict[str, Any] = {"worker": worker}
            if request.kind == "pairwise":
                fields["left"] = rec[plan.left].strip()
                fields["right"] = rec[plan.right].strip()
                fields["preference"] = value
            else:
                item = rec[plan.item].strip()
                if not item and (multi or self.empty_item):
                    what = self.empty_item or f"an answer in {column} but no item"
                    hint = "is the HIT complete?" if multi else None
                    raise where.at(plan.item).error(what, hint)
                fields["item"] = item
                fields["value"] = value
                items.extend(self._item_rows(plan, rec, item, request, where, seen))
            answered.append((n, fields))
        times = self._times(rec, where, state)
        extra = {key: rec[column] for column, key in self.payload.items() if column in rec}
        rows = items
        for n, fields in answered:
            if n is None:
                rows.append(SourceRow(where.line or 0, {**fields, **times}, extra=extra))
            else:
                share = _share(times, n, len(answered))
                rows.append(
                    SourceRow(where.line or 0, {**fields, **share}, extra={**extra, "question": n})
                )
        state.commit(seen)
        return rows

    def _raw_answer(self, answer: Answer, rec: Mapping[str, str], where: Where) -> tuple[Any, str]:
        """The raw answer of one record and the column it is reported under."""
        if answer.how == "column":
            return rec[answer.name], answer.name
        if answer.how == "columns":
            return checked(answer.name, answer.columns, rec), answer.name + "*"
        if answer.how == "json_auto":  # no record decided it yet: this one cannot either
            at = where.at(self.task_answers)
            task_answers(rec[self.task_answers], at)  # its problem, if it has one
            raise at.error("no answers", hint="choose one with --map value=NAME")
        return json_answer(self, answer, rec, where)

    def _value(self, request: Request, raw: Any, where: Where) -> Any:  # noqa: ANN401
        """The canonical value of a raw answer (several answers of a cell as a set)."""
        if (
            self.several
            and isinstance(raw, str)
            and request.kind == "multilabel"
            and self.several in raw.replace("\r\n", "\n")
        ):
            raw = _cells(raw, self.several)
        return canonical_value(request.kind, raw, request.codes, where)

    def _item_rows(
        self,
        plan: Plan,
        rec: Mapping[str, str],
        item: str,
        request: Request,
        where: Where,
        seen: _Seen,
    ) -> list[SourceRow]:
        """An item row with the gold value (the first gold row of the item) and the text
        (its first row), when there is something new."""
        fields: dict[str, Any] = {"item": item}
        answer = plan.answer
        if (
            answer.gold
            and any(rec[c].strip() for c in answer.gold)
            and (not self.gold_rows or truthy_cell(rec.get(self.gold_rows, "")))
            and seen.first_gold(item)
        ):
            gold = self._gold(answer, rec, request, where)
            if gold is None:
                seen.several_gold += 1
            else:
                fields["gold"] = gold
        if plan.text and seen.first_text(item):
            fields["text"] = rec[plan.text]
        return [SourceRow(where.line or 0, fields, table="item")] if len(fields) > 1 else []

    def _gold(self, answer: Answer, rec: Mapping[str, str], request: Request, where: Where) -> Any:  # noqa: ANN401
        """The gold value of a gold row; None when a single-answer campaign's gold cell accepts
        several answers."""
        if answer.how == "columns":
            raw: Any = checked(answer.gold_name, answer.gold, rec)
            return canonical_value(
                request.kind, raw, request.codes, where.at(answer.gold_name + "*")
            )
        text = rec[answer.gold[0]]
        if self.several and request.kind != "multilabel" and len(_cells(text, self.several)) > 1:
            return None
        return self._value(request, text, where.at(answer.gold[0]))

    def _times(self, rec: Mapping[str, str], where: Where, state: _State) -> dict[str, Any]:
        """The judgment id, the time and the duration of a record."""
        out: dict[str, Any] = {}
        assignment = rec.get(self.judgment, "").strip()
        if assignment:
            out["judgment_id"] = assignment
            if self.suites:
                out["judgment_id"] += "/" + state.task_key(assignment, rec)
        started = self.clock.read(rec, self.started, where) if self.started else None
        submitted = self.clock.read(rec, self.submitted, where) if self.submitted else None
        if submitted is not None:
            out["created_at"] = utc_iso(submitted)
            if started is not None:
                spent = (submitted - started).total_seconds()
                if spent < 0:
                    raise where.at(self.submitted).error(self.early)
                out["duration_s"] = int(spent) if spent.is_integer() else spent
        worked = rec.get(self.worked, "").strip() if self.worked else ""
        if worked:
            out["duration_s"] = self.seconds(worked, where.at(self.worked))
        return out

    def seconds(self, text: str, where: Where) -> int | float:
        """A cell of seconds (``worked_hint`` when it cannot be read)."""
        try:
            return seconds(text)
        except ValueError:
            raise where.error(f"cannot read '{text}' as seconds", self.worked_hint) from None


def _cells(text: str, separator: str) -> list[str]:
    """The answers of a cell that joins several with ``separator`` (line breaks: ``\\r\\n``
    counts as one)."""
    text = text.replace("\r\n", "\n")
    return [part.strip() for part in text.split(separator) if part.strip()]


def _share(times: dict[str, Any], n: str, answered: int) -> dict[str, Any]:
    """One question's share of a record: its own id, the time, an even share of the work."""
    out = dict(times)
    if "judgment_id" in out:
        out["judgment_id"] = f"{out['judgment_id']}/{n}"
    if "duration_s" in out:
        share = out["duration_s"] / answered
        out["duration_s"] = int(share) if float(share).is_integer() else round(share, 3)
    return out


class _Seen:
    """The items a record gives a gold value or a text to, beside those earlier records gave,
    and what it counts (added to the file's once the record turns out good)."""

    def __init__(self, gold: set[str], text: set[str]) -> None:
        self.gold, self.text = gold, text
        self.new_gold: set[str] = set()
        self.new_text: set[str] = set()
        self.several_gold = self.blank = 0

    def first_gold(self, item: str) -> bool:
        if item in self.gold or item in self.new_gold:
            return False
        self.new_gold.add(item)
        return True

    def first_text(self, item: str) -> bool:
        if item in self.text or item in self.new_text:
            return False
        self.new_text.add(item)
        return True


class _State:
    """What the engine remembers across the records of one file."""

    def __init__(self, export: Export, header: list[str], keep: bool) -> None:
        self.keep = keep
        self.rejected = self.blank = self.several_gold = 0
        self.gold: set[str] = set()
        self.text: set[str] = set()
        self.inputs = export.input_columns(header)
        self.suite = ""  # the assignment of the last record, and its tasks' inputs seen so far
        self.tasks: Counter[str] = Counter()
        self.task = export.task if export.task in header else ""
        self.keys: dict[str, str] = {}  # the key of each task id of the assignment

    def pending(self) -> _Seen:
        return _Seen(self.gold, self.text)

    def commit(self, seen: _Seen) -> None:
        self.gold |= seen.new_gold
        self.text |= seen.new_text
        self.several_gold += seen.several_gold
        self.blank += seen.blank

    def task_key(self, assignment: str, rec: Mapping[str, str]) -> str:
        """What tells one task of an assignment from the others: a digest of its inputs (``#2``
        added for a second task with the same inputs in a row of the assignment's records), so
        that every answer has its own key, the same file always gives the same keys, and so
        does another export of the same answers with other optional columns (a task id column
        or not: the id is kept in the payload, never in the key). A task id met again in the
        assignment gets the key it had (a task answered twice is one judgment id, which the
        ingest refuses when the answers differ)."""
        if assignment != self.suite:
            self.suite, self.tasks, self.keys = assignment, Counter(), {}
        task = rec[self.task].strip() if self.task else ""
        if task and task in self.keys:
            return self.keys[task]
        text = "\x1f".join(rec[c] for c in self.inputs)
        key = "in-" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        self.tasks[key] += 1
        count = self.tasks[key]
        key = key if count == 1 else f"{key}#{count}"
        if task:
            self.keys[task] = key
        return key
