"""Delimited platform exports (CSV, TSV): records streamed with their lines, columns named in
full or without their prefix, and the numbered columns of a task that asks several questions.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from monitor.core.errors import InputError, NotFound, Problem
from monitor.ingest.rows import BadRecord

__all__ = ["Numbered", "missing_column", "numbered", "open_table", "resolve_column"]

Records = Iterator[tuple[int, dict[str, str] | BadRecord]]


@contextmanager
def open_table(
    path: Path, delimiter: str, *, exact: bool = False
) -> Iterator[tuple[list[str], Records]]:
    """Open a CSV/TSV file: the header, then ``(line, record)`` streamed one at a time.

    ``line`` is where the record starts (quoted line breaks make records span lines). Blank
    lines are skipped; short rows are padded (a :class:`BadRecord` when ``exact``: for files a
    program writes whole, a short row is a damaged one); a row with extra non-empty cells is a
    BadRecord. Text that is not UTF-8, or a quote the reader cannot follow, stops the file.
    """
    name = str(path)
    try:
        handle = open(path, encoding="utf-8-sig", newline="")  # noqa: SIM115 (closed below)
    except FileNotFoundError:
        raise NotFound(f"no such file: {name}") from None
    with handle:
        reader = csv.reader(handle, delimiter=delimiter)
        try:
            header = next(reader, None)
        except (csv.Error, UnicodeDecodeError) as exc:
            raise _unreadable(name, 1, exc) from None
        if not header or not any(h.strip() for h in header):
            raise InputError.at(name, 1, None, "no header row", hint="export the file with headers")
        header = [h.strip() for h in header]
        yield header, _records(name, reader, header, delimiter, exact)


def _unreadable(name: str, line: int | None, exc: Exception) -> InputError:
    if isinstance(exc, UnicodeDecodeError):
        return InputError.at(name, None, None, "not UTF-8 text", hint="export the file as UTF-8")
    return InputError.at(name, line, None, f"cannot read the record: {exc}")


def _records(name: str, reader: Any, header: list[str], delimiter: str, exact: bool) -> Records:
    width = len(header)
    end = reader.line_num
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except (csv.Error, UnicodeDecodeError) as exc:
            raise _unreadable(name, end + 1, exc) from None
        start, end = end + 1, reader.line_num
        if not any(cell.strip() for cell in row):
            continue
        hint = None
        if len(row) > width and any(cell.strip() for cell in row[width:]):
            hint = "a value holding the separator or a line break must be quoted"
        elif len(row) < width and exact:
            hint = "the row is damaged (e.g. re-saved by a spreadsheet): export it again"
        if hint is not None:
            what = f"{len(row)} fields where the header has {width}"
            problem = Problem(name, start, None, what, hint)
            yield start, BadRecord(start, delimiter.join(row), problem)
            continue
        if len(row) < width:
            row = row + [""] * (width - len(row))
        yield start, dict(zip(header, row, strict=False))


def resolve_column(spec: str, header: Sequence[str], prefixes: Sequence[str] = ()) -> str | None:
    """The header column ``spec`` names, written in full or without one of ``prefixes``."""
    if spec in header:
        return spec
    for prefix in prefixes:
        if prefix + spec in header:
            return prefix + spec
    return None


def missing_column(path: str, key: str, spec: str, available: Iterable[str]) -> InputError:
    """A mapped or required column absent from the header, listing the ones that could fit."""
    listed = ", ".join(available) or "none"
    return InputError.at(
        path,
        1,
        spec,
        "not in the header",
        hint=f"columns: {listed}; choose one with --map {key}=COLUMN",
    )


_NUMBERED = re.compile(r"(.*?)(\d+)(\D*)")


class Numbered(dict[str, str]):
    """The columns of one ``{n}`` template, number (without leading zeros) -> column."""

    def __init__(self, template: str) -> None:
        super().__init__()
        self.template = template

    def shown(self) -> str:
        """``Answer.q{n} (n = 1..100)``: the template and the numbers it has."""
        numbers = sorted(map(int, self))
        span = f"{numbers[0]}..{numbers[-1]}"
        if len(numbers) != numbers[-1] - numbers[0] + 1:
            span += f", {len(numbers)} numbers"
        return f"{self.template} (n = {span})"


def numbered(columns: Iterable[str]) -> list[Numbered]:
    """The families of numbered columns among ``columns`` (two or more columns that differ
    only by the last number in their name: ``Answer.q1``, ``Answer.q2`` are ``Answer.q{n}``),
    the largest first."""
    families: dict[str, Numbered] = {}
    for column in columns:
        match = _NUMBERED.fullmatch(column)
        if match is not None:
            head, number, tail = match.groups()
            family = families.setdefault(head + "{n}" + tail, Numbered(head + "{n}" + tail))
            family.setdefault(str(int(number)), column)
    found = [f for f in families.values() if len(f) > 1]
    return sorted(found, key=len, reverse=True)
