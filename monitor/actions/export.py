"""``monitor export``: what (a block list, worker weights, aggregated labels) for which
platform, each written by its own module (:mod:`monitor.actions.worker_lists`,
:mod:`monitor.actions.labels`). See ``docs/exports.md`` for each file's format."""

from __future__ import annotations

from typing import Literal

from sqlalchemy.orm import Session

from monitor.actions.labels import export_labels
from monitor.actions.worker_lists import (
    PLATFORMS,
    Platform,
    export_blocklist,
    export_weights,
    toloka_scope,
)
from monitor.core.errors import UsageError

What = Literal["blocklist", "weights", "labels"]
WHATS = ("blocklist", "weights", "labels")


# The keywords are the command's options; append_decision (store/workers.py) and the verdict's
# state (report/document.py) have a signature of this shape, with nothing else in common.
def export(
    session: Session,
    what: What,
    campaign_name: str,
    platform: Platform,
    *,
    include_flagged: bool = False,
    project: str | None = None,
    pool: str | None = None,
) -> str:
    """Dispatch: ``what`` is blocklist, weights or labels (``include_flagged``: blocklist;
    ``project`` or ``pool``: the scope of a Toloka blocklist)."""
    if what not in WHATS:
        raise UsageError(f"unknown export {what!r}", hint=", ".join(WHATS))
    if platform not in PLATFORMS:
        raise UsageError(f"unknown platform {platform!r}", hint=", ".join(PLATFORMS))
    if (project is not None or pool is not None) and (what, platform) != ("blocklist", "toloka"):
        raise UsageError(
            "--project and --pool are for a Toloka blocklist",
            hint="monitor export blocklist --platform toloka --project ID",
        )
    if what == "blocklist":
        return export_blocklist(
            session, campaign_name, platform, include_flagged=include_flagged,
            scope=toloka_scope(project, pool),
        )  # fmt: skip
    if include_flagged:
        raise UsageError("--include-flagged is for the blocklist")
    fn = {"weights": export_weights, "labels": export_labels}
    return fn[what](session, campaign_name, platform)


__all__ = ["WHATS", "What", "export"]
