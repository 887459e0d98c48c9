"""The index of campaigns: every campaign's report and JSON document in one folder, and
``index.html`` linking to each by a relative link, with its verdict, the trend of its
agreement, its flag counts and what changed since the last index was written.

``index.json`` beside it keeps each campaign's summary (the same numbers, for tools); the next
index is compared with it. ``monitor report --all --out DIR`` and the nightly job write it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from markupsafe import Markup
from sqlalchemy import Engine

from monitor.core.errors import OutputError
from monitor.core.output import write_output
from monitor.report import pictures
from monitor.report.jsonsafe import natural_key
from monitor.report.titles import rule_title

log = logging.getLogger("monitor.report")

INDEX = "index.html"
STATE = "index.json"
MAX_STATE = 64 * 1024 * 1024
"""Bytes of ``index.json`` read at most (a larger file is not one the index wrote)."""
SERIES = ("krippendorff_alpha", "phi", "percent_agreement")
"""The trend drawn: the first of these the campaign's history holds."""
BOUNDS = {"krippendorff_alpha": (-1.0, 1.0), "phi": (-1.0, 1.0), "percent_agreement": (0.0, 1.0)}
"""The range of each series: its sparkline's fixed scale (a change of 0.00003 is drawn flat)."""


def summary(doc: Mapping[str, Any], report: str, document: str | None) -> dict[str, Any]:
    """What the index shows of a campaign, from its JSON document (``report``, ``document``:
    the file names of its HTML report and JSON document in the folder)."""
    c, run = doc["campaign"], doc.get("run") or {}
    counts: Counter[str] = Counter()
    for f in doc["flags"]:
        counts[f"{f['scope']}:{f['rule']}"] += 1
    series_name = next(
        (m for m in SERIES if any(h.get(m) is not None for h in doc["history"])), None
    )
    return {
        "campaign": c["name"],
        "kind": c["kind"],
        "report": report,
        "json": document,
        "run": run.get("number"),
        "finished_at": run.get("finished_at"),
        "stale": bool(run.get("stale")),
        "n_workers": c.get("n_workers"),
        "n_items": c.get("n_items"),
        "n_judgments": c.get("n_judgments"),
        "verdict": doc["verdict"].get("state") or doc["verdict"]["level"],
        "alpha": doc["verdict"].get("alpha"),
        "series": series_name,
        "trend": [h.get(series_name) for h in doc["history"]] if series_name else [],
        "flags": dict(sorted(counts.items())),
        "n_flagged": sum(counts.values()),
        "flagged_workers": sorted(
            {f["subject"] for f in doc["flags"] if f["scope"] == "worker"}, key=natural_key
        ),
        "warnings": [w["rule"] for w in doc["warnings"]],
    }


def _failed(name: str) -> dict[str, Any]:
    """The summary of a campaign whose report failed: its name, nothing else."""
    empty = summary(
        {"campaign": {"name": name, "kind": ""}, "flags": [], "history": [], "warnings": [],
         "verdict": {"level": "undetermined"}},
        "",
        None,
    )  # fmt: skip
    return {**empty, "report": None}


def _names(ws: Sequence[str], most: int = 3) -> str:
    shown = ", ".join(ws[:most])
    return shown + (f" and {len(ws) - most} more" if len(ws) > most else "")


def changes(now: Mapping[str, Any], before: Mapping[str, Any] | None) -> list[str]:
    """What changed in a campaign since the last index, in short phrases."""
    if before is None:
        return ["first report"]
    out = []
    if now.get("run") != before.get("run"):
        out.append(f"run #{before.get('run')} → #{now.get('run')}")
    dn = (now.get("n_judgments") or 0) - (before.get("n_judgments") or 0)
    if dn:
        out.append(f"{dn:+,} judgments")
    if now.get("verdict") != before.get("verdict"):
        out.append(f"verdict {before.get('verdict')} → {now.get('verdict')}")
    a, b = now.get("alpha"), before.get("alpha")
    if a is not None and b is not None and abs(a - b) >= 0.005:
        out.append(f"alpha {b:.2f} → {a:.2f}")
    new = [
        w for w in now.get("flagged_workers", []) if w not in set(before.get("flagged_workers", []))
    ]
    gone = [
        w for w in before.get("flagged_workers", []) if w not in set(now.get("flagged_workers", []))
    ]
    if new:
        out.append(f"newly flagged: {_names(new)}")
    if gone:
        out.append(f"no longer flagged: {_names(gone)}")
    for key in sorted(set(now.get("flags", {})) | set(before.get("flags", {}))):
        if key.startswith("worker:"):
            continue
        n, m = now.get("flags", {}).get(key, 0), before.get("flags", {}).get(key, 0)
        if n != m:
            scope, rule = key.split(":", 1)
            out.append(f"{rule.replace('_', ' ')} {scope}s {m} → {n}")
    return out or ["no change"]


