"""CSV and JSON Lines readers: records streamed as canonical rows, unreadable ones as BadRecords.

Both readers stream the file (constant memory), decode it line by line so that a line that is
not UTF-8 is named, and report the line a record starts on. A record that cannot be read (a CSV
row with too many or too few fields, a line that is not JSON or not a JSON object, bytes that are
not UTF-8) is yielded as a :class:`BadRecord`, so that ``--skip-invalid`` can keep it with its
reason; a file that is not what its extension says (JSON in a ``.csv``, a binary file, a CSV in
a ``.jsonl``) raises :class:`~monitor.core.errors.InputError` before any row.

What one database would take and the other refuse is refused on both (see
:mod:`monitor.ingest.safe`): a line holding a NUL character (CSV) is a BadRecord, and so is a
JSON line with a duplicate key, nesting deeper than :data:`~monitor.ingest.safe.MAX_DEPTH`, a
NaN or infinite number, a number past a double's range, a NUL or a lone surrogate. These are
found a block or a line at a time (a byte search, a compiled regex), not field by field.

``mapping`` renames columns: ``{"worker": "PROLIFIC_PID"}`` reads the canonical ``worker`` from
the file's ``PROLIFIC_PID`` column. A CSV header's names are matched without regard to case
(``Worker,Item,Value``) when no column has the exact name. Columns that are not canonical go to
``SourceRow.extra``.

The files people have: a gzip-compressed file (known by its first bytes, whatever its name) is
read as a stream; a CSV file's delimiter is the one its header line holds most of (comma,
semicolon, tab or bar, outside quotes; a ``.tsv`` file's is the tab) unless given; a UTF-8 byte
order mark and CRLF line ends are read as spreadsheets write them.
"""

from __future__ import annotations

import csv
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import suppress
from itertools import chain
from operator import itemgetter
from pathlib import Path
from typing import Any, BinaryIO

from monitor.core.errors import InputError, Problem
from monitor.ingest.files import (
    BLOCK_BYTES,
    UTF8_HINT,
    ByteCounter,
    check_delimiter,
    columns_hint,
    detect_delimiter,
    open_source,
    plain_suffix,
    refuse_binary,
    sniff,
)
from monitor.ingest.jsondoc import decode_problem
from monitor.ingest.rows import ITEM_COLUMNS, BadRecord, SourceRow, Table
from monitor.ingest.safe import NUL, NUL_HINT, JsonLines, unstorable

__all__ = ["BadRecord", "read_csv", "read_items", "read_jsonl"]

NOT_UTF8 = "not UTF-8 text"
QUOTE_HINT = "a value holding a comma, a quote or a line break must be quoted"
HeaderCheck = Callable[[list[str]], list[Problem]]
# (column -> index, [(index, payload column)]) -> a function from a row's fields and line to
# its record, or None.
FastFactory = Callable[
    [dict[str, int], list[tuple[int, str]]],
    Callable[[list[str], int], tuple[Any, ...] | None] | None,
]


class _Lines:
    """Decoded lines of a binary file; remembers which lines cannot be read or stored
    (``bad``: line -> what is wrong: not UTF-8, or a NUL character)."""

    def __init__(self, handle: BinaryIO, counter: ByteCounter | None) -> None:
        self.handle = handle
        self.counter = counter or ByteCounter()
        self.bad: dict[int, str] = {}
        self.number = 0

    def __iter__(self) -> Iterator[str]:
        counter = self.counter
        for number, raw in enumerate(self.handle, 1):
            self.number = number
            counter.n += len(raw)
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                self.bad[number] = NOT_UTF8
                text = raw.decode("utf-8", errors="replace")
            else:
                if b"\x00" in raw:
                    self.bad[number] = NUL
            if number == 1:
                text = text.removeprefix("\ufeff")
            yield text


