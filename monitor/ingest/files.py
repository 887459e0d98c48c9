"""Opening an input file: a gzip stream known by its first bytes, a CSV file's delimiter found
in its header, and a file that is not text refused before any row is read."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from monitor.core.errors import InputError, NotFound, UsageError

UTF8_HINT = "save the file as UTF-8"
SHOWN_COLUMNS = 20
HEAD_BYTES = 8192
BLOCK_BYTES = 1 << 18
GZIP_MAGIC = b"\x1f\x8b"
DELIMITERS = (",", ";", "\t", "|")
"""The delimiters a CSV file's header is searched for, the first winning a tie."""
DELIMITER_NAMES = {",": "comma", ";": "semicolon", "\t": "tab", "|": "bar"}


class ByteCounter:
    """How many bytes of the file have been read so far (for the progress bar)."""

    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0


class Gunzip(gzip.GzipFile):
    """A gzip stream whose damage (a truncated or corrupt file) is one problem line."""

    def read(self, size: int | None = -1) -> bytes:
        try:
            return super().read(size)
        except (OSError, EOFError, zlib.error) as exc:
            raise damaged(self.name, exc) from None

    def readline(self, size: int | None = -1) -> bytes:
        try:
            return super().readline(size)
        except (OSError, EOFError, zlib.error) as exc:
            raise damaged(self.name, exc) from None


def damaged(name: str, exc: BaseException) -> InputError:
    return InputError.at(
        str(name),
        None,
        None,
        f"a damaged gzip file ({exc or type(exc).__name__})",
        "compress it again, or give the file uncompressed",
    )


def is_gzip(path: Path) -> bool:
    """Whether the file starts as a gzip stream does."""
    try:
        with open(path, "rb") as handle:
            return handle.read(2) == GZIP_MAGIC
    except OSError:
        return False


def open_source(path: Path) -> BinaryIO:
    """The file's bytes, decompressed as they are read when it is gzip-compressed."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 (closed by the caller)
    except FileNotFoundError:
        raise NotFound(f"no such file: {path}") from None
    except IsADirectoryError:
        raise NotFound(f"{path} is a directory, not a file") from None
    if handle.read(2) != GZIP_MAGIC:
        handle.seek(0)
        return handle
    handle.seek(0)
    return Gunzip(filename=str(path), mode="rb", fileobj=handle)  # type: ignore[return-value]


def plain_suffix(path: Path) -> str:
    """The file's extension, a ``.gz`` after it left out (``x.csv.gz`` -> ``.csv``)."""
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes.pop()
    return suffixes[-1] if suffixes else ""


def count_outside_quotes(line: str, delimiter: str) -> int:
    n, quoted = 0, False
    for char in line:
        if char == '"':
            quoted = not quoted
        elif char == delimiter and not quoted:
            n += 1
    return n


def detect_delimiter(path: Path, head: bytes) -> str:
    """The delimiter of a CSV file: a tab for ``.tsv``, else the one of :data:`DELIMITERS`
    its header line holds most of outside quotes (a comma when it holds none)."""
    if plain_suffix(path) == ".tsv":
        return "\t"
    text = head.decode("utf-8", errors="replace").removeprefix("\ufeff")
    first = next((line for line in text.splitlines() if line.strip()), "")
    counts = {d: count_outside_quotes(first, d) for d in DELIMITERS}
    best = max(DELIMITERS, key=lambda d: counts[d])
    return best if counts[best] else ","


def check_delimiter(delimiter: str) -> str:
    named = {"tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";", "bar": "|"}
    delimiter = named.get(delimiter, delimiter)
    if len(delimiter) != 1 or delimiter in '"\r\n' or delimiter.isalnum():
        raise UsageError(
            f"--delimiter {delimiter!r}: one character that is not a letter, digit or quote",
            hint="e.g. --delimiter ';' or --delimiter tab",
        )
    return delimiter


def sniff(path: Path) -> bytes:
    """The first bytes of the file (without a UTF-8 byte order mark)."""
    with open_source(path) as handle:
        head = handle.read(HEAD_BYTES)
    return head.removeprefix(b"\xef\xbb\xbf")


def refuse_binary(name: str, head: bytes, what: str, hint: str) -> None:
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError.at(name, None, None, f"UTF-16 text, not {what} in UTF-8", UTF8_HINT)
    if head.startswith(GZIP_MAGIC):
        raise InputError.at(
            name, None, None, f"a gzip file inside a gzip file, not {what}", "decompress it first"
        )
    if b"\x00" in head:
        raise InputError.at(name, None, None, f"a binary file, not {what}", hint=hint)


def columns_hint(header: Sequence[str]) -> str:
    """The header's columns for a hint: the first few, each cut short, then how many more."""
    names = [n if len(n) <= 40 else n[:37] + "..." for n in header[:SHOWN_COLUMNS]]
    more = len(header) - SHOWN_COLUMNS
    return (", ".join(names) or "none") + (f", ... and {more} more" if more > 0 else "")
