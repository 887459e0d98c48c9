"""``monitor serve``: the webhooks that speed the pulls up, and the reports read-only.

An ASGI application (Starlette; ``uvicorn`` runs it):

- ``POST /hooks/labelstudio/{campaign}``: Label Studio's ``ANNOTATION_CREATED`` and
  ``ANNOTATION_UPDATED`` are stored from their payload (the annotation, its task and the
  project's label config: no read of the server), then the live path runs (200); those events
  without such a payload, ``ANNOTATIONS_CREATED`` and ``ANNOTATIONS_DELETED`` trigger a pull of
  the campaign (202). Label Studio signs nothing: the request must carry the shared secret in the
  ``X-Monitor-Secret`` header (set as a custom header of the webhook), else 401 and nothing
  happens. The pull, and the live path's update of the stop tests after it, runs off the
  event loop, one at a time per campaign; events that arrive
  during a pull are coalesced into one more pull after it. Label Studio sends each event once,
  without retry: the scheduled pull stays the truth, the webhook only makes it sooner.
- ``POST /hooks/prolific``: Prolific's events, verified by their HMAC signature
  (:func:`monitor.connectors.prolific_webhook.verify_signature`, 401 when it does not match) and acted
  on once per event id (kept in the ``webhook_events`` table).
- ``GET /reports/`` and ``GET /reports/{file}``: the folder ``monitor report --all`` and the
  nightly job write (``index.html``, each campaign's ``.html`` and ``.json``), read-only,
  behind a token (``Authorization: Bearer <token>``, or HTTP Basic with the token as password,
  which a browser asks for once and sends again for the index's relative links).
- ``GET /health``: ``ok``, without a secret.

The secrets come from the environment (:class:`Secrets`); a part whose secret is not set is not
served (404).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import hmac
import json
import logging
import os
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Engine
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from monitor.core.settings import Settings

log = logging.getLogger("monitor.serve")

LABELSTUDIO_EVENTS = frozenset(
    {"ANNOTATION_CREATED", "ANNOTATIONS_CREATED", "ANNOTATION_UPDATED", "ANNOTATIONS_DELETED"}
)
SECRET_HEADER = "X-Monitor-Secret"
HOOK_SECRET_ENV = "MONITOR_HOOK_SECRET"
REPORT_TOKEN_ENV = "MONITOR_SERVE_TOKEN"
PROLIFIC_SECRET_ENV = "MONITOR_PROLIFIC_WEBHOOK_SECRET"
MAX_BODY = 10 * 1024 * 1024
"""Bytes of a webhook's body read at most (413 above)."""
SERVED = (".html", ".json")

Pull = Callable[[Engine, Settings, str], Any]
"""What a Label Studio event triggers: ``pull(engine, settings, campaign)``."""


def default_pull(engine: Engine, settings: Settings, campaign: str) -> str:
    """The Label Studio pull (:func:`monitor.connectors.labelstudio.pull_campaign`), then the
    live path over what it brought (:func:`monitor.incremental.live.update_live`: the stop
    tests of the workers it touched, without a run); imported when the first event comes."""
    from monitor.connectors.labelstudio import pull_campaign
    from monitor.incremental.live import update_live

    summary = pull_campaign(engine, settings, campaign)
    return f"{summary.line()}; {update_live(engine, campaign).line()}"


Take = Callable[[Engine, Settings, str, list[dict[str, Any]]], list[Any]]
"""What annotation events' payloads become without a pull: ``take(engine, settings, campaign,
events)``, for each event what was done (a line), or None where it cannot be taken so (then
it triggers a pull)."""


def default_take(
    engine: Engine, settings: Settings, campaign: str, events: list[dict[str, Any]]
) -> list[str | None]:
    """The annotations of ``ANNOTATION_CREATED`` and ``ANNOTATION_UPDATED`` events stored from
    their payloads in one transaction (:func:`monitor.connectors.labelstudio.take_events`),
    then the live path once."""
    from monitor.connectors.labelstudio import take_events
    from monitor.incremental.live import update_live

    del settings
    taken = take_events(engine, campaign, events)
    if not any(taken):
        return [None] * len(events)
    line = f"{sum(taken)} events stored; {update_live(engine, campaign).line()}"
    return [line if t else None for t in taken]


@dataclass
class _Batch:
    waiting: list[tuple[dict[str, Any], asyncio.Future[Any]]] = field(default_factory=list)
    task: asyncio.Task[None] | None = None


