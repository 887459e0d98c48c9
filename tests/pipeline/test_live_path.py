"""The live path (``monitor.incremental.live``): judgments scored as they arrive, frozen, and the
stop recorded between runs; a run that finds the same judgments unscored derives the same
state (incremental equals full), on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, select

from monitor.actions.worker_lists import worker_decisions
from monitor.core.catalog import Kind
from monitor.core.settings import Settings
from monitor.incremental.live import label_weights, update_live
from monitor.ingest.api import create_campaign, ingest_file
from monitor.metrics.stopping import Arrivals, Reference, arrival_scores, coin_weights
from monitor.pipeline.run import recompute
from monitor.store.campaigns import CampaignSpec, get_campaign
from monitor.store.engine import transaction
from monitor.store.models import Item, Judgment, LiveScore, LiveStop, MetricRun, MetricValue, Worker
from tests.pipeline.test_live_decisions import _rating_rows, _rows, _set_rows, _write


def _state(engine: Engine, campaign: str) -> dict[str, Any]:
    """The campaign's live scores and stops, by (worker, item): what the two paths compare."""
    with transaction(engine) as s:
        cid = get_campaign(s, campaign).id
        names = {j: (w, i) for j, w, i in s.execute(
            select(Judgment.id, Worker.external_id, Judgment.item_id)
            .join(Worker, Worker.id == Judgment.worker_id)
            .where(Judgment.campaign_id == cid)
        )}  # fmt: skip
        items = {
            iid: ext
            for iid, ext in s.execute(
                select(Item.id, Item.external_id).where(Item.campaign_id == cid)
            )
        }
        key = {j: (w, items[i]) for j, (w, i) in names.items()}
        scores = {
            key[r.judgment_id]: (r.score, r.expected, key[r.ready_id])
            for r in s.scalars(select(LiveScore).where(LiveScore.campaign_id == cid))
        }
        stops = {
            w: (r.after, key[r.judgment_id])
            for r, w in s.execute(
                select(LiveStop, Worker.external_id)
                .join(Worker, Worker.id == LiveStop.worker_id)
                .where(LiveStop.campaign_id == cid)
            )
        }
        run = s.scalars(
            select(MetricRun.id).where(MetricRun.campaign_id == cid).order_by(MetricRun.id.desc())
        ).first()
        after = {
            v.subject: v.value
            for v in s.scalars(
                select(MetricValue).where(
                    MetricValue.run_id == run, MetricValue.metric == "stop_after"
                )
            )
        }
    return {"scores": scores, "stops": stops, "run_after": after}


CASES: dict[str, tuple[CampaignSpec, Callable[[int], list[tuple[str, str, str]]]]] = {
    "label": (CampaignSpec(name="", kind=Kind.LABEL, categories=("0", "1")), _rows),
    "rating": (CampaignSpec(name="", kind=Kind.RATING, scale_min=0, scale_max=100), _rating_rows),
    "multilabel": (
        CampaignSpec(name="", kind=Kind.MULTILABEL, categories=("a", "b", "c", "d")),
        _set_rows,
    ),
}
"""Each kind's campaign: twelve good workers and one at chance (w99) on 80 of 200 items."""


