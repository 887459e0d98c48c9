"""Validation of canonical rows against a campaign: every problem named with file, line, column.

:meth:`Validator.check` turns one :class:`~monitor.ingest.rows.SourceRow` into a record ready to
load, or into the list of all its problems. Records are plain tuples (see
:mod:`monitor.ingest.records`) because millions of them pass through here; a clean CSV row
takes a shorter way (:mod:`monitor.ingest.fastpath`).

The dedup key of a judgment is ``id:<judgment_id>`` when the row has one, else
``sha256:<hex>`` of the canonical row (worker, item or left/right, value or preference,
created_at in UTC). Two identical rows without ids are therefore the same judgment: the second
is counted as a duplicate, whether it comes from the same file or another one.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from datetime import datetime
from typing import Any

from monitor.core.errors import Problem
from monitor.ingest.fastpath import CACHE_SIZE, FastCheck, clean_time, csv_fast
from monitor.ingest.fields import FieldChecker, number_of
from monitor.ingest.records import (
    MAX_ID,
    SEP,
    ItemRecord,
    JudgmentRecord,
    PreferenceRecord,
    WorkerRecord,
    dedup_key,
    fmt_number,
    id_text,
    raw_text,
    record_text,
    shown,
)
from monitor.ingest.rows import SourceRow
from monitor.ingest.safe import NUMBER, unstorable

__all__ = [
    "ItemRecord",
    "JudgmentRecord",
    "PreferenceRecord",
    "Validator",
    "WorkerRecord",
    "fmt_number",
    "id_text",
    "raw_text",
    "record_text",
    "shown",
]

_sha256 = hashlib.sha256
_number_text = NUMBER.fullmatch


class Validator(FieldChecker):
    """Checks rows of one file against one campaign (their fields: :class:`FieldChecker`).

    ``mapping`` (canonical -> source column) only changes the column names in messages.
    Label campaigns without categories (or whose categories came from the data) accept any
    label; the labels not seen before are collected in ``new_categories``.
    """

    def csv_fast(self, positions: dict[str, int], rest: list[tuple[int, str]]) -> FastCheck | None:
        """The CSV fast path of this validator (:func:`monitor.ingest.fastpath.csv_fast`)."""
        return csv_fast(self, positions, rest)

    # --- rows -------------------------------------------------------------------------------

    def check(self, row: SourceRow) -> tuple[str, tuple[Any, ...]] | list[Problem]:
        """``(table, record)`` for a good row, else every problem of the row."""
        if not row.checked and (unfit := self._unstorable(row)):
            return unfit
        if row.table == "judgment":
            if self.kind == "pairwise":
                return self._preference(row)
            return self._judgment(row)
        if row.table == "item":
            return self._item(row)
        return self._worker(row)

    def _unstorable(self, row: SourceRow) -> list[Problem]:
        """The values of a row no reader has screened (platform exports) that some database
        could not store: a NUL, a lone surrogate, NaN, a number past a double's range, deep
        nesting (see :mod:`monitor.ingest.safe`)."""
        out = []
        for names in (row.fields, row.extra):
            for column, value in names.items():
                why = unstorable(column) or unstorable(value, 1)
                if why is not None:
                    out.append(self.problem(row.line, column, *why))
        return out

    def _judgment(self, row: SourceRow) -> tuple[str, JudgmentRecord] | list[Problem]:
        if self.kind == "rating":
            record = self._fast_rating(row)
            if record is not None:
                return "judgment", record
        return self._careful_judgment(row)

    def _float(self, text: str) -> float | None:
        """The number a string of ASCII decimal is (remembered), else None."""
        number = self._floats.get(text)
        if number is None:
            if not _number_text(stripped := text.strip()):
                return None
            number = float(stripped)
            if len(self._floats) < CACHE_SIZE:
                self._floats[text] = number
        return number

    def _fast_rating(self, row: SourceRow) -> JudgmentRecord | None:
        """The record of a clean rating row (string values, no problem), else None.

        The common case, without building problems: the result is exactly what
        :meth:`_careful_judgment` gives for such a row; anything unusual returns None so that
        the careful path names the problems.
        """
        get = row.fields.get
        worker, item, value = get("worker"), get("item"), get("value")
        if type(worker) is not str or type(item) is not str or type(value) is not str:
            return None
        worker, item = worker.strip(), item.strip()
        if not worker or not item or len(worker) > MAX_ID or len(item) > MAX_ID:
            return None
        num = self._float(value)
        if num is None or not self.lo <= num <= self.hi or num - num != 0.0:  # NaN, inf
            return None
        external = get("judgment_id")
        if external is not None:
            if type(external) is not str or len(external := external.strip()) > MAX_ID:
                return None
            external = external or None
        created: datetime | None = None
        stamp = ""
        raw = get("created_at")
        if raw is not None:
            if type(raw) is not str:
                return None
            if text := raw.strip():
                parsed = clean_time(text, external is not None)
                if parsed is None:
                    return None
                created, stamp = parsed
        duration: float | None = None
        raw = get("duration_s")
        if raw is not None:
            if type(raw) is not str:
                return None
            if raw.strip():
                duration = self._float(raw)
                if duration is None or not duration >= 0 or duration == math.inf:
                    return None
                duration += 0.0  # -0.0 -> 0.0, as float(seconds(...)) does
        if external is not None:
            key = "id:" + external
        else:
            text = SEP.join((worker, item, repr(num), stamp))
            key = "sha256:" + _sha256(text.encode()).hexdigest()
        extra = row.extra or None
        return (worker, item, num, None, key, external, created, duration, extra, None, row.line)

    def _careful_judgment(self, row: SourceRow) -> tuple[str, JudgmentRecord] | list[Problem]:
        fields, line = row.fields, row.line
        out: list[Problem] = []
        worker = self._id(fields, "worker", line, out, required=True)
        item = self._id(fields, "item", line, out, required=True)
        value = fields.get("value")
        num: float | None = None
        label: str | None = None
        annotations: tuple[tuple[str, int], ...] | None = None
        canon = ""
        if value is None or (isinstance(value, str) and not value.strip()):
            out.append(
                self.problem(
                    line, "value", "missing" if "value" not in fields else "empty", self.needs
                )
            )
        elif self.kind == "rating":
            num = self._number(
                value.strip() if isinstance(value, str) else value, line, "value", out
            )
            canon = repr(num)
        elif self.kind == "label":
            label = self._label(value, line, "value", out)
            canon = label or ""
        else:
            parts = self._annotations(value, line, "value", out)
            if parts is not None:
                counts = Counter(parts)
                annotations = tuple(sorted(counts.items()))
                canon = "\x1e".join(sorted(parts))
        external = self._id(fields, "judgment_id", line, out, required=False)
        created = self._time(fields, line, out)
        duration = self._duration(fields, line, out)
        if out:
            return out
        assert worker is not None and item is not None  # noqa: S101 - guaranteed by out == []
        key = dedup_key(external, (worker, item, canon), created)
        payload = row.extra or None
        record = (worker, item, num, label, key, external, created, duration, payload)
        return "judgment", (*record, annotations, line)

    def _preference(self, row: SourceRow) -> tuple[str, tuple[Any, ...]] | list[Problem]:
        """A preference's record (``("unanswered", ())`` when its answer cell is blank: a task
        not answered yet), or its problems."""
        fields, line = row.fields, row.line
        out: list[Problem] = []
        worker = self._id(fields, "worker", line, out, required=True)
        left = self._id(fields, "left", line, out, required=True)
        right = self._id(fields, "right", line, out, required=True)
        if left is not None and left == right:
            out.append(
                self.problem(
                    line,
                    "right",
                    f"the same item as left ({shown(left)})",
                    "a preference compares two different items",
                )
            )
        raw = fields.get("preference")
        outcome = raw.strip().lower() if isinstance(raw, str) else None
        if "preference" in fields and (raw is None or outcome == "") and not out:
            return "unanswered", ()  # a task not answered yet (a blank answer cell)
        if left is not None and right is not None and self.planned:
            left, right = self._planned(row, left, right, out)
        if raw is None or outcome == "":
            what = "missing" if "preference" not in fields else "empty"
            out.append(self.problem(line, "preference", what, self.needs))
        elif outcome not in ("left", "right", "tie"):
            out.append(
                self.problem(line, "preference", f"expected left, right or tie, got {shown(raw)}")
            )
        elif outcome == "tie" and self.campaign.strict:
            out.append(
                self.problem(
                    line,
                    "preference",
                    "a tie in a strict campaign",
                    "the campaign was created with --strict: ties are not allowed",
                )
            )
        external = self._id(fields, "judgment_id", line, out, required=False)
        created = self._time(fields, line, out)
        duration = self._duration(fields, line, out)
        if out:
            return out
        assert worker and left and right and outcome  # noqa: S101 - guaranteed by out == []
        key = dedup_key(external, (worker, left, right, outcome), created)
        payload = row.extra or None
        record = (worker, left, right, outcome, key, external, created, duration, payload)
        return "preference", (*record, line)

    def _planned(
        self, row: SourceRow, left: str, right: str, out: list[Problem]
    ) -> tuple[str, str]:
        """The items of a row whose ``pair_id`` names a planned pair, as the plan names them
        (a quote the task file added for spreadsheets undone: ``'=item4`` is ``=item4``); a
        row naming a planned pair of other items is a problem when ``reject_mismatch``, else
        kept as written (it answers no planned pair: :func:`monitor.store.plans.mark_answered`
        counts it)."""
        from monitor.store.plans import as_planned

        pid = row.extra.get("pair_id") if row.extra else None
        pair = self.planned.get(pid.strip()) if isinstance(pid, str) else None
        if pair is None:
            return left, right
        found = as_planned(pair, left, right)
        if found is not None:
            return found
        if self.reject_mismatch:
            self.n_mismatch_rejected += 1
            out.append(
                self.problem(
                    row.line,
                    "pair_id",
                    f"{shown(pid)} names the planned pair ({pair[0]}, {pair[1]}), not this "
                    f"row's items ({left}, {right})",
                    "an edited file or a template showing other fields: without "
                    "--skip-invalid such a row is kept as an ordinary preference",
                )
            )
        return left, right

    def _item(self, row: SourceRow) -> tuple[str, ItemRecord] | list[Problem]:
        fields, line = row.fields, row.line
        out: list[Problem] = []
        item = self._id(fields, "item", line, out, required=False)
        if item is None and not out:
            what = "missing" if "item" not in fields else "empty"
            out.append(self.problem(line, "item", what, "every row of an items file names an item"))
        gold = fields.get("gold")
        gold_text: str | None = None
        if gold is not None and not (isinstance(gold, str) and not gold.strip()):
            if self.kind == "rating":
                number = self._number(gold, line, "gold", out)
                gold_text = None if number is None else fmt_number(number)
            elif self.kind == "label":
                before = dict(self.new_categories)
                gold_text = self._label(gold, line, "gold", out)
                self.new_categories = before  # a gold value does not add a category
            elif self.kind == "multilabel":
                parts = self._annotations(gold, line, "gold", out)
                gold_text = None if parts is None else "|".join(dict.fromkeys(parts))
            else:  # pairwise: a known score of the item (the higher one is preferred)
                number = number_of(gold)
                if number is None or not math.isfinite(number):
                    out.append(
                        self.problem(
                            line,
                            "gold",
                            f"expected a number, got {shown(gold)}",
                            "the gold value of a pairwise item is its known score",
                        )
                    )
                else:
                    gold_text = fmt_number(number)
        text = fields.get("text")
        if text is not None and not isinstance(text, str):
            text = json.dumps(text, ensure_ascii=False)
        if out:
            return out
        assert item is not None  # noqa: S101
        return "item", (item, gold_text, text or None)

    def _worker(self, row: SourceRow) -> tuple[str, WorkerRecord] | list[Problem]:
        out: list[Problem] = []
        worker = self._id(row.fields, "worker", row.line, out, required=True)
        if out:
            return out
        assert worker is not None  # noqa: S101
        platform = {k: v for k, v in row.fields.items() if k != "worker"}
        platform.update(row.extra)
        return "worker", (worker, platform)