@dataclass
class Entry:
    """One row of the index."""

    summary: dict[str, Any]
    changes: list[str]
    trend: Markup | None
    flag_counts: list[tuple[str, str]]
    """(what, in more words) of each kind of flag: the workers flagged, then the others."""
    error: str | None = None


@dataclass
class Written:
    """What :func:`write_all` wrote, and the campaigns that failed."""

    reports: list[Path] = field(default_factory=list)
    index: Path | None = None
    failed: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    """What was wrong with the last index's saved state (``index.json``), one line each."""


_FIELDS: dict[str, tuple[type, ...]] = {
    "campaign": (str,),
    "kind": (str,),
    "report": (str, type(None)),
    "json": (str, type(None)),
    "run": (int, type(None)),
    "finished_at": (str, type(None)),
    "stale": (bool,),
    "n_workers": (int, type(None)),
    "n_items": (int, type(None)),
    "n_judgments": (int, type(None)),
    "verdict": (str,),
    "alpha": (int, float, type(None)),
    "series": (str, type(None)),
    "trend": (list,),
    "flags": (dict,),
    "n_flagged": (int,),
    "flagged_workers": (list,),
    "warnings": (list,),
}
"""Each field of a campaign's saved summary and the JSON types it may have."""


def _problem(s: object) -> str | None:
    """What is wrong with one saved summary (None: nothing), field by field."""
    if not isinstance(s, dict):
        return f"a campaign's entry is {type(s).__name__}, not an object"
    for key, types in _FIELDS.items():
        value = s.get(key)
        if key not in s or not isinstance(value, types):
            return f"field {key!r} is {'missing' if key not in s else type(value).__name__}"
        if isinstance(value, bool) and bool not in types:  # JSON true is not a number here
            return f"field {key!r} is bool"
    if not all(isinstance(x, (int, float)) or x is None for x in s["trend"]):
        return "field 'trend' holds a value that is not a number"
    if not all(isinstance(k, str) and type(n) is int for k, n in s["flags"].items()):
        return "field 'flags' holds a count that is not an integer"
    for key in ("flagged_workers", "warnings"):
        if not all(isinstance(x, str) for x in s[key]):
            return f"field {key!r} holds a value that is not a string"
    return None