class _BlockLines(_Lines):
    """The same lines as :class:`_Lines`, decoded a block at a time (much faster).

    A block that is not UTF-8, or holds a NUL byte, is decoded line by line, as
    :class:`_Lines` does, so that the bad lines are named. ``number`` is not kept (the CSV
    reader counts lines itself); the byte counter advances a block at a time. A line longer
    than a block is gathered in a list (no quadratic copying).
    """

    def __iter__(self) -> Iterator[str]:
        return chain.from_iterable(self._blocks())

    def _blocks(self) -> Iterator[list[str]]:
        read, counter, rest, number = self.handle.read, self.counter, b"", 0
        long: list[bytes] = []  # the blocks of a line longer than a block
        while True:
            block = read(BLOCK_BYTES)
            if not block:
                if rest or long:
                    yield self._decode([b"".join([*long, rest])], number)
                return
            counter.n += len(block)
            cut = block.rfind(b"\n") + 1
            if not cut:
                long.append(rest)
                rest = block
                continue
            if long:
                rest, long = b"".join([*long, rest]), []
            raw = (rest + block[:cut]) if rest else block[:cut]
            rest = block[cut:]
            text = None
            if b"\x00" not in raw:
                with suppress(UnicodeDecodeError):
                    text = raw.decode("utf-8")
            if text is None:
                lines = self._decode(raw.split(b"\n")[:-1], number, end=b"\n")
            else:
                lines = text.split("\n")
                lines.pop()
                lines = [line + "\n" for line in lines]
                if not number:
                    lines[0] = lines[0].removeprefix("\ufeff")
            number += len(lines)
            yield lines

    def _decode(self, raws: list[bytes], number: int, end: bytes = b"") -> list[str]:
        lines = []
        for number, raw in enumerate(raws, number + 1):  # noqa: B020 - the line's number
            try:
                text = (raw + end).decode("utf-8")
            except UnicodeDecodeError:
                self.bad[number] = NOT_UTF8
                text = (raw + end).decode("utf-8", errors="replace")
            else:
                if b"\x00" in raw:
                    self.bad[number] = NUL
            if number == 1:
                text = text.removeprefix("\ufeff")
            lines.append(text)
        return lines


def _rename(
    header: Sequence[str], mapping: dict[str, str] | None, columns: Sequence[str] = ()
) -> list[str]:
    """Canonical names of the header's columns: a mapped source column takes the canonical
    (its name matched exactly, else without regard to case); a column named as a canonical
    one but for case (``Worker``) takes it when no other column has it."""
    back = {source: canon for canon, source in (mapping or {}).items()}
    folded = {source.casefold(): canon for source, canon in back.items()}
    names = [back.get(name, name) for name in header]
    taken = set(names)
    for at, name in enumerate(header):
        canon = folded.get(name.casefold()) if name not in back else None
        if canon is not None and canon not in taken:
            names[at] = canon
            taken.add(canon)
    known = {c.casefold(): c for c in columns}
    for at, name in enumerate(names):
        canon = known.get(name.casefold())
        if canon is not None and canon != name and canon not in taken:
            names[at] = canon
            taken.add(canon)
    return names


def read_csv(
    path: Path,
    *,
    columns: Sequence[str],
    table: Table = "judgment",
    mapping: dict[str, str] | None = None,
    counter: ByteCounter | None = None,
    check_header: HeaderCheck | None = None,
    fast: FastFactory | None = None,
    delimiter: str | None = None,
) -> Iterator[SourceRow | BadRecord | tuple[Any, ...]]:
    """Stream a CSV file (UTF-8, header row; its delimiter ``delimiter``, else
    :func:`detect_delimiter`'s) as rows of ``table``, gzip-compressed or not.

    ``columns`` are the canonical columns of the table; the others go to ``extra``. Blank lines
    are skipped. Fields may be of any length; quotes must be balanced (a strict dialect). Empty
    column names at the end of the header (``worker,item,value,,`` as spreadsheets write) are
    dropped, and so are the blank cells under them. ``check_header`` gets the canonical column names
    and returns problems (a required column missing): they are raised before any row.
    ``fast`` (:meth:`~monitor.ingest.validate.Validator.csv_fast`) gets the index of each
    canonical column and the ``(index, name)`` of the others, and may return a function that
    turns a row's fields and line into its validated record: a row it accepts is yielded as
    that record (a plain tuple), the others as SourceRows.
    """
    name = str(path)
    head = sniff(path)
    refuse_binary(name, head, "CSV text", "give a CSV file: UTF-8 text, header row, comma")
    text = head.decode("utf-8", errors="replace").lstrip()
    if text.startswith(("{", "[")):
        raise InputError.at(
            name,
            1,
            None,
            "looks like JSON, not CSV",
            hint="name a JSON Lines file .jsonl, or pass --format jsonl",
        )
    delimiter = (
        check_delimiter(delimiter) if delimiter is not None else detect_delimiter(path, head)
    )
    return _csv_rows(path, columns, table, mapping, counter, check_header, fast, delimiter)


