"""The live path: each worker's stop test brought up to date as judgments arrive, without a
run.

A pull, a webhook or the start of a run calls :func:`update_live`. It scores every judgment
whose reference has arrived (:func:`monitor.metrics.stopping.arrival_scores`: the answers that
came before it, weighted by the last run's one-coin accuracies, or the gold) and stores the
score once (``live_scores``); then it runs the stop test over the scores of each worker it
touched, in the order they became known, and records a worker whose evidence reached
``1 / alpha`` (``live_stops``). A score never changes once given, so the test's error rate holds
across every look, and a run that finds judgments unscored scores them with the same function
and the same reference: whichever path came first, the state is the same.

The reference is what the last label run kept (its state ``live_reference``): each worker's
accuracy, the class prior, the typical worker, the stop line and ``stop_alpha``. A campaign
with no such run has nothing to score against yet: its judgments wait for the first run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Engine, select

from monitor.core.results import State
from monitor.metrics.stopping import (
    Arrivals,
    Reference,
    arrival_scores,
    coin_weights,
    stop_test,
)
from monitor.store import live as live_store
from monitor.store.campaigns import get_campaign
from monitor.store.engine import transaction
from monitor.store.models import Campaign
from monitor.store.runs import latest_run, run_states

REFERENCE_STATE = "live_reference"
"""The name of the state a label run keeps for the live path."""


@dataclass(frozen=True)
class LiveUpdate:
    """What one update did: judgments scored, workers newly stopped (their ids), seconds."""

    campaign: str
    scored: int = 0
    stopped: list[str] = field(default_factory=list)
    seconds: float = 0.0
    reason: str | None = None

    def line(self) -> str:
        if self.reason:
            return f"{self.campaign}: live: {self.reason}"
        stops = f", stopped {', '.join(self.stopped)}" if self.stopped else ""
        return f"{self.campaign}: live: {self.scored} judgments scored{stops}"


def reference_state(
    worker_db_ids: NDArray[np.int64],
    accuracy: NDArray[np.float64],
    meta: dict[str, Any],
) -> State:
    """The state a run keeps for the live path: each worker's accuracy by database id (NaN
    where the run has none), and in ``meta`` the categories, the class prior, the typical
    worker, the line, alpha and the reference size."""
    return State(dict(meta), np.column_stack([worker_db_ids.astype(np.float64), accuracy]))


def update_live(engine: Engine, campaign: str) -> LiveUpdate:
    """Score what can be scored and record the new stops, in one transaction (one update of a
    campaign at a time: the campaign's row is locked on PostgreSQL; SQLite has one writer)."""
    started = time.perf_counter()
    with transaction(engine) as session:
        info = get_campaign(session, campaign)
        session.execute(select(Campaign.id).where(Campaign.id == info.id).with_for_update())
        run = latest_run(session, info.id)
        state = run_states(session, run.id).get(REFERENCE_STATE) if run is not None else None
        if run is None or state is None:
            return LiveUpdate(info.name, reason="no run with a stop line yet: nothing to score")
        rows = _scored(live_store.pending(session, info.id), state)
        live_store.save_scores(session, info.id, run.id, rows)
        touched = {w for _, w, s, _, _ in rows if s is not None}
        stopped = _stops(session, info.id, run.id, touched, state.meta) if touched else []
    return LiveUpdate(info.name, sum(r[2] is not None for r in rows), stopped,
                      time.perf_counter() - started)  # fmt: skip


Row = tuple[int, int, float | None, float | None, int]
"""A score to store: judgment, worker, score, null and the judgment that made it ready."""


def _scored(p: live_store.Pending, state: State) -> list[Row]:
    """The rows to store: each unscored judgment whose reference has arrived, or that will
    never be scored (NULL)."""
    code_of = {str(c): i for i, c in enumerate(state.meta["categories"])}

    def coded(values: list[str | None]) -> NDArray[np.int64]:
        return np.array([code_of.get(str(v).strip(), -1) if v is not None else -1
                         for v in values], dtype=np.int64)  # fmt: skip

    codes = coded(p.labels)
    first = _first(p)
    scores, nulls, ready = score_arrivals(
        Arrived(p.ids, p.workers, p.items, codes, coded(p.gold)), state
    )
    out: list[Row] = []
    for i in np.flatnonzero(~p.scored):
        if ready[i] >= 0:
            out.append((int(p.ids[i]), int(p.workers[i]), float(scores[i]), float(nulls[i]),
                        int(ready[i])))  # fmt: skip
        elif codes[i] < 0 or not first[i]:  # never: a class the reference does not know,
            out.append((int(p.ids[i]), int(p.workers[i]), None, None, int(p.ids[i])))  # a repeat
    return out


@dataclass(frozen=True)
class Arrived:
    """Label judgments as the live scores take them: database ids (their order of arrival), the
    workers' database ids, items (any codes), answers and the items' gold classes as codes of
    the reference's categories (-1: none)."""

    ids: NDArray[np.int64]
    workers: NDArray[np.int64]
    items: NDArray[np.int64]
    codes: NDArray[np.int64]
    gold: NDArray[np.int64]


def _first(j: Arrived | live_store.Pending) -> NDArray[np.bool_]:
    """Each worker's first answer to an item (by id); their later ones are neither scored nor
    counted in the others' references."""
    first = np.zeros(j.ids.size, dtype=bool)
    if j.ids.size:
        order = np.argsort(j.ids, kind="stable")
        pairs = j.workers[order].astype(np.int64) * (int(j.items.max()) + 1) + j.items[order]
        first[order[np.unique(pairs, return_index=True)[1]]] = True
    return first


def score_arrivals(
    j: Arrived, state: State
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]]:
    """Each judgment's score, null and the id of the judgment that made it ready (-1: not
    yet) against the reference ``state`` (:func:`reference_state`), whichever judgments are
    given along with it (the live update gives the items it touches, a run all of them)."""
    meta = state.meta
    K = len(meta["categories"])
    order = np.argsort(j.ids, kind="stable")
    codes = np.where(_first(j), j.codes, -1)
    accuracy = np.full(j.ids.size, float(meta["typical"]))
    if state.array.size:
        known = state.array
        by_id = dict(zip(known[:, 0].astype(np.int64).tolist(), known[:, 1].tolist(), strict=True))
        given = np.array([by_id.get(int(w), np.nan) for w in j.workers], dtype=np.float64)
        accuracy = np.where(np.isfinite(given), given, accuracy)
    arrivals = Arrivals(j.items, codes, coin_weights(accuracy, K), j.gold)[order]
    prior = np.asarray(meta["prior"], dtype=np.float64)
    got = arrival_scores(arrivals, Reference(prior, float(meta["line"]), int(meta["reference"])))
    scores, nulls = np.empty_like(got.scores), np.empty_like(got.nulls)
    ready = np.empty_like(got.ready)
    scores[order], nulls[order] = got.scores, got.nulls
    ready[order] = np.where(got.ready >= 0, j.ids[order][np.maximum(got.ready, 0)], -1)
    return scores, nulls, ready


def _stops(
    session: Any,  # noqa: ANN401 - a Session
    campaign_id: int,
    run_id: int,
    touched: set[int],
    meta: dict[str, Any],
) -> list[str]:
    """Run the test of the ``touched`` workers over all their scores; record the new stops."""
    got = live_store.worker_scores(session, campaign_id, touched)
    ids, scores, nulls = got.ids, got.scores, got.nulls
    if ids.size == 0:
        return []
    db_ids, codes = np.unique(got.workers, return_inverse=True)
    alpha = float(meta["alpha"])
    position = np.arange(ids.size)  # already in the order the scores became known
    test = stop_test(codes, position, scores, nulls, n_workers=db_ids.size, alpha=alpha)
    new = []
    for c in np.flatnonzero(test.stopped):
        mine = ids[codes == c]
        new.append({
            "worker_id": int(db_ids[c]), "after": int(test.stopped_after[c]),
            "evidence": float(test.evalue[c]), "line": float(meta["line"]),
            "typical": float(meta["typical"]), "alpha": alpha,
            "judgment_id": int(mine[test.stopped_after[c] - 1]), "run_id": run_id,
        })  # fmt: skip
    return live_store.record_stops(session, campaign_id, new)
