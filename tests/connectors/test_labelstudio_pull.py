"""``monitor pull labelstudio`` against a real Label Studio server: what is stored follows the
annotations created, changed and deleted there; a pull with nothing new reads one page and
stores nothing; both kinds of token; bad input refused in one line, nothing stored."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from monitor.cli import main
from monitor.connectors import labelstudio as ls
from monitor.connectors.labelstudio_api import Client
from monitor.core.errors import UsageError
from monitor.core.settings import Settings
from monitor.ingest.api import create_campaign
from monitor.store.campaigns import CampaignSpec
from tests.connectors.labelstudio_server import LEGACY_TOKEN, LabelStudio, choices, rating

CHOICES = (
    '<View><Text name="text" value="$text"/><Choices name="sentiment" toName="text">'
    '<Choice value="pos"/><Choice value="neg"/></Choices></View>'
)
RATING = (
    '<View><Text name="text" value="$text"/><Rating name="stars" toName="text" maxRating="5"/>'
    "</View>"
)


def _count(engine: Engine, sql: str, campaign: str) -> int:
    with engine.connect() as c:
        return int(
            c.execute(
                text(sql.replace("CID", "(SELECT id FROM campaigns WHERE name = :c)")),
                {"c": campaign},
            ).scalar_one()
        )


def judgments(engine: Engine, campaign: str) -> int:
    return _count(engine, "SELECT count(*) FROM judgments WHERE campaign_id = CID", campaign)


def gold(engine: Engine, campaign: str) -> int:
    return _count(
        engine, "SELECT count(*) FROM items WHERE campaign_id = CID AND gold IS NOT NULL", campaign
    )


def batches(engine: Engine, campaign: str) -> int:
    return _count(engine, "SELECT count(*) FROM ingest_batches WHERE campaign_id = CID", campaign)


def labels(engine: Engine, campaign: str) -> dict[str, str]:
    with engine.connect() as c:
        rows = c.execute(
            text(
                "SELECT j.external_id, j.value_label FROM judgments j JOIN campaigns c "
                "ON c.id = j.campaign_id WHERE c.name = :c"
            ),
            {"c": campaign},
        )
        return {str(a): str(v) for a, v in rows}


@pytest.fixture
def label_campaign(engine: Engine) -> str:
    create_campaign(engine, CampaignSpec(name="sentiment", kind="label", categories=("pos", "neg")))
    return "sentiment"


@pytest.fixture
def project(labelstudio: LabelStudio) -> tuple[int, list[int], list[int]]:
    """A Choices project with four tasks and three annotators: its id, task ids, user ids."""
    pid = labelstudio.project(CHOICES)
    labelstudio.import_tasks(pid, [{"text": f"text {i}"} for i in range(4)])
    users = [labelstudio.user(f"annotator{i}@example.com") for i in range(3)]
    return pid, labelstudio.task_ids(pid), users


def _pull(
    engine: Engine, server: LabelStudio, pid: int, token: str = LEGACY_TOKEN
) -> ls.PullSummary:
    return ls.pull(engine, "sentiment", url=server.url, project=pid, token=token)


def test_counts_follow_created_changed_and_deleted_annotations(
    engine: Engine,
    labelstudio: LabelStudio,
    project: tuple[int, list[int], list[int]],
    label_campaign: str,
) -> None:
    pid, tasks, users = project
    made = {}
    for t, task in enumerate(tasks):
        for u, user in enumerate(users):
            made[t, u] = labelstudio.annotate(
                task, user, choices("sentiment", "pos" if (t + u) % 2 else "neg")
            )
    labelstudio.annotate(tasks[0], users[0], choices("sentiment", "neg"), ground_truth=True)
    first = _pull(engine, labelstudio, pid)
    own = labelstudio.counts(pid)
    assert own == {"annotations": 13, "ground_truth": 1}
    assert judgments(engine, label_campaign) == own["annotations"] - own["ground_truth"] == 12
    assert gold(engine, label_campaign) == 1
    assert first.n_judgments == 12
    assert first.n_gold == 1
    assert first.batch_id is not None

    changed, deleted = made[1, 1], made[2, 0]
    labelstudio.update(changed, choices("sentiment", "pos"))
    labelstudio.delete(deleted)
    added = labelstudio.annotate(
        tasks[3], labelstudio.user("annotator3@example.com"), choices("sentiment", "pos")
    )
    second = _pull(engine, labelstudio, pid)
    own = labelstudio.counts(pid)
    assert own["annotations"] == 13
    assert judgments(engine, label_campaign) == own["annotations"] - own["ground_truth"]
    stored = labels(engine, label_campaign)
    assert stored[str(changed)] == "pos"
    assert str(deleted) not in stored
    assert stored[str(added)] == "pos"
    assert second.n_annotations == 2
    assert second.n_removed == 2
    assert second.n_judgments == 2


def test_a_pull_with_nothing_new_reads_one_page_and_stores_nothing(
    engine: Engine,
    labelstudio: LabelStudio,
    project: tuple[int, list[int], list[int]],
    label_campaign: str,
) -> None:
    pid, tasks, users = project
    for task in tasks:
        labelstudio.annotate(task, users[0], choices("sentiment", "pos"))
    _pull(engine, labelstudio, pid)
    n, b = judgments(engine, label_campaign), batches(engine, label_campaign)
    again = _pull(engine, labelstudio, pid)
    assert (again.n_pages, again.n_annotations, again.batch_id) == (1, 0, None)
    assert (judgments(engine, label_campaign), batches(engine, label_campaign)) == (n, b) == (4, 1)


def test_the_deletion_of_a_ground_truth_takes_its_gold_value_out(
    engine: Engine,
    labelstudio: LabelStudio,
    project: tuple[int, list[int], list[int]],
    label_campaign: str,
) -> None:
    pid, tasks, users = project
    truth = labelstudio.annotate(tasks[0], users[0], choices("sentiment", "neg"), ground_truth=True)
    labelstudio.annotate(tasks[1], users[1], choices("sentiment", "pos"))
    _pull(engine, labelstudio, pid)
    assert gold(engine, label_campaign) == 1
    labelstudio.delete(truth)
    _pull(engine, labelstudio, pid)
    assert gold(engine, label_campaign) == 0
    assert judgments(engine, label_campaign) == 1


def test_a_personal_access_token_is_exchanged_and_renewed(
    engine: Engine,
    labelstudio: LabelStudio,
    project: tuple[int, list[int], list[int]],
    label_campaign: str,
) -> None:
    pid, tasks, users = project
    labelstudio.annotate(tasks[0], users[0], choices("sentiment", "pos"))
    token = personal_token(labelstudio)
    summary = _pull(engine, labelstudio, pid, token=token)
    assert summary.n_judgments == 1
    with Client(labelstudio.url, token) as client:
        client.project(str(pid))
        client._auth = "Bearer expired"  # as after five minutes
        assert client.project(str(pid))["id"] == pid
        assert client.n_requests == 5  # refresh, project, refused, refresh again, project


_PERSONAL: list[str] = []


def personal_token(server: LabelStudio) -> str:
    if not _PERSONAL:
        _PERSONAL.append(server.personal_token())
    return _PERSONAL[0]


def test_pages_keyed_on_updated_at_read_every_task_once_at_least(
    labelstudio: LabelStudio, project: tuple[int, list[int], list[int]]
) -> None:
    pid, tasks, _ = project
    with Client(labelstudio.url, LEGACY_TOKEN, page_size=3) as client:
        pages = list(client.tasks_since(str(pid), None))
    read = [t["id"] for page in pages for t in page]
    assert set(read) == set(tasks)
    assert len(pages) == 2


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cli(capsys: pytest.CaptureFixture[str], db: str, *words: str) -> tuple[int, str]:
    code = main(["--db", db, *words])
    out = capsys.readouterr()
    return code, out.out + out.err


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_bad_input_is_one_line_and_stores_nothing(
    engine: Engine,
    db_url: str,
    labelstudio: LabelStudio,
    project: tuple[int, list[int], list[int]],
    label_campaign: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pid, tasks, users = project
    labelstudio.annotate(tasks[0], users[0], choices("sentiment", "pos"))
    create_campaign(engine, CampaignSpec(name="stars", kind="rating", scale_min=1, scale_max=5))
    wrong = "wrongtoken0123456789wrongtoken0123456789"
    cases = [
        (
            LEGACY_TOKEN,
            f"http://127.0.0.1:{_closed_port()}",
            str(pid),
            "sentiment",
            1,
            "cannot reach",
        ),
        (wrong, labelstudio.url, str(pid), "sentiment", 2, "refused the token (401)"),
        ("eyJ" + wrong + ".x.y", labelstudio.url, str(pid), "sentiment", 2, "refused the personal"),
        (LEGACY_TOKEN, labelstudio.url, "999999", "sentiment", 2, "no project 999999"),
        (
            LEGACY_TOKEN,
            labelstudio.url,
            str(pid),
            "stars",
            2,
            "no control for a rating campaign",
        ),
        (LEGACY_TOKEN, labelstudio.url, "x1", "sentiment", 2, "not a project number"),
    ]
    for token, url, project_id, campaign, code, words in cases:
        monkeypatch.setenv("MONITOR_LABELSTUDIO_TOKEN", token)
        got, said = _cli(
            capsys,
            db_url,
            "pull",
            "labelstudio",
            "--url",
            url,
            "--project",
            project_id,
            "--campaign",
            campaign,
        )
        assert got == code, said
        assert words in said
        assert token not in said
        assert said.startswith("monitor: error:")
        assert said.count("\n") == 2
    for campaign in ("sentiment", "stars"):
        assert judgments(engine, campaign) == batches(engine, campaign) == 0
        assert (
            _count(
                engine, "SELECT count(*) FROM campaign_sources WHERE campaign_id = CID", campaign
            )
            == 0
        )
    monkeypatch.delenv("MONITOR_LABELSTUDIO_TOKEN")
    got, said = _cli(
        capsys,
        db_url,
        "pull",
        "labelstudio",
        "--url",
        labelstudio.url,
        "--project",
        str(pid),
        "--campaign",
        "sentiment",
    )
    assert got == 2
    assert "MONITOR_LABELSTUDIO_TOKEN is not set" in said


def test_a_rating_project_and_a_named_control(engine: Engine, labelstudio: LabelStudio) -> None:
    pid = labelstudio.project(RATING)
    labelstudio.import_tasks(pid, [{"text": "a", "id": "a"}, {"text": "b", "id": "b"}])
    user = labelstudio.user("rater@example.com")
    for task, stars in zip(labelstudio.task_ids(pid), (2, 5), strict=True):
        labelstudio.annotate(task, user, rating("stars", stars))
    create_campaign(engine, CampaignSpec(name="stars", kind="rating", scale_min=1, scale_max=5))
    summary = ls.pull(
        engine,
        "stars",
        url=labelstudio.url,
        project=pid,
        token=LEGACY_TOKEN,
        mapping={"value": "stars", "item": "data.id"},
    )
    assert summary.n_judgments == 2
    with engine.connect() as c:
        rows = c.execute(
            text(
                "SELECT i.external_id, j.value_num FROM judgments j JOIN items i ON i.id = j.item_id"
            )
        )
        assert sorted(rows) == [("a", 2.0), ("b", 5.0)]


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_connect_then_pull_the_recorded_source_with_a_token_file(
    engine: Engine,
    db_url: str,
    labelstudio: LabelStudio,
    project: tuple[int, list[int], list[int]],
    label_campaign: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pid, tasks, users = project
    labelstudio.annotate(tasks[0], users[0], choices("sentiment", "pos"))
    token_file = tmp_path / "token"
    token_file.write_text(LEGACY_TOKEN + "\n")
    monkeypatch.delenv("MONITOR_LABELSTUDIO_TOKEN", raising=False)
    code, said = _cli(
        capsys,
        db_url,
        "campaign",
        "connect",
        "sentiment",
        "labelstudio",
        "--url",
        labelstudio.url,
        "--project",
        str(pid),
        "--token-file",
        str(token_file),
    )
    assert code == 0
    assert LEGACY_TOKEN not in said
    with engine.connect() as c:
        stored = " ".join(str(v) for v in c.execute(text("SELECT * FROM campaign_sources")).one())
    assert LEGACY_TOKEN not in stored
    assert str(token_file) in stored
    summary = ls.pull_campaign(engine, Settings(), "sentiment")
    assert summary.n_judgments == 1
    code, said = _cli(capsys, db_url, "pull", "labelstudio", "--campaign", "sentiment")
    assert code == 0
    assert "nothing new stored" in said
    assert LEGACY_TOKEN not in said


def test_the_scheduler_pulls_every_connected_campaign_before_its_run(
    engine: Engine,
    labelstudio: LabelStudio,
    project: tuple[int, list[int], list[int]],
    label_campaign: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from monitor.runtime.scheduler import incremental_job

    pid, tasks, users = project
    for task in tasks[:2]:
        labelstudio.annotate(task, users[0], choices("sentiment", "neg"))
    create_campaign(engine, CampaignSpec(name="elsewhere", kind="label", categories=("pos", "neg")))
    ls.connect(engine, "sentiment", url=labelstudio.url, project=pid)
    ls.connect(engine, "elsewhere", url=f"http://127.0.0.1:{_closed_port()}", project=pid)
    monkeypatch.setenv("MONITOR_LABELSTUDIO_TOKEN", LEGACY_TOKEN)
    with caplog.at_level("INFO", logger="monitor.scheduler"):
        incremental_job(engine, Settings())
    said = caplog.text
    assert judgments(engine, "sentiment") == 2
    assert "pull elsewhere failed: PlatformError: cannot reach Label Studio" in said
    assert "pull sentiment: pulled project" in said
    assert LEGACY_TOKEN not in said
    with engine.connect() as c:
        runs = c.execute(text("SELECT count(*) FROM metric_runs")).scalar_one()
    assert runs >= 1  # the run came after the pull


def test_one_campaign_takes_one_project_and_a_full_pull_sees_deleted_tasks(
    engine: Engine,
    labelstudio: LabelStudio,
    project: tuple[int, list[int], list[int]],
    label_campaign: str,
) -> None:
    pid, tasks, users = project
    for task in tasks:
        labelstudio.annotate(task, users[0], choices("sentiment", "pos"))
    _pull(engine, labelstudio, pid)
    other = labelstudio.project(CHOICES)
    with pytest.raises(UsageError, match="one campaign, one project"):
        _pull(engine, labelstudio, other)
    labelstudio.call("DELETE", f"/api/tasks/{tasks[0]}/")
    assert _pull(engine, labelstudio, pid).n_removed == 0  # a deleted task updates no other
    assert judgments(engine, label_campaign) == 4
    full = ls.pull(
        engine, "sentiment", url=labelstudio.url, project=pid, token=LEGACY_TOKEN, full=True
    )
    assert full.n_removed == 1
    assert full.batch_id is None
    assert judgments(engine, label_campaign) == labelstudio.counts(pid)["annotations"] == 3


PAIRWISE = (
    '<View><Text name="a" value="$left_text"/><Text name="b" value="$right_text"/>'
    '<Pairwise name="preference" toName="a,b"/></View>'
)


def test_a_pairwise_project_with_annotators_named_by_email(
    engine: Engine, labelstudio: LabelStudio
) -> None:
    pid = labelstudio.project(PAIRWISE)
    pairs = [("x", "y"), ("y", "z"), ("x", "z")]
    labelstudio.import_tasks(
        pid,
        [{"left": l, "right": r, "left_text": l, "right_text": r} for l, r in pairs],  # noqa: E741
    )
    user = labelstudio.user("judge@example.com")
    for task in labelstudio.task_ids(pid):
        result = [{"from_name": "preference", "to_name": "a", "type": "pairwise",
                   "value": {"selected": "left"}}]  # fmt: skip
        labelstudio.annotate(task, user, result)
    create_campaign(engine, CampaignSpec(name="prefs", kind="pairwise"))
    summary = ls.pull(
        engine, "prefs", url=labelstudio.url, project=pid, token=LEGACY_TOKEN,
        mapping={"worker": "email"},
    )  # fmt: skip
    assert summary.n_judgments == 3
    assert summary.control == "Pairwise 'preference'"
    with engine.connect() as c:
        rows = c.execute(
            text(
                "SELECT w.external_id, l.external_id, r.external_id, p.outcome "
                "FROM preferences p JOIN workers w ON w.id = p.worker_id "
                "JOIN items l ON l.id = p.left_item_id JOIN items r ON r.id = p.right_item_id"
            )
        )
        assert sorted(rows) == [("judge@example.com", a, b, "left") for a, b in sorted(pairs)]
