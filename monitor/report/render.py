"""Rendering: a Jinja environment with autoescape and StrictUndefined, and the report writers."""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Callable
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any, Literal, TextIO

import orjson
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from sqlalchemy import Engine

from monitor.output import check_target, write_output
from monitor.report import view
from monitor.report.data import item_picks, load
from monitor.report.document import document_from
from monitor.report.items import ItemPicks, ItemTable
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


def fmt(x: Any, digits: int = 2) -> str:
    """A number for a table: '—' when undefined."""
    if x is None:
        return "—"
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def fmt_ci(ci: Any, digits: int = 2) -> str:
    if not ci or ci[0] is None or ci[1] is None:
        return "—"
    return f"[{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"


def pct(x: Any) -> str:
    return "—" if x is None else f"{100 * x:.0f}%"


def when(iso: Any) -> str:
    """An ISO timestamp as 'YYYY-MM-DD HH:MM UTC'."""
    if not iso:
        return "—"
    try:
        t = datetime.fromisoformat(str(iso))
    except ValueError:
        return str(iso)
    if t.tzinfo is not None:
        t = t.astimezone(UTC)
    return t.strftime("%Y-%m-%d %H:%M UTC")


def sort_key(x: Any) -> str:
    """``data-sort`` attribute: numbers as they are, undefined empty (sorted last)."""
    return "" if x is None else str(x)


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
    doc: dict[str, Any], *, generated_at: datetime | None = None, items: ItemPicks | None = None
) -> str:
    """The self-contained HTML report of a JSON document (``items``: what it shows of the
    items, when the document does not list them)."""
    context = build_view(doc, items)
    context["generated_at"] = (generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    return environment().get_template("report.html").render(**context)


JSON_OPTIONS = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY
"""Indented by two spaces, keys of any type as strings, NumPy numbers and arrays as JSON ones;
orjson writes NaN and infinities as null (undefined is null, never NaN)."""


def to_json(doc: dict[str, Any]) -> str:
    """The document as JSON text (UTF-8, not escaped; undefined numbers null)."""
    return orjson.dumps(doc, option=JSON_OPTIONS).decode() + "\n"


def write_json(doc: dict[str, Any], f: Any, *, items: ItemTable | None = None) -> None:
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
        for rows in items.row_chunks():
            text = orjson.dumps(rows, option=JSON_OPTIONS).replace(b"\n", b"\n  ")
            f.write(("," if opened else "[") + text[1:-4].decode())  # without "[" and "\n  ]"
            opened = True
        f.write("\n  ]" if opened else "[]")
    f.write("\n}\n")


def safe_filename(name: str) -> str:
    """A file name of letters, digits, ``.``, ``_`` and ``-`` for a campaign name; distinct
    names give distinct file names: when the name had to change (``a/b`` and ``a b`` both
    read ``a_b``), eight hex digits of the exact name's SHA-256 follow (``a_b-1c3d...``)."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._-")[:100] or "campaign"
    if slug == name:
        return slug
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{slug}-{digest}"


def report_filename(campaign: str, fmt: Format = "html") -> str:
    """The report's file name: ``monitor report``'s default and the nightly reports'."""
    return f"{safe_filename(campaign)}.{fmt}"


def _write(engine: Engine, campaign: str, fmt: Format) -> Callable[[TextIO], None]:
    """Read what the report needs (in one read-only transaction) and return the function that
    writes it: the JSON document streamed from the item arrays, or the HTML page."""
    with session_factory(engine)() as session:
        data = load(session, campaign, texts=fmt == "json")
        doc = document_from(data, items=False)
        if fmt == "json":
            table = data.items
            return lambda f: write_json(doc, f, items=table)
        picks = item_picks(session, data, view.MAX_ITEMS, view.MAX_AMBIGUOUS)
    html = render_html(doc, items=picks)
    return lambda f: f.write(html)


def report_text(engine: Engine, campaign: str, fmt: Format = "html") -> str:
    """The report of a campaign as text, read in one read-only transaction."""
    out = io.StringIO()
    write_report_to(engine, campaign, out, fmt)
    return out.getvalue()


def write_report_to(engine: Engine, campaign: str, f: TextIO, fmt: Format = "html") -> None:
    """Write the report of a campaign to the open text file ``f``."""
    _write(engine, campaign, fmt)(f)


def write_report(engine: Engine, campaign: str, out: Path, fmt: Format = "html") -> Path:
    """Write the report file and return its path (how: :func:`monitor.output.write_output`).
    The JSON document is written as it is encoded (see :func:`write_json`)."""
    check_target(out, "report", report_filename(campaign, fmt))
    return write_output(out, _write(engine, campaign, fmt), "report")


__all__ = [
    "environment",
    "render_html",
    "report_filename",
    "write_json",
    "report_text",
    "write_report_to",
    "safe_filename",
    "templates_dir",
    "to_json",
    "write_report",
]
