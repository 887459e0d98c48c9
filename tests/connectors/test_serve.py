"""monitor serve run for real (uvicorn on a free port, in a thread) and asked over HTTP: the
Label Studio hook needs its secret and triggers the injected pull, one at a time per campaign
with the events coalesced; Prolific's events are verified and acted on once; the reports are
served read-only behind the token."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import Engine

from monitor.connectors.prolific_webhook import SIGNATURE_HEADER, TIMESTAMP_HEADER, signature
from monitor.core.settings import Settings
from monitor.runtime.server import SECRET_HEADER, Secrets, build_app
from tests.connectors.conftest import free_port, serving_app, wait_for

HOOK, TOKEN, PSECRET = "hook-secret-1", "report-token-2", "prolific-secret-3"


class Puller:
    """The injected pull: records each call; holds while ``gate`` is closed."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.running = 0
        self.most = 0
        self.gate = threading.Event()
        self.gate.set()
        self.lock = threading.Lock()

    def __call__(self, _engine: Engine, _settings: Settings, campaign: str) -> str:
        with self.lock:
            self.calls.append(campaign)
            self.running += 1
            self.most = max(self.most, self.running)
        self.gate.wait(30)
        with self.lock:
            self.running -= 1
        return "pulled"


@pytest.fixture
def reports(tmp_path: Path) -> Path:
    folder = tmp_path / "reports"
    folder.mkdir()
    (folder / "index.html").write_text("<html>index of campaigns</html>")
    (folder / "crowd.html").write_text("<html>crowd report</html>")
    (folder / "crowd.json").write_text('{"campaign": {"name": "crowd"}}')
    (tmp_path / "secret.html").write_text("outside")
    (folder / "link.html").symlink_to(tmp_path / "secret.html")
    return folder


@pytest.fixture
def served(engine: Engine, reports: Path) -> Iterator[tuple[str, Puller, list[dict]]]:
    from monitor.connectors import labelstudio as ls
    from monitor.ingest.api import create_campaign
    from monitor.store.campaigns import CampaignSpec

    for name in ("crowd", "other"):  # connected to project 1 (the hooks' events say so)
        create_campaign(engine, CampaignSpec(name=name, kind="label", categories=("a", "b")))
        ls.connect(engine, name, url="http://127.0.0.1:9", project=1)
    puller, events = Puller(), []
    app = build_app(engine, Settings(), Secrets(HOOK, TOKEN, PSECRET), report_dir=reports,
                    pull=puller, on_prolific_event=events.append)  # fmt: skip
    with serving_app(app) as url:
        try:
            yield url, puller, events
        finally:
            puller.gate.set()


def _event(action: str) -> dict:
    return {"action": action, "annotation": {"id": 7, "task": 3}, "project": {"id": 1}}


def test_hook_without_the_secret_is_401_and_pulls_nothing(served) -> None:  # noqa: ANN001
    url, puller, _ = served
    for headers in ({}, {SECRET_HEADER: "wrong"}):
        r = httpx.post(f"{url}/hooks/labelstudio/crowd", json=_event("ANNOTATION_CREATED"),
                       headers=headers)  # fmt: skip
        assert r.status_code == 401
    r = httpx.get(f"{url}/health")
    assert r.status_code == 200
    assert r.text == "ok"
    assert puller.calls == []


def test_hook_triggers_the_pull_one_at_a_time_events_coalesced(served) -> None:  # noqa: ANN001
    url, puller, _ = served
    hook = f"{url}/hooks/labelstudio/crowd"
    puller.gate.clear()  # the first pull holds
    r = httpx.post(hook, json=_event("ANNOTATION_CREATED"), headers={SECRET_HEADER: HOOK})
    assert r.status_code == 202
    assert r.json()["pull"] == "started"
    wait_for(lambda: puller.calls == ["crowd"], "the first pull")
    for action in ("ANNOTATIONS_CREATED", "ANNOTATION_UPDATED", "ANNOTATIONS_DELETED"):
        r = httpx.post(hook, json=_event(action), headers={SECRET_HEADER: HOOK})
        assert r.status_code == 202
        assert r.json()["pull"] == "queued"
    r = httpx.post(hook, json=_event("PROJECT_UPDATED"), headers={SECRET_HEADER: HOOK})
    assert r.status_code == 200
    assert r.json()["pull"] == "ignored"
    # another campaign's pull runs beside it
    r = httpx.post(f"{url}/hooks/labelstudio/other", json=_event("ANNOTATION_CREATED"),
                   headers={SECRET_HEADER: HOOK})  # fmt: skip
    wait_for(lambda: "other" in puller.calls, "the other campaign's pull")
    puller.gate.set()
    # the three events during the first pull made one more pull of crowd, not three
    wait_for(lambda: puller.calls.count("crowd") == 2 and puller.running == 0, "the second pull")
    time.sleep(0.3)
    assert puller.calls.count("crowd") == 2
    r = httpx.post(hook, content=b"not json", headers={SECRET_HEADER: HOOK})
    assert r.status_code == 400


