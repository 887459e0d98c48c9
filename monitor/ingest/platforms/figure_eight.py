"""Figure Eight (Appen, formerly CrowdFlower) full report: one CSV row per judgment, declared.

The full report's platform columns start with ``_``: ``_worker_id`` is the worker, ``_unit_id``
the item, ``_id`` the judgment id, ``_created_at`` the time (``3/14/2017 10:35:07``, UTC) and
``_created_at - _started_at`` the duration. The answer is the column named by ``--map value``, else
the only column without ``_`` that has a ``<name>_gold`` sibling. Rows of ``_golden`` units give
the unit's gold value from ``<name>_gold`` (as an items file would); ``_tainted`` rows (judgments
of workers Figure Eight stopped trusting) are skipped unless the option ``keep_tainted`` is set.
``_trust``, ``_missed``, ``_golden`` and ``_channel`` are kept in the payload. See
``docs/platforms/figure-eight.md``.
"""

from __future__ import annotations

from datetime import UTC, datetime

from monitor.ingest.platforms.export import Clock, Export, Statuses
from monitor.ingest.platforms.mapping import parse_iso

REQUIRED = ("_unit_id", "_worker_id")


def is_full_report(header: list[str]) -> bool:
    """A full report has one row per judgment: a unit id and a worker id."""
    return set(REQUIRED) <= {h.strip() for h in header}


def parse_time(text: str) -> datetime:
    """Figure Eight's ``M/D/YYYY HH:MM:SS`` (UTC; without seconds, a two-digit year, or ISO 8601
    also accepted). Raises ValueError."""
    text = text.strip()
    if "/" not in text:
        return parse_iso(text)
    # The report writes the first; the others are what a spreadsheet re-save leaves.
    for pattern in ("%m/%d/%Y %H:%M:%S", "%m/%d/%Y %H:%M", "%m/%d/%y %H:%M:%S", "%m/%d/%y %H:%M"):
        try:
            return datetime.strptime(text, pattern).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise ValueError(f"cannot read {text!r}")


FIGURE_EIGHT = Export(
    platform="Figure Eight",
    delimiter=",",
    worker="_worker_id",
    required=REQUIRED,
    expected="expected a Figure Eight full report (_unit_id, _worker_id, ...)",
    missing_hints={"_worker_id": "this looks like an aggregated report: download the full report"},
    own="_",
    answers_have_gold=True,
    gold=("", "_gold"),
    gold_rows="_golden",
    items=("_unit_id",),
    judgment="_id",
    submitted="_created_at",
    started="_started_at",
    early="created before started",
    clock=Clock(parse_time, "expected Figure Eight's format like 3/14/2017 10:35:07"),
    statuses=Statuses(
        "_tainted",
        rejected=frozenset({"TRUE"}),
        option="keep_tainted",
        note="{n} tainted judgments skipped (--option keep_tainted=1 keeps them)",
        flag=True,
    ),
    several="\n",
    payload={"_trust": "trust", "_missed": "missed", "_golden": "golden", "_channel": "channel"},
    empty_item="empty unit id",
    no_answer=(
        "no answer column (a column with a <name>_gold sibling)",
        "choose one with --map value=COLUMN",
    ),
)

read = FIGURE_EIGHT.reader()
