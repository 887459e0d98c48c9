"""Label Studio pulled live: a project's annotations read through its REST API, mapped by the
export reader (:func:`monitor.ingest.platforms.labelstudio.read_tasks`: the same ``--map`` and
``--option ground_truth``), stored by annotation id.

A pull reads the tasks whose ``updated_at`` is at or after the campaign's cursor (the newest
seen by the last pull, less :data:`LOOKBACK_S` for the annotations whose transactions were
still open then: creating, changing or deleting an annotation updates its task; the
first pull, or a full one, reads the project's export instead, faster per annotation), compares
each task's annotations with the map of those pulled before (:mod:`monitor.store.sources`), and
in one transaction takes out the annotations changed or deleted there, loads the changed and
new ones as one ingest batch, and moves the cursor. Nothing changed: one page read, nothing
stored. ``full`` reads every task and also takes out the annotations of tasks deleted there.
Items are the task ids unless ``--map item=data.FIELD`` says otherwise.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from monitor.connectors.labelstudio_api import (
    Client,
    Refused,
    check_project_id,
    check_url,
    choose_control,
    controls,
    read_token,
)
from monitor.core.catalog import Kind
from monitor.core.errors import UsageError
from monitor.core.settings import Settings
from monitor.ingest.api import IngestSummary, load_records
from monitor.ingest.platforms.labelstudio import annotation_role, read_tasks, task_item
from monitor.store import campaigns as campaign_store
from monitor.store import sources
from monitor.store.engine import transaction
from monitor.store.models import CampaignSource

__all__ = ["PLATFORM", "PullSummary", "connect", "pull", "pull_campaign", "take_events"]

PLATFORM = "labelstudio"
TASK_KEYS = ("id", "data", "updated_at", "annotations")
LOOKBACK_S = 30.0
"""Seconds before the cursor a pull reads again (:func:`_looking_back`)."""


@dataclass(frozen=True)
class PullSummary:
    """What one pull read and stored."""

    campaign: str
    url: str
    project: str
    control: str
    n_pages: int
    n_tasks: int
    n_annotations: int  # new or changed annotations read
    n_removed: int  # annotations taken out (changed ones included: replaced)
    n_judgments: int  # judgments stored
    n_gold: int  # gold values given by ground-truth annotations
    batch_id: int | None
    cursor: str | None
    notes: list[str] = field(default_factory=list)

    def line(self) -> str:
        stored = (
            f"{self.n_judgments:,} judgments stored (batch {self.batch_id})"
            if self.batch_id is not None
            else "nothing new stored"
        )
        removed = f", {self.n_removed:,} annotations taken out" if self.n_removed else ""
        gold = f", {self.n_gold:,} gold values" if self.n_gold else ""
        return (
            f"{self.campaign}: pulled project {self.project} ({self.control}): "
            f"{self.n_tasks:,} tasks in {self.n_pages} page{'' if self.n_pages == 1 else 's'}, "
            f"{self.n_annotations:,} new or "
            f"changed annotations: {stored}{gold}{removed}"
        )


def connect(
    engine: Engine,
    campaign: str,
    *,
    url: str,
    project: str | int,
    token_file: str | None = None,
    mapping: dict[str, str] | None = None,
    options: dict[str, str] | None = None,
) -> sources.SourceInfo:
    """Record the campaign's Label Studio project (never the token: its file's path at most);
    ``monitor schedule`` and ``monitor serve`` pull it from then on."""
    url, project = check_url(url), check_project_id(project)
    with transaction(engine) as session:
        info = campaign_store.get_campaign(session, campaign)
        read_tasks("check", [], kind=info.kind, mapping=mapping, options=options)
        return sources.connect_source(
            session,
            info.id,
            platform=PLATFORM,
            url=url,
            project=project,
            token_file=None if token_file is None else str(token_file),
            mapping=dict(mapping or {}),
            options=dict(options or {}),
        )


def connected_source(session: Session, campaign: str) -> sources.SourceInfo:
    """The Label Studio project campaign ``campaign`` is connected to; a :class:`UsageError`
    naming ``monitor campaign connect`` where it is connected to none."""
    info = campaign_store.get_campaign(session, campaign)
    source = sources.get_source(session, info.id)
    if source is None or source.platform != PLATFORM:
        raise UsageError(
            f"campaign {campaign!r} is not connected to Label Studio",
            hint=f"connect it: monitor campaign connect {campaign} labelstudio --url URL "
            "--project ID",
        )
    return source


def pull_campaign(engine: Engine, settings: Settings, campaign: str) -> PullSummary:
    """Pull a connected campaign from its recorded source, the token from the recorded token
    file or ``$MONITOR_LABELSTUDIO_TOKEN`` (what ``monitor schedule`` and the webhooks call).
    ``settings`` (:class:`monitor.core.settings.Settings`) is taken for the call's shape; nothing of
    it is read yet."""
    del settings
    with transaction(engine) as session:
        source = connected_source(session, campaign)
    return pull(
        engine,
        campaign,
        url=source.url,
        project=source.project,
        token=read_token(source.token_file),
        token_file=source.token_file,
        mapping=source.mapping,
        options=source.options,
    )


def pull(
    engine: Engine,
    campaign: str,
    *,
    url: str,
    project: str | int,
    token: str,
    token_file: str | None = None,
    mapping: dict[str, str] | None = None,
    options: dict[str, str] | None = None,
    full: bool = False,
) -> PullSummary:
    """Pull what changed in the project since the campaign's last pull, and record the
    project as the campaign's source (its cursor with it). Nothing is stored on an error."""
    url, project = check_url(url), check_project_id(project)
    mapping, options = dict(mapping or {}), dict(options or {})
    with transaction(engine) as session:
        info = campaign_store.get_campaign(session, campaign)
        read_tasks("check", [], kind=info.kind, mapping=mapping, options=options)  # usage first
        # one pull of a campaign at a time (PostgreSQL: the source's row; SQLite has one
        # writer, and this transaction writes only once the server has answered)
        session.execute(
            select(CampaignSource.id).where(CampaignSource.campaign_id == info.id).with_for_update()
        )
        before = sources.get_source(session, info.id)
        same = before is not None and (before.platform, before.url, before.project) == (
            PLATFORM,
            url,
            project,
        )
        since = before.cursor_updated_at if same and before and not full else None
        known = sources.pulled_annotations(session, info.id)
        if before is not None and not same and known:
            raise UsageError(
                f"campaign {campaign!r} is pulled from project {before.project} at "
                f"{before.url}: one campaign, one project",
                hint="pull the other project into a campaign of its own",
            )
        with Client(url, token) as client:
            control = choose_control(
                controls(str(client.project(project).get("label_config") or "")),
                info.kind,
                mapping.get("value"),
                project,
            )
            read = _read(client, project, _looking_back(since), known, mapping, full)
            if mapping.get("worker") == "email":
                _emails(client.users(), read.changed)
        sources.connect_source(
            session,
            info.id,
            platform=PLATFORM,
            url=url,
            project=project,
            token_file=token_file,
            mapping=mapping,
            options=options,
        )
        gone = {a: known[a] for a in read.gone}
        sources.forget_annotations(session, info, gone)
        tasks = sorted(read.changed.items())
        digest = f"{url}/projects/{project} {since} {read.cursor}"
        summary = _store(session, info, (url, project), tasks, {**mapping, "value": control.name},
                         options, digest)  # fmt: skip
        if read.cursor is not None:
            sources.set_cursor(session, info.id, read.cursor, read.cursor_task)
        else:  # an empty project: the cursor stays
            sources.set_cursor(
                session, info.id, since, before.cursor_task_id if same and before else None
            )
    n_new = summary.n_new if summary else 0
    campaign_store.refresh_statistics(engine, info.kind, n_new)
    n_gold = sum(
        1
        for _, task in tasks
        for a in task["annotations"]
        if annotation_role(a, info.kind, options) in ("gold", "both")
    )
    return PullSummary(
        campaign=info.name,
        url=url,
        project=project,
        control=str(control),
        n_pages=read.n_pages,
        n_tasks=read.n_tasks,
        n_annotations=sum(len(t["annotations"]) for _, t in tasks),
        n_removed=len(gone),
        n_judgments=n_new,
        n_gold=n_gold,
        batch_id=summary.batch_id if summary else None,
        cursor=read.cursor or since,
        notes=list(summary.notes) if summary else [],
    )


