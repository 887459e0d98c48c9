"""Benchmark: how soon after Label Studio's webhook the live path has brought the stop tests
up to date, at a steady stream of annotations.

    MONITOR_LABELSTUDIO_BIN=.../bin/label-studio .venv/bin/python bench/live_latency.py
    ... bench/live_latency.py --rate 20 --seconds 30 --direct
    ... bench/live_latency.py --db postgresql+psycopg://postgres@127.0.0.1:5432/bench

A Label Studio Community server is started as the tests start it (tests/connectors/
labelstudio_server.py). One project with a Choices control gets ``--items`` tasks, each with
three annotations by twelve annotators right 85% of the time (the bulk import); the campaign is
connected, pulled and recomputed once (the live path's first reference). The project's webhook
goes to ``monitor serve``'s application (uvicorn on a free port): an annotation event is
stored from its payload and the live path runs (a pull only where the payload does not do). Then, timed: ``--rate`` annotations a second for
``--seconds``, posted through Label Studio's API by eight threads, one annotator in eight at
chance. An annotation's **latency** runs from the moment its POST was sent to the end of the
event or pull, and live update, after which it is stored and its worker's test brought up to
date (the decision, if any, recorded). Target: p95 under 2 s at 20 a second, on SQLite and
PostgreSQL.

On two cores Label Studio itself makes about seven annotations a second through its API
(each also sends its webhook). ``--direct`` measures monitor at the full rate: one real
annotation's webhook payload is captured, and the bench sends that payload at ``--rate`` (each
with its own id, task, annotator and answer) straight to ``monitor serve``, as Label Studio
would.

Printed: the annotations posted and the rate reached, the latency's median, p95 and maximum,
the pulls the webhooks triggered (events arriving during a pull are coalesced into one more),
and whether the annotator at chance was stopped, after how many of their answers.
"""

from __future__ import annotations

import argparse
import copy
import os
import random
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx  # noqa: E402
import numpy as np  # noqa: E402
from sqlalchemy import Engine, select  # noqa: E402

from monitor.connectors import labelstudio as ls  # noqa: E402
from monitor.core.settings import Settings  # noqa: E402
from monitor.incremental.live import update_live  # noqa: E402
from monitor.ingest.api import create_campaign  # noqa: E402
from monitor.pipeline.run import recompute  # noqa: E402
from monitor.runtime.server import SECRET_HEADER, Secrets, build_app, default_take  # noqa: E402
from monitor.store.campaigns import CampaignSpec, get_campaign  # noqa: E402
from monitor.store.connect import open_database  # noqa: E402
from monitor.store.engine import transaction  # noqa: E402
from monitor.store.models import LiveStop, SourceAnnotation, Worker  # noqa: E402
from tests.connectors.conftest import serving_app  # noqa: E402
from tests.connectors.labelstudio_server import (  # noqa: E402
    BIN_ENV,
    LEGACY_TOKEN,
    LabelStudio,
    binary,
    choices,
)

