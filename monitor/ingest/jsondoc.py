"""JSON texts with places: where a decoding problem is (line and character), and a top-level
array read element by element with the place each element starts.

Every JSON reader names the line and the character (both from 1) where the text stops being
JSON: ``export.json:2:1: not valid JSON: text after the end of the array``. A key written
twice, an integer of thousands of digits or nesting past the interpreter's stack (see
:func:`~monitor.ingest.safe.refusal`) are found while a whole element is decoded: they are
reported at the line the element starts on.
"""

from __future__ import annotations

import json
import re
from typing import Any

from monitor.core.errors import InputError
from monitor.ingest.safe import JsonLines, refusal

__all__ = ["decode_problem", "json_array_elements", "place"]

_WS = re.compile(r"\s*")


def place(text: str, pos: int) -> tuple[int, int]:
    """``(line, character)`` of the offset ``pos`` of ``text``, both counted from 1."""
    start = text.rfind("\n", 0, pos) + 1
    return text.count("\n", 0, pos) + 1, pos - start + 1


def decode_problem(exc: ValueError | RecursionError) -> tuple[str, str | None, int | None]:
    """``(what is wrong, hint, character)`` for an error of decoding one line of JSON
    (:meth:`~monitor.ingest.safe.JsonLines.loads`): the character is where the syntax breaks,
    None for a problem of a whole value (a key twice, a huge integer, deep nesting)."""
    why, hint = refusal(exc)
    return why, hint, exc.colno if isinstance(exc, json.JSONDecodeError) else None


def _skip(text: str, pos: int) -> int:
    """The offset of the first character at or after ``pos`` that is not white space."""
    match = _WS.match(text, pos)
    return pos if match is None else match.end()


def json_array_elements(name: str, text: str) -> list[tuple[int, Any]]:
    """The elements of the top-level JSON array ``text``, each with the line it starts on;
    decoded as every reader decodes JSON
    (:class:`~monitor.ingest.safe.JsonLines`). Text that is not such an array refuses the file
    at the line and character where it goes wrong; a key written twice, an integer of
    thousands of digits or nesting past the interpreter's stack at the element's line."""
    decoder = JsonLines()
    pos = _skip(text, 0)
    if pos >= len(text) or text[pos] != "[":
        line = text.count("\n", 0, pos) + 1
        raise InputError.at(name, line, None, "expected a JSON array (a list of tasks)")
    elements: list[tuple[int, Any]] = []
    line, counted = 1, 0
    pos = _skip(text, pos + 1)
    if not text.startswith("]", pos):
        while True:
            line += text.count("\n", counted, pos)
            counted = pos
            try:
                element, pos = decoder.raw_decode(text, pos)
            except json.JSONDecodeError as exc:
                raise InputError.at(
                    name, exc.lineno, None, f"not valid JSON: {exc.msg}", None, exc.colno
                ) from None
            except (ValueError, RecursionError) as exc:  # a key twice, a huge integer, nesting
                raise InputError.at(name, line, None, *refusal(exc)) from None
            elements.append((line, element))
            pos = _skip(text, pos)
            if not text.startswith(",", pos):
                break
            pos = _skip(text, pos + 1)
        if not text.startswith("]", pos):
            line, char = place(text, pos)
            raise InputError.at(name, line, None, "not valid JSON: expected ',' or ']'", None, char)
    pos = _skip(text, pos + 1)
    if pos < len(text):
        line, char = place(text, pos)
        raise InputError.at(
            name,
            line,
            None,
            "not valid JSON: text after the end of the array",
            "an export is one JSON array: was something added to the file after it?",
            char,
        )
    return elements
