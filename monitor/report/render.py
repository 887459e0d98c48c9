"""Rendering: a Jinja environment with autoescape and StrictUndefined, and the report writers."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from sqlalchemy import Engine

from monitor.output import check_target, write_output
from monitor.report.document import build_document
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


def render_html(doc: dict[str, Any], *, generated_at: datetime | None = None) -> str:
    """The self-contained HTML report of a JSON document."""
    view = build_view(doc)
    view["generated_at"] = (generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    return environment().get_template("report.html").render(**view)


def to_json(doc: dict[str, Any]) -> str:
    """The document as JSON text (NaN refused: undefined is null)."""
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def write_json(doc: dict[str, Any], f: Any, buffer: int = 1 << 16) -> None:
    """:func:`to_json`'s text written to the text file ``f`` as it is encoded, in pieces of
    about ``buffer`` characters: the pieces of a large document are never all held at once."""
    encoder = json.JSONEncoder(indent=2, ensure_ascii=False, allow_nan=False)
    pending: list[str] = []
    size = 0
    for chunk in encoder.iterencode(doc):
        pending.append(chunk)
        size += len(chunk)
        if size >= buffer:
            f.write("".join(pending))
            pending, size = [], 0
    pending.append("\n")
    f.write("".join(pending))


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


def report_text(engine: Engine, campaign: str, fmt: Format = "html") -> str:
    """The report of a campaign as text, read in one read-only transaction."""
    with session_factory(engine)() as session:
        doc = build_document(session, campaign)
    return to_json(doc) if fmt == "json" else render_html(doc)


def write_report(engine: Engine, campaign: str, out: Path, fmt: Format = "html") -> Path:
    """Write the report file and return its path (how: :func:`monitor.output.write_output`).
    The JSON document is written as it is encoded (see :func:`write_json`)."""
    check_target(out, "report", report_filename(campaign, fmt))
    if fmt != "json":
        return write_output(out, report_text(engine, campaign, fmt), "report")
    with session_factory(engine)() as session:
        doc = build_document(session, campaign)
    return write_output(out, lambda f: write_json(doc, f), "report")


__all__ = [
    "environment",
    "render_html",
    "report_filename",
    "write_json",
    "report_text",
    "safe_filename",
    "templates_dir",
    "to_json",
    "write_report",
]