def _csv_rows(
    path: Path,
    columns: Sequence[str],
    table: Table,
    mapping: dict[str, str] | None,
    counter: ByteCounter | None,
    check_header: HeaderCheck | None,
    fast: FastFactory | None = None,
    delimiter: str = ",",
) -> Iterator[SourceRow | BadRecord | tuple[Any, ...]]:
    name = str(path)
    csv.field_size_limit(sys.maxsize)
    with open_source(path) as handle:
        lines = _BlockLines(handle, counter)
        reader = csv.reader(lines, strict=True, delimiter=delimiter)
        try:
            raw_header = next(reader, None)
        except csv.Error as exc:
            raise InputError.at(name, 1, None, f"cannot read the header: {exc}") from None
        if bad_first := lines.bad.get(1):
            hint = UTF8_HINT if bad_first == NOT_UTF8 else NUL_HINT
            raise InputError.at(name, 1, None, bad_first, hint=hint)
        if not raw_header or not any(h.strip() for h in raw_header):
            raise InputError.at(
                name, 1, None, "no header row", hint="the first line names the columns"
            )
        header = [h.strip() for h in raw_header]
        while not header[-1]:
            header.pop()
        seen: set[str] = set()
        for column in header:
            if column in seen:
                if not column:
                    raise InputError.at(
                        name,
                        1,
                        None,
                        "two columns without a name",
                        "name every column, or delete the empty ones",
                    )
                raise InputError.at(name, 1, column, "appears twice in the header")
            seen.add(column)
        canon = _rename(header, mapping, columns)
        if check_header is not None and (problems := check_header(canon)):
            raise InputError(problems)
        canonical = set(columns)
        width = len(header)
        keep = [(i, c) for i, c in enumerate(canon) if c in canonical]
        rest = [(i, c) for i, c in enumerate(canon) if c not in canonical and c]
        names = [c for _, c in keep]
        leading = [i for i, _ in keep] == list(range(len(keep)))
        pick = itemgetter(*(i for i, _ in keep)) if len(keep) > 1 else None
        bad, row_at, new_row = lines.bad, reader.__next__, _row_maker(table)
        quick = fast({c: i for i, c in keep}, rest) if fast is not None else None
        end = reader.line_num
        while True:
            try:
                row = row_at()
            except StopIteration:
                return
            except csv.Error as exc:
                start = end + 1
                end = reader.line_num
                yield BadRecord(
                    start,
                    "",
                    Problem(name, start, None, f"cannot read the record: {exc}", QUOTE_HINT),
                )
                continue
            start, end = end + 1, reader.line_num
            if bad and any(n in bad for n in range(start, end + 1)):
                raw = delimiter.join(row)
                what = next(bad[n] for n in range(start, end + 1) if n in bad)
                hint = UTF8_HINT if what == NOT_UTF8 else NUL_HINT
                yield BadRecord(start, raw, Problem(name, start, None, what, hint))
                continue
            if not row or (not row[0].strip() and not any(cell.strip() for cell in row)):
                continue
            if len(row) != width and (
                len(row) < width or any(cell.strip() for cell in row[width:])
            ):
                yield BadRecord(
                    start,
                    delimiter.join(row),
                    Problem(
                        name,
                        start,
                        None,
                        f"{len(row)} fields where the header has {width}",
                        QUOTE_HINT,
                    ),
                )
                continue
            if quick is not None and (record := quick(row, start)) is not None:
                yield record
                continue
            if leading:
                fields = dict(zip(names, row, strict=False))
            elif pick is not None:
                fields = dict(zip(names, pick(row), strict=True))
            else:
                fields = {c: row[i] for i, c in keep}
            extra = {c: row[i] for i, c in rest} if rest else {}
            yield new_row(start, fields, extra)


def _row_maker(table: Table) -> Callable[[int, dict[str, Any], dict[str, Any]], SourceRow]:
    """``SourceRow(line, fields, table, extra)``, built without the frozen dataclass's
    ``__init__`` (one attribute check per field: a fair share of reading time)."""
    new = object.__new__

    def make(line: int, fields: dict[str, Any], extra: dict[str, Any]) -> SourceRow:
        row = new(SourceRow)
        row.__dict__.update(line=line, fields=fields, table=table, extra=extra, checked=True)
        return row

    return make


