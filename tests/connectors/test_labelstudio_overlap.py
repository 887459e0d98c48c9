"""``monitor export overlap --platform labelstudio`` against a real Label Studio Community
server: the CSV with each task's overlap; a dry run sends nothing; ``--apply`` sets each task's
overlap and ``is_labeled`` once, and then the server's labelling stream hands out exactly the
judgments each item wants; a task whose overlap the server lost (the project's settings
changed) is set again."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from sqlalchemy import Engine

from monitor.cli import main
from monitor.connectors import labelstudio as ls
from monitor.connectors.labelstudio_overlap import ACTION
from monitor.core.settings import Settings
from monitor.ingest.api import create_campaign
from monitor.pipeline.run import recompute
from monitor.store.campaigns import CampaignSpec, get_campaign
from monitor.store.engine import transaction
from monitor.store.ledger import ledger
from monitor.store.runs import Value
from monitor.store.save import insert_run
from tests.connectors.labelstudio_server import LEGACY_TOKEN, LabelStudio, choices
from tests.connectors.test_labelstudio_pull import CHOICES, PAIRWISE


def _states(server: LabelStudio, pid: int) -> dict[int, tuple[int, bool, int]]:
    """Each task's (overlap, is_labeled, annotations) as the server has them."""
    found = server.call("GET", "/api/tasks/", params={"project": pid, "page_size": 1000,
                        "include": "id,overlap,is_labeled,total_annotations"})  # fmt: skip
    return {
        t["id"]: (t["overlap"], t["is_labeled"], t["total_annotations"]) for t in found["tasks"]
    }


def _next(client: httpx.Client, pid: int) -> int | None:
    """The task the labelling stream gives this annotator next (None: nothing for them)."""
    answer = client.get(f"/api/projects/{pid}/next")
    if answer.status_code == 404:
        return None
    answer.raise_for_status()
    return int(answer.json()["id"])


def _annotate(client: httpx.Client, task: int, value: str) -> None:
    answer = client.post(f"/api/tasks/{task}/annotations/",
                         json={"result": choices("sentiment", value), "lead_time": 1.0})  # fmt: skip
    answer.raise_for_status()