def _looking_back(cursor: str | None) -> str | None:
    """Where a pull starts reading: :data:`LOOKBACK_S` before the cursor. Label Studio stamps a
    task's ``updated_at`` when an annotation's transaction begins, not when it commits: an
    annotation saved while the last pull read commits with a stamp before that pull's cursor.
    Tasks read again are compared with the map and change nothing. A cursor that is no
    timestamp is used as it is."""
    if cursor is None:
        return None
    try:
        moment = datetime.fromisoformat(cursor.replace("Z", "+00:00"))
    except ValueError:
        return cursor
    earlier = (moment - timedelta(seconds=LOOKBACK_S)).isoformat(timespec="microseconds")
    return earlier.replace("+00:00", "Z") if cursor.endswith("Z") else earlier


def _store(
    session: Session,
    info: campaign_store.CampaignInfo,
    where: tuple[str, str],
    tasks: list[tuple[int, dict[str, Any]]],
    mapping: dict[str, str],
    options: dict[str, str],
    digest: str,
) -> IngestSummary | None:
    """Load the ``tasks``' annotations (``where``: the server and project) as one ingest batch
    and add them to the map; None when there are none."""
    if not tasks:
        return None
    if info.kind != Kind.PAIRWISE:
        mapping = {"item": "id", **mapping}
    source = f"{where[0]}/projects/{where[1]}"
    rows = read_tasks(f"{source} task", tasks, kind=info.kind, mapping=mapping, options=options)
    checksum = hashlib.sha256(digest.encode()).hexdigest()
    summary = load_records(session, info, rows, source=source, checksum=checksum, fmt=PLATFORM)
    sources.record_annotations(session, info.id, _pulled(tasks, info.kind, mapping, options))
    return summary


