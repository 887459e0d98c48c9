"""Each task's overlap set in Label Studio from ``need`` (``monitor export overlap --platform
labelstudio``, a dry run unless ``--apply``).

What Label Studio Community 1.23.2 does with a task's overlap (checked against the real server,
``tests/connectors/test_labelstudio_overlap.py``):

* ``PATCH /api/tasks/{id}/`` takes ``overlap`` (any integer, 0 included) and stores it; so does
  ``is_labeled``. The project's ``maximum_annotations`` only sets every task's overlap when
  the project's settings change; the task's own overlap is what counts afterwards.
* The server hands a task to an annotator (``GET /api/projects/{id}/next``) only while it is
  not ``is_labeled`` and fewer annotators than its overlap hold or finished it. It recomputes
  ``is_labeled`` (distinct annotators with a finished annotation >= overlap) when an
  annotation is made or removed, **not** when the overlap is patched: raising the overlap of a
  finished task alone leaves it finished, and no annotator gets it; lowering it below its
  annotations leaves it unfinished in the counts (the next-task queue skips it). So each
  change sends both: ``{"overlap": V, "is_labeled": finished >= V}``, ``finished`` the task's
  ``total_annotations`` now (with ``cancelled_annotations`` where the project counts skipped
  ones, ``skip_queue`` ``IGNORE_SKIPPED``). After that the server keeps ``is_labeled`` itself.
* A later change of the project's "Annotations per task" (``maximum_annotations``) sets
  every task with an overlap above 1 (all of them, when set to 1) to the new number, and an
  ``overlap_cohort_percentage`` below 100 re-deals the overlaps whenever tasks are imported or
  deleted: the overlaps set here are lost. The next ``--apply`` finds the server's overlap
  changed and sets it again.
* Community has no agreement threshold or "strict overlap" (Label Studio Enterprise's
  ``max_additional_annotators_assignable`` and ``strict_task_overlap`` change when a task is
  served beyond its overlap); only Community was checked.

Each change is sent once: recorded ``pending`` in the ledger (:mod:`monitor.store.ledger`)
before it is sent and ``done`` once the server answered, under the key
``labelstudio:c<campaign>:project:<project>:task:<task>:overlap:<value>`` (a value the task had
before and lost gets ``:2``, ``:3`` ...). Without ``--apply`` nothing is read or sent: the
tasks whose last value sent differs are listed. With it, the project's tasks are read (their
overlap, ``is_labeled`` and annotations, a page of 1,000 a request) and only the tasks whose
state differs from the one wanted are patched, one request each. A patched task's
``updated_at`` moves: the next pull reads those tasks again and stores nothing new.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine

from monitor.connectors.labelstudio import PLATFORM, connected_source
from monitor.connectors.labelstudio_api import Client
from monitor.core.errors import NotFound
from monitor.store.campaigns import get_campaign
from monitor.store.engine import transaction
from monitor.store.ledger import ActionRecord, ledger, mark, record_intent

__all__ = ["ACTION", "OverlapSync", "sync_overlap"]

ACTION = "task_overlap"
SHOWN = 5
"""Tasks named in a line; the others counted."""


@dataclass
class OverlapSync:
    """What one export set (or, without ``apply``, would set) in the project."""

    campaign: str
    project: str
    apply: bool
    sent: list[tuple[int, int]] = field(default_factory=list)  # (task, overlap)
    to_send: list[tuple[int, int]] = field(default_factory=list)  # without apply
    already: int = 0
    missing: list[int] = field(default_factory=list)

    def lines(self) -> list[str]:
        head = f"{self.campaign}: Label Studio project {self.project}"
        if not self.apply:
            out = [f"{head}: dry run, nothing is sent (add --apply to send)"]
            if self.to_send:
                out.append(f"would set the overlap of {len(self.to_send):,} tasks: "
                           + _named(self.to_send))  # fmt: skip
            out.append(f"{self.already:,} tasks have their overlap set already (the ledger)")
            return out
        out = [f"{head}: overlap set on {len(self.sent):,} tasks"
               + (f": {_named(self.sent)}" if self.sent else "")
               + f"; {self.already:,} as wanted already"]  # fmt: skip
        if self.missing:
            shown = ", ".join(str(t) for t in self.missing[:SHOWN])
            more = f" and {len(self.missing) - SHOWN} more" if len(self.missing) > SHOWN else ""
            out.append(f"{len(self.missing):,} tasks are no longer in project {self.project}: "
                       f"{shown}{more}")  # fmt: skip
        return out


def _named(rows: list[tuple[int, int]]) -> str:
    shown = ", ".join(f"task {t} to {v}" for t, v in rows[:SHOWN])
    return shown + (f" and {len(rows) - SHOWN:,} more" if len(rows) > SHOWN else "")


def _base(campaign_id: int, project: str, task: int) -> str:
    return f"labelstudio:c{campaign_id}:project:{project}:task:{task}:overlap:"


def _last(done: dict[str, ActionRecord], prefix: str) -> dict[int, ActionRecord]:
    """The latest overlap action of each task of the project (the ledger is in id order)."""
    out = {}
    for key, r in done.items():
        if r.action == ACTION and key.startswith(prefix):
            out[int(r.target)] = r
    return out


def _value(r: ActionRecord | None) -> int | None:
    got = (r.payload or {}).get("overlap") if r is not None else None
    return int(got) if isinstance(got, int) else None


def _key(done: dict[str, ActionRecord], base: str, last: ActionRecord | None, value: int) -> str:
    """The ledger key of setting ``value``: the last action's when it set the same value and
    was never confirmed (sent again: a set is idempotent); else the first of ``base + value``,
    ``:2``, ``:3`` ... not used yet."""
    if last is not None and last.status != "done" and _value(last) == value:
        return last.key
    key, k = f"{base}{value}", 1
    while key in done:
        k += 1
        key = f"{base}{value}:{k}"
    return key


def sync_overlap(
    engine: Engine, campaign: str, tasks: dict[int, int], *, token: str | None, apply: bool
) -> OverlapSync:
    """Set each task's overlap (``tasks``: task id -> overlap) in the campaign's connected
    Label Studio project (module docstring); without ``apply``, list what would be set."""
    with transaction(engine) as s:
        source = connected_source(s, campaign)
        info = get_campaign(s, campaign)
    out = OverlapSync(info.name, source.project, apply)
    done = ledger(engine, info.id, PLATFORM)
    prefix = f"labelstudio:c{info.id}:project:{source.project}:task:"
    last = _last(done, prefix)
    if not apply:
        for task, value in sorted(tasks.items()):
            r = last.get(task)
            if r is not None and r.status == "done" and _value(r) == value:
                out.already += 1
            else:
                out.to_send.append((task, value))
        return out
    assert token is not None
    with Client(source.url, token) as client:
        project = client.project(source.project)
        skipped_count = project.get("skip_queue") == "IGNORE_SKIPPED"
        there = _states(client, source.project)
        for task, value in sorted(tasks.items()):
            state = there.get(task)
            if state is None:
                out.missing.append(task)
                continue
            finished = int(state.get("total_annotations") or 0)
            if skipped_count:
                finished += int(state.get("cancelled_annotations") or 0)
            body = {"overlap": value, "is_labeled": finished >= value}
            r = last.get(task)
            if state.get("overlap") == value and state.get("is_labeled") == body["is_labeled"]:
                out.already += 1
                if r is not None and r.status != "done" and _value(r) == value:
                    mark(engine, [r.key], "done")  # sent before, its answer lost
                continue
            key = _key(done, _base(info.id, source.project, task), r, value)
            record_intent(engine, info.id, PLATFORM, [(key, ACTION, str(task))], body)
            try:
                client.request("PATCH", f"/api/tasks/{task}/", json_body=body,
                               missing=f"no task {task} in Label Studio")  # fmt: skip
            except NotFound as exc:
                mark(engine, [key], "failed", error=str(exc))
                out.missing.append(task)
                continue
            except Exception as exc:
                mark(engine, [key], "failed", error=str(exc))
                raise
            mark(engine, [key], "done")
            out.sent.append((task, value))
    return out


def _states(client: Client, project: str) -> dict[int, dict[str, Any]]:
    """Each task of the project: its overlap, ``is_labeled`` and annotations (only those
    fields, a page of :attr:`Client.page_size` a request)."""
    out: dict[int, dict[str, Any]] = {}
    page = 1
    while True:
        params = {
            "project": project,
            "page": page,
            "page_size": client.page_size,
            "include": "id,overlap,is_labeled,total_annotations,cancelled_annotations",
        }
        try:
            found = client.request("GET", "/api/tasks/", params=params,
                                   missing=f"no project {project} at {client.url}")  # fmt: skip
        except NotFound:
            if page > 1:  # past the last page
                return out
            raise
        rows = found.get("tasks") if isinstance(found, dict) else None
        if not isinstance(rows, list):
            return out
        for t in rows:
            if isinstance(t, dict) and isinstance(t.get("id"), int):
                out[int(t["id"])] = t
        if len(rows) < client.page_size:
            return out
        page += 1