def _export(capsys: pytest.CaptureFixture[str], db: str, out: Path, *more: str) -> list[str]:
    capsys.readouterr()
    assert main(["--db", db, "export", "overlap", "--campaign", "ov", "--platform",
                 "labelstudio", "--out", str(out), *more]) == 0  # fmt: skip
    return capsys.readouterr().err.splitlines()


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_the_overlap_set_through_the_api_is_what_the_labelling_stream_hands_out(
    engine: Engine,
    db_url: str,
    labelstudio: LabelStudio,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pid = labelstudio.project(CHOICES)  # one annotation per task: every task's overlap is 1
    labelstudio.import_tasks(pid, [{"text": f"review {i}"} for i in range(3)])
    a, b, c = labelstudio.task_ids(pid)
    first, second, third, fourth = (labelstudio.annotator(f"ov{k}@example.com")[1]
                                    for k in range(4))  # fmt: skip
    for task in (a, b, c):
        _annotate(first, task, "pos")
    for task in (a, b):
        _annotate(second, task, "pos" if task == a else "neg")
    assert _states(labelstudio, pid) == {a: (1, True, 2), b: (1, True, 2), c: (1, True, 1)}
    assert _next(third, pid) is None  # every task is finished
    create_campaign(engine, CampaignSpec(name="ov", kind="label", categories=("pos", "neg")))
    ls.pull(engine, "ov", url=labelstudio.url, project=pid, token=LEGACY_TOKEN)
    with transaction(engine) as s:  # a run that says: a is settled, b wants two, c one
        campaign = get_campaign(s, "ov")
        insert_run(
            s, campaign_id=campaign.id, watermark=10**9, full=True, started_at=datetime.now(UTC),
            parameters={}, code_version="test", n_judgments=5, n_new=5, seconds=0.1,
            values=[Value("item", str(a), "need", 0.0, n=2), Value("item", str(b), "need", 2.0, n=2),
                    Value("item", str(c), "need", 1.0, n=1)],
            flags=[],
        )  # fmt: skip
    out = tmp_path / "overlap.csv"
    said = _export(capsys, db_url, out)
    assert out.read_text().splitlines() == [
        "item,need,task,overlap",
        f"{b},2,{b},4",
        f"{c},1,{c},2",
        f"{a},0,{a},2",
    ]
    assert any("dry run, nothing is sent" in line for line in said)
    assert any(f"would set the overlap of 3 tasks: task {a} to 2" in line for line in said)
    assert _states(labelstudio, pid) == {a: (1, True, 2), b: (1, True, 2), c: (1, True, 1)}

    monkeypatch.setenv("MONITOR_LABELSTUDIO_TOKEN", LEGACY_TOKEN)
    said = _export(capsys, db_url, out, "--apply")
    assert any("overlap set on 3 tasks" in line for line in said), said
    assert LEGACY_TOKEN not in "\n".join(said)
    # the overlap and is_labeled both: the server does not recompute is_labeled on a patch
    assert _states(labelstudio, pid) == {a: (2, True, 2), b: (4, False, 2), c: (2, False, 1)}
    # the labelling stream: a is given to nobody, b to two more annotators, c to one
    given = _next(third, pid)
    assert given in (b, c)
    _annotate(third, given, "neg")
    other = _next(third, pid)
    assert {given, other} == {b, c}
    _annotate(third, other, "neg")
    assert _next(third, pid) is None
    assert _states(labelstudio, pid) == {a: (2, True, 2), b: (4, False, 3), c: (2, True, 2)}
    assert _next(fourth, pid) == b
    _annotate(fourth, b, "neg")
    assert _next(fourth, pid) is None
    assert _states(labelstudio, pid)[b] == (4, True, 4)

    # each change once: the same run again sends nothing
    said = _export(capsys, db_url, out, "--apply")
    assert any("overlap set on 0 tasks; 3 as wanted already" in line for line in said), said
    with transaction(engine) as s:
        cid = get_campaign(s, "ov").id
    sent = {k: r for k, r in ledger(engine, cid, "labelstudio").items() if r.action == ACTION}
    assert {(r.target, r.status, (r.payload or {})["overlap"]) for r in sent.values()} == {
        (str(a), "done", 2),
        (str(b), "done", 4),
        (str(c), "done", 2),
    }
    said = _export(capsys, db_url, out)  # the dry run reads the ledger
    assert any("3 tasks have their overlap set already" in line for line in said), said

    # the project's "annotations per task" changed: the server resets the overlaps > 1
    labelstudio.call("PATCH", f"/api/projects/{pid}/", json={"maximum_annotations": 3})
    assert {t: s[0] for t, s in _states(labelstudio, pid).items()} == {a: 3, b: 3, c: 3}
    said = _export(capsys, db_url, out, "--apply")
    assert any("overlap set on 3 tasks" in line for line in said), said
    assert {t: s[0] for t, s in _states(labelstudio, pid).items()} == {a: 2, b: 4, c: 2}
    keys = [k for k, r in ledger(engine, cid, "labelstudio").items() if r.action == ACTION]
    assert sum(k.endswith(":overlap:2:2") for k in keys) == 2  # a and c: 2 again, after 3
    assert len(keys) == 6


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_preference_project_gets_each_pairs_need_from_a_run(
    engine: Engine,
    db_url: str,
    labelstudio: LabelStudio,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Four annotators compare items along a hidden order, the last pair split: a real run's
    ``need`` per pair, written as left,right,need,task,overlap and set on each task."""
    pid = labelstudio.project(PAIRWISE)
    pairs = [("x", "y"), ("y", "z"), ("x", "z"), ("z", "w"), ("y", "w")]
    labelstudio.import_tasks(
        pid,
        [{"left": l, "right": r, "left_text": l, "right_text": r} for l, r in pairs],  # noqa: E741
    )
    tasks = labelstudio.task_ids(pid)
    users = [labelstudio.user(f"cmp{k}@example.com") for k in range(4)]
    for t, task in enumerate(tasks):
        for u, user in enumerate(users):
            pick = "right" if t == len(tasks) - 1 and u % 2 else "left"
            result = [{"from_name": "preference", "to_name": "a", "type": "pairwise",
                       "value": {"selected": pick}}]  # fmt: skip
            labelstudio.annotate(task, user, result)
    create_campaign(engine, CampaignSpec(name="ov", kind="pairwise"))
    ls.pull(engine, "ov", url=labelstudio.url, project=pid, token=LEGACY_TOKEN)
    recompute(engine, Settings(), campaign="ov")
    out = tmp_path / "pairs.csv"
    monkeypatch.setenv("MONITOR_LABELSTUDIO_TOKEN", LEGACY_TOKEN)
    said = _export(capsys, db_url, out, "--apply")
    lines = out.read_text().splitlines()
    assert lines[0] == "left,right,need,task,overlap"
    rows = [line.split(",") for line in lines[1:]]
    assert sorted(r[3] for r in rows) == sorted(str(t) for t in tasks)
    by_task = {int(r[3]): (r[0], r[1], int(r[2]), int(r[4])) for r in rows}
    for task, (left, right, need, overlap) in by_task.items():
        assert {left, right} == set(pairs[tasks.index(task)])
        assert overlap == 4 + need  # four annotators at the run, and what the pair wants
    split = by_task[tasks[-1]]
    assert split[2] > 0  # two against two: the pair is not settled
    assert any("overlap set on" in line for line in said), said
    states = _states(labelstudio, pid)
    assert {t: s[0] for t, s in states.items()} == {t: r[3] for t, r in by_task.items()}
    assert all(s[1] == (r[2] == 0) for t, s in states.items() for r in [by_task[t]])


def test_what_the_server_does_with_a_tasks_overlap(labelstudio: LabelStudio) -> None:
    """The findings the connector rests on (monitor.connectors.labelstudio_overlap): a patched
    overlap is stored but ``is_labeled`` is not recomputed; 0 is taken; a project whose
    overlap cohort is below 100% deals the overlaps again when a task is imported."""
    pid = labelstudio.project(CHOICES)
    labelstudio.import_tasks(pid, [{"text": f"t{i}"} for i in range(4)])
    t0, t1, t2, _ = labelstudio.task_ids(pid)
    _, judge = labelstudio.annotator("finder@example.com")
    _annotate(judge, t0, "pos")
    assert _states(labelstudio, pid)[t0] == (1, True, 1)
    labelstudio.call("PATCH", f"/api/tasks/{t0}/", json={"overlap": 3})
    assert _states(labelstudio, pid)[t0] == (3, True, 1)  # still finished: nobody gets it
    labelstudio.call("PATCH", f"/api/tasks/{t1}/", json={"overlap": 0})
    assert _states(labelstudio, pid)[t1] == (0, False, 0)
    labelstudio.call("PATCH", f"/api/projects/{pid}/",
                     json={"maximum_annotations": 2, "overlap_cohort_percentage": 50})  # fmt: skip
    labelstudio.call("PATCH", f"/api/tasks/{t2}/", json={"overlap": 7})
    labelstudio.import_tasks(pid, [{"text": "one more"}])
    assert _states(labelstudio, pid)[t2][0] in (1, 2)  # dealt again: the 7 is lost
