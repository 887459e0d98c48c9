"""What the platform readers share: the reader's call, mapping keys, answer decoding, times.

A *mapping* is what the user passes as ``--map KEY=VALUE``: which platform field holds the
answer (``value``), the item (``item``), the two items of a pair (``left``, ``right``), the item
text (``text``), the worker (``worker``), and how a pairwise answer is encoded (``pairwise``,
written ``left=A,right=B,tie=same``; several spellings of one outcome joined by ``|``).
Every reader is made by :func:`reader`: one signature, the kind, mapping and options checked
when it is called (a usage error comes at once), the file read lazily as :class:`Rows`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Protocol

from monitor.core.catalog import Kind
from monitor.core.errors import InputError, UsageError
from monitor.ingest.jsondoc import json_array_elements
from monitor.ingest.rows import BadRecord, SourceRow
from monitor.ingest.safe import loads as safe_loads
from monitor.ingest.safe import refusal

__all__ = [
    "Kind",
    "Reader",
    "Request",
    "Rows",
    "Where",
    "canonical_value",
    "checked_request",
    "json_array_elements",
    "pairwise_codes",
    "parse_iso",
    "parse_mturk_time",
    "reader",
    "seconds",
    "utc_iso",
    "utc_time",
]

KINDS: tuple[str, ...] = ("rating", "label", "multilabel", "pairwise")
PREFERENCES: tuple[str, ...] = ("left", "right", "tie")
MAPPING_KEYS: tuple[str, ...] = ("value", "item", "left", "right", "pairwise", "text", "worker")
PAIR_ONLY = frozenset({"left", "right", "pairwise"})
SINGLE_ONLY = frozenset({"item", "text"})
FALSE_WORDS = frozenset({"", "false", "off", "0", "no", "n", "f"})
TRUE_WORDS = frozenset({"true", "on", "1", "yes", "y", "t"})


@dataclass(frozen=True)
class Where:
    """The place a problem is reported at: file, line a record starts on, column."""

    path: str
    line: int | None
    column: str | None = None

    def at(self, column: str | None) -> Where:
        return replace(self, column=column)

    def error(self, message: str, hint: str | None = None) -> InputError:
        return InputError.at(self.path, self.line, self.column, message, hint)


def _checked_mapping(
    platform: str, kind: str, mapping: Mapping[str, str] | None, keys: Sequence[str]
) -> dict[str, str]:
    """The kind and the mapping keys validated (a UsageError); the values stripped."""
    if kind not in KINDS:
        raise UsageError(f"unknown kind '{kind}'", hint="one of: " + ", ".join(KINDS))
    checked = {k: v.strip() for k, v in (mapping or {}).items()}
    for key, value in checked.items():
        if key not in keys:
            raise UsageError(
                f"--map {key}: not a mapping key of the {platform} reader",
                hint="keys: " + ", ".join(keys),
            )
        if key in PAIR_ONLY and kind != "pairwise":
            raise UsageError(f"--map {key}: only for pairwise campaigns")
        if key in SINGLE_ONLY and kind == "pairwise":
            raise UsageError(
                f"--map {key}: not for pairwise campaigns", hint="use --map left=... right=..."
            )
        if not value:
            raise UsageError(f"--map {key}: empty value", hint=f"write --map {key}=FIELD")
    return checked


def flag(options: Mapping[str, str], name: str) -> bool:
    """A boolean reader option; absent is false, a bare ``name`` (empty value) is true."""
    if name not in options:
        return False
    text = str(options[name]).strip().lower()
    if text == "" or text in TRUE_WORDS:
        return True
    if text in FALSE_WORDS:
        return False
    raise UsageError(f"option {name}: expected true or false, got '{options[name]}'")


Record = SourceRow | BadRecord


class Rows:
    """A reader's rows and the notes it has for the ingest summary (complete once read).

    Iterating gives the rows and raises the first record that could not be read as an
    InputError, as a caller of one reader expects. The ingest sets ``strict`` to False to get
    such records as :class:`~monitor.ingest.rows.BadRecord` and go on: it lists them all, or
    keeps them apart with their reasons (``--skip-invalid``).
    """

    strict = True

    def __init__(self, make: Callable[[list[str]], Iterator[Record]]) -> None:
        self.notes: list[str] = []
        self._rows = make(self.notes)

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:  # noqa: ANN401 - a SourceRow (or BadRecord when not strict)
        row = next(self._rows)
        if self.strict and isinstance(row, BadRecord):
            raise InputError(row.problem)
        return row


@dataclass(frozen=True)
class Request:
    """What a reader is asked: the campaign's kind, the mapping and the options (checked),
    and the pairwise encoding the mapping gives (``--map pairwise=...``)."""

    kind: str
    mapping: dict[str, str]
    options: dict[str, str]
    codes: dict[str, str]

    def flag(self, name: str) -> bool:
        return flag(self.options, name)


class Reader(Protocol):
    def __call__(
        self,
        path: Path,
        *,
        kind: Kind,
        mapping: dict[str, str] | None = None,
        options: dict[str, str] | None = None,
    ) -> Rows: ...


Body = Callable[[Path, Request, list[str]], Iterator[Record]]


def checked_request(
    platform: str,
    kind: str,
    mapping: Mapping[str, str] | None,
    options: Mapping[str, str] | None,
    *,
    keys: Sequence[str] = MAPPING_KEYS,
    options_known: Sequence[str] = (),
    flags: Sequence[str] = (),
    check: Callable[[Request], None] | None = None,
) -> Request:
    """The request of a reader call: the kind, the mapping keys, the options (``flags``
    among them true or false) and anything ``check`` looks at checked (a UsageError)."""
    checked = _checked_mapping(platform, kind, mapping, keys)
    for name in options or {}:
        if name not in options_known:
            known = ", ".join(options_known) or "none"
            raise UsageError(
                f"unknown option '{name}' for the {platform} reader", hint=f"options: {known}"
            )
    request = Request(kind, checked, dict(options or {}), pairwise_codes(checked.get("pairwise")))
    for name in flags:
        request.flag(name)
    if check is not None:
        check(request)
    return request


def reader(
    platform: str,
    body: Body,
    *,
    keys: Sequence[str] = MAPPING_KEYS,
    options: Sequence[str] = (),
    flags: Sequence[str] = (),
    check: Callable[[Request], None] | None = None,
) -> Reader:
    """The reader of a platform: called with the file and the campaign's kind, it checks the
    mapping ``keys``, the ``options`` (``flags`` among them are true or false) and anything
    ``check`` looks at, raising a UsageError at once; then ``body`` reads the file as the
    :class:`Rows` are iterated, adding its remarks to their notes."""

    def read(
        path: Path,
        *,
        kind: Kind,
        mapping: dict[str, str] | None = None,
        options: dict[str, str] | None = None,
    ) -> Rows:
        request = checked_request(
            platform,
            kind,
            mapping,
            options,
            keys=keys,
            options_known=names,
            flags=flags,
            check=check,
        )
        file = Path(path)
        return Rows(lambda notes: body(file, request, notes))

    names = tuple(options)
    read.__doc__ = body.__doc__
    return read


# --- answers -------------------------------------------------------------------------------


def pairwise_codes(spec: str | None) -> dict[str, str]:
    """Raw answer (lower case) -> ``left``/``right``/``tie``, from ``left=A,right=B,tie=same|eq``.

    The canonical words themselves are always understood, unless used as another outcome's code.
    """
    codes: dict[str, str] = {}
    for part in (spec or "").split(","):
        if not part.strip():
            continue
        canon, sep, raws = part.partition("=")
        canon = canon.strip().lower()
        if not sep or canon not in PREFERENCES or not raws.strip():
            raise UsageError(
                f"--map pairwise: cannot read '{part.strip()}'",
                hint="write it like left=A,right=B,tie=same",
            )
        for raw in raws.split("|"):
            raw = raw.strip().lower()
            if codes.get(raw, canon) != canon:
                raise UsageError(
                    f"--map pairwise: '{raw}' stands for both {codes[raw]} and {canon}"
                )
            codes[raw] = canon
    for canon in PREFERENCES:
        codes.setdefault(canon, canon)
    return codes


def decode_preference(raw: Any, codes: Mapping[str, str], where: Where) -> str:
    """The canonical preference of one raw answer; an empty answer stays empty (checked later)."""
    text = "" if raw is None else str(raw).strip()
    if not text:
        return ""
    try:
        return codes[text.lower()]
    except KeyError:
        known = ", ".join(sorted(codes))
        raise where.error(
            f"cannot read '{text}' as a preference",
            hint=f"known answers: {known}; set the encoding with --map pairwise=left=A,right=B,tie=C",
        ) from None


def on_shaped(value: Any) -> bool:
    """A checkbox answer as crowd-html-elements write it: ``{"on": true}``."""
    return isinstance(value, dict) and set(value) == {"on"} and isinstance(value["on"], bool)


def selected(answer: Any) -> list[str] | None:
    """The chosen options of ``{"3": true, "4": false}`` or ``{"cat": {"on": true}}``, else None."""
    if not isinstance(answer, dict) or not answer:
        return None
    chosen = []
    for option, state in answer.items():
        if on_shaped(state):
            state = state["on"]
        if not isinstance(state, bool):
            return None
        if state:
            chosen.append(str(option))
    return chosen


def canonical_value(kind: str, answer: Any, codes: Mapping[str, str], where: Where) -> Any:
    """The canonical value of one answer for the campaign kind.

    ``answer`` is a string (a CSV/TSV cell), a JSON value, a list of chosen options, or a
    selection object (see :func:`selected`). Multi-label answers become a list of strings (a
    string is read as a JSON list, a selection object, or options joined by ``|``); single
    answers stay scalars (strings stripped); pairwise answers become left/right/tie.
    """
    if isinstance(answer, dict):
        chosen = selected(answer)
        if chosen is None:
            raise where.error(
                "cannot read this JSON object as an answer",
                hint='supported: {"option": true} and {"option": {"on": true}}',
            )
        answer = chosen
    if kind == "multilabel":
        if isinstance(answer, str):
            text = answer.strip()
            if text.startswith(("[", "{")):
                parsed = json_cell(text, where)
                if isinstance(parsed, list | dict):
                    return canonical_value(kind, parsed, codes, where)
            return [part.strip() for part in text.split("|") if part.strip()]
        if isinstance(answer, list):
            _no_structures(answer, where)
            return [str(a).strip() for a in answer if a is not None and str(a).strip()]
        return [] if answer is None else [str(answer)]
    if isinstance(answer, list):
        _no_structures(answer, where)
        if len(answer) > 1:
            shown = ", ".join(str(a) for a in answer)
            raise where.error(
                f"several options chosen ({shown}) where one answer is expected",
                hint="a multi-label campaign takes sets of answers",
            )
        answer = answer[0] if answer else ""
    if isinstance(answer, str):
        answer = answer.strip()
        if answer.startswith("["):  # a label is kept as written, unless it holds structures
            parsed = json_cell(answer, where)
            if isinstance(parsed, list):
                _no_structures(parsed, where)
    if kind == "pairwise":
        return decode_preference(answer, codes, where)
    return "" if answer is None else answer


def json_value(text: str, where: Where) -> Any:  # noqa: ANN401 - any JSON value
    """The JSON value ``text`` holds, decoded as every reader decodes JSON
    (:func:`monitor.ingest.safe.loads`); what it refuses (not JSON, a key written twice, an
    integer of thousands of digits, nesting past the interpreter's stack) is an error at
    ``where``."""
    try:
        return safe_loads(text)
    except (ValueError, RecursionError) as exc:
        raise where.error(*refusal(exc)) from None


def json_cell(text: str, where: Where) -> Any:  # noqa: ANN401 - any JSON value
    """A cell that may hold JSON: its value, None when it is not JSON (then it is text); a
    JSON document the decoder refuses for another reason is an error at ``where``."""
    try:
        return safe_loads(text)
    except json.JSONDecodeError:
        return None
    except (ValueError, RecursionError) as exc:
        raise where.error(*refusal(exc)) from None


def _no_structures(answer: list[Any], where: Where) -> None:
    """Refuse a list holding JSON objects or lists (bounding boxes, spans, keypoints...)."""
    for element in answer:
        if isinstance(element, dict | list):
            shown = json.dumps(element, ensure_ascii=False)
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            what = "object" if isinstance(element, dict) else "list"
            raise where.error(
                f"a JSON {what} is not a label: {shown}",
                hint="this answer holds structured annotations (bounding boxes, spans, ...); "
                "map a column of labels, numbers or choices",
            )


def truthy_cell(text: str) -> bool:
    """A checkbox column is chosen when it holds anything but an empty or false word."""
    return text.strip().lower() not in FALSE_WORDS


# --- times ---------------------------------------------------------------------------------

_MONTHS = {
    name: number
    for number, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1
    )
}
# MTurk writes the requester site's zone as an abbreviation (PST/PDT in practice).
_ZONES = {
    "UTC": 0, "GMT": 0, "Z": 0,
    "PST": -8, "PDT": -7, "MST": -7, "MDT": -6, "CST": -6, "CDT": -5, "EST": -5, "EDT": -4,
}  # fmt: skip


def utc_iso(moment: datetime) -> str:
    """ISO 8601 in UTC with a ``Z``; a naive time is taken as UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def utc_time(
    text: str, where: Where, hint: str, parse: Callable[[str], datetime] | None = None
) -> datetime:
    """``text`` read by ``parse`` (default :func:`parse_iso`) as an aware time, in UTC. A time
    that cannot be read, or that lies outside the years 1 to 9999 once in UTC (its offset
    carries it past), is an error at ``where`` with ``hint``."""
    try:
        return (parse or parse_iso)(text).astimezone(UTC)
    except OverflowError:
        raise where.error(f"'{text}' is outside the years 1 to 9999 in UTC", hint) from None
    except ValueError:
        raise where.error(f"cannot read '{text}' as a time", hint) from None


def parse_iso(text: str) -> datetime:
    """An ISO 8601 time (``T`` or space, optional fraction and offset); naive means UTC."""
    moment = datetime.fromisoformat(text.strip())
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def parse_mturk_time(text: str) -> datetime:
    """MTurk's ``Mon Nov 03 09:12:45 PST 2025`` (ISO 8601 also accepted). Raises ValueError."""
    parts = text.split()
    if len(parts) != 6:
        return parse_iso(text)
    _, month, day, clock, zone, year = parts
    try:
        hours, minutes, seconds = (int(p) for p in clock.split(":"))
        offset = timezone(timedelta(hours=_ZONES[zone.upper()]))
        return datetime(
            int(year), _MONTHS[month[:3].lower()], int(day), hours, minutes, seconds, tzinfo=offset
        )
    except KeyError as exc:
        raise ValueError(f"unknown month or zone {exc}") from None


def seconds(text: Any) -> int | float:
    """A non-negative number of seconds; an int when whole. Raises ValueError."""
    if isinstance(text, bool):
        raise ValueError("a boolean is not a duration")
    try:
        value = float(text)
    except OverflowError:  # an integer past a double's range
        raise ValueError("not a finite number") from None
    if not value >= 0 or value == float("inf"):
        raise ValueError("not a non-negative finite number")
    return int(value) if value.is_integer() else value
