"""Rendering: a Jinja environment with autoescape and StrictUndefined, and the report writers."""

from __future__ import annotations

import hashlib
import io
import os
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any, Literal, TextIO

import orjson
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup
from sqlalchemy import Engine

from monitor.core.output import check_target, write_output
from monitor.report import evidence, view
from monitor.report.data import item_picks, load
from monitor.report.document import document_from
from monitor.report.itemrows import row_chunks
from monitor.report.items import ItemPicks, ItemTable
from monitor.report.shape import Document
from monitor.report.tables import fmt, fmt_ci, pct, sort_key, when
from monitor.report.view import build_view
from monitor.store.engine import session_factory

Format = Literal["html", "json"]


def templates_dir() -> Path:
    """``templates/`` of the checkout, installed as ``monitor._templates``."""
    try:
        path = Path(str(resources.files("monitor._templates")))
        if (path / "report.html").is_file():
            return path
    except ModuleNotFoundError:
        pass
    return Path(__file__).resolve().parents[2] / "templates"


def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(templates_dir())),
        autoescape=select_autoescape(["html", "htm", "xml"], default_for_string=True, default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(fmt=fmt, fmt_ci=fmt_ci, pct=pct, sort_key=sort_key, when=when)
    return env


def render_html(
    doc: Mapping[str, Any],
    *,
    generated_at: datetime | None = None,
    items: ItemPicks | None = None,
    pictures: Mapping[str, Markup] | None = None,
    json_href: str | None = None,
) -> str:
    """The self-contained HTML report of a JSON document (``items``: what it shows of the
    items, when the document does not list them; ``pictures``: each flagged worker's answers
    against the model's; ``json_href``: the JSON document's file beside the page, linked for
    the full lists)."""
    context = build_view(doc, items, pictures, json_href)
    context["generated_at"] = (generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    return environment().get_template("report.html").render(**context)


JSON_OPTIONS = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY
"""Indented by two spaces, keys of any type as strings, NumPy numbers and arrays as JSON ones;
orjson writes NaN and infinities as null (undefined is null, never NaN)."""


def to_json(doc: Mapping[str, Any]) -> str:
    """The document as JSON text (UTF-8, not escaped; undefined numbers null)."""
    return orjson.dumps(doc, option=JSON_OPTIONS).decode() + "\n"


def write_json(doc: Mapping[str, Any], f: Any, *, items: ItemTable | None = None) -> None:
    """:func:`to_json`'s text written to the text file ``f``. With ``items``, the document's
    ``items`` list is that table's rows (the document's own ``items`` value is not read),
    written a chunk of rows at a time: the rows of a large campaign are never all held."""
    if items is None or not doc:
        f.write(to_json(doc))
        return
    for k, (key, value) in enumerate(doc.items()):
        f.write(("{\n  " if k == 0 else ",\n  ") + orjson.dumps(key).decode() + ": ")
        if key != "items":  # a value on its own: the same text, one level less indented
            f.write(orjson.dumps(value, option=JSON_OPTIONS).decode().replace("\n", "\n  "))
            continue
        opened = False
        for rows in row_chunks(items):
            text = orjson.dumps(rows, option=JSON_OPTIONS).replace(b"\n", b"\n  ")
            f.write(("," if opened else "[") + text[1:-4].decode())  # without "[" and "\n  ]"
            opened = True
        f.write("\n  ]" if opened else "[]")
    f.write("\n}\n")


RESERVED = frozenset({"index"})
"""File names (without their extension) a campaign's report never takes: the index's."""

_DIGESTED = re.compile(r"-[0-9a-f]{8}([0-9a-f]{56})?$")


def safe_filename(name: str, digits: int = 8) -> str:
    """A file name of letters, digits, ``.``, ``_`` and ``-`` for a campaign name; distinct
    names give distinct file names, even on a file system that ignores case. The name is kept
    as it is when it is lower-case, made of those characters, not ``index`` (the index's) and
    does not end like a digested name (``-`` and eight hex digits); otherwise eight hex digits
    (``digits``, which also digests a name that could be kept) of the exact name's SHA-256
    follow it (``a/b`` and ``a b`` both read ``a_b``:
    ``a_b-1c3d...`` and ``a_b-9e0f...``; ``Camp`` gives ``Camp-...`` beside ``camp``)."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._-")[:100] or "campaign"
    kept = slug == name and slug == slug.lower() and slug not in RESERVED
    if kept and not _DIGESTED.search(slug) and digits == 8:
        return slug
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:digits]
    return f"{slug}-{digest}"


def report_stems(names: Iterable[str]) -> dict[str, str]:
    """Each campaign's file name (without extension) in a folder of reports:
    :func:`safe_filename`, with all 64 hex digits of the SHA-256 for the names whose eight
    digits would meet another's file name (compared ignoring case)."""
    stems = {name: safe_filename(name) for name in names}
    seen: dict[str, int] = {}
    for stem in stems.values():
        seen[stem.lower()] = seen.get(stem.lower(), 0) + 1
    return {
        name: safe_filename(name, 64) if seen[stem.lower()] > 1 else stem
        for name, stem in stems.items()
    }


def report_filename(campaign: str, fmt: Format = "html") -> str:
    """The report's file name: ``monitor report``'s default and the nightly reports'."""
    return f"{safe_filename(campaign)}.{fmt}"


def _write(engine: Engine, campaign: str, fmt: Format) -> Callable[[TextIO], object]:
    """Read what the report needs (in one read-only transaction) and return the function that
    writes it: the JSON document streamed from the item arrays, or the HTML page (the flagged
    workers' answers read meanwhile in a thread, :mod:`monitor.report.evidence`)."""
    if fmt == "json":
        with session_factory(engine)() as session:
            data = load(session, campaign, texts=True)
            doc = document_from(data, items=False)
        table = data.items
        return lambda f: write_json(doc, f, items=table)
    html = _html(engine, campaign)
    return lambda f: f.write(html)


def _html(engine: Engine, campaign: str) -> str:
    answers = evidence.fetch_in_background(engine, campaign)
    with session_factory(engine)() as session:
        data = load(session, campaign, texts=False)
        doc = document_from(data, items=False)
        picks = item_picks(session, data, view.MAX_ITEMS, view.MAX_AMBIGUOUS)
    return render_html(doc, items=picks, pictures=pictures_of(doc, data.items, answers()))


def write_pair(engine: Engine, campaign: str, html: Path, document: Path) -> Document:
    """The campaign's HTML report and JSON document, read once: the page links to the
    document (beside it) for its full lists. Returns the document (without its items). Both
    are written into a folder of reports, which may be shared: a symbolic link (or anything
    but a folder) in their place is replaced, never written through."""
    answers = evidence.fetch_in_background(engine, campaign)
    with session_factory(engine)() as session:
        data = load(session, campaign, texts=True)
        doc = document_from(data, items=False)
        picks = data.items.picks(view.MAX_ITEMS, view.MAX_AMBIGUOUS)
    write_output(document, lambda f: write_json(doc, f, items=data.items), "report", follow=False)
    page = render_html(
        doc,
        items=picks,
        pictures=pictures_of(doc, data.items, answers()),
        json_href=os.path.relpath(document, html.parent),
    )
    write_output(html, page, "report", follow=False)
    return doc


def pictures_of(
    doc: Mapping[str, Any], table: ItemTable, fetched: evidence.Fetched | None
) -> dict[str, Markup]:
    """Each flagged worker's answers against the model's (a preference campaign's cycles are
    drawn from the document alone, by the view)."""
    return evidence.answer_pictures(doc, table, fetched)


def report_text(engine: Engine, campaign: str, fmt: Format = "html") -> str:
    """The report of a campaign as text, read in one read-only transaction."""
    out = io.StringIO()
    write_report_to(engine, campaign, out, fmt)
    return out.getvalue()


def write_report_to(engine: Engine, campaign: str, f: TextIO, fmt: Format = "html") -> None:
    """Write the report of a campaign to the open text file ``f``."""
    _write(engine, campaign, fmt)(f)


def write_report(
    engine: Engine, campaign: str, out: Path, fmt: Format = "html", *, follow: bool = True
) -> Path:
    """Write the report file and return its path (how: :func:`monitor.core.output.write_output`,
    ``follow=False`` in a folder of reports). The JSON document is written as it is encoded
    (see :func:`write_json`)."""
    if follow or (out.is_dir() and not out.is_symlink()):
        check_target(out, "report", report_filename(campaign, fmt))
    return write_output(out, _write(engine, campaign, fmt), "report", follow=follow)


__all__ = [
    "environment",
    "render_html",
    "report_filename",
    "report_stems",
    "report_text",
    "safe_filename",
    "templates_dir",
    "to_json",
    "write_json",
    "write_pair",
    "write_report",
    "write_report_to",
]