@dataclass
class Takes:
    """The annotation events taken from their payloads: off the event loop, one batch of a
    campaign at a time; the events that arrive meanwhile make the next batch (one transaction
    and one live update for all of them, so a campaign keeps up however fast they come)."""

    engine: Engine
    settings: Settings
    take: Take
    batches: dict[str, _Batch] = field(default_factory=dict)

    async def __call__(self, campaign: str, event: dict[str, Any]) -> Any:  # noqa: ANN401
        """What became of ``event`` (None: pull instead)."""
        batch = self.batches.setdefault(campaign, _Batch())
        done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        batch.waiting.append((event, done))
        if batch.task is None or batch.task.done():
            batch.task = asyncio.get_running_loop().create_task(self._drain(campaign, batch))
        return await done

    async def _drain(self, campaign: str, batch: _Batch) -> None:
        while batch.waiting:
            waiting, batch.waiting = batch.waiting, []
            events = [e for e, _ in waiting]
            try:
                results = await asyncio.to_thread(self.take, self.engine, self.settings,
                                                  campaign, events)  # fmt: skip
            except Exception as exc:  # noqa: BLE001 - the pulls that follow report it
                log.warning("events %s: %s: %s", campaign, type(exc).__name__,
                            str(exc).splitlines()[0] if str(exc) else "")  # fmt: skip
                results = [None] * len(events)
            if any(r is not None for r in results):
                log.info("events %s: %s", campaign, next(r for r in results if r is not None))
            for (_, done), result in zip(waiting, results, strict=True):
                done.set_result(result)


@dataclass(frozen=True)
class Secrets:
    """The shared secret of Label Studio's webhooks, the token of the reports and Prolific's
    webhook secret; None: that part is not served."""

    hook: str | None = None
    reports: str | None = None
    prolific: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Secrets:
        env = os.environ if env is None else env
        return cls(
            env.get(HOOK_SECRET_ENV) or None,
            env.get(REPORT_TOKEN_ENV) or None,
            env.get(PROLIFIC_SECRET_ENV) or None,
        )

    def parts(self) -> list[str]:
        """What is served, in words (for the start-up line)."""
        return [
            name
            for name, on in (
                ("Label Studio webhooks", self.hook),
                ("reports", self.reports),
                ("Prolific webhooks", self.prolific),
            )
            if on
        ]


def _same(given: str | None, secret: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), secret.encode())


@dataclass
class _Slot:
    dirty: bool = False
    task: asyncio.Task[None] | None = None


@dataclass
class Pulls:
    """The pulls the webhooks trigger: one at a time per campaign, off the event loop, events
    coalesced. ``done`` counts the pulls finished per campaign (failed ones included)."""

    engine: Engine
    settings: Settings
    pull: Pull
    slots: dict[str, _Slot] = field(default_factory=dict)
    done: dict[str, int] = field(default_factory=dict)

    def trigger(self, campaign: str) -> bool:
        """Ask for a pull; True when one starts now, False when it joins the one under way."""
        slot = self.slots.setdefault(campaign, _Slot())
        slot.dirty = True
        if slot.task is not None and not slot.task.done():
            return False
        slot.task = asyncio.get_running_loop().create_task(self._drain(campaign, slot))
        return True

    async def _drain(self, campaign: str, slot: _Slot) -> None:
        while slot.dirty:
            slot.dirty = False
            try:
                result = await asyncio.to_thread(self.pull, self.engine, self.settings, campaign)
                log.info("pull %s: %s", campaign, result)
            except Exception as exc:  # noqa: BLE001 - the server outlives a failed pull
                log.warning("pull %s failed: %s: %s", campaign, type(exc).__name__,
                            str(exc).splitlines()[0] if str(exc) else "")  # fmt: skip
            self.done[campaign] = self.done.get(campaign, 0) + 1

    async def wait(self) -> None:
        """Until every pull under way has finished (at shutdown)."""
        tasks = [s.task for s in self.slots.values() if s.task is not None]
        await asyncio.gather(*tasks, return_exceptions=True)


async def _body(request: Request) -> bytes | None:
    """The request's body, None when it is larger than :data:`MAX_BODY`."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY:
        return None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _authorised(request: Request, token: str) -> bool:
    """A bearer token, or HTTP Basic whose password is the token."""
    auth = request.headers.get("authorization", "")
    scheme, _, value = auth.partition(" ")
    if scheme.lower() == "bearer":
        return _same(value.strip(), token)
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(value.strip(), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            return False
        return _same(decoded.partition(":")[2], token)
    return False


def _unknown_hook(engine: Engine, campaign: str, event: Any) -> str | None:  # noqa: ANN401
    """Why a Label Studio hook names nothing monitor pulls: a campaign that does not exist or
    is not connected to Label Studio, or an event of another project than the campaign's;
    None when it is the campaign's."""
    from monitor.connectors.labelstudio import connected_source
    from monitor.core.errors import MonitorError
    from monitor.store.engine import transaction

    try:
        with transaction(engine) as session:
            source = connected_source(session, campaign)
    except MonitorError:
        return f"no campaign {campaign[:80]!r} connected to Label Studio"
    project = event.get("project") if isinstance(event, dict) else None
    given = project.get("id") if isinstance(project, dict) else None
    if given is not None and str(given) != str(source.project):
        return f"project {str(given)[:40]!r} is not campaign {campaign[:80]!r}'s ({source.project})"
    return None


