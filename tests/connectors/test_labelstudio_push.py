"""``monitor push labelstudio`` against a real Label Studio server: the answers as predictions
once per run, the decision list in the description (the managers' text kept), an annotator
removed from the organisation only with ``--apply``."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Engine

from monitor.cli import main
from monitor.connectors import labelstudio as ls
from monitor.connectors.labelstudio_push import MARK, push
from monitor.core.settings import Settings
from monitor.ingest.api import create_campaign
from monitor.pipeline.run import recompute
from monitor.store.campaigns import CampaignSpec
from tests.connectors.labelstudio_server import LEGACY_TOKEN, LabelStudio, choices
from tests.connectors.test_labelstudio_pull import CHOICES


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_push_writes_predictions_once_and_removes_only_with_apply(
    engine: Engine,
    db_url: str,
    labelstudio: LabelStudio,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    pid = labelstudio.project(CHOICES)
    labelstudio.call("PATCH", f"/api/projects/{pid}/", json={"description": "Sentiment of tweets."})
    labelstudio.import_tasks(pid, [{"text": f"tweet {i}"} for i in range(6)])
    tasks = labelstudio.task_ids(pid)
    users = [labelstudio.user(f"pusher{i}@example.com") for i in range(4)]
    for t, task in enumerate(tasks):
        for u, user in enumerate(users):
            answer = "pos" if t % 2 else "neg"
            if u == 3:  # the odd one out
                answer = "neg" if t % 2 else "pos"
            labelstudio.annotate(task, user, choices("sentiment", answer))
    create_campaign(engine, CampaignSpec(name="tweets", kind="label", categories=("pos", "neg")))
    ls.pull(engine, "tweets", url=labelstudio.url, project=pid, token=LEGACY_TOKEN)
    recompute(engine, Settings(), campaign="tweets")
    first = push(engine, "tweets", token=LEGACY_TOKEN)
    predictions = labelstudio.call("GET", "/api/predictions/", params={"project": pid})
    rows = predictions["results"] if isinstance(predictions, dict) else predictions
    assert first.n_predictions == len(rows) == 6
    by_task = {p["task"]: p["result"][0]["value"]["choices"] for p in rows}
    assert {p["model_version"] for p in rows} == {"monitor-1"}
    assert by_task == {task: ["pos" if t % 2 else "neg"] for t, task in enumerate(tasks)}
    outlier = str(users[3])  # blocked after the answers were pushed
    assert (
        main(
            [
                "--db",
                db_url,
                "block",
                outlier,
                "--campaign",
                "tweets",
                "--reason",
                "disagrees",
            ]
        )
        == 0
    )

    assert push(engine, "tweets", token=LEGACY_TOKEN).to_remove == [
        f"{outlier} (pusher3@example.com)"
    ]
    description = labelstudio.call("GET", f"/api/projects/{pid}/")["description"]
    assert description.startswith("Sentiment of tweets.\n\n" + MARK)
    assert "pusher3@example.com" in description
    assert "disagrees" in description
    assert not first.to_remove
    assert not first.removed
    members = labelstudio.call("GET", "/api/current-user/whoami")["active_organization"]

    def member(user: int) -> bool:
        """Still a member of the organisation (a removal is a soft delete: removing again
        answers 404); asked of the removed annotator only."""
        found = labelstudio.admin.get(f"/api/organizations/{members}/memberships/{user}/")
        return found.status_code == 200

    assert member(users[3])
    second = push(engine, "tweets", token=LEGACY_TOKEN)
    assert (second.n_predictions, second.n_predictions_there, second.description) == (0, 6, False)

    token_file = tmp_path / "token"
    token_file.write_text(LEGACY_TOKEN)
    monkey_env = {"MONITOR_LABELSTUDIO_TOKEN": LEGACY_TOKEN}
    with pytest.MonkeyPatch.context() as mp:
        for k, v in monkey_env.items():
            mp.setenv(k, v)
        assert main(["--db", db_url, "push", "labelstudio", "--campaign", "tweets", "--apply"]) == 0
    said = capsys.readouterr().out
    assert "removed from the organisation: " + outlier in said
    assert LEGACY_TOKEN not in said
    gone = labelstudio.admin.delete(f"/api/organizations/{members}/memberships/{users[3]}/")
    assert gone.status_code == 404
    assert "Member not found" in gone.text
    assert main(["--db", db_url, "push", "labelstudio", "--campaign", "tweets", "--apply",
                 "--token-file", str(token_file)]) == 0  # fmt: skip
    assert "was removed from the organisation before" in capsys.readouterr().out


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_an_annotator_decided_stop_is_paused_where_the_server_offers_it(
    engine: Engine, labelstudio: LabelStudio
) -> None:
    """Without --apply the push lists the annotator decided stop; with it, Label Studio
    Community (the server here) has no pauses: the push says so in one note, pauses nobody and
    changes nothing else."""
    from datetime import UTC, datetime

    from monitor.store import campaigns as campaign_store
    from monitor.store.engine import transaction
    from monitor.store.runs import Value
    from monitor.store.save import insert_run

    pid = labelstudio.project(CHOICES)
    labelstudio.import_tasks(pid, [{"text": f"post {i}"} for i in range(4)])
    tasks = labelstudio.task_ids(pid)
    users = [labelstudio.user(f"stopper{i}@example.com") for i in range(3)]
    for t, task in enumerate(tasks):
        for user in users:
            labelstudio.annotate(task, user, choices("sentiment", "pos" if t % 2 else "neg"))
    create_campaign(engine, CampaignSpec(name="posts", kind="label", categories=("pos", "neg")))
    ls.pull(engine, "posts", url=labelstudio.url, project=pid, token=LEGACY_TOKEN)
    recompute(engine, Settings(), campaign="posts")
    stopped = str(users[2])
    with transaction(engine) as s:
        campaign = campaign_store.get_campaign(s, "posts")
        insert_run(
            s, campaign_id=campaign.id, watermark=10**6, full=True, started_at=datetime.now(UTC),
            parameters={}, code_version="test", n_judgments=12, n_new=0, seconds=0.1,
            values=[Value("worker", stopped, "decision", 0.5, detail={
                "decision": "stop", "reason": "right less than 80% of the time", "weight": 0.5})],
            flags=[],
        )  # fmt: skip
    dry = push(engine, "posts", token=LEGACY_TOKEN)
    assert dry.to_pause == [f"{stopped} (stopper2@example.com)"]
    assert dry.paused == []
    applied = push(engine, "posts", token=LEGACY_TOKEN, apply=True)
    assert applied.paused == []
    assert any("offers no pause" in note for note in applied.notes)
    assert applied.removed == []
