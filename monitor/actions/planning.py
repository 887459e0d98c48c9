"""``monitor pairs plan``: the next pairs to ask in a preference campaign, as a platform's
task file, stored so that planning again skips what is planned and not yet answered.

The choice itself is :func:`monitor.metrics.preferences.planning.plan_pairs` (pure); this module reads the
campaign, fits the preference reliability model for the item scores and annotator accuracies,
and writes the tasks. See ``docs/planning.md``.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np
from numpy.typing import NDArray
from sqlalchemy.orm import Session

from monitor.core.cells import neutralise
from monitor.core.errors import NotFound, UsageError

if TYPE_CHECKING:
    from monitor.store.plans import PlannedRow

Platform = Literal["csv", "mturk", "toloka", "labelstudio"]
PLATFORMS: tuple[str, ...] = ("csv", "mturk", "toloka", "labelstudio")
COLUMNS = ("pair_id", "worker", "left", "right")
# The header each platform's upload takes: MTurk's batch input names the variables of the
# layout (the results file adds ``Input.``), Toloka's task upload writes ``INPUT:`` itself.
PREFIX = {"csv": "", "mturk": "", "toloka": "INPUT:"}
TEXTS = ("left_text", "right_text")
MAX_BUDGET = 10_000_000


@dataclass(frozen=True)
class PlanOptions:
    """What ``monitor pairs plan`` was asked for (validated by :meth:`checked`)."""

    budget: int
    per_annotator: int | None = None
    platform: Platform = "csv"
    retest: float = 0.0
    gold: float = 0.0
    workers: tuple[str, ...] = ()
    new_workers: tuple[str, ...] = ()
    repeat_planned: bool = False
    seed: int = 0

    def checked(self) -> PlanOptions:
        if not 1 <= self.budget <= MAX_BUDGET:
            raise UsageError(f"--budget {self.budget} is out of range: give 1 to {MAX_BUDGET:,}")
        if self.per_annotator is not None and not 1 <= self.per_annotator <= self.budget:
            raise UsageError(
                f"--per-annotator {self.per_annotator} is out of range: give 1 to the budget "
                f"({self.budget})"
            )
        for name, share in (("--retest", self.retest), ("--gold", self.gold)):
            if not 0.0 <= share <= 1.0:  # NaN fails too
                raise UsageError(f"{name} {share} is out of range: give a share from 0 to 1")
        if self.retest + self.gold > 1.0:
            raise UsageError(f"--retest {self.retest} and --gold {self.gold} add up to more than 1")
        if self.platform not in PLATFORMS:
            raise UsageError(f"unknown platform {self.platform!r}: one of {', '.join(PLATFORMS)}")
        return self


@dataclass(frozen=True)
class PlannedTasks:
    """A plan ready to write and store."""

    campaign_id: int
    round: int
    watermark: int
    rows: list[PlannedRow]
    text: str
    n_annotators: int
    by_purpose: dict[str, int] = field(default_factory=dict)
    n_target: int = 0
    n_target_met: int = 0
    n_excluded: int = 0
    texts: dict[str, str] = field(default_factory=dict)
    ties: bool = True

    def companion(self, platform: str) -> tuple[str, str] | None:
        """The config or template for the tasks (:func:`companion`)."""
        shown = [self.texts[i] for r in self.rows for i in (r.left, r.right) if i in self.texts]
        return companion(platform, shown, self.ties)


def check_output(out: Path) -> None:
    """An output path that cannot be written is bad input (exit 2), found before any work."""
    if out.is_dir():
        raise UsageError(f"--out {out} is a folder, not a file to write the tasks to")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"--out {out}: the folder {parent} does not exist")
    if not os.access(parent, os.W_OK) or (out.exists() and not os.access(out, os.W_OK)):
        raise UsageError(f"--out {out} cannot be written (permission denied)")


def plan_campaign(session: Session, name: str, opts: PlanOptions) -> PlannedTasks:
    """Read the campaign, fit the model, plan (module docstring). Nothing is stored."""
    from monitor.metrics.preferences.model import gold_order, preference_model
    from monitor.metrics.preferences.planning import PURPOSES, pair_id, plan_pairs
    from monitor.pipeline.preference import gold_numbers
    from monitor.store.arrays import load_arrays
    from monitor.store.campaigns import get_campaign
    from monitor.store.plans import (
        PlannedRow,
        item_texts,
        newest_preference_id,
        next_round,
        open_pairs,
    )
    from monitor.store.workers import worker_states

    campaign = get_campaign(session, name)
    if campaign.kind != "pairwise":
        raise UsageError(
            f"campaign {name!r} is a {campaign.kind} campaign: pairs are planned for "
            "preference (pairwise) campaigns only"
        )
    arrays = load_arrays(session, campaign)
    states = worker_states(session, campaign.id)
    known = {str(w): k for k, w in enumerate(arrays.worker_ids.tolist())}
    for w in opts.workers:
        if w not in known:
            raise NotFound(
                f"unknown annotator {w!r} in campaign {name!r} (a new one: --new-worker {w})"
            )
    names = list(arrays.worker_ids.tolist())
    new = [w for w in dict.fromkeys(opts.new_workers) if w not in known]
    names += new
    codes = {w: k for k, w in enumerate(names)}
    if opts.workers or opts.new_workers:
        chosen = list(dict.fromkeys([*opts.workers, *opts.new_workers]))
    else:  # every annotator not blocked
        chosen = [w for w in known if states.get(w) is None or states[w].status != "blocked"]
    if not chosen:
        raise UsageError(
            f"campaign {name!r} has no annotator to plan for (name new ones: --new-worker ID)"
        )
    n_items = len(arrays.item_ids)
    if n_items < 2:
        raise UsageError(f"campaign {name!r} has fewer than two items: nothing to pair")
    item_gold = gold_numbers(arrays)
    n_w = len(names)
    score = np.zeros(n_items)
    sd = np.full(n_items, 3.0)
    accuracy = np.full(n_w, np.nan)
    left, right, outcome = arrays.comparisons
    if arrays.n:
        gold = gold_order(left, right, item_gold)
        fit = preference_model(
            arrays.workers, left, right, outcome,
            n_workers=len(known), n_items=n_items, ties_allowed=not campaign.strict,
            gold=gold if np.isfinite(gold).any() else None,
        )  # fmt: skip
        score, sd = fit.score, fit.score_se
        accuracy[: len(known)] = fit.accuracy
    if opts.gold > 0 and int(np.isfinite(item_gold).sum()) < 2:
        raise UsageError(
            f"--gold {opts.gold}: campaign {name!r} has "
            f"{'no' if not np.isfinite(item_gold).any() else 'one'} item with a gold value, "
            "and a gold pair needs two",
            hint="give gold values with an items file (monitor ingest --items FILE, column "
            "gold), or leave out --gold",
        )
    items = {str(i): k for k, i in enumerate(arrays.item_ids.tolist())}
    exclude: tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]] | None = None
    n_excluded = 0
    if not opts.repeat_planned:
        rows = [
            (codes[w], items[a], items[b])
            for w, a, b in open_pairs(session, campaign.id)
            if w in codes and a in items and b in items
        ]
        n_excluded = len(rows)
        if rows:
            ws, ls, rs = (np.array(c, dtype=np.int64) for c in zip(*rows, strict=True))
            exclude = (ws, ls, rs)
    plan = plan_pairs(
        arrays.workers, left, right, outcome,
        n_items=n_items, score=score, score_sd=sd, accuracy=accuracy,
        plan_for=np.array([codes[w] for w in chosen], dtype=np.int64), budget=opts.budget,
        per_annotator=opts.per_annotator, gold=item_gold, retest=opts.retest,
        gold_share=opts.gold, exclude=exclude, order=arrays.order, seed=opts.seed,
    )  # fmt: skip
    round_ = next_round(session, campaign.id)
    item_names = arrays.item_ids
    planned: list[PlannedRow] = []
    for k, a, b, p in zip(plan.workers.tolist(), plan.left.tolist(), plan.right.tolist(),
                          plan.purpose.tolist(), strict=True):  # fmt: skip
        worker, first, second = names[k], str(item_names[a]), str(item_names[b])
        planned.append(
            PlannedRow(
                pair_id(campaign.name, worker, first, second, round_),
                worker,
                first,
                second,
                PURPOSES[p],
            )
        )
    n_judged = np.bincount(arrays.workers, minlength=n_w) if arrays.n else np.zeros(n_w, int)
    after = n_judged + plan.quota
    target = (plan.quota > 0) & (after >= 30)
    met = target & (plan.n_triplets + plan.closing >= 10)
    texts = item_texts(session, campaign.id)
    return PlannedTasks(
        campaign_id=campaign.id,
        round=round_,
        watermark=newest_preference_id(session, campaign.id),
        rows=planned,
        text=task_file(planned, opts.platform, texts),
        n_annotators=len(chosen),
        by_purpose={p: int((plan.purpose == i).sum()) for i, p in enumerate(PURPOSES)},
        n_target=int(target.sum()),
        n_target_met=int(met.sum()),
        n_excluded=n_excluded,
        texts=texts,
        ties=not campaign.strict,
    )


def task_file(rows: Sequence, platform: str, texts: dict[str, str] | None = None) -> str:
    """The tasks as the platform's upload takes them: plain CSV (``pair_id, worker, left,
    right``), an MTurk batch input CSV (the same names: the layout's variables), a Toloka task
    TSV (``INPUT:*``), or Label Studio tasks JSON for the Pairwise tag (``[{"data": {...}}]``).
    When the items file gave items a text (or a URL), ``left_text`` and ``right_text`` follow
    (an item without one shows its id). Every CSV/TSV cell a spreadsheet would read as a formula
    is neutralised (:func:`monitor.core.cells.neutralise`). The purpose of a pair is not in the
    file: gold and repeated pairs look like any other."""
    texts = texts or {}
    shown = bool(texts) and any(r.left in texts or r.right in texts for r in rows)
    columns = COLUMNS + TEXTS if shown else COLUMNS
    cells = [
        (r.pair_id, r.worker, r.left, r.right)
        + ((texts.get(r.left, r.left), texts.get(r.right, r.right)) if shown else ())
        for r in rows
    ]
    return task_table(columns, cells, platform)


def task_table(columns: Sequence[str], cells: Sequence[Sequence[str]], platform: str) -> str:
    """Tasks with these ``columns`` as the platform's upload takes them: Label Studio tasks
    JSON (``[{"data": {...}}]``), a Toloka task TSV (``INPUT:*``), else CSV (MTurk's batch
    input, Prolific, plain), every cell a spreadsheet would read as a formula neutralised."""
    if platform == "labelstudio":
        tasks = [{"data": dict(zip(columns, c, strict=True))} for c in cells]
        return json.dumps(tasks, indent=2, ensure_ascii=False) + "\n"
    buf = io.StringIO()
    out = csv.writer(buf, delimiter="\t" if platform == "toloka" else ",", lineterminator="\r\n")
    out.writerow([PREFIX.get(platform, "") + c for c in columns])
    out.writerows([neutralise(v) for v in c] for c in cells)
    return buf.getvalue()


IMAGE = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg", ".bmp", ".tif", ".tiff")
QUESTION = "Which of the two is better?"


def companion(platform: str, texts: Sequence[str], ties: bool = False) -> tuple[str, str] | None:
    """The file beside the tasks that makes them a task on the platform, as (suffix, text): a
    Label Studio labelling config for the Pairwise tag (``.config.xml``), an MTurk layout (HTML
    with crowd-html-elements) or a Toloka HTML template (``.template.html``), whose answer is
    ``preference`` = ``left``, ``right`` (or ``tie`` when ``ties``: a campaign that is not
    strict; Label Studio's Pairwise tag has none) as ``monitor ingest`` reads it. The items are
    shown by their text when the tasks carry one (``texts``: those of the planned items), as
    images when every text is an image URL; else by their ids. None for plain CSV."""
    field = "left_text" if texts else "left"
    images = bool(texts) and all(
        t.lower().startswith(("http://", "https://")) and t.lower().split("?")[0].endswith(IMAGE)
        for t in texts
    )
    other = field.replace("left", "right")
    if platform == "labelstudio":
        tag = "Image" if images else "Text"
        return ".config.xml", (
            "<View>\n"
            f'  <Header value="{QUESTION}"/>\n'
            f'  <{tag} name="left" value="${field}"/>\n'
            f'  <{tag} name="right" value="${other}"/>\n'
            '  <Pairwise name="preference" toName="left,right"/>\n'
            "</View>\n"
        )
    if platform not in ("mturk", "toloka"):
        return None
    if platform == "mturk":
        a, b = "${" + field + "}", "${" + other + "}"
    else:
        a, b = "{{input." + field + "}}", "{{input." + other + "}}"
    shown = (f'<img src="{a}" alt="left">', f'<img src="{b}" alt="right">') if images else (a, b)
    if platform == "toloka":
        return ".template.html", (
            f"<p>{QUESTION}</p>\n"
            f'<div class="left"><b>Left</b><br>{shown[0]}</div>\n'
            f'<div class="right"><b>Right</b><br>{shown[1]}</div>\n'
            '{{field type="radio" name="preference" value="left" label="Left"}}\n'
            '{{field type="radio" name="preference" value="right" label="Right"}}\n'
            + (
                '{{field type="radio" name="preference" value="tie" label="Same"}}\n'
                if ties
                else ""
            )
        )
    return ".template.html", (
        '<script src="https://assets.crowd.aws/crowd-html-elements.js"></script>\n'
        "<crowd-form>\n"
        f"  <p>{QUESTION}</p>\n"
        f'  <div class="left"><b>Left</b><br>{shown[0]}</div>\n'
        f'  <div class="right"><b>Right</b><br>{shown[1]}</div>\n'
        '  <label><input type="radio" name="preference" value="left" required> Left</label>\n'
        '  <label><input type="radio" name="preference" value="right"> Right</label>\n'
        + (
            '  <label><input type="radio" name="preference" value="tie"> Same</label>\n'
            if ties
            else ""
        )
        + "</crowd-form>\n"
    )
