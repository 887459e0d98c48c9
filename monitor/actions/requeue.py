"""``monitor export requeue``: the items (or pairs) the latest run says to send back for more
judgments, with their content, as a platform's task file.

What is sent back is what the report's "what to do today" lists: the items (label, rating and
multi-label campaigns) or pairs (preference campaigns) that the latest run flagged
``ambiguous`` (:mod:`monitor.rules.item`), the least settled first. An item whose answer is
known (a gold value) is never sent back, nor a pair of two such items. The file is written by
the same writer as ``monitor pairs plan``'s tasks (:func:`monitor.actions.planning.task_table`), so the
pairs take the layout :func:`monitor.actions.planning.companion` writes. See ``docs/exports.md``.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from sqlalchemy.orm import Session

from monitor.core.errors import UsageError
from monitor.store.campaigns import CampaignInfo, get_campaign, item_texts
from monitor.store.runs import latest_run, run_flags

PLATFORMS = ("csv", "toloka", "labelstudio", "prolific")
ITEM_COLUMNS = ("item", "text")
PAIR_COLUMNS = ("pair_id", "left", "right", "left_text", "right_text")


@dataclass(frozen=True)
class SendBack:
    """One item (``right`` None) or pair to send back, and why (the flag's message)."""

    left: str
    right: str | None
    reason: str


@dataclass(frozen=True)
class Requeue:
    """The task file's text, how many tasks it holds, and what to say when it holds none."""

    text: str
    n: int
    note: str | None


def _natural(s: str) -> tuple:
    from monitor.report.jsonsafe import natural_key

    return natural_key(s)


def send_back(session: Session, campaign: CampaignInfo) -> list[SendBack] | None:
    """The items or pairs the latest run flagged ambiguous, gold ones left out, the least
    settled first (the flag's value: a posterior, a p- or q-value); None without a run."""
    run = latest_run(session, campaign.id)
    if run is None:
        return None
    scope = "pair" if campaign.kind == "pairwise" else "item"
    flags = [f for f in run_flags(session, run.id, scope) if f.rule == "ambiguous"]
    flags.sort(key=lambda f: (f.value if f.value is not None else 2.0, _natural(f.subject)))
    subjects = [tuple(f.subject.split("\t", 1)) for f in flags]
    ids = {i for s in subjects for i in s}
    gold = {e for e, _, g in item_texts(session, campaign.id, ids) if g is not None}
    out = []
    for f, s in zip(flags, subjects, strict=True):
        if all(i in gold for i in s):
            continue
        reason = str((f.evidence or {}).get("message") or "the reliable workers disagree")
        out.append(SendBack(s[0], s[1] if len(s) > 1 else None, reason))
    return out


def requeue(session: Session, campaign_name: str, platform: str) -> Requeue:
    """The task file of what to send back (module docstring): per item ``item, text``; per
    pair ``pair_id, left, right, left_text, right_text`` (an item without a text shows its
    id). ``prolific``: the same as CSV, to host beside the study."""
    from monitor.actions.planning import task_table
    from monitor.metrics.preferences.planning import pair_id

    if platform not in PLATFORMS:
        raise UsageError(
            f"unknown platform {platform!r} for a requeue file: use --platform "
            + ", ".join(PLATFORMS)
        )
    campaign = get_campaign(session, campaign_name)
    picked = send_back(session, campaign)
    rows = picked or []
    ids = {i for r in rows for i in (r.left, r.right) if i is not None}
    texts = {e: t for e, t, _ in item_texts(session, campaign.id, ids) if t}
    cells: list[tuple[str, ...]]
    columns: tuple[str, ...]
    if campaign.kind == "pairwise":
        columns = PAIR_COLUMNS
        cells = [
            (
                pair_id(campaign.name, "", r.left, str(r.right), 0),
                r.left,
                str(r.right),
                texts.get(r.left, r.left),
                texts.get(str(r.right), str(r.right)),
            )
            for r in rows
        ]
    else:
        columns = ITEM_COLUMNS
        cells = [(r.left, texts.get(r.left, r.left)) for r in rows]
    note = None
    name = shlex.quote(campaign.name)
    what = "pairs" if campaign.kind == "pairwise" else "items"
    if picked is None:
        note = (
            f"nothing to send back: campaign {name} has no run yet "
            f"(run monitor recompute --campaign {name})"
        )
    elif not rows:
        note = (
            f"nothing to send back: the latest run of campaign {name} flags no "
            f"{what} ambiguous (gold ones are never sent back)"
        )
    return Requeue(task_table(columns, cells, platform), len(rows), note)


__all__ = ["PLATFORMS", "Requeue", "SendBack", "requeue", "send_back"]
