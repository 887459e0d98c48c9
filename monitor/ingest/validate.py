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

import difflib
import hashlib
import json
import math
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from monitor.core.errors import Problem
from monitor.ingest.fastpath import CACHE_SIZE, FastCheck, clean_time, csv_fast
from monitor.ingest.files import columns_hint
from monitor.ingest.platforms.mapping import parse_iso, seconds
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
    listing,
    raw_text,
    record_text,
    shown,
)
from monitor.ingest.rows import SourceRow
from monitor.ingest.safe import NUMBER, unstorable
from monitor.store.campaigns import CampaignInfo

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

TIME_HINT = "ISO 8601, e.g. 2025-11-03T09:12:45Z"
_number_text = NUMBER.fullmatch
EMPTY_SET = frozenset({"[]", "{}"})
"""How a CSV cell writes a multi-label answer without any annotation ("none of these apply")."""
NUMERIC_LABELS = 10
"""More categories than this that all look like numbers draw a warning (label campaigns)."""
_sha256 = hashlib.sha256


def _number_of(value: Any) -> float | None:  # noqa: ANN401 - a raw JSON or CSV value
    """The number ``value`` is (a JSON number, or a string of ASCII decimal), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            return float(value)
        except OverflowError:
            return None
    if isinstance(value, str) and _number_text(text := value.strip()):
        return float(text)
    return None


class Validator:
    """Checks rows of one file against one campaign.

    ``mapping`` (canonical -> source column) only changes the column names in messages.
    Label campaigns without categories (or whose categories came from the data) accept any
    label; the labels not seen before are collected in ``new_categories``.
    """

    def __init__(
        self, campaign: CampaignInfo, path: str, mapping: dict[str, str] | None = None
    ) -> None:
        self.campaign = campaign
        self.path = path
        self.names = dict(mapping or {})
        self.kind = campaign.kind
        self.categories = tuple(campaign.categories or ())
        self.known = frozenset(self.categories)
        self.open_labels = self.kind == "label" and (
            campaign.categories is None or bool(campaign.settings.get("categories_from_data"))
        )
        self.closed_options = self.kind == "multilabel" and not campaign.open
        self.new_categories: dict[str, None] = {}
        # pair id -> items of the campaign's planned pairs (``monitor pairs plan``), and
        # whether a row naming one with other items is a problem (``--skip-invalid``) or kept
        # as an ordinary preference; the rows rejected so
        self.planned: dict[str, tuple[str, str]] = {}
        self.reject_mismatch = False
        self.n_mismatch_rejected = 0
        self._floats: dict[str, float] = {}  # strings of numbers, parsed (_fast_rating)
        self.required: tuple[str, ...] = (
            ("worker", "left", "right", "preference")
            if self.kind == "pairwise"
            else ("worker", "item", "value")
        )
        self.needs = f"a {self.kind} judgment needs " + ", ".join(self.required)
        lo, hi = campaign.scale_min, campaign.scale_max
        self.lo = lo if lo is not None else -math.inf
        self.hi = hi if hi is not None else math.inf
        self.scale = f"{fmt_number(lo)}..{fmt_number(hi)}"

    # --- problems ----------------------------------------------------------------------------

    def problem(
        self, line: int, column: str | None, message: str, hint: str | None = None
    ) -> Problem:
        name = self.names.get(column, column) if column else None
        return Problem(self.path, line, name, message, hint)

    def missing_columns(self, header: list[str]) -> list[Problem]:
        """Required columns absent from a CSV header (canonical names), each with the column
        of the header its name is closest to, if one is close."""
        have = columns_hint(header)
        missing = [c for c in self.required if c not in header]
        spare = [h for h in header if h not in self.required]
        problems = []
        for c in missing:
            folded = {h.casefold(): h for h in spare}
            close = difflib.get_close_matches(c, list(folded), n=1, cutoff=0.6)
            hint = f"columns: {have}; {self.needs}"
            if close:
                near = folded[close[0]]
                hint = f"did you mean '{near}'? rename it or pass --map {c}={near}; {hint}"
            problems.append(self.problem(1, c, "not in the header", hint))
        return problems

    def label_notes(self) -> list[str]:
        """A warning when every category a label campaign took from the data looks like a
        number and they are many (more than :data:`NUMERIC_LABELS`) or two are one number
        written twice (``0`` and ``00``): ratings ingested as labels by mistake."""
        if self.kind != "label" or not self.open_labels or not self.new_categories:
            return []
        labels = [*self.categories, *self.new_categories]
        numbers = [_number_of(label) for label in labels]
        if any(n is None for n in numbers):
            return []
        twice = len(set(numbers)) < len(labels)
        if len(labels) <= NUMERIC_LABELS and not twice:
            return []
        shown_labels = ", ".join(labels[:6]) + (", ..." if len(labels) > 6 else "")
        same = "; some are one number written twice" if twice else ""
        return [
            f"warning: the {len(labels)} categories of this label campaign all look like "
            f"numbers ({shown_labels}){same}: a label campaign treats each as a name. For "
            "numbers, create a rating campaign (monitor campaign create NAME --kind rating "
            "--min LO --max HI) and ingest the file there"
        ]

    # --- fields -----------------------------------------------------------------------------

    def _id(
        self, fields: dict[str, Any], column: str, line: int, out: list[Problem], *, required: bool
    ) -> str | None:
        value = fields.get(column)
        if value is None or value == "":
            if required:
                what = "missing" if column not in fields else "empty"
                out.append(self.problem(line, column, what, self.needs))
            return None
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            out.append(self.problem(line, column, f"expected an id (a string), got {shown(value)}"))
            return None
        if isinstance(value, float) and not math.isfinite(value):
            out.append(self.problem(line, column, f"expected an id (a string), got {shown(value)}"))
            return None
        text = value.strip() if isinstance(value, str) else str(value)
        if not text:
            if required:
                out.append(self.problem(line, column, "empty", self.needs))
            return None
        if len(text) > MAX_ID:
            out.append(
                self.problem(
                    line,
                    column,
                    f"{len(text)} characters, more than the limit of {MAX_ID}",
                    "ids are at most 255 characters",
                )
            )
            return None
        return text

    def _time(self, fields: dict[str, Any], line: int, out: list[Problem]) -> datetime | None:
        value = fields.get("created_at")
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        if isinstance(value, str):
            try:
                return parse_iso(value).astimezone(UTC)
            except ValueError:
                pass
            except OverflowError:
                out.append(
                    self.problem(
                        line,
                        "created_at",
                        f"{shown(value)} is outside the years 1 to 9999 in UTC",
                        TIME_HINT,
                    )
                )
                return None
        out.append(
            self.problem(line, "created_at", f"cannot read {shown(value)} as a time", TIME_HINT)
        )
        return None

    def _duration(self, fields: dict[str, Any], line: int, out: list[Problem]) -> float | None:
        value = fields.get("duration_s")
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        try:
            if isinstance(value, str) and not _number_text(value.strip()):
                raise ValueError(value)  # only ASCII decimal: not ١, ３ or 1_0
            return float(seconds(value))
        except (ValueError, TypeError, OverflowError):
            out.append(
                self.problem(
                    line,
                    "duration_s",
                    f"expected a non-negative number of seconds, got {shown(value)}",
                )
            )
            return None

    def _number(self, value: Any, line: int, column: str, out: list[Problem]) -> float | None:
        number = _number_of(value)
        if number is None or not math.isfinite(number):
            out.append(
                self.problem(line, column, f"expected a number in {self.scale}, got {shown(value)}")
            )
            return None
        if not self.lo <= number <= self.hi:
            out.append(
                self.problem(
                    line,
                    column,
                    f"expected a number in {self.scale}, got {shown(value)}",
                    "outside the campaign's scale",
                )
            )
            return None
        return number

    def _label(self, value: Any, line: int, column: str, out: list[Problem]) -> str | None:
        if isinstance(value, str):
            text = value.strip()
        elif isinstance(value, int | float) and not isinstance(value, bool):
            text = fmt_number(value) if isinstance(value, float) else str(value)
        else:
            out.append(
                self.problem(
                    line,
                    column,
                    f"expected one category, got {shown(value)}",
                    "a label judgment is one category; sets go in a multilabel campaign",
                )
            )
            return None
        if not text:
            out.append(self.problem(line, column, "empty", self.needs))
            return None
        if text not in self.known:
            if not self.open_labels:
                out.append(
                    self.problem(
                        line,
                        column,
                        f"unknown category {shown(text)}",
                        f"categories: {listing(self.categories)}",
                    )
                )
                return None
            self.new_categories[text] = None
        return text

    def _annotations(
        self, value: Any, line: int, column: str, out: list[Problem]
    ) -> list[str] | None:
        if isinstance(value, str) and value.strip() in EMPTY_SET:
            return []  # "none of these apply": a set without any annotation
        if isinstance(value, list) and not value:
            return []
        if isinstance(value, str):
            parts = [p.strip() for p in value.split("|")]
        elif isinstance(value, list):
            parts = []
            for element in value:
                if isinstance(element, str):
                    parts.append(element.strip())
                elif isinstance(element, int) and not isinstance(element, bool):
                    parts.append(str(element))
                else:
                    out.append(
                        self.problem(
                            line, column, f"expected a list of strings, got {shown(value)}"
                        )
                    )
                    return None
        else:
            out.append(
                self.problem(
                    line,
                    column,
                    f"expected a list of strings, got {shown(value)}",
                    'write ["cat", "dog"] (JSON Lines) or cat|dog (CSV)',
                )
            )
            return None
        parts = [p for p in parts if p]
        if not parts:
            out.append(
                self.problem(
                    line,
                    column,
                    "no annotation",
                    "an empty set ('none of these apply') is written [] (CSV or JSON)",
                )
            )
            return None
        bad = False
        for part in dict.fromkeys(parts):
            if len(part) > MAX_ID:
                out.append(
                    self.problem(
                        line,
                        column,
                        f"an annotation of {len(part)} characters, more than the limit of {MAX_ID}",
                    )
                )
                bad = True
            elif self.closed_options and part not in self.known:
                out.append(
                    self.problem(
                        line,
                        column,
                        f"unknown option {shown(part)}",
                        f"options: {listing(self.categories)}",
                    )
                )
                bad = True
        return None if bad else parts

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
                number = _number_of(gold)
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