def read_jsonl(
    path: Path,
    *,
    # read_csv's keywords but its CSV-only ones, so that ingest/api.py calls either alike;
    # the reading itself shares nothing with CSV's
    columns: Sequence[str],
    table: Table = "judgment",
    mapping: dict[str, str] | None = None,
    counter: ByteCounter | None = None,
) -> Iterator[SourceRow | BadRecord]:
    """Stream a JSON Lines file (one object a line) as rows of ``table``. Blank lines skipped."""
    name = str(path)
    head = sniff(path)
    refuse_binary(name, head, "JSON Lines text", "give one JSON object a line, in UTF-8")
    first = next((ln.strip() for ln in head.split(b"\n") if ln.strip()), b"")
    if first == b"[" or (first.startswith(b"[") and first.endswith(b"[")):
        raise InputError.at(
            name, 1, None, "a JSON array, not JSON Lines", hint="write one JSON object a line"
        )
    if first and not first.startswith((b"{", b"[")):
        raise InputError.at(
            name,
            1,
            None,
            "does not look like JSON Lines",
            hint="a CSV file is named .csv, or pass --format csv",
        )
    return _jsonl_rows(path, columns, table, mapping, counter)


def _jsonl_rows(
    path: Path,
    columns: Sequence[str],
    table: Table,
    mapping: dict[str, str] | None,
    counter: ByteCounter | None,
) -> Iterator[SourceRow | BadRecord]:
    name = str(path)
    canonical = set(columns)
    back = {source: canon for canon, source in (mapping or {}).items()}
    decoder = JsonLines()
    loads, suspect = decoder.loads, decoder.suspect
    with open_source(path) as handle:
        lines = _Lines(handle, counter)
        for text in lines:
            if not text.strip():
                continue
            number = lines.number
            if what := lines.bad.get(number):
                raw = text.rstrip("\r\n")
                hint = UTF8_HINT if what == NOT_UTF8 else NUL_HINT
                yield BadRecord(number, raw, Problem(name, number, None, what, hint))
                continue
            try:
                record: Any = loads(text)
            except (ValueError, RecursionError) as exc:  # see refusal()
                why, tip, char = decode_problem(exc)
                raw = text.rstrip("\r\n")
                yield BadRecord(number, raw, Problem(name, number, None, why, tip, char))
                continue
            if isinstance(record, dict) and suspect(text):
                found = _unstorable_key(record)
                if found is not None:
                    key, (why, hint) = found
                    yield BadRecord(
                        number, text.rstrip("\r\n"), Problem(name, number, key, why, hint)
                    )
                    continue
            if not isinstance(record, dict):
                got = type(record).__name__
                yield BadRecord(
                    number,
                    text.rstrip("\r\n"),
                    Problem(
                        name,
                        number,
                        None,
                        f"expected a JSON object, got {_json_kind(got)}",
                        'write one object a line: {"worker": ..., ...}',
                    ),
                )
                continue
            fields: dict[str, Any] = {}
            extra: dict[str, Any] = {}
            pairs: dict[str, Any] = record
            for written, value in pairs.items():
                canon = back.get(written, written)
                if canon in canonical:
                    fields[canon] = value
                else:
                    extra[canon] = value
            yield SourceRow(number, fields, table, extra, checked=True)


def _unstorable_key(record: dict[str, Any]) -> tuple[str | None, tuple[str, str]] | None:
    """``(key, (what is wrong, hint))`` of the first entry of ``record`` that some database
    could not store (the key None when the key itself is the problem)."""
    for key, value in record.items():
        if why := unstorable(key):
            return None, (f"a key holding {why[0]}", why[1])
        if why := unstorable(value, 1):
            return key, why
    return None


def _json_kind(python_type: str) -> str:
    return {
        "list": "an array",
        "str": "a string",
        "int": "a number",
        "float": "a number",
        "bool": "a boolean",
        "NoneType": "null",
    }.get(python_type, python_type)


def read_items(
    path: Path, *, counter: ByteCounter | None = None
) -> Iterator[SourceRow | BadRecord | tuple[Any, ...]]:
    """The items file (``item``, optional ``gold``, ``text``), CSV (or TSV) or JSON Lines by
    extension, gzip-compressed or not."""
    if plain_suffix(path) in (".jsonl", ".ndjson"):
        return read_jsonl(path, columns=ITEM_COLUMNS, table="item", counter=counter)
    name = str(path)

    def check(header: list[str]) -> list[Problem]:
        if "item" in header:
            return []
        hint = f"columns: {columns_hint(header)}; an items file has item, optional gold and text"
        return [Problem(name, 1, "item", "not in the header", hint)]

    return read_csv(path, columns=ITEM_COLUMNS, table="item", counter=counter, check_header=check)