def build_app(
    engine: Engine,
    settings: Settings,
    secrets: Secrets,
    *,
    report_dir: Path | None = None,
    pull: Pull = default_pull,
    take: Take = default_take,
    on_prolific_event: Callable[[dict[str, Any]], None] | None = None,
) -> Starlette:
    """The application; ``report_dir`` defaults to the ``report_dir`` setting, ``pull`` to the
    Label Studio pull, ``take`` to storing annotation events from their payloads,
    ``on_prolific_event`` (given each new verified event) to a log line."""
    folder = Path(report_dir if report_dir is not None else settings.report_dir)
    pulls = Pulls(engine, settings, pull)
    takes = Takes(engine, settings, take)

    async def labelstudio(request: Request) -> Response:
        if secrets.hook is None:
            return PlainTextResponse("not served", status_code=404)
        if not _same(request.headers.get(SECRET_HEADER), secrets.hook):
            return PlainTextResponse(f"missing or wrong {SECRET_HEADER}", status_code=401)
        body = await _body(request)
        if body is None:
            return PlainTextResponse("body too large", status_code=413)
        try:
            event = json.loads(body)
        except ValueError:
            return PlainTextResponse("the body is not JSON", status_code=400)
        action = event.get("action") if isinstance(event, dict) else None
        campaign = request.path_params["campaign"]
        unknown = await asyncio.to_thread(_unknown_hook, engine, campaign, event)
        if unknown is not None:
            log.warning("labelstudio hook: %s", unknown)
            return PlainTextResponse(unknown, status_code=404)
        if action not in LABELSTUDIO_EVENTS:
            return JSONResponse({"campaign": campaign, "action": action, "pull": "ignored"})
        taken = await takes(campaign, event) if isinstance(event, dict) else None
        if taken is not None:
            return JSONResponse({"campaign": campaign, "action": action, "pull": "none",
                                 "taken": str(taken)})  # fmt: skip
        started = pulls.trigger(campaign)
        return JSONResponse(
            {"campaign": campaign, "action": action, "pull": "started" if started else "queued"},
            status_code=202,
        )

    async def prolific(request: Request) -> Response:
        from monitor.connectors.prolific_webhook import (
            EVENT_ID_HEADER,
            SIGNATURE_HEADER,
            TIMESTAMP_HEADER,
            event_id,
            verify_signature,
        )
        from monitor.store.ledger import remember_event

        if secrets.prolific is None:
            return PlainTextResponse("not served", status_code=404)
        body = await _body(request)
        if body is None:
            return PlainTextResponse("body too large", status_code=413)
        timestamp = request.headers.get(TIMESTAMP_HEADER)
        sig = request.headers.get(SIGNATURE_HEADER)
        if not verify_signature(secrets.prolific, timestamp, body, sig):
            return PlainTextResponse("missing or wrong signature", status_code=401)
        try:
            event = json.loads(body)
        except ValueError:
            return PlainTextResponse("the body is not JSON", status_code=400)
        if not isinstance(event, dict):
            return PlainTextResponse("the body is no JSON object", status_code=400)
        eid = event_id(event, timestamp or "", body, request.headers.get(EVENT_ID_HEADER))
        new = await asyncio.to_thread(remember_event, engine, "prolific", eid)
        if not new:
            return JSONResponse({"event": eid, "duplicate": True})
        if on_prolific_event is not None:
            await asyncio.to_thread(on_prolific_event, event)
        else:
            log.info("prolific event %s: %s", eid, str(event.get("event_type", "?"))[:80])
        return JSONResponse({"event": eid, "duplicate": False})

    async def reports(request: Request) -> Response:
        if secrets.reports is None:
            return PlainTextResponse("not served", status_code=404)
        if not _authorised(request, secrets.reports):
            return PlainTextResponse(
                "a token is needed", status_code=401,
                headers={"WWW-Authenticate": 'Basic realm="monitor reports"'},
            )  # fmt: skip
        name = request.path_params.get("name") or "index.html"
        path = folder / name
        # one file of the folder itself: no sub-folder, no link out of it, only what it writes
        if (
            "/" in name
            or "\\" in name
            or name.startswith(".")
            or path.suffix not in SERVED
            or path.is_symlink()
            or not path.is_file()
        ):
            return PlainTextResponse("no such report", status_code=404)
        media = "text/html; charset=utf-8" if path.suffix == ".html" else "application/json"
        return FileResponse(path, media_type=media, headers={"Cache-Control": "no-cache"})

    async def health(_request: Request) -> Response:
        return PlainTextResponse("ok")

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        yield
        await pulls.wait()  # a pull under way finishes before the server stops

    app = Starlette(
        lifespan=lifespan,
        routes=[
            Route("/health", health, methods=["GET"]),
            Route("/hooks/labelstudio/{campaign}", labelstudio, methods=["POST"]),
            Route("/hooks/prolific", prolific, methods=["POST"]),
            Route("/reports/", reports, methods=["GET", "HEAD"]),
            Route("/reports/{name}", reports, methods=["GET", "HEAD"]),
        ],
    )
    app.state.pulls = pulls
    return app
