"""``monitor export overlap``: how many more judgments each item (label, rating and multi-label
campaigns) or judged pair (preference campaigns) wants, from the latest run's measure ``need``
(:mod:`monitor.metrics.overlap`; 0: settled, send it to no one else). See ``docs/live.md``.

* ``csv``: ``item,need`` (pairs: ``left,right,need``, the pair's items in the order the run
  keys pairs), the units that want the most first, then by id.
* ``toloka``: a task file for a pool (TSV): the columns a requeue file has (``INPUT:item``,
  ``INPUT:text``; pairs ``INPUT:pair_id``, ``INPUT:left``, ``INPUT:right``,
  ``INPUT:left_text``, ``INPUT:right_text``) and ``TASK:overlap``, the column of Toloka's
  task file that sets a task's own overlap above the pool's (Toloka's "Creating a file with
  tasks"). Toloka's dynamic overlap is a pool setting with no per-task import, and its
  ``TASK:overlap`` must be a positive integer, so only the units that want judgments are
  written, each with its ``need``: upload the file to a pool to collect them.
* ``labelstudio``: the CSV with each unit's Label Studio ``task`` and the ``overlap`` to set
  there, one row per task (a unit judged in no task of Label Studio has an empty one): the
  task's annotators when the run counted them plus ``need``. A unit judged in several tasks
  gets its ``need`` on the first (the lowest id); the others are closed at what they have.
  :mod:`monitor.connectors.labelstudio_overlap` sets it through the API.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from monitor.core.catalog import Kind
from monitor.core.cells import csv_table
from monitor.core.errors import UsageError
from monitor.store.campaigns import CampaignInfo, get_campaign, item_texts
from monitor.store.runs import RunInfo, latest_run, run_values

PLATFORMS = ("csv", "toloka", "labelstudio")
KINDS = (Kind.LABEL, Kind.RATING, Kind.MULTILABEL, Kind.PAIRWISE)


@dataclass(frozen=True)
class Need:
    """One unit's ``need``: an item (``(item,)``) or a pair (``(low, high)``), and the
    judgments that count (``n``)."""

    unit: tuple[str, ...]
    need: int
    n: int | None


@dataclass(frozen=True)
class OverlapFile:
    """The file's text, what to say beside it, and (``labelstudio``) each task's overlap."""

    text: str
    notes: list[str] = field(default_factory=list)
    tasks: dict[int, int] = field(default_factory=dict)
    campaign: str = ""


def _natural(s: str) -> tuple:
    from monitor.report.jsonsafe import natural_key

    return natural_key(s)


def unit_needs(session: Session, campaign_name: str) -> tuple[CampaignInfo, RunInfo, list[Need]]:
    """Each item's (pair's) ``need`` in the campaign's latest run, the most first, then by
    id; a UsageError (one line, exit 2) for a campaign of another kind, with no run, or whose
    latest run measured no ``need``."""
    campaign = get_campaign(session, campaign_name)
    name = shlex.quote(campaign.name)
    if campaign.kind not in KINDS:
        raise UsageError(
            f"campaign {campaign.name} is a {campaign.kind} campaign: dynamic overlap is "
            "measured on label, rating, multi-label and preference campaigns",
            hint="monitor export requeue sends back the items the latest run flagged ambiguous",
        )
    what = "pairs" if campaign.kind == Kind.PAIRWISE else "items"
    run = latest_run(session, campaign.id)
    if run is None:
        raise UsageError(
            f"campaign {campaign.name} has no run yet: nothing says what its {what} need",
            hint=f"monitor recompute --campaign {name}",
        )
    scope = "pair" if campaign.kind == Kind.PAIRWISE else "item"
    rows = [
        Need(tuple(v.subject.split("\t", 1)), int(v.value), v.n)
        for v in run_values(session, run.id, scope, ["need"])
        if v.value is not None
    ]
    if not rows:
        raise UsageError(
            f"the latest run of campaign {campaign.name} measured no need of its {what}",
            hint=f"a run before dynamic overlap, or a model without it: monitor recompute "
            f"--campaign {name} --full",
        )
    rows.sort(key=lambda r: (-r.need, *(_natural(u) for u in r.unit)))
    return campaign, run, rows


def task_overlaps(
    needs: list[Need], tasks: dict[tuple[str, ...], dict[int, int]]
) -> list[tuple[Need, int | None, int | None]]:
    """Each unit's rows of the Label Studio file: (unit, task, overlap to set) per task of the
    unit (``tasks``: its tasks with the annotators each had at the run), the first task
    given the ``need``, the others closed at what they have; (unit, None, None) without one."""
    out: list[tuple[Need, int | None, int | None]] = []
    for r in needs:
        mine = tasks.get(r.unit)
        if not mine:
            out.append((r, None, None))
            continue
        for k, (task, done) in enumerate(sorted(mine.items())):
            out.append((r, task, done + (r.need if k == 0 else 0)))
    return out


def overlap_file(session: Session, campaign_name: str, platform: str = "csv") -> OverlapFile:
    """The file of ``monitor export overlap`` on ``platform`` (module docstring)."""
    from monitor.actions.requeue import ITEM_COLUMNS, PAIR_COLUMNS
    from monitor.metrics.preferences.planning import pair_id
    from monitor.store.sources import unit_tasks

    if platform not in PLATFORMS:
        raise UsageError(
            f"overlap is not written for {platform!r}",
            hint="use --platform " + ", ".join(PLATFORMS),
        )
    campaign, run, needs = unit_needs(session, campaign_name)
    pairs = campaign.kind == Kind.PAIRWISE
    head = ("left", "right") if pairs else ("item",)
    if platform == "csv":
        return OverlapFile(csv_table((*head, "need"), [(*r.unit, r.need) for r in needs]),
                           campaign=campaign.name)  # fmt: skip
    if platform == "labelstudio":
        rows = task_overlaps(needs, unit_tasks(session, campaign, run.watermark))
        text = csv_table(
            (*head, "need", "task", "overlap"),
            [(*r.unit, r.need, "" if t is None else t, "" if v is None else v) for r, t, v in rows],
        )
        tasks = {t: v for _, t, v in rows if t is not None and v is not None}
        unit = "pair" if pairs else "item"
        notes = [] if tasks else [f"no {unit} of campaign {campaign.name} came from a Label "
                                  "Studio task: the file has no task to set"]  # fmt: skip
        return OverlapFile(text, notes, tasks, campaign.name)
    wanted = [r for r in needs if r.need > 0]
    ids = {i for r in wanted for i in r.unit}
    texts = {e: t for e, t, _ in item_texts(session, campaign.id, ids) if t}
    shown = [tuple(texts.get(i, i) for i in r.unit) for r in wanted]
    if pairs:
        cells = [(pair_id(campaign.name, "", r.unit[0], r.unit[-1], 0), *r.unit, *s, r.need)
                 for r, s in zip(wanted, shown, strict=True)]  # fmt: skip
        columns: tuple[str, ...] = PAIR_COLUMNS
    else:
        cells = [(*r.unit, *s, r.need) for r, s in zip(wanted, shown, strict=True)]
        columns = ITEM_COLUMNS
    header = (*(f"INPUT:{c}" for c in columns), "TASK:overlap")
    notes = [] if wanted else [f"every {'pair' if pairs else 'item'} of campaign {campaign.name} "
                               "is settled: the task file holds none"]  # fmt: skip
    return OverlapFile(csv_table(header, cells, delimiter="\t"), notes, campaign=campaign.name)


def export_overlap(session: Session, campaign_name: str, platform: str = "csv") -> str:
    """The text of :func:`overlap_file`."""
    return overlap_file(session, campaign_name, platform).text


__all__ = [
    "KINDS",
    "PLATFORMS",
    "Need",
    "OverlapFile",
    "export_overlap",
    "overlap_file",
    "task_overlaps",
    "unit_needs",
]
