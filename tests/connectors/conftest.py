"""The connectors' servers. A real Label Studio server (``labelstudio``), one per test session;
without ``$MONITOR_LABELSTUDIO_BIN`` its tests are skipped (.ci/run builds the server's virtual
environment and sets it, and fails when they were skipped). A campaign whose latest run decided
some workers block, and a Prolific served by a real local HTTP server with responses shaped as
its API documents them (Prolific has no sandbox)."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from sqlalchemy import Engine
from werkzeug import Request, Response

from monitor.connectors.prolific import MIN_MESSAGE, REJECTION_CATEGORIES
from monitor.store.campaigns import CampaignSpec, create_campaign
from monitor.store.engine import transaction
from monitor.store.models import Item, Judgment, Worker
from monitor.store.runs import Value
from monitor.store.save import insert_run
from tests.connectors.labelstudio_server import BIN_ENV, LabelStudio, binary

TOKEN = "tok-3f9a1c-never-shown"
STUDY = "60aa1b2c3d4e5f6a7b8c9d0e"
GROUP = "64b0c0ffee0000000000abcd"

DECISIONS = {
    # worker: (decision, reason, model weight)
    "P1": ("block", "answers at chance on 12 gold questions", 0.05),
    "P2": ("block", "gave the same answer (a) to 100% of 40 questions", 0.1),
    "P3": ("ok", "", 0.8),
    "P4": ("down_weight", "answers worth less than most workers'", 0.5),
    "P5": ("ok", "", 1.0),
}


def decision_values(decisions: dict[str, tuple[str, str, float]]) -> list[Value]:
    out = []
    for w, (d, reason, weight) in decisions.items():
        out.append(Value("worker", w, "decision", 0.0 if d == "block" else 1.0,
                         detail={"decision": d, "reason": reason, "weight": None}))  # fmt: skip
        out.append(Value("worker", w, "model_weight", weight))
    return out


def add_run(engine: Engine, campaign_id: int, values: list[Value]) -> int:
    with transaction(engine) as s:
        run = insert_run(
            s, campaign_id=campaign_id, watermark=10**6, full=True,
            started_at=datetime.now(UTC), parameters={}, code_version="test", n_judgments=5,
            n_new=5, seconds=0.1, values=values, flags=[],
        )  # fmt: skip
        return run.id


@pytest.fixture
def campaign(engine: Engine) -> int:
    """Campaign ``crowd`` with one run: P1 and P2 decided block, the others not."""
    with transaction(engine) as s:
        c = create_campaign(s, CampaignSpec("crowd", "label", categories=("a", "b")))
        workers = [Worker(campaign_id=c.id, external_id=w) for w in DECISIONS]
        item = Item(campaign_id=c.id, external_id="i1")
        s.add_all([*workers, item])
        s.flush()
        s.add_all(
            Judgment(
                campaign_id=c.id,
                worker_id=w.id,
                item_id=item.id,
                value_label="a",
                dedup_key=w.external_id,
            )
            for w in workers
        )
        cid = c.id
    add_run(engine, cid, decision_values(DECISIONS))
    return cid


@dataclass
class FakeProlific:
    """Prolific's state as its API shows it, and every request it received."""

    server: HTTPServer
    submissions: dict[str, dict[str, Any]] = field(default_factory=dict)
    group: list[str] = field(default_factory=list)
    bulks: dict[str, dict[str, Any]] = field(default_factory=dict)
    paid: Counter[str] = field(default_factory=Counter)
    requests: list[tuple[str, str, Any]] = field(default_factory=list)
    fail_pay: int = 0
    fail_group: int = 0
    refuse: set[str] = field(default_factory=set)
    """Submissions whose next transition Prolific refuses (400)."""

    def sent(self, method: str = "POST") -> list[tuple[str, str, Any]]:
        return [r for r in self.requests if r[0] == method]


def _json(data: Any, status: int = 200) -> Response:  # noqa: ANN401
    return Response(json.dumps(data), status=status, content_type="application/json")


