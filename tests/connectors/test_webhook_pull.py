"""The whole loop against a real Label Studio: its own webhooks, registered on the project with
the shared secret in a header, reach ``monitor serve`` (uvicorn on a free port), which pulls the
campaign through the real connector: an annotation made, changed or deleted in Label Studio is
in the store moments later, with no pull started by hand."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine

from monitor.connectors import labelstudio as ls
from monitor.core.settings import Settings
from monitor.ingest.api import create_campaign
from monitor.runtime.server import SECRET_HEADER, Secrets, build_app, default_pull
from monitor.store.campaigns import CampaignSpec
from tests.connectors.conftest import serving_app, wait_for
from tests.connectors.labelstudio_server import LEGACY_TOKEN, LabelStudio, choices
from tests.connectors.test_labelstudio_pull import CHOICES, judgments, labels

SECRET = "hook-secret-webhook-loop"
EVENTS = ["ANNOTATION_CREATED", "ANNOTATIONS_CREATED", "ANNOTATION_UPDATED", "ANNOTATIONS_DELETED"]


def _hook(labelstudio: LabelStudio, project: int, url: str) -> None:
    """The project's webhook to ``url``, with its payload and the shared secret."""
    labelstudio.call("POST", "/api/webhooks/", json={
        "project": project, "url": url, "send_payload": True, "send_for_all_actions": False,
        "actions": EVENTS, "headers": {SECRET_HEADER: SECRET}, "is_active": True,
    })  # fmt: skip


@pytest.fixture
def serving(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``monitor serve``'s application with its default pull, on a free port."""
    monkeypatch.setenv("MONITOR_LABELSTUDIO_TOKEN", LEGACY_TOKEN)
    app = build_app(engine, Settings(), Secrets(hook=SECRET))
    with serving_app(app) as url:
        yield url


def test_label_studio_webhooks_pull_the_campaign(
    engine: Engine, labelstudio: LabelStudio, serving: str
) -> None:
    create_campaign(engine, CampaignSpec(name="live", kind="label", categories=("pos", "neg")))
    pid = labelstudio.project(CHOICES, title="webhook loop")
    labelstudio.import_tasks(pid, [{"text": f"text {i}"} for i in range(2)])
    tasks = labelstudio.task_ids(pid)
    user = labelstudio.user("hooked@example.com")
    ls.connect(engine, "live", url=labelstudio.url, project=pid)
    _hook(labelstudio, pid, f"{serving}/hooks/labelstudio/live")

    first = labelstudio.annotate(tasks[0], user, choices("sentiment", "pos"))
    wait_for(lambda: judgments(engine, "live") == 1, "the created annotation pulled", 60)
    second = labelstudio.annotate(tasks[1], user, choices("sentiment", "neg"))
    wait_for(lambda: judgments(engine, "live") == 2, "the second annotation pulled", 60)
    labelstudio.update(first, choices("sentiment", "neg"))
    wait_for(
        lambda: sorted(labels(engine, "live").values()) == ["neg", "neg"],
        "the changed annotation replacing its judgment",
        60,
    )
    labelstudio.delete(first)
    wait_for(lambda: judgments(engine, "live") == 1, "the deleted annotation taken out", 60)
    assert labels(engine, "live") == {str(second): "neg"}


def test_an_annotation_event_is_stored_from_its_payload_without_a_pull(
    engine: Engine, labelstudio: LabelStudio, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Created and changed annotations come in their event's payload: stored (and the live path
    run) without reading the server; a deletion, which names no task, still pulls. A pull after
    it finds the annotation known and changes nothing."""
    monkeypatch.setenv("MONITOR_LABELSTUDIO_TOKEN", LEGACY_TOKEN)
    pulls: list[str] = []

    def pull(engine_: Engine, settings_: Settings, campaign: str) -> str:
        pulls.append(campaign)
        return str(default_pull(engine_, settings_, campaign))

    create_campaign(engine, CampaignSpec(name="events", kind="label", categories=("pos", "neg")))
    pid = labelstudio.project(CHOICES, title="event payloads")
    labelstudio.import_tasks(pid, [{"text": f"text {i}"} for i in range(2)])
    tasks = labelstudio.task_ids(pid)
    user = labelstudio.user("payload@example.com")
    labelstudio.annotate(tasks[1], user, choices("sentiment", "pos"))
    ls.connect(engine, "events", url=labelstudio.url, project=pid)
    ls.pull_campaign(engine, Settings(), "events")  # the first pull reads the whole project
    app = build_app(engine, Settings(), Secrets(hook=SECRET), pull=pull)
    with serving_app(app) as url:
        _hook(labelstudio, pid, f"{url}/hooks/labelstudio/events")
        first = labelstudio.annotate(tasks[0], user, choices("sentiment", "pos"))
        wait_for(lambda: judgments(engine, "events") == 2, "the created annotation stored", 60)
        labelstudio.update(first, choices("sentiment", "neg"))
        wait_for(lambda: labels(engine, "events").get(str(first)) == "neg", "the change", 60)
        assert pulls == []  # the payloads did it
        labelstudio.delete(first)
        wait_for(lambda: judgments(engine, "events") == 1, "the deletion pulled", 60)
        assert pulls
    before = labels(engine, "events")
    ls.pull_campaign(engine, Settings(), "events")
    assert labels(engine, "events") == before