def read_state(folder: Path, warnings: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """The summaries of the last index written in ``folder``, by campaign (none if absent: the
    next index then says "first report"). Each is checked field by field; a file that is not
    what the index writes (not JSON, a value of the wrong type) is set aside as
    ``index.json.invalid`` (replacing an older one), what it held that is valid is kept, and
    each problem is added to ``warnings`` in one line. Never read through a symbolic link."""
    path = folder / STATE
    problems: list[str] = []
    kept: dict[str, dict[str, Any]] = {}
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return {}
    except OSError as exc:
        problems.append(f"cannot be read ({exc.strerror or type(exc).__name__})")
    else:
        try:
            with os.fdopen(fd, "rb") as f:
                data = json.loads(f.read(MAX_STATE + 1)[:MAX_STATE])
        except (OSError, ValueError) as exc:
            data = None
            problems.append(f"not the JSON the index writes ({one_line(exc)})")
        if data is not None:
            entries = data.get("campaigns") if isinstance(data, dict) else None
            if not isinstance(entries, list):
                problems.append("no list of campaigns")
                entries = []
            for s in entries:
                problem = _problem(s)
                if problem is None:
                    kept[s["campaign"]] = s
                else:
                    name = s.get("campaign") if isinstance(s, dict) else None
                    who = f"campaign {name!r}" if isinstance(name, str) else "an entry"
                    problems.append(f"{who}: {problem}")
    if problems:
        aside = folder / (STATE + ".invalid")
        with contextlib.suppress(OSError):  # the link or file itself, never what it points to
            os.replace(path, aside)
        for problem in problems:
            message = f"{path}: {problem}; the file is set aside as {aside.name}"
            log.warning("%s", message)
            if warnings is not None:
                warnings.append(message)
    return kept


def _entry(s: dict[str, Any], before: Mapping[str, Any] | None) -> Entry:
    counts: list[tuple[str, str]] = []
    workers = len(s["flagged_workers"])
    rules = [
        f"{key.split(':', 1)[1].replace('_', ' ')} {n}"
        for key, n in s["flags"].items()
        if key.startswith("worker:")
    ]
    if workers:
        counts.append(
            (f"{workers:,} worker{'s' if workers != 1 else ''} flagged", ", ".join(rules))
        )
    for key, n in s["flags"].items():
        scope, rule = key.split(":", 1)
        if scope != "worker":
            what = f"{scope}{'s' if n != 1 else ''}"
            counts.append((f"{n:,} {rule.replace('_', ' ')} {what}", rule_title(rule)))
    trend = None
    if len(s["trend"]) > 0:
        trend = pictures.sparkline(
            s["trend"], title=f"{s['series']} over runs", bounds=BOUNDS.get(s["series"])
        )
    return Entry(s, changes(s, before), trend, counts)


def render_index(entries: Sequence[Entry], generated_at: datetime | None = None) -> str:
    from monitor.report.render import environment

    when = (generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    return environment().get_template("index.html").render(entries=entries, generated_at=when)


CampaignReport = tuple[dict[str, Any] | None, str | None]
"""One campaign's report as the index takes it: (its summary, None), or (None, the error)."""


def write_campaign(
    engine: Engine, folder: Path, name: str, stem: str | None = None
) -> CampaignReport:
    """One campaign's HTML report and JSON document in ``folder`` (``stem``: their file name
    without extension, by default :func:`~monitor.report.render.safe_filename`'s); a failure
    is returned as its one-line message (the index lists it), its traceback logged at debug
    level only."""
    from monitor.report.render import safe_filename, write_pair

    stem = stem or safe_filename(name)
    html, document = f"{stem}.html", f"{stem}.json"
    try:
        doc = write_pair(engine, name, folder / html, folder / document)
    except Exception as exc:  # noqa: BLE001 - one campaign must not stop the others
        log.debug("report of campaign %s failed", name, exc_info=True)
        return None, one_line(exc)
    return summary(doc, html, document), None


def one_line(exc: BaseException) -> str:
    """An error in one line: its first line (a database error's own message, without the
    statement), else its type's name."""
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def write_all(
    engine: Engine,
    folder: Path,
    names: Sequence[str] | None = None,
    *,
    on_report: Callable[[Path], None] | None = None,
    written: Mapping[str, CampaignReport] | None = None,
) -> Written:
    """Every campaign's HTML report and JSON document in ``folder`` (file names of
    :func:`~monitor.report.render.report_filename`), then ``index.html`` and ``index.json``.
    A campaign that fails is listed in the index with its error, and the others go on.
    ``written``: the campaigns' reports already written in ``folder`` by other processes (jobs
    on a cluster), by name; only the index is written here then."""
    from monitor.report.render import report_stems
    from monitor.store.campaigns import list_campaigns
    from monitor.store.engine import session_factory

    if names is None:
        if written is not None:
            names = list(written)
        else:
            with session_factory(engine)() as s:
                names = [c.name for c in list_campaigns(s)]
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(
            f"cannot make the folder of reports {folder}: {exc.strerror or type(exc).__name__}"
        ) from None
    out = Written()
    before = read_state(folder, out.warnings)
    stems = report_stems(names)
    entries = []
    for name in sorted(names, key=natural_key):
        if written is not None:
            got, error = written[name]
        else:
            got, error = write_campaign(engine, folder, name, stems[name])
        if got is None:
            message = error or "no report"
            out.failed[name] = message
            entries.append(Entry(_failed(name), [], None, [], message))
            continue
        out.reports.append(folder / got["report"])
        if on_report is not None:
            on_report(folder / got["report"])
        entries.append(_entry(got, before.get(name)))
    kept = [  # a failed campaign keeps its last summary for the next comparison
        e.summary if e.error is None else before[e.summary["campaign"]]
        for e in entries
        if e.error is None or e.summary["campaign"] in before
    ]
    state = {"generated_at": datetime.now(UTC).isoformat(), "campaigns": kept}
    write_output(folder / STATE, json.dumps(state, indent=2) + "\n", "index", follow=False)
    out.index = write_output(folder / INDEX, render_index(entries), "index", follow=False)
    return out


__all__ = [
    "INDEX",
    "STATE",
    "Entry",
    "Written",
    "changes",
    "read_state",
    "summary",
    "write_all",
    "write_campaign",
]