EVENT_ACTIONS = frozenset({"ANNOTATION_CREATED", "ANNOTATION_UPDATED"})
"""The webhook events whose payload :func:`take_events` stores without a pull."""


def _payload(event: dict[str, Any]) -> tuple[dict, dict, dict, str] | None:
    """An annotation event's annotation, task, project and label config; None where it lacks
    one of them."""
    annotation, task, project = (event.get(k) for k in ("annotation", "task", "project"))
    if event.get("action") not in EVENT_ACTIONS or not (
        isinstance(annotation, dict) and isinstance(task, dict) and isinstance(project, dict)
    ):
        return None
    config = project.get("label_config")
    if not isinstance(config, str) or not config or task.get("id") is None:
        return None
    return annotation, task, project, config


def take_events(engine: Engine, campaign: str, events: list[dict[str, Any]]) -> list[bool]:
    """Annotations created or changed, stored from their webhooks' own payloads without reading
    the server (a pull for each event would have the server list a page of tasks for every
    annotation made), in one transaction. For each event, whether it was taken so; where not,
    the caller pulls: another action, no annotation, task or label config in it, another
    project, a campaign never pulled yet, or a mapping the server must complete (``--map
    worker=email``). The cursor does not move: the next pull reads the tasks again and finds
    the annotations known."""
    payloads = [_payload(e) for e in events]
    if not any(payloads):
        return [False] * len(events)
    with transaction(engine) as session:
        info = campaign_store.get_campaign(session, campaign)
        session.execute(
            select(CampaignSource.id).where(CampaignSource.campaign_id == info.id).with_for_update()
        )  # one pull or batch of events of a campaign at a time
        source = sources.get_source(session, info.id)
        if (
            source is None
            or source.cursor_updated_at is None  # never pulled: the first pull reads it all
            or source.platform != PLATFORM
            or source.mapping.get("worker") == "email"
        ):
            return [False] * len(events)
        mapping, options = dict(source.mapping), dict(source.options)
        known = sources.pulled_annotations(session, info.id)
        taken, latest, control = [], {}, None
        for p in payloads:
            ok = p is not None and str(p[2].get("id")) == str(source.project)
            taken.append(ok)
            if ok and p is not None:
                annotation, task, _, config = p
                control = choose_control(controls(config), info.kind, mapping.get("value"),
                                         source.project)  # fmt: skip
                latest[str(annotation.get("id"))] = (annotation, task)  # the last one wins
        fresh = {
            key: at for key, at in latest.items()
            if key not in known or known[key].updated_at != at[0].get("updated_at")
        }  # fmt: skip
        sources.forget_annotations(session, info, {k: known[k] for k in fresh if k in known})
        tasks = [
            (int(task["id"]), {**{k: task.get(k) for k in TASK_KEYS}, "annotations": [annotation]})
            for annotation, task in fresh.values()
        ]
        stamps = " ".join(f"{k}@{a.get('updated_at')}" for k, (a, _) in sorted(fresh.items()))
        summary = None
        if tasks and control is not None:
            summary = _store(session, info, (source.url, source.project), tasks,
                             {**mapping, "value": control.name}, options,
                             f"{source.url}/projects/{source.project} events {stamps}")  # fmt: skip
    campaign_store.refresh_statistics(engine, info.kind, summary.n_new if summary else 0)
    return taken