def test_hook_for_an_unknown_campaign_or_another_project_is_404_and_pulls_nothing(
    served,
    caplog: pytest.LogCaptureFixture,  # noqa: ANN001
) -> None:
    url, puller, _ = served
    r = httpx.post(f"{url}/hooks/labelstudio/nobody", json=_event("ANNOTATION_CREATED"),
                   headers={SECRET_HEADER: HOOK})  # fmt: skip
    assert r.status_code == 404
    assert r.text == "no campaign 'nobody' connected to Label Studio"
    other = {**_event("ANNOTATION_CREATED"), "project": {"id": 2}}
    r = httpx.post(f"{url}/hooks/labelstudio/crowd", json=other, headers={SECRET_HEADER: HOOK})
    assert r.status_code == 404
    assert "project '2' is not campaign 'crowd'" in r.text
    time.sleep(0.2)
    assert puller.calls == []
    lines = [m for m in caplog.messages if m.startswith("labelstudio hook: ")]
    assert len(lines) == 2


def test_prolific_events_verified_and_deduplicated(served) -> None:  # noqa: ANN001
    url, _, events = served
    body = json.dumps({"event_id": "evt-1", "event_type": "submission.status.change",
                       "resource_id": "sub00P1", "status": "AWAITING REVIEW"}).encode()  # fmt: skip
    ts = "1764288000"
    good = {TIMESTAMP_HEADER: ts, SIGNATURE_HEADER: signature(PSECRET, ts, body),
            "Content-Type": "application/json"}  # fmt: skip
    r = httpx.post(f"{url}/hooks/prolific", content=body, headers={**good, SIGNATURE_HEADER: "x"})
    assert r.status_code == 401
    r = httpx.post(f"{url}/hooks/prolific", content=body)
    assert r.status_code == 401
    assert events == []
    r = httpx.post(f"{url}/hooks/prolific", content=body, headers=good)
    assert r.status_code == 200
    assert r.json() == {"event": "evt-1", "duplicate": False}
    r = httpx.post(f"{url}/hooks/prolific", content=body, headers=good)
    assert r.status_code == 200
    assert r.json()["duplicate"] is True
    assert [e["event_id"] for e in events] == ["evt-1"]
    # Prolific's retries of one event share its X-Event-ID header, whatever the body says
    retried = json.dumps({"event_type": "study.status.change", "status": "COMPLETED"}).encode()
    for sent in range(2):
        ts = f"176428810{sent}"
        r = httpx.post(f"{url}/hooks/prolific", content=retried, headers={
            TIMESTAMP_HEADER: ts, SIGNATURE_HEADER: signature(PSECRET, ts, retried),
            "X-Event-ID": "evt-2"})  # fmt: skip
        assert r.status_code == 200
        assert r.json() == {"event": "evt-2", "duplicate": bool(sent)}
    assert len(events) == 2


def test_reports_read_only_behind_the_token(served, reports: Path) -> None:  # noqa: ANN001
    url, _, _ = served
    assert httpx.get(f"{url}/reports/").status_code == 401
    r = httpx.get(f"{url}/reports/crowd.html", headers={"Authorization": "Bearer nope"})
    assert r.status_code == 401
    assert "Basic" in r.headers["www-authenticate"]
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    r = httpx.get(f"{url}/reports/", headers=bearer)
    assert r.status_code == 200
    assert "index of campaigns" in r.text
    r = httpx.get(f"{url}/reports", headers=bearer, follow_redirects=True)
    assert r.status_code == 200
    assert "index of campaigns" in r.text
    basic = base64.b64encode(f"anyone:{TOKEN}".encode()).decode()
    r = httpx.get(f"{url}/reports/crowd.json", headers={"Authorization": f"Basic {basic}"})
    assert r.status_code == 200
    assert r.json() == {"campaign": {"name": "crowd"}}
    for name in ("link.html", "..%2Fsecret.html", "missing.html", ".hidden.html"):
        assert httpx.get(f"{url}/reports/{name}", headers=bearer).status_code == 404
    for method in ("POST", "PUT", "DELETE"):
        r = httpx.request(method, f"{url}/reports/crowd.html", headers=bearer, content=b"x")
        assert r.status_code == 405
    assert (reports / "crowd.html").read_text() == "<html>crowd report</html>"


def test_monitor_serve_command(db_url: str, reports: Path, tmp_path: Path) -> None:
    """The command itself, in a process of its own: refuses to start with no secret, serves
    what its secrets open, and its log never holds them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MONITOR_")}
    cmd = [sys.executable, "-m", "monitor", "--db", db_url, "serve", "--port"]
    r = subprocess.run([*cmd, str(free_port())], env=env, capture_output=True, text=True)
    assert r.returncode == 2
    assert "nothing to serve" in r.stderr
    port = free_port()
    env |= {"MONITOR_SERVE_TOKEN": TOKEN, "MONITOR_HOOK_SECRET": HOOK}
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        proc = subprocess.Popen([*cmd, str(port), "--report-dir", str(reports)], env=env,
                                stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
        try:
            url = f"http://127.0.0.1:{port}"

            def up() -> bool:
                try:
                    return httpx.get(f"{url}/health").status_code == 200
                except httpx.HTTPError:
                    return False

            wait_for(up, "monitor serve answers", 60)
            r = httpx.get(f"{url}/reports/crowd.html", headers={"Authorization": f"Bearer {TOKEN}"})
            assert r.status_code == 200
            assert "crowd report" in r.text
            assert httpx.post(f"{url}/hooks/labelstudio/crowd", json={}).status_code == 401
            assert httpx.post(f"{url}/hooks/prolific", content=b"{}").status_code == 404
        finally:
            proc.terminate()
            proc.wait(30)
    text = log.read_text()
    assert "serving Label Studio webhooks, reports on http://127.0.0.1" in text
    assert TOKEN not in text
    assert HOOK not in text
