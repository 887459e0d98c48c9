"""Rendering: a Jinja environment with autoescape and StrictUndefined, and the report writers."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import stat
import tempfile
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from sqlalchemy import Engine

from monitor.errors import OutputError, UsageError
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
    """Write the report file and return its path.

    A regular file (or a new one) is written atomically: a temporary file beside it, renamed
    over it (through a symbolic link, the file it points to). Anything else that exists (a
    device such as /dev/null, a FIFO, a link to /dev/stdout) is opened and written as it is,
    never replaced. A folder is a :class:`UsageError`; a failed write an :class:`OutputError`.
    """
    if out.is_dir():
        raise UsageError(
            f"{out} is a folder, not a file to write the report to",
            f"name a file, e.g. {out / report_filename(campaign, fmt)}",
        )
    text = report_text(engine, campaign, fmt)
    try:
        if out.exists() and not stat.S_ISREG(out.stat().st_mode):
            with open(out, "w", encoding="utf-8") as f:
                f.write(text)
            return out
        _write_atomically(out.resolve() if out.is_symlink() else out, text)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        if exc.filename and Path(exc.filename).parent != out.parent and Path(exc.filename) != out:
            reason += f": {exc.filename}"
        raise OutputError(f"cannot write the report to {out}: {reason}") from None
    return out


def _write_atomically(path: Path, text: str) -> None:
    existing = path.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(existing))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        if path.exists():  # keep the permissions of the file replaced
            os.chmod(tmp, stat.S_IMODE(path.stat().st_mode))
        else:
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    """The process's umask, read without changing it (the scheduler writes from threads)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    return 0o022


__all__ = [
    "environment",
    "render_html",
    "report_filename",
    "report_text",
    "safe_filename",
    "templates_dir",
    "to_json",
    "write_report",
]
