"""Everything the command line prints goes through here, so that no id, label, file name or
message can act on the terminal.

Ids and labels are stored as they came (an ANSI escape ``\\x1b[2J``, an OSC title
``\\x1b]0;title\\x07`` or a bidi override U+202E included, see ``docs/ingest.md``); a line
meant to be read is written with them as escapes (:func:`echo`, via
:func:`monitor.core.errors.printable`), and a JSON text with them as JSON escapes (:func:`json_text`),
which read back as the same strings. Data streamed to standard output (a CSV export, an HTML
report) is escaped only when standard output is a terminal: redirected to a file, it is the
data itself.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Collection, Sequence
from typing import Any, TextIO

from monitor.core.errors import printable


def echo(*parts: object, sep: str = " ", err: bool = False) -> None:
    """Print one line: each part as text with what a terminal would act on or hide written as
    escapes; ``sep`` (the caller's own, a tab or spaces) is written as it is."""
    line = sep.join(printable(str(p)) for p in parts)
    print(line, file=sys.stderr if err else sys.stdout)


def echo_table(rows: Sequence[Sequence[str]], numeric: Collection[int] = ()) -> None:
    """Rows of cells as lined-up columns (two spaces apart, the ``numeric`` ones to the right),
    each cell escaped first so that the columns line up as printed."""
    cells = [[printable(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))] if cells else []
    for r in cells:
        line = "  ".join(
            c.rjust(widths[i]) if i in numeric else c.ljust(widths[i]) for i, c in enumerate(r)
        )
        echo(line.rstrip())


def json_escape(text: str) -> str:
    """A JSON text with every character that is not printable (but its line breaks) written as
    a ``\\uXXXX`` escape: valid JSON that reads back as the same strings. ``json.dumps`` with
    ``ensure_ascii=False`` escapes C0 controls only: DEL, C1 controls, bidi and other format
    characters and lone surrogates pass through it."""
    if text.isprintable():
        return text
    table = {ord(c): _u(c) for c in set(text) if not c.isprintable() and c != "\n"}
    return text.translate(table) if table else text


def _u(char: str) -> str:
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # a UTF-16 surrogate pair, as JSON writes characters beyond the BMP
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_text(obj: Any, **options: Any) -> str:  # noqa: ANN401
    """``json.dumps(obj, ensure_ascii=False, allow_nan=False, **options)`` made safe for a
    terminal (:func:`json_escape`)."""
    return json_escape(json.dumps(obj, ensure_ascii=False, allow_nan=False, **options))


def echo_json(obj: Any) -> None:  # noqa: ANN401
    """One JSON value on one line of standard output (``--json``)."""
    sys.stdout.write(json_text(obj) + "\n")


class JsonStream:
    """A text stream that passes a JSON text on to ``stream`` through :func:`json_escape`
    (for a JSON document written in pieces by another module)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(json_escape(text))
        return len(text)

    def flush(self) -> None:
        self.stream.flush()


class TerminalStream:
    """A text stream that writes to ``stream`` as it is, or, when ``stream`` is a terminal,
    with what the terminal would act on written as escapes (line breaks and tabs kept)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.terminal = stream.isatty()

    def write(self, text: str) -> int:
        shown = text
        if self.terminal and not text.isprintable():
            shown = "".join(
                part if part in ("\n", "\r\n", "\t") else printable(part)
                for part in _keep_breaks(text)
            )
        self.stream.write(shown)
        return len(text)

    def flush(self) -> None:
        self.stream.flush()


def _keep_breaks(text: str) -> list[str]:
    return re.split(r"(\r\n|\n|\t)", text)


def write_data(text: str, stream: TextIO | None = None) -> None:
    """Write a data text (CSV, HTML) to standard output: see :class:`TerminalStream`."""
    TerminalStream(stream or sys.stdout).write(text)


class PrintableFormatter(logging.Formatter):
    """Log lines (the scheduler's) with campaign names and errors escaped as :func:`echo` does;
    a traceback keeps its line breaks."""

    def format(self, record: logging.LogRecord) -> str:
        return "\n".join(printable(line) for line in super().format(record).split("\n"))
