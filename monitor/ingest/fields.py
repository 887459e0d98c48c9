"""Checking one field of a row against a campaign: ids, times, durations, numbers on the
scale, labels and multi-label sets, each problem named with its file, line and column."""

from __future__ import annotations

import difflib
import math
from datetime import UTC, datetime
from typing import Any

from monitor.core.errors import Problem
from monitor.ingest.files import columns_hint
from monitor.ingest.platforms.mapping import parse_iso, seconds
from monitor.ingest.records import (
    MAX_ID,
    fmt_number,
    listing,
    shown,
)
from monitor.ingest.safe import NUMBER
from monitor.store.campaigns import CampaignInfo

TIME_HINT = "ISO 8601, e.g. 2025-11-03T09:12:45Z"
_number_text = NUMBER.fullmatch
EMPTY_SET = frozenset({"[]", "{}"})
"""How a CSV cell writes a multi-label answer without any annotation ("none of these apply")."""
NUMERIC_LABELS = 10
"""More categories than this that all look like numbers draw a warning (label campaigns)."""


def number_of(value: Any) -> float | None:  # noqa: ANN401 - a raw JSON or CSV value
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


class FieldChecker:
    """Checks the fields of one file's rows against one campaign (:class:`~monitor.ingest.validate.Validator`
    checks the rows).

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
        numbers = [number_of(label) for label in labels]
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
        number = number_of(value)
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