@pytest.mark.parametrize("kind", list(CASES))
def test_incremental_equals_full_and_the_stop_comes_between_runs(
    engine: Engine, tmp_path: Path, monkeypatch: Any, kind: str
) -> None:
    monkeypatch.setenv("MONITOR_BOOTSTRAP_SAMPLES", "0")
    settings_ = Settings(bootstrap_samples=0)
    spec, rows_of = CASES[kind]
    rows = rows_of(0)
    first, rest = rows[:300], rows[300:]
    for name in ("live", "full"):
        create_campaign(engine, replace(spec, name=name))
        ingest_file(engine, _write(tmp_path / f"{name}0.csv", first), name)
        recompute(engine, settings_, campaign=name)  # the first reference
    # live: the rest arrives 20 judgments at a time, the live path after each
    stopped_between: list[str] = []
    for k in range(0, len(rest), 20):
        ingest_file(engine, _write(tmp_path / f"live{k + 1}.csv", rest[k : k + 20]), "live")
        stopped_between += update_live(engine, "live").stopped
    assert stopped_between == ["w99"]  # the chance worker, before any run
    with transaction(engine) as s:
        decided = worker_decisions(s, get_campaign(s, "live"))
    assert decided["w99"]["decision"] == "stop"
    assert "shown after" in decided["w99"]["reason"]
    assert all(decided.get(f"w{w}", {}).get("decision") != "stop" for w in range(12))
    # full: the rest arrives at once, and the run scores it
    ingest_file(engine, _write(tmp_path / "full1.csv", rest), "full")
    live_before_run = _state(engine, "live")
    for name in ("live", "full"):
        recompute(engine, settings_, campaign=name)
    live, full = _state(engine, "live"), _state(engine, "full")
    assert live["scores"] == live_before_run["scores"]  # the run changed no score
    assert len(live["scores"]) > 0.9 * len(rows)
    assert live["scores"] == full["scores"]
    assert live["stops"] == full["stops"]
    assert set(full["stops"]) == {"w99"}
    assert full["run_after"] == {"w99": float(full["stops"]["w99"][0])}
    assert full["stops"]["w99"][0] <= 40


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(1, 80),
    cut=st.floats(0.0, 1.0),
    reference=st.integers(1, 4),
)
def test_a_score_once_given_never_changes(seed: int, n: int, cut: float, reference: int) -> None:
    """Scored on the first ``t`` arrivals or on all of them, and with other items scored along or
    not, every judgment ready by ``t`` gets the same score, null and readiness, bit for bit."""
    rng = np.random.default_rng(seed)
    K = int(rng.integers(2, 5))
    items = rng.integers(0, 6, n)
    codes = rng.integers(-1, K, n)
    weights = coin_weights(rng.uniform(0.2, 1.0, n), K)
    gold = np.where(rng.random(6) < 0.2, rng.integers(0, K, 6), -1)[items]
    prior = rng.dirichlet(np.ones(K))
    t = round(cut * n)
    arrivals, ref = Arrivals(items, codes, weights, gold), Reference(prior, 0.7, reference)
    whole = arrival_scores(arrivals, ref)
    early = arrival_scores(arrivals[:t], ref)
    ready = np.flatnonzero(early[2] >= 0)
    for a, b in zip(whole, early, strict=True):
        assert np.array_equal(a[ready], b[ready])
    # one item alone: the same as among the others
    for item in np.unique(items):
        mine = np.flatnonzero(items == item)
        alone = arrival_scores(arrivals[mine], ref)
        assert np.array_equal(alone[0], whole[0][mine], equal_nan=True)
        assert np.array_equal(alone[1], whole[1][mine], equal_nan=True)
        assert np.array_equal(np.where(alone[2] >= 0, mine[alone[2]], -1), whole[2][mine])
    # not ready: too few others on a non-gold item; ready: scores in [0, 1]
    scored = whole[2] >= 0
    assert np.all((whole[0][scored] >= 0) & (whole[0][scored] <= 1))
    assert np.all(codes[scored] >= 0)
    # a score is ready at its own arrival or later, never before
    assert np.all(whole[2][scored] >= np.flatnonzero(scored))


def test_an_answer_is_weighed_by_its_workers_matrix_else_their_coin_else_the_typical() -> None:
    """The live path reads each label answer through the matrix the last run kept for its
    worker; a state with accuracies alone (a run with many classes, or an older run) gives one
    coin, and a worker the run has not seen counts as the typical one."""
    meta = {"categories": ["a", "b"], "typical": 0.8}
    leaning = [0.9, [[0.95, 0.05], [0.5, 0.5]]]  # says "a" of half the "b"s
    est = np.array([[leaning[0], *np.ravel(leaning[1])], [np.nan] * 5])
    codes = np.array([0, 0])
    rows = label_weights(est, codes, meta)
    assert rows[0] == pytest.approx([np.log(0.95 / 0.5), 0.0])  # its "a" tells little
    assert rows[1] == pytest.approx([np.log(4.0), 0.0])  # the typical coin: 0.8 / 0.2
    coins = label_weights(est[:, :1], codes, meta)
    assert coins == pytest.approx([np.log(9.0), np.log(4.0)])  # log odds, on the answer
