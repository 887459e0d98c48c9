"""Exports parse back with the platforms' columns; formulas are neutralised; labels weighted."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine

from monitor.actions.export import export
from monitor.actions.worker_lists import MTURK_HEADER, TOLOKA_HEADER
from monitor.core.cells import neutralise
from monitor.core.errors import UsageError
from monitor.store.campaigns import CampaignSpec, create_campaign
from monitor.store.engine import session_factory, transaction
from monitor.store.models import Item, Judgment, JudgmentAnnotation, Preference, Worker
from monitor.store.runs import Value
from monitor.store.save import insert_run
from monitor.store.workers import append_decision

FORMULAS = ["=1+2", "+cmd", "-2+3", "@SUM(A1)", "\tx", "\rx"]


def _campaign(engine: Engine, spec: CampaignSpec, judgments: list[tuple], wqs: dict[str, float]):
    """judgments: (worker, item, value) or, pairwise, (worker, left, right, outcome)."""
    with transaction(engine) as s:
        c = create_campaign(s, spec)
        workers: dict[str, Worker] = {}
        items: dict[str, Item] = {}
        for j in judgments:
            workers.setdefault(j[0], Worker(campaign_id=c.id, external_id=j[0]))
            for it in j[1:3] if spec.kind == "pairwise" else j[1:2]:
                items.setdefault(it, Item(campaign_id=c.id, external_id=it))
        s.add_all([*workers.values(), *items.values()])
        s.flush()
        for k, j in enumerate(judgments):
            if spec.kind == "pairwise":
                s.add(
                    Preference(
                        campaign_id=c.id,
                        worker_id=workers[j[0]].id,
                        left_item_id=items[j[1]].id,
                        right_item_id=items[j[2]].id,
                        outcome=j[3],
                        dedup_key=str(k),
                    )
                )
                continue
            row = Judgment(
                campaign_id=c.id,
                worker_id=workers[j[0]].id,
                item_id=items[j[1]].id,
                value_num=j[2] if spec.kind == "rating" else None,
                value_label=j[2] if spec.kind == "label" else None,
                dedup_key=str(k),
            )
            s.add(row)
            if spec.kind == "multilabel":
                s.flush()
                s.add_all(JudgmentAnnotation(judgment_id=row.id, annotation=a) for a in j[2])
        s.flush()
        insert_run(
            s,
            campaign_id=c.id,
            watermark=10**6,
            full=True,
            started_at=datetime.now(UTC),
            parameters={},
            code_version="test",
            n_judgments=len(judgments),
            n_new=len(judgments),
            seconds=0.1,
            values=[Value("worker", w, "wqs", q) for w, q in wqs.items()],
            flags=[],
        )
    return c


def _export(engine: Engine, what: str, name: str, platform: str) -> str:
    with session_factory(engine)() as s:
        return export(s, what, name, platform)  # type: ignore[arg-type]


@pytest.fixture
def blocked(engine: Engine):  # noqa: ANN201
    workers = ["A1B2C3", "ok1", *FORMULAS]
    judgments = [(w, "i1", "a") for w in workers]
    c = _campaign(engine, CampaignSpec("blk", "label", categories=("a", "b")), judgments, {})
    with transaction(engine) as s:
        append_decision(s, c.id, "A1B2C3", "block", reason="spam, obviously", actor="alice")
        for w in FORMULAS:
            append_decision(s, c.id, w, "block", reason='=HYPERLINK("http://x")', actor="bob")
    return c


def test_mturk_blocklist_uses_the_worker_csv_header(engine: Engine, blocked) -> None:  # noqa: ANN001
    text = _export(engine, "blocklist", "blk", "mturk")
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert tuple(rows[0]) == MTURK_HEADER
    by_id = {r["Worker ID"]: r for r in rows}
    assert "ok1" not in by_id
    assert by_id["A1B2C3"]["UPDATE-BlockStatus"] == "Block"
    assert by_id["A1B2C3"]["BLOCK_REASON"] == "spam, obviously"
    assert {r["UPDATE-BlockStatus"] for r in rows} == {"Block"}


def test_every_formula_is_neutralised(engine: Engine, blocked) -> None:  # noqa: ANN001
    mturk = list(csv.reader(io.StringIO(_export(engine, "blocklist", "blk", "mturk"), newline="")))
    toloka = list(
        csv.reader(
            io.StringIO(_export(engine, "blocklist", "blk", "toloka"), newline=""), delimiter="\t"
        )
    )
    plain = list(csv.reader(io.StringIO(_export(engine, "blocklist", "blk", "csv"), newline="")))
    weights = list(csv.reader(io.StringIO(_export(engine, "weights", "blk", "csv"), newline="")))
    for table in (mturk, toloka, plain, weights):
        for row in table[1:]:
            for cell in row:
                assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), (cell, row)
        ids = {row[0] for row in table[1:]}
        assert {"'" + f for f in FORMULAS} <= ids
    assert '\'=HYPERLINK("http://x")' in {row[6] for row in mturk[1:]}
    prolific = _export(engine, "blocklist", "blk", "prolific").splitlines()
    assert all(not line.startswith(("=", "+", "-", "@")) for line in prolific)


def test_neutralise() -> None:
    assert [neutralise(f) for f in FORMULAS] == ["'" + f for f in FORMULAS]
    assert neutralise("plain") == "plain"
    assert neutralise(None) == ""
    assert neutralise(-1.5) == "-1.5"


def test_prolific_and_toloka_blocklists(engine: Engine, blocked) -> None:  # noqa: ANN001
    prolific = _export(engine, "blocklist", "blk", "prolific").splitlines()
    assert "A1B2C3" in prolific
    assert "ok1" not in prolific
    assert len(prolific) == 7
    rows = list(
        csv.DictReader(
            io.StringIO(_export(engine, "blocklist", "blk", "toloka"), newline=""), delimiter="\t"
        )
    )
    assert tuple(rows[0]) == TOLOKA_HEADER
    row = next(r for r in rows if r["user_id"] == "A1B2C3")
    assert row["scope"] == "ALL_PROJECTS"
    assert row["private_comment"] == "spam, obviously"
    doc = json.loads(_export(engine, "blocklist", "blk", "json"))
    assert {b["worker"] for b in doc["blocked"]} >= {"A1B2C3", *FORMULAS}


def test_weights_are_decision_weight_times_wqs(engine: Engine) -> None:
    judgments = [(w, "i1", 3.0) for w in ("w1", "w2", "w3")]
    c = _campaign(
        engine,
        CampaignSpec("wts", "rating", scale_min=1, scale_max=5),
        judgments,
        {"w1": 0.8, "w2": 0.5},
    )
    with transaction(engine) as s:
        append_decision(s, c.id, "w2", "down_weight", weight=0.5, reason="x", actor="a")
        append_decision(s, c.id, "w3", "block", reason="x", actor="a")
    rows = {
        r["worker"]: r
        for r in csv.DictReader(io.StringIO(_export(engine, "weights", "wts", "csv"), newline=""))
    }
    assert float(rows["w1"]["effective_weight"]) == pytest.approx(0.8)
    assert float(rows["w2"]["effective_weight"]) == pytest.approx(0.25)
    assert float(rows["w3"]["effective_weight"]) == 0.0
    assert rows["w3"]["wqs"] == ""
    mturk = list(
        csv.DictReader(io.StringIO(_export(engine, "weights", "wts", "mturk"), newline=""))
    )
    assert mturk[0]["Worker ID"] == "w1"
    assert mturk[0]["UPDATE-monitor quality"] == "80"
    with pytest.raises(UsageError):
        _export(engine, "weights", "wts", "prolific")


def test_labels_weighted_majority_and_mean(engine: Engine) -> None:
    _campaign(
        engine,
        CampaignSpec("lab", "label", categories=("a", "b")),
        [("good", "i1", "b"), ("bad1", "i1", "a"), ("bad2", "i1", "a"), ("good", "i2", "a")],
        {"good": 0.9, "bad1": 0.2, "bad2": 0.2},
    )
    rows = {
        r["item"]: r
        for r in csv.DictReader(io.StringIO(_export(engine, "labels", "lab", "csv"), newline=""))
    }
    assert rows["i1"]["value"] == "b"
    assert float(rows["i1"]["confidence"]) == pytest.approx(0.9 / 1.3, rel=1e-4)
    assert rows["i1"]["n_judgments"] == "3"
    assert rows["i2"]["value"] == "a"
    _campaign(
        engine,
        CampaignSpec("rat", "rating", scale_min=1, scale_max=5),
        [("w1", "i1", 5.0), ("w2", "i1", 1.0)],
        {"w1": 0.75, "w2": 0.25},
    )
    doc = json.loads(_export(engine, "labels", "rat", "json"))
    assert doc["labels"][0]["value"] == pytest.approx(4.0)
    with pytest.raises(UsageError):
        _export(engine, "labels", "rat", "mturk")


def test_labels_multilabel_and_pairwise(engine: Engine) -> None:
    _campaign(
        engine,
        CampaignSpec("ml", "multilabel", categories=("cat", "dog")),
        [("w1", "i1", ["cat", "dog"]), ("w2", "i1", ["cat"]), ("w3", "i1", ["dog"])],
        {"w1": 0.5, "w2": 0.4, "w3": 0.1},
    )
    rows = list(csv.DictReader(io.StringIO(_export(engine, "labels", "ml", "csv"), newline="")))
    assert rows[0]["value"] == "cat|dog"  # cat 0.9, dog 0.6 of 1.0


def test_labels_of_a_preference_campaign_are_its_ranking(engine: Engine) -> None:
    """Items ranked by the reliability model's score with its interval and the ranks the
    interval allows; a blocked annotator's answers are left out."""
    order = ["a", "b", "c", "d", "e"]  # a best
    judgments = [
        (f"w{k}", x, y, "left" if order.index(x) < order.index(y) else "right")
        for k in range(6)
        for i, x in enumerate(order)
        for y in order[i + 1 :]
    ]
    judgments += [("spam", x, y, "right" if order.index(x) < order.index(y) else "left")
                  for i, x in enumerate(order) for y in order[i + 1 :] for _ in range(3)]  # fmt: skip
    _campaign(engine, CampaignSpec("pw", "pairwise"), judgments, {})
    rows = list(csv.DictReader(io.StringIO(_export(engine, "labels", "pw", "csv"), newline="")))
    assert [r["item"] for r in rows] == order
    assert [int(r["rank"]) for r in rows] == [1, 2, 3, 4, 5]
    for r in rows:
        assert float(r["low"]) <= float(r["score"]) <= float(r["high"])
        assert 1 <= int(r["best_rank"]) <= int(r["rank"]) <= int(r["worst_rank"]) <= 5
        assert r["method"] == "model"
        assert int(r["n_comparisons"]) > 0
    doc = json.loads(_export(engine, "labels", "pw", "json"))
    assert [x["item"] for x in doc["labels"]] == order


def test_cli_export_writes_a_file(
    engine: Engine, db_url: str, blocked, tmp_path: Path, capsys
) -> None:  # noqa: ANN001
    from monitor.cli import main

    out = tmp_path / "block.csv"
    code = main(
        [
            "export",
            "blocklist",
            "--db",
            db_url,
            "--campaign",
            "blk",
            "--platform",
            "mturk",
            "--out",
            str(out),
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert out.read_bytes().decode().split("\r\n")[0] == ",".join(MTURK_HEADER)