@pytest.fixture
def prolific(httpserver: HTTPServer) -> FakeProlific:
    fake = FakeProlific(httpserver)
    subs = {"P1": "AWAITING REVIEW", "P2": "AWAITING REVIEW", "P3": "AWAITING REVIEW",
            "P4": "AWAITING REVIEW", "P5": "APPROVED", "PX": "AWAITING REVIEW"}  # fmt: skip
    for k, (pid, status) in enumerate(subs.items()):
        sid = f"sub{k:02d}{pid}"
        fake.submissions[sid] = {
            "id": sid, "participant_id": pid, "status": status, "study_id": STUDY,
            "started_at": "2026-11-27T10:00:00Z", "completed_at": "2026-11-27T10:20:00Z",
        }  # fmt: skip

    def authorised(request: Request) -> bool:
        return request.headers.get("Authorization") == f"Token {TOKEN}"

    def handler(request: Request) -> Response:
        body = request.get_json(silent=True)
        fake.requests.append((request.method, request.path, body))
        if not authorised(request):
            return _json({"error": {"title": "Unauthorized", "detail": "Invalid token."}}, 401)
        path = request.path
        if request.method == "GET" and path == f"/api/v1/studies/{STUDY}/submissions/":
            page = int(request.args.get("page", "1"))
            rows = list(fake.submissions.values())
            size = 4
            nxt = (
                {"href": httpserver.url_for(path) + f"?page={page + 1}"}
                if page * size < len(rows)
                else None
            )
            return _json({"results": rows[(page - 1) * size : page * size],
                          "_links": {"self": {"href": request.url}, "next": nxt},
                          "meta": {"count": len(rows)}})  # fmt: skip
        if request.method == "POST" and path == f"/api/v1/participant-groups/{GROUP}/participants/":
            if fake.fail_group:
                fake.fail_group -= 1
                for p in body["participant_ids"]:  # applied, the answer lost
                    if p not in fake.group:
                        fake.group.append(p)
                return Response("upstream timeout", status=504)
            for p in body["participant_ids"]:
                if p not in fake.group:
                    fake.group.append(p)
            return _json({"results": [{"participant_id": p} for p in fake.group]})
        if request.method == "PATCH":
            return _json({"error": {"detail": "PATCH replaces the group"}}, 500)
        m = re.fullmatch(r"/api/v1/submissions/([^/]+)/transition/", path)
        if request.method == "POST" and m:
            sub = fake.submissions.get(m.group(1))
            if sub is None:
                return _json({"error": {"detail": "Not found."}}, 404)
            if sub["id"] in fake.refuse:
                fake.refuse.discard(sub["id"])
                return _json({"error": {"detail": "Submission is not awaiting review."}}, 400)
            if body.get("action") == "REJECT":
                if (
                    len(body.get("message", "")) < MIN_MESSAGE
                    or body.get("rejection_category") not in REJECTION_CATEGORIES
                ):
                    return _json({"error": {"detail": "message or category"}}, 400)
                sub["status"] = "REJECTED"
            elif body.get("action") == "APPROVE":
                sub["status"] = "APPROVED"
            else:
                return _json({"error": {"detail": "action"}}, 400)
            return _json(sub)
        if request.method == "POST" and path == "/api/v1/submissions/bonus-payments/":
            bulk = f"bulk{len(fake.bulks) + 1}"
            lines = [ln.split(",") for ln in body["csv_bonuses"].splitlines() if ln]
            amount = sum(float(a) for _, a in lines)
            fake.bulks[bulk] = {"id": bulk, "study": body["study_id"], "amount": amount,
                                "fees": round(amount / 3, 2), "vat": 0,
                                "total_amount": round(amount * 4 / 3, 2), "lines": lines}  # fmt: skip
            return _json({k: v for k, v in fake.bulks[bulk].items() if k != "lines"}, 201)
        m = re.fullmatch(r"/api/v1/bulk-bonus-payments/([^/]+)/pay/", path)
        if request.method == "POST" and m:
            fake.paid[m.group(1)] += 1
            if fake.fail_pay:
                fake.fail_pay -= 1
                return Response("bad gateway", status=502)
            return Response("", status=202)
        return _json({"error": {"detail": "Not found."}}, 404)

    httpserver.expect_request(re.compile("^/api/v1/.*")).respond_with_handler(handler)
    return fake


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(check: Any, what: str, limit: float = 20.0) -> None:  # noqa: ANN401
    """Wait until ``check()`` holds (a deadline only against a hang, not a timing claim)."""
    end = time.monotonic() + limit
    while not check():
        if time.monotonic() > end:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.02)


@contextmanager
def serving_app(app: Any) -> Iterator[str]:  # noqa: ANN401 - an ASGI application
    """``app`` served by uvicorn on a free local port, in a thread; yields its base URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_for(lambda: server.started, "the server started")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)


@pytest.fixture(scope="session")
def labelstudio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabelStudio]:
    path = binary()
    if path is None:
        pytest.skip(f"no Label Studio server: set {BIN_ENV} to its label-studio binary")
    server = LabelStudio(path, Path(tmp_path_factory.mktemp("labelstudio")))
    try:
        yield server
    finally:
        server.stop()
