"""Reading a report page in tests: its tables by id (headers, rows of cell texts, each row's
attributes) and the page without its pictures."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass
class ParsedTable:
    headers: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    attrs: list[dict[str, str | None]] = field(default_factory=list)

    def column(self, title: str) -> list[str]:
        k = self.headers.index(title)
        return [r[k] for r in self.rows]


class Tables(HTMLParser):
    """Every ``<table id=...>`` of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, ParsedTable] = {}
        self._table: ParsedTable | None = None
        self._cell: list[str] | None = None
        self._head = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table" and a.get("id"):
            self._table = self.tables[str(a["id"])] = ParsedTable()
        elif self._table is None:
            return
        elif tag == "thead":
            self._head = True
        elif tag == "tbody":
            self._head = False
        elif tag == "tr" and not self._head:
            self._table.rows.append([])
            self._table.attrs.append(a)
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if self._table is None:
            return
        if tag in ("td", "th") and self._cell is not None:
            text = " ".join(" ".join(self._cell).split())
            if self._head:
                self._table.headers.append(text)
            elif self._table.rows:
                self._table.rows[-1].append(text)
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def tables(html: str) -> dict[str, ParsedTable]:
    p = Tables()
    p.feed(html)
    p.close()
    return p.tables


PICTURE = re.compile(r'<div class="picture"><svg .*?</svg></div>', re.S)


def pictures(html: str) -> list[str]:
    """The aria-labels of the evidence pictures of a page."""
    return [m for p in PICTURE.findall(html) for m in re.findall(r'aria-label="([^"]*)"', p)[:1]]


def without_pictures(html: str) -> str:
    return PICTURE.sub("", html)
