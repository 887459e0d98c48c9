"""Notifications after a run: one message per run when decisions or verdicts changed, to a
webhook served by a real local HTTP server and by e-mail to a real local SMTP server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from email import message_from_bytes

import pytest
from aiosmtpd.controller import Controller
from pytest_httpserver import HTTPServer
from sqlalchemy import Engine
from werkzeug import Request, Response

from monitor.connectors.notify import changes, message, notify
from monitor.core.settings import Settings
from monitor.store.runs import Value
from tests.connectors.conftest import DECISIONS, add_run, decision_values, free_port


class Inbox:
    def __init__(self) -> None:
        self.messages: list[tuple[str, list[str], bytes]] = []

    async def handle_DATA(self, _server, _session, envelope) -> str:  # noqa: ANN001, N802
        self.messages.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.content))
        return "250 OK"


@pytest.fixture
def smtp() -> Iterator[tuple[Inbox, int]]:
    inbox, port = Inbox(), free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield inbox, port
    finally:
        controller.stop()


def _second_run(engine: Engine, campaign: int, alpha: float | None = None) -> int:
    now = dict(DECISIONS)
    now["P3"] = ("block", "answers no better than chance over 30 questions", 0.1)
    now["P1"] = ("down_weight", "answers worth less than most workers'", 0.4)
    values = decision_values(now)
    if alpha is not None:
        values.append(Value("campaign", "crowd", "krippendorff_alpha", alpha))
    return add_run(engine, campaign, values)


def test_changes_name_each_worker_and_the_verdict(engine: Engine, campaign: int) -> None:
    run = _second_run(engine, campaign, alpha=0.5)
    (found,) = changes(engine, [("crowd", run)])
    assert found.decisions == [("P1", "block", "down_weight"), ("P3", "ok", "block")]
    assert found.verdict == ("undetermined", "unreliable")
    subject, text = message([found])
    assert subject == "monitor: 1 campaign changed (crowd)"
    assert "crowd (run 1 → 2): verdict undetermined → unreliable; 2 worker decisions " \
           "changed: P1 block → down_weight, P3 ok → block" in text  # fmt: skip


def test_nothing_changed_sends_nothing(
    engine: Engine, campaign: int, httpserver: HTTPServer
) -> None:
    run = add_run(engine, campaign, decision_values(DECISIONS))
    settings = Settings(notify_webhook_url=httpserver.url_for("/hook"))
    assert notify(engine, settings, [("crowd", run)]) is None
    # a first run has nothing to compare with
    assert changes(engine, [("crowd", run - 1)]) == []
    assert httpserver.log == []


def test_one_webhook_message_and_one_email_per_run(
    engine: Engine, campaign: int, httpserver: HTTPServer, smtp: tuple[Inbox, int]
) -> None:
    bodies: list[dict] = []

    def hook(request: Request) -> Response:
        bodies.append(json.loads(request.data))
        return Response("ok")

    httpserver.expect_request("/hook", method="POST").respond_with_handler(hook)
    inbox, port = smtp
    run = _second_run(engine, campaign)
    settings = Settings(
        notify_webhook_url=httpserver.url_for("/hook"),
        notify_email_to="lead@example.org, ops@example.org",
        notify_email_from="monitor@example.org",
        smtp_host="127.0.0.1",
        smtp_port=port,
    )
    sent = notify(engine, settings, [("crowd", run)])
    assert sent is not None
    assert sent.webhook
    assert sent.email
    assert sent.errors == []
    assert len(bodies) == 1
    assert list(bodies[0]) == ["text"]
    assert "P3 ok → block" in bodies[0]["text"]
    (mail,) = inbox.messages
    assert mail[0] == "monitor@example.org"
    assert mail[1] == ["lead@example.org", "ops@example.org"]
    parsed = message_from_bytes(mail[2])
    assert parsed["Subject"] == "monitor: 1 campaign changed (crowd)"
    assert "P1 block → down_weight" in parsed.get_payload(decode=True).decode()


def test_a_notification_that_fails_is_reported_not_raised(
    engine: Engine, campaign: int, httpserver: HTTPServer
) -> None:
    httpserver.expect_request("/hook").respond_with_data("no", status=500)
    run = _second_run(engine, campaign)
    settings = Settings(
        notify_webhook_url=httpserver.url_for("/hook") + "?token=hooksecret",
        notify_email_to="lead@example.org",
        smtp_host="127.0.0.1",
        smtp_port=free_port(),  # nobody listens
    )
    sent = notify(engine, settings, [("crowd", run)])
    assert sent is not None
    assert not sent.webhook
    assert not sent.email
    assert sent.errors[0] == "notification: webhook answered 500"
    assert "ConnectionRefusedError" in sent.errors[1]
    assert all("hooksecret" not in e for e in sent.errors)


def test_monitor_recompute_notifies_once_when_a_decision_changes(
    db_url: str,
    tmp_path,
    httpserver: HTTPServer,
    monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
) -> None:
    import numpy as np

    from monitor.cli import main
    from tests.test_worker_decisions import _clicker, _honest, _write

    bodies: list[dict] = []

    def hook(request: Request) -> Response:
        bodies.append(json.loads(request.data))
        return Response("ok")

    httpserver.expect_request("/hook", method="POST").respond_with_handler(hook)
    monkeypatch.setenv("MONITOR_NOTIFY_WEBHOOK_URL", httpserver.url_for("/hook"))
    rng = np.random.default_rng(3)
    honest = [f"a{k}" for k in range(8)]
    db = ["--db", db_url]
    first = _honest(rng, honest, 60) + _clicker(rng, "left100", 3, 3)
    assert main([*db, "campaign", "create", "prefs", "--kind", "pairwise"]) == 0
    assert main([*db, "ingest", str(_write(tmp_path / "a.csv", first)), "--campaign", "prefs"]) == 0
    assert main([*db, "recompute", "--campaign", "prefs"]) == 0
    assert bodies == []  # a first run: nothing to compare with
    later = _clicker(rng, "left100", 80, 80)
    assert main([*db, "ingest", str(_write(tmp_path / "b.csv", later)), "--campaign", "prefs"]) == 0
    assert main([*db, "recompute", "--campaign", "prefs"]) == 0
    assert len(bodies) == 1
    assert "left100 cannot_tell → block" in bodies[0]["text"]
    assert main([*db, "recompute", "--campaign", "prefs"]) == 0  # nothing new: no run
    assert len(bodies) == 1
