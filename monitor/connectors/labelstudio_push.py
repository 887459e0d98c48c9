"""What Label Studio Community can take back from monitor: the exported answers as predictions
(``model_version`` ``monitor-<run>``, so that reviewers see the consensus beside the
annotations), the decision list in the project's description, and, only when asked
(``apply``), the annotators decided ``block`` removed from the organisation and those decided
``stop`` paused in the project (``POST /api/projects/{id}/members/{user}/pauses/``), where the
server offers pauses: Label Studio Enterprise does, Community answers 404 and the push says so
(an annotator cannot be taken off one project of a Community server: its projects are open to
the whole organisation).

Predictions go in one request of the project's prediction import, only to the tasks that have
none of this run's model version yet, so a push repeated writes nothing twice. The description
keeps what the project's managers wrote above the line :data:`MARK`; monitor's part below it
is replaced at each push.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine

from monitor.actions.labels import aggregate_labels
from monitor.actions.worker_lists import blocklist_entries, worker_decisions
from monitor.connectors.labelstudio import connected_source
from monitor.connectors.labelstudio_api import Client, Control, choose_control, controls
from monitor.core.catalog import Kind
from monitor.core.errors import NotFound, UsageError
from monitor.store import campaigns as campaign_store
from monitor.store import sources
from monitor.store.engine import transaction
from monitor.store.runs import latest_run

__all__ = ["MARK", "PushSummary", "push"]

MARK = "--- monitor: worker decisions ---"


@dataclass(frozen=True)
class PushSummary:
    """What one push wrote (or, for removals without ``apply``, would do)."""

    campaign: str
    project: str
    model_version: str
    n_predictions: int  # written now
    n_predictions_there: int  # of this run, written by an earlier push
    n_without_answer: int  # items with no exported answer, or no task
    description: bool  # the description changed
    removed: list[str] = field(default_factory=list)
    to_remove: list[str] = field(default_factory=list)  # without apply
    paused: list[str] = field(default_factory=list)
    to_pause: list[str] = field(default_factory=list)  # without apply
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [
            f"{self.campaign}: project {self.project}: {self.n_predictions:,} predictions "
            f"written as {self.model_version} ({self.n_predictions_there:,} there already, "
            f"{self.n_without_answer:,} items without an answer); description "
            f"{'updated' if self.description else 'unchanged'}"
        ]
        out += [f"removed from the organisation: {w}" for w in self.removed]
        out += [f"would remove from the organisation (--apply): {w}" for w in self.to_remove]
        out += [f"paused in project {self.project}: {w}" for w in self.paused]
        out += [f"would pause in project {self.project} (--apply): {w}" for w in self.to_pause]
        return out + self.notes


def push(engine: Engine, campaign: str, *, token: str, apply: bool = False) -> PushSummary:
    """Write the latest run's answers and decisions back to the campaign's Label Studio
    project (``monitor campaign connect`` or a pull recorded it)."""
    with transaction(engine) as session:
        source = connected_source(session, campaign)
        info = campaign_store.get_campaign(session, campaign)
        run = latest_run(session, info.id)
        if run is None or run.status != "ok":
            raise UsageError(
                f"campaign {campaign!r} has no finished run to push",
                hint=f"run: monitor recompute --campaign {campaign}",
            )
        answers = aggregate_labels(session, info) if info.kind != Kind.PAIRWISE else []
        tasks = sources.item_tasks(session, info)
        decided = [
            e for e in blocklist_entries(session, info) if e.status in ("decided", "blocked")
        ]
        held = {e.worker for e in decided}
        stops = {
            w: str(d.get("reason") or "")
            for w, d in worker_decisions(session, info).items()
            if d.get("decision") == "stop" and w not in held
        }
    version = f"monitor-{run.number}"
    notes = []
    if info.kind == Kind.PAIRWISE:
        notes.append("a pairwise campaign has no answer per task: no predictions written")
    with Client(source.url, token) as client:
        project = client.project(source.project)
        control = choose_control(
            controls(str(project.get("label_config") or "")),
            info.kind,
            source.mapping.get("value"),
            source.project,
        )
        there = _tasks_with(client, source.project, version)
        predictions: list[dict[str, Any]] = []
        n_without = 0
        for row in answers:
            task = tasks.get(str(row["item"]))
            if task is None or row.get("value") is None:
                n_without += 1
                continue
            if task in there:
                continue
            predictions.append(
                {
                    "task": task,
                    "model_version": version,
                    "score": row.get("confidence"),
                    "result": _result(control, info.kind, row["value"]),
                }
            )
        if predictions:
            client.request(
                "POST", f"/api/projects/{source.project}/import/predictions", json_body=predictions
            )
        users = client.users() if decided or stops else {}
        text = _description(
            str(project.get("description") or ""), run.number, decided, users, source.mapping
        )
        changed = text != (project.get("description") or "")
        if changed:
            client.request(
                "PATCH", f"/api/projects/{source.project}/", json_body={"description": text}
            )
        removed: list[str] = []
        to_remove: list[str] = []
        blocked = [_user(e.worker, users, source.mapping) for e in decided]
        org = None
        for user_id, shown in blocked:
            if user_id is None:
                notes.append(f"no Label Studio user for worker {shown}: not removed")
            elif apply:
                if org is None:
                    org = client.request("GET", "/api/current-user/whoami")["active_organization"]
                try:
                    client.request(
                        "DELETE",
                        f"/api/organizations/{org}/memberships/{user_id}/",
                        missing="gone",
                    )
                except NotFound:  # removed by an earlier push
                    notes.append(f"{shown} was removed from the organisation before")
                    continue
                removed.append(shown)
            else:
                to_remove.append(shown)
        paused, to_pause = _pause(client, source.project, stops, users, source.mapping, apply,
                                  notes)  # fmt: skip
    return PushSummary(
        campaign=info.name,
        project=source.project,
        model_version=version,
        n_predictions=len(predictions),
        n_predictions_there=len(there),
        n_without_answer=n_without,
        description=changed,
        removed=removed,
        to_remove=to_remove,
        paused=paused,
        to_pause=to_pause,
        notes=notes,
    )


NO_PAUSE = (
    "this Label Studio server offers no pause (Label Studio Enterprise does): the annotators "
    "decided stop keep the project; take them off by hand or give them no more tasks"
)


def _pause(
    client: Client,
    project: str,
    stops: dict[str, str],
    users: dict[int, dict[str, Any]],
    mapping: dict[str, str],
    apply: bool,
    notes: list[str],
) -> tuple[list[str], list[str]]:
    """Pause each annotator decided stop in the project, once (an active pause is left as it
    is); without ``apply``, list them. Stops at the first 404: the server has no pauses."""
    paused: list[str] = []
    to_pause: list[str] = []
    for worker, reason in sorted(stops.items()):
        user_id, shown = _user(worker, users, mapping)
        if user_id is None:
            notes.append(f"no Label Studio user for worker {shown}: not paused")
            continue
        if not apply:
            to_pause.append(shown)
            continue
        path = f"/api/projects/{project}/members/{user_id}/pauses/"
        try:
            found = client.request("GET", path, missing="no pauses")
            rows = found.get("results", []) if isinstance(found, dict) else found or []
            if any(isinstance(r, dict) and r.get("deleted_at") is None for r in rows):
                notes.append(f"{shown} was paused before")
                continue
            client.request("POST", path, missing="no pauses", json_body={
                "reason": "MANUAL", "verbose_reason": reason or "decided stop by monitor"})  # fmt: skip
        except NotFound:
            notes.append(NO_PAUSE)
            break
        paused.append(shown)
    return paused, to_pause


def _tasks_with(client: Client, project: str, version: str) -> set[int]:
    """The tasks of the project that have a prediction of ``version``."""
    found = client.request("GET", "/api/predictions/", params={"project": project})
    rows = found.get("results", []) if isinstance(found, dict) else found or []
    return {
        int(p["task"])
        for p in rows
        if isinstance(p, dict) and p.get("model_version") == version and "task" in p
    }


def _result(control: Control, kind: str, value: Any) -> list[dict[str, Any]]:  # noqa: ANN401
    """A prediction's result in the control's own shape."""
    base = {"from_name": control.name, "to_name": control.to_name}
    if control.type in ("Rating", "Number"):
        key = control.type.lower()
        number = float(value)
        shown: Any = round(number) if control.type == "Rating" else number
        return [{**base, "type": key, "value": {key: shown}}]
    if control.type == "Taxonomy":
        paths = value if isinstance(value, list) else [value]
        return [
            {**base, "type": "taxonomy", "value": {"taxonomy": [str(p).split("/") for p in paths]}}
        ]
    chosen = value if isinstance(value, list) else [value]
    if kind == "rating":
        chosen = [_choice(control, v) for v in chosen]
    return [{**base, "type": "choices", "value": {"choices": [str(c) for c in chosen]}}]


def _choice(control: Control, value: Any) -> str:  # noqa: ANN401
    """The choice of a Choices-of-numbers control nearest the answer (a weighted mean)."""
    return min(control.values, key=lambda v: abs(float(v) - float(value)))


def _user(
    worker: str, users: dict[int, dict[str, Any]], mapping: dict[str, str]
) -> tuple[int | None, str]:
    if mapping.get("worker") == "email":
        found = [i for i, u in users.items() if u.get("email") == worker]
        return (found[0] if found else None), worker
    user = int(worker) if worker.isdigit() else None
    shown = worker
    if user is not None and user in users and users[user].get("email"):
        shown = f"{worker} ({users[user]['email']})"
    return (user if user in users else None), shown


def _description(
    old: str,
    run: int,
    decided: list[Any],
    users: dict[int, dict[str, Any]],
    mapping: dict[str, str],
) -> str:
    """The managers' text, then monitor's decision list below :data:`MARK`."""
    own = old.split(MARK)[0].rstrip()
    lines = [MARK, f"run {run}: {len(decided)} annotators decided block"]
    for entry in decided:
        _, shown = _user(entry.worker, users, mapping)
        reason = f": {entry.reason}" if entry.reason else ""
        lines.append(f"- {shown} ({entry.status}){reason}")
    return (own + "\n\n" if own else "") + "\n".join(lines)
