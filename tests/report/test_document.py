"""The JSON document: the contract's shape, nulls for undefined, ids as strings."""

from __future__ import annotations

import json
import math

from sqlalchemy import Engine

from monitor.report.document import build_document, build_worker_rows, clean, verdict
from monitor.store.campaigns import CampaignSpec, create_campaign
from monitor.store.engine import session_factory, transaction
from monitor.store.models import Worker
from tests.report.fixtures import pairwise_campaign, rating_campaign

AGREEMENT_KEYS = {
    "percent_agreement",
    "krippendorff_alpha",
    "krippendorff_alpha_ci",
    "fleiss_kappa",
    "cohen_kappa",
    "scott_pi",
    "phi",
}
WORKER_KEYS = {"worker", "n_judgments", "wqs", "wwa", "wua", "transitivity", "flags", "status"}
ITEM_KEYS = {"item", "n_judgments", "uqs", "uas", "phi_mu", "score", "flags"}


def _doc(engine: Engine, name: str) -> dict:
    with session_factory(engine)() as s:
        doc = build_document(s, name)
    json.dumps(doc, allow_nan=False)  # never NaN
    return doc


def test_rating_document_follows_the_contract(engine: Engine) -> None:
    rating_campaign(engine)
    doc = _doc(engine, "quality")
    assert {k: doc["campaign"][k] for k in ("name", "kind", "level")} == {
        "name": "quality",
        "kind": "rating",
        "level": "interval",
    }
    assert (doc["campaign"]["n_workers"], doc["campaign"]["n_items"]) == (6, 8)
    a = doc["agreement"]
    assert set(a) >= AGREEMENT_KEYS
    assert a["krippendorff_alpha"] == 0.62
    assert a["krippendorff_alpha_ci"] == [0.55, 0.7]
    assert a["cohen_kappa"] is None
    assert a["scott_pi"] is None
    assert a["phi"] == {"map": 0.53, "mean": 0.52, "hpd": [0.44, 0.6], "method": "full"}
    workers = {w["worker"]: w for w in doc["workers"]}
    assert all(set(w) >= WORKER_KEYS for w in workers.values())
    assert workers["w6"]["flags"] == ["low_quality"]
    assert workers["w6"]["status"] == "flagged"
    assert workers["w1"]["status"] == "ok"
    assert workers["w1"]["transitivity"] is None
    assert workers["w1"]["n_judgments"] == 8
    items = {i["item"]: i for i in doc["items"]}
    assert all(set(i) >= ITEM_KEYS for i in items.values())
    assert items["i3"]["flags"] == ["ambiguous"]
    assert items["i3"]["score"] is None  # undefined, never 0
    assert abs(sum(items["i1"]["uas"].values()) - 1) < 1e-9
    assert doc["annotations"][0] == {"annotation": "1", "aqs": 0.7}
    assert "pairs" not in doc
    assert doc["verdict"]["level"] == "unreliable"
    assert doc["verdict"]["ci"] == [0.55, 0.7]
    assert [h["krippendorff_alpha"] for h in doc["history"]] == [0.58, 0.62]
    assert any(w["rule"] == "phi_alpha_disagree" for w in doc["warnings"])
    assert all(isinstance(w["worker"], str) for w in doc["workers"])


def test_pairwise_document_has_transitivity_and_pairs(engine: Engine) -> None:
    pairwise_campaign(engine)
    doc = _doc(engine, "prefs")
    workers = {w["worker"]: w for w in doc["workers"]}
    t = workers["p3"]["transitivity"]
    assert set(t) >= {"kappa", "p_a", "p_e", "triplets", "transitive"}
    assert t["kappa"] == -0.2
    assert t["triplets"] == 4
    assert t["transitive"] == 1
    assert workers["p3"]["flags"] == ["intransitive"]
    assert doc["agreement"]["phi"] is None
    scores = {i["item"]: i["score"] for i in doc["items"]}
    assert scores == {"a": 1.5, "b": 0.5, "c": -0.5, "d": -1.5}
    assert len(doc["pairs"]) == 6
    assert set(doc["pairs"][0]) >= {"left", "right", "n_judgments", "uqs", "uas"}
    assert (doc["pairs"][0]["left"], doc["pairs"][0]["right"]) == ("a", "b")


def test_campaign_without_a_run_gives_nulls_and_a_warning(engine: Engine) -> None:
    with transaction(engine) as s:
        c = create_campaign(s, CampaignSpec("empty", "label"))
        s.add(Worker(campaign_id=c.id, external_id="123"))
    doc = _doc(engine, "empty")
    assert doc["agreement"]["krippendorff_alpha"] is None
    assert doc["verdict"]["level"] == "undetermined"
    assert doc["workers"] == [
        {
            **doc["workers"][0],
            "worker": "123",
            "wqs": None,
            "flags": [],
            "status": "ok",
            "n_judgments": 0,
        }
    ]
    assert [w["rule"] for w in doc["warnings"]] == ["no_run"]
    assert doc["run"] is None