CONFIG = (
    '<View><Text name="text" value="$text"/><Choices name="label" toName="text">'
    '<Choice value="a"/><Choice value="b"/></Choices></View>'
)
GOOD, ACCURACY = 12, 0.85
SECRET = "bench-live-latency"
EVENTS = ["ANNOTATION_CREATED", "ANNOTATIONS_CREATED", "ANNOTATION_UPDATED", "ANNOTATIONS_DELETED"]
THREADS = 8


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=20.0, help="annotations a second")
    parser.add_argument("--seconds", type=float, default=30.0, help="how long the stream lasts")
    parser.add_argument("--items", type=int, default=400)
    parser.add_argument("--db", help="database URL (default: a SQLite file in a temporary folder)")
    parser.add_argument(
        "--direct",
        action="store_true",
        help="send Label Studio's webhook payloads at the rate from the bench (the server alone "
        "makes about 7 annotations a second on two cores)",
    )
    args = parser.parse_args()
    path = binary()
    if path is None:
        print(f"set {BIN_ENV} to a label-studio binary (1.23.2)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="monitor-bench-live-") as tmp:
        t0 = time.perf_counter()
        server = LabelStudio(path, Path(tmp))
        print(f"server up in {time.perf_counter() - t0:.1f} s at {server.url}")
        try:
            return _run(server, args, Path(tmp))
        finally:
            server.stop()


def _answer(rng: random.Random, truth: str, accuracy: float) -> str:
    return truth if rng.random() < accuracy else ("b" if truth == "a" else "a")


def _run(server: LabelStudio, args: argparse.Namespace, tmp: Path) -> int:
    rng = random.Random(0)
    good = [server.user(f"good{i}@example.com") for i in range(GOOD)]
    careless = server.user("careless@example.com")
    project = server.project(CONFIG, title="bench live")
    truth = [rng.choice("ab") for _ in range(args.items)]
    server.import_tasks(project, [
        {"data": {"text": f"text {i}"}, "annotations": [
            {"result": choices("label", _answer(rng, truth[i], ACCURACY)), "completed_by": u,
             "ground_truth": False}
            for u in rng.sample(good, 3)
        ]}
        for i in range(args.items)
    ])  # fmt: skip
    tasks = server.task_ids(project)
    url = args.db or f"sqlite:///{tmp / 'bench.db'}"
    engine = open_database(url, lock_timeout=30, statement_timeout=0)
    name = f"bench_live_{os.getpid()}"
    create_campaign(engine, CampaignSpec(name=name, kind="label", categories=("a", "b")))
    os.environ["MONITOR_LABELSTUDIO_TOKEN"] = LEGACY_TOKEN
    ls.connect(engine, name, url=server.url, project=project)
    ls.pull_campaign(engine, Settings(), name)
    settings = Settings(bootstrap_samples=0)
    recompute(engine, settings, campaign=name)
    print(f"{len(tasks)} tasks, {3 * len(tasks)} annotations pulled; the first run done")

    done: list[tuple[float, set[str]]] = []  # each pull's or event's end, the annotations stored

    def pull(engine_: Engine, settings_: Settings, campaign: str) -> str:
        summary = ls.pull_campaign(engine_, settings_, campaign)
        live = update_live(engine_, campaign)
        with transaction(engine_) as s:
            cid = get_campaign(s, campaign).id
            known = set(s.scalars(select(SourceAnnotation.annotation_id).where(
                SourceAnnotation.campaign_id == cid)))  # fmt: skip
        done.append((time.perf_counter(), known))
        return f"{summary.line()}; {live.line()}"

    captured: list[dict] = []

    def take(engine_: Engine, settings_: Settings, campaign: str, events: list[dict]) -> list:
        captured.extend(events)
        taken = default_take(engine_, settings_, campaign, events)
        ids = {str(e["annotation"]["id"]) for e, t in zip(events, taken, strict=True) if t}
        done.append((time.perf_counter(), ids))
        return taken

    app = build_app(engine, settings, Secrets(hook=SECRET), pull=pull, take=take)
    with serving_app(app) as monitor_url:
        server.call("POST", "/api/webhooks/", json={
            "project": project, "url": f"{monitor_url}/hooks/labelstudio/{name}",
            "send_payload": True, "send_for_all_actions": False, "actions": EVENTS,
            "headers": {SECRET_HEADER: SECRET}, "is_active": True,
        })  # fmt: skip
        plan = _plan(args, rng, tasks, truth, good, careless)
        if args.direct:  # Label Studio's own payload, sent at the rate by the bench itself
            first = server.annotate(tasks[0], good[0], choices("label", truth[0]))
            deadline = time.monotonic() + 60
            while not captured and time.monotonic() < deadline:
                time.sleep(0.05)
            hook = f"{monitor_url}/hooks/labelstudio/{name}"
            sent, posted = _stream(args.rate, plan, _direct(hook, captured[0], first))
        else:
            sent, posted = _stream(args.rate, plan, _through(server))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not set(posted) <= set().union(*(k for _, k in done)):
            time.sleep(0.05)
        pulls = app.state.pulls.done.get(name, 0)
    latency = []
    for annotation, at in sent.items():
        end = min((t for t, known in done if annotation in known), default=None)
        latency.append(np.inf if end is None else end - at)
    lat = np.array(latency)
    span = max(sent.values()) - min(sent.values()) if sent else 0.0
    print(
        f"{len(sent)} annotations in {span:.1f} s ({len(sent) / max(span, 1e-9):.1f} a second), "
        f"{len(done) - pulls} batches of events, {pulls} pulls: latency median {np.median(lat):.2f} s, p95 "
        f"{np.percentile(lat, 95):.2f} s, max {lat.max():.2f} s ({url.split(':')[0]})"
    )
    with transaction(engine) as s:
        stop = s.execute(select(LiveStop.after).join(Worker, Worker.id == LiveStop.worker_id)
                         .where(Worker.external_id == str(careless))).scalar()  # fmt: skip
    n_careless = sum(1 for w in posted.values() if w == careless)
    print(f"the annotator at chance: {n_careless} answers, "
          + (f"stopped after {stop}" if stop else "not stopped"))  # fmt: skip
    engine.dispose()
    return 0 if np.isfinite(lat).all() else 1


Plan = list[tuple[int, int, str]]
"""The annotations to make, in order: task, annotator, answer."""


def _plan(
    args: argparse.Namespace,
    rng: random.Random,
    tasks: list[int],
    truth: list[str],
    good: list[int],
    careless: int,
) -> Plan:
    """``rate x seconds`` annotations, one annotator in eight the one at chance, no annotator
    twice on a task."""
    n = int(args.rate * args.seconds)
    taken, plan = set(), []
    while len(plan) < n:
        i = rng.randrange(len(tasks))
        user = careless if rng.random() < 1 / 8 else rng.choice(good)
        if (i, user) in taken:
            continue
        taken.add((i, user))
        value = rng.choice("ab") if user == careless else _answer(rng, truth[i], ACCURACY)
        plan.append((tasks[i], user, value))
    return plan


Post = Any
"""Makes the k-th annotation with a thread's own HTTP client; returns its id."""


def _through(server: LabelStudio) -> Post:
    """Each annotation made through Label Studio's API: it sends the webhook."""

    def post(
        client: httpx.Client | None, k: int, task: int, user: int, value: str
    ) -> tuple[httpx.Client, str]:
        client = client or httpx.Client(base_url=server.url, timeout=30,
                                        headers={"Authorization": f"Token {LEGACY_TOKEN}"})  # fmt: skip
        answer = client.post(f"/api/tasks/{task}/annotations/",
                             json={"result": choices("label", value), "completed_by": user})  # fmt: skip
        answer.raise_for_status()
        return client, str(answer.json()["id"])

    return post


def _direct(hook: str, template: dict, first: int) -> Post:
    """Each annotation sent as Label Studio's webhook would send it (its payload, captured from
    a real event, with another id, task, annotator and answer), straight to ``monitor serve``:
    the rate is the bench's, not the server's."""

    def post(
        client: httpx.Client | None, k: int, task: int, user: int, value: str
    ) -> tuple[httpx.Client, str]:
        client = client or httpx.Client(timeout=30, headers={SECRET_HEADER: SECRET})
        event = copy.deepcopy(template)
        now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        ident = first + 1_000_000 + k
        event["annotation"].update(id=ident, task=task, completed_by=user, updated_at=now,
                                   created_at=now, result=choices("label", value))  # fmt: skip
        event["task"].update(id=task, updated_at=now)
        client.post(hook, json=event).raise_for_status()
        return client, str(ident)

    return post


def _stream(rate: float, plan: Plan, post: Post) -> tuple[dict[str, float], dict[str, int]]:
    """Make the ``plan``'s annotations at ``rate`` a second from eight threads; when each was
    sent, and by whom."""
    sent: dict[str, float] = {}
    posted: dict[str, int] = {}
    lock = threading.Lock()
    local = threading.local()

    def one(k: int) -> None:
        task, user, value = plan[k]
        at = time.perf_counter()
        local.client, ident = post(getattr(local, "client", None), k, task, user, value)
        with lock:
            sent[ident], posted[ident] = at, user

    start = time.perf_counter()
    with ThreadPoolExecutor(THREADS) as pool:
        futures = []
        for k in range(len(plan)):
            wait = start + k / rate - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            futures.append(pool.submit(one, k))
        for f in futures:
            f.result()
    return sent, posted


if __name__ == "__main__":
    sys.exit(main())