@dataclass
class _Read:
    """What the pages said against the map: the tasks with new or changed annotations (only
    those kept in each), the annotations changed or deleted there, the new cursor."""

    changed: dict[int, dict[str, Any]] = field(default_factory=dict)
    gone: set[str] = field(default_factory=set)
    cursor: str | None = None
    cursor_task: int | None = None
    n_pages: int = 0
    n_tasks: int = 0


def _read(
    client: Client,
    project: str,
    since: str | None,
    known: dict[str, sources.Pulled],
    mapping: dict[str, str],
    full: bool,
) -> _Read:
    by_task: dict[int, set[str]] = {}
    for annotation_id, pulled in known.items():
        by_task.setdefault(pulled.task_id, set()).add(annotation_id)
    read = _Read()
    gone_of: dict[int, set[str]] = {}  # by task: a task read again replaces its earlier reading
    seen: set[int] = set()
    for page in _pages(client, project, since):
        read.n_pages += 1
        for raw in page:
            task = {k: raw.get(k) for k in TASK_KEYS}
            task_id = int(raw["id"])
            seen.add(task_id)
            updated = str(task.get("updated_at"))
            if read.cursor is None or (updated, task_id) >= (read.cursor, read.cursor_task or 0):
                read.cursor, read.cursor_task = updated, task_id
            annotations = [a for a in task.get("annotations") or () if isinstance(a, dict)]
            now = {str(a.get("id")): a for a in annotations}
            fresh = [
                a
                for key, a in now.items()
                if key not in known or known[key].updated_at != a.get("updated_at")
            ]
            gone_of[task_id] = {k for k in by_task.get(task_id, ()) if k not in now} | {
                str(a.get("id")) for a in fresh if str(a.get("id")) in known
            }
            if fresh:
                read.changed[task_id] = {**task, "annotations": fresh}
            else:
                read.changed.pop(task_id, None)
    read.n_tasks = len(seen)
    for ids in gone_of.values():
        read.gone |= ids
    if full:  # tasks deleted there: their annotations go too
        read.gone |= {a for t, ids in by_task.items() if t not in seen for a in ids}
    return read


def _pages(client: Client, project: str, since: str | None) -> Iterator[list[dict[str, Any]]]:
    """The export for a first or full pull, unless the token may not export (a user who is not
    the project's manager, where roles exist): then the task list, as for the next pulls."""
    if since is None:
        try:
            yield client.export(project)
            return
        except Refused as exc:
            if exc.status != 403:
                raise
    yield from client.tasks_since(project, since)


def _emails(users: dict[int, dict[str, Any]], changed: dict[int, dict[str, Any]]) -> None:
    """``completed_by`` as the export writes it (``{"id", "email"}``) for ``--map
    worker=email``: the API gives the user's id alone."""
    for task in changed.values():
        for annotation in task["annotations"]:
            who = annotation.get("completed_by")
            if isinstance(who, int) and who in users:
                annotation["completed_by"] = {"id": who, "email": users[who].get("email")}


def _pulled(
    tasks: list[tuple[int, dict[str, Any]]],
    kind: str,
    mapping: dict[str, str],
    options: dict[str, str],
) -> list[tuple[str, sources.Pulled]]:
    out = []
    spec = mapping.get("item", "id")
    for task_id, task in tasks:
        item = task_item(task, spec) if kind != Kind.PAIRWISE else None
        for annotation in task["annotations"]:
            role = annotation_role(annotation, kind, options)
            gives_gold = role in ("gold", "both")
            out.append(
                (
                    str(annotation.get("id")),
                    sources.Pulled(
                        task_id, annotation.get("updated_at"), role, item if gives_gold else None
                    ),
                )
            )
    return out