def test_blocked_status_comes_from_the_store(engine: Engine) -> None:
    from monitor.store.workers import append_decision

    c = rating_campaign(engine)
    with transaction(engine) as s:
        append_decision(s, c.id, "w6", "block", reason="spam", actor="alice")
    doc = _doc(engine, "quality")
    w6 = next(w for w in doc["workers"] if w["worker"] == "w6")
    assert w6["status"] == "blocked"
    assert w6["flags"] == ["low_quality"]
    assert doc["decisions"][0]["worker"] == "w6"
    assert doc["decisions"][0]["actor"] == "alice"


def test_clean_and_verdict() -> None:
    assert clean({"a": math.nan, "b": [math.inf, 1.0], 3: (1,)}) == {
        "a": None,
        "b": [None, 1.0],
        "3": [1],
    }
    assert verdict(0.85, [0.81, 0.9])["level"] == "reliable"
    assert verdict(0.7, None)["level"] == "tentative"
    assert "spans" in verdict(0.79, [0.7, 0.85])["text"]
    assert verdict(0.3, None)["level"] == "unreliable"
    assert verdict(None, None)["level"] == "undetermined"


def test_pair_rows_carry_their_split_and_flags(engine: Engine) -> None:
    from datetime import UTC, datetime

    from monitor.core.results import FlagRecord
    from monitor.store.models import Item
    from monitor.store.runs import Value
    from monitor.store.save import insert_run

    with transaction(engine) as s:
        c = create_campaign(s, CampaignSpec("split", "pairwise"))
        s.add_all(Item(campaign_id=c.id, external_id=i) for i in "abc")
        s.flush()
        answers = {"a\tb": {"left": 7, "right": 5, "tie": 2}, "a\tc": {"right": 4}}
        insert_run(
            s, campaign_id=c.id, watermark=10**6, full=True, started_at=datetime.now(UTC),
            parameters={}, code_version="test", n_judgments=18, n_new=18, seconds=0.1,
            values=[
                Value("pair", p, "n_judgments", float(sum(a.values())), detail={"answers": a})
                for p, a in answers.items()
            ],
            flags=[FlagRecord("pair", "a\tb", "ambiguous", 0.001, 0.01, {"message": "split",
                   "against": 5, "n": 12, "expected_against": 1.2})],
        )  # fmt: skip
    doc = _doc(engine, "split")
    pairs = {(p["left"], p["right"]): p for p in doc["pairs"]}
    ab, ac = pairs[("a", "b")], pairs[("a", "c")]
    assert (ab["left_wins"], ab["right_wins"], ab["ties"], ab["flags"]) == (7, 5, 2, ["ambiguous"])
    assert (ac["left_wins"], ac["right_wins"], ac["ties"], ac["flags"]) == (0, 4, 0, [])
    assert doc["todo"] == [
        {
            "action": "send_back",
            "pair": ["a", "b"],
            "reason": "split",
            "left_wins": 7,
            "right_wins": 5,
            "ties": 2,
        }
    ]
    # the page shows the split beside the pair sent back
    from monitor.report.render import render_html

    page = render_html(doc)
    assert (
        '<span class="who">a vs b</span> <span class="split">(left 7, right 5, tie 2)</span>: '
        "5 of 12 answers go against the order they support best, where the annotators&#39; "
        "reliability expects 1.2</li>"
    ) in page


def test_answer_split_most_given_first() -> None:
    from monitor.report.view import answer_split

    assert answer_split({"b": 2, "a": 2, "c": 5}) == "c ×5, a ×2, b ×2"
    assert answer_split({str(k): 1 for k in range(7)}, most=2) == "0 ×1, 1 ×1, …"
    assert answer_split(None) == ""


def test_todo_lists_what_the_page_lists(engine: Engine) -> None:
    import copy

    from monitor.report.today import document_todo
    from monitor.report.view import build_view

    rating_campaign(engine)
    doc = _doc(engine, "quality")
    decided = {"w6": "block", "w2": "watch", "w3": "down_weight", "w4": "ok"}
    for w in doc["workers"]:
        if w["worker"] in decided:
            w["decision"], w["decision_reason"] = decided[w["worker"]], f"why {w['worker']}"
    doc["todo"] = document_todo(doc)
    view = build_view(copy.deepcopy(doc))
    page = [(a, t.subject) for _, a, entries in view["todo"] for t in entries]
    workers = [(t["action"], t["worker"]) for t in doc["todo"] if "worker" in t]
    assert workers == page == [("block", "w6"), ("down_weight", "w3"), ("review", "w2")]
    assert all(t["reason"] for t in doc["todo"])
    sent = [t for t in doc["todo"] if t["action"] == "send_back"]
    assert [t["item"] for t in sent] == [s["subject"] for s in view["send_back"]] == ["i3"]
    assert sent[0]["reason"] == view["send_back"][0]["reason"]


def test_the_workers_rows_alone_are_the_documents(engine: Engine) -> None:
    """``monitor workers`` reads the workers' rows without the items' and pairs' values: the
    same rows as the whole document's, for a rating and a preference campaign, with and without
    a run."""
    rating_campaign(engine, evil=True)
    pairwise_campaign(engine)
    with transaction(engine) as s:
        create_campaign(s, CampaignSpec(name="empty", kind="label"))
    with session_factory(engine)() as s:
        for name in ("quality", "prefs", "empty"):
            assert build_worker_rows(s, name) == build_document(s, name)["workers"]
