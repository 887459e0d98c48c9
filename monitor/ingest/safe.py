"""What both databases can store: the rules that make one file get one answer everywhere.

SQLite stores almost anything; PostgreSQL refuses a NUL character in text and in JSONB,
text that is not Unicode (a lone surrogate, which only a ``\\ud800`` escape of JSON can make),
and ``NaN`` or ``Infinity`` in JSONB; and Python's ``float`` or ``json`` fail on numbers past
a double's range or on JSON nested deeper than the interpreter's stack. Such values are refused
at ingest, on every backend, with the file, line and column.

:func:`unstorable` says what is wrong with one value (a string, a number, a JSON tree), or
None. :func:`storable_text` turns any text into one both databases take (for the raw text of a
rejected row, kept as evidence). :data:`NUMBER` is the one spelling of a number the files may
use: ASCII decimal, optional sign, fraction and exponent (``float`` alone would also take
``١``, ``３`` or ``1_0``).
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

__all__ = [
    "DEEP",
    "DEEP_HINT",
    "ESCAPES",
    "LONG_DIGITS",
    "MAX_DEPTH",
    "NUL",
    "NUL_HINT",
    "NUMBER",
    "RANGE",
    "RANGE_HINT",
    "DuplicateKey",
    "JsonLines",
    "loads",
    "refusal",
    "storable_text",
    "unstorable",
    "word",
]

#: The deepest JSON a value may be (PostgreSQL and Python both have stack limits).
MAX_DEPTH = 64
#: A number in a file (stripped): ASCII decimal only (``float`` alone takes ``١``, ``３``, ``1_0``).
NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
#: A JSON escape that makes a NUL or half of a surrogate pair.
ESCAPES = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")
#: Digits enough to be past a double's range (an integer of 309 digits or more).
LONG_DIGITS = re.compile(r"[0-9]{300}")
_MAX_FLOAT = sys.float_info.max
RANGE = "a number past the range of a double (about 1.8e308)"
RANGE_HINT = "write such a number as a string"
DEEP = f"JSON nested deeper than {MAX_DEPTH} levels"
DEEP_HINT = "flatten the value"


def word(char: str) -> str:
    """A character as an escape: ``\\x00``, ``\\ud800``."""
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


NUL = "a NUL character (\\x00), which cannot be stored"
NUL_HINT = "remove the NUL characters: a text file holds none"
Why = tuple[str, str]  # (what is wrong, hint)


def _text(value: str) -> Why | None:
    if "\x00" in value:
        return NUL, NUL_HINT
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            bad = word(value[exc.start])
            return (
                f"a lone surrogate ({bad}), which is not Unicode text",
                "write the character itself, or both halves of a \\u escape pair",
            )
    return None


def unstorable(value: Any, depth: int = 0) -> Why | None:  # noqa: ANN401 - any JSON value
    """``(what is wrong, hint)`` when ``value`` (a string or any JSON value, ``depth`` levels
    down) cannot be stored on every database, else None."""
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, float):
        if math.isfinite(value):
            return None
        if value != value:  # noqa: PLR0124 - NaN
            return "NaN, which JSON does not allow", "write null for no value"
        return f"{RANGE}, or Infinity, which JSON does not allow", RANGE_HINT
    if isinstance(value, int):
        if -_MAX_FLOAT <= value <= _MAX_FLOAT:
            return None
        return RANGE, RANGE_HINT
    if isinstance(value, dict | list):
        if depth >= MAX_DEPTH:
            return DEEP, DEEP_HINT
        items = value.items() if isinstance(value, dict) else ((None, v) for v in value)
        for key, element in items:
            if key is not None and (why := _text(str(key))):
                return f"a key holding {why[0]}", why[1]
            if why := unstorable(element, depth + 1):
                return why
    return None


class DuplicateKey(ValueError):
    """A JSON object with a key written twice."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refusing a key written twice (``json`` would keep the last silently)."""
    record = dict(pairs)
    if len(record) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(key)
            seen.add(key)
    return record


class JsonLines:
    """Decodes JSON lines, refusing duplicate keys (:class:`DuplicateKey`), and tells which
    lines need their values walked with :func:`unstorable` (:meth:`suspect`).

    The screening costs next to nothing on a clean line: a float past a double's range and a
    ``NaN`` or ``Infinity`` are noticed by the decoder's own hooks (called for those tokens
    only), a NUL or a lone surrogate can only come from a ``\\u`` escape (a substring search,
    then a regex), an integer past a double's range or nesting past :data:`MAX_DEPTH` only on
    a long line.
    """

    def __init__(self) -> None:
        self.flagged = False
        decoder = json.JSONDecoder(
            object_pairs_hook=_object, parse_float=self._float, parse_constant=self._constant
        )
        self._decode, self._raw_decode = decoder.decode, decoder.raw_decode

    def _float(self, text: str) -> float:
        value = float(text)
        if value - value != 0.0:  # 1e309
            self.flagged = True
        return value

    def _constant(self, name: str) -> float:  # NaN, Infinity, -Infinity
        self.flagged = True
        return float(name)

    def loads(self, text: str) -> Any:  # noqa: ANN401 - any JSON value
        """The value of one line (``json.JSONDecodeError``, :class:`DuplicateKey`,
        ``ValueError`` for an integer of more than 4300 digits, ``RecursionError``)."""
        self.flagged = False
        return self._decode(text)

    def raw_decode(self, text: str, pos: int = 0) -> tuple[Any, int]:
        """The value starting at ``pos`` of ``text`` and where it ends (the errors of
        :meth:`loads`): for a document holding several values, such as a JSON array read
        element by element."""
        self.flagged = False
        return self._raw_decode(text, pos)

    def suspect(self, text: str) -> bool:
        """Whether the line last decoded may hold a value :func:`unstorable` refuses."""
        if self.flagged:
            return True
        if "\\u" in text and ESCAPES.search(text) is not None:
            return True
        return len(text) > 2 * MAX_DEPTH and (
            text.count("[") + text.count("{") > MAX_DEPTH
            or (len(text) > 300 and LONG_DIGITS.search(text) is not None)
        )


def loads(text: str) -> Any:  # noqa: ANN401 - any JSON value
    """One JSON value decoded as every reader of the project decodes JSON (a key written twice
    refused); the errors of :meth:`JsonLines.loads`, which :func:`refusal` puts in words."""
    return JsonLines().loads(text)


def refusal(exc: ValueError | RecursionError) -> tuple[str, str | None]:
    """``(what is wrong, hint or None)`` for an error of :meth:`JsonLines.loads`: not JSON, a
    key written twice, an integer of more digits than Python converts, nesting past the
    interpreter's stack."""
    if isinstance(exc, DuplicateKey):
        return (
            f"the key '{exc.key[:60]}' appears twice in one object",
            "a key names one value: which one is meant?",
        )
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON: {exc.msg}", None
    if isinstance(exc, RecursionError):
        return DEEP, DEEP_HINT
    return RANGE, RANGE_HINT  # int(): more than 4300 digits


def storable_text(text: str) -> str:
    """``text`` as both databases store it: NUL written ``\\x00``, a lone surrogate as its
    escape (``\\ud800``); anything else unchanged."""
    if "\x00" in text:
        text = text.replace("\x00", "\\x00")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text
