"""The live path: each worker's stop test brought up to date as judgments arrive, without a
run.

A pull, a webhook or the start of a run calls :func:`update_live`. It scores every judgment
whose reference has arrived (the answers that came before it, weighted by the last run's
estimates of their workers, or the gold: :func:`monitor.metrics.stopping.arrival_scores` for
labels, :mod:`monitor.metrics.stop_kinds` for ratings and multi-label sets) and stores the
score once (``live_scores``); then it runs the stop test over the scores of each worker it
touched, in the order they became known, and records a worker whose evidence reached
``1 / alpha`` (``live_stops``). A score never changes once given, so the test's error rate holds
across every look, and a run that finds judgments unscored scores them with the same function
and the same reference: whichever path came first, the state is the same.

The reference is what the last run kept (its state ``live_reference``): each worker's estimates
(labels: the accuracy and, with few classes, the confusion matrix; sets: the accuracy;
ratings: the bias and the noise variance), the prior (the classes', or each option's), the
typical worker, the stop line and ``stop_alpha``. A campaign with no such run has nothing to
score against yet: its judgments wait for the first run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Engine, select

from monitor.core.catalog import Kind
from monitor.core.results import State
from monitor.metrics.stop_kinds import (
    RatingArrivals,
    RatingReference,
    SetArrivals,
    rating_arrival_scores,
    rating_weights,
    set_arrival_scores,
)
from monitor.metrics.stopping import (
    Arrivals,
    ArrivalScores,
    Reference,
    arrival_scores,
    coin_weights,
    confusion_weights,
    label_payoffs,
    rating_payoffs,
    stop_test,
)
from monitor.store import live as live_store
from monitor.store.campaigns import get_campaign
from monitor.store.engine import transaction
from monitor.store.models import Campaign
from monitor.store.runs import latest_run, run_states

REFERENCE_STATE = "live_reference"
"""The name of the state a run keeps for the live path."""
LIVE_KINDS = frozenset({Kind.LABEL, Kind.RATING, Kind.MULTILABEL})
"""The kinds of campaign the live path scores."""


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
    columns: NDArray[np.float64],
    meta: dict[str, Any],
) -> State:
    """The state a run keeps for the live path: each worker's estimates by database id (NaN
    where the run has none; labels: the accuracy, then the confusion matrix by rows where the
    run keeps it; sets: the accuracy; ratings: the bias and the noise variance), and in ``meta``
    the ``kind`` (labels: none), the categories or options, the prior, the typical worker, the
    line, alpha and the reference size."""
    return State(dict(meta), np.column_stack([worker_db_ids.astype(np.float64), columns]))


def payoffs(
    meta: dict[str, Any], scores: NDArray[np.float64], nulls: NDArray[np.float64]
) -> NDArray[np.float64]:
    """The bets' payoffs of the scores of a campaign whose reference is ``meta``: a rating's
    squared error against its null, else a label score's
    (:func:`monitor.metrics.stopping.rating_payoffs`, :func:`~monitor.metrics.stopping.label_payoffs`)."""
    if meta.get("kind") == Kind.RATING.value:
        return rating_payoffs(scores, nulls)
    return label_payoffs(scores, nulls)


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
        multilabel = state.meta.get("kind") == Kind.MULTILABEL.value
        rows = _scored(live_store.pending(session, info.id, multilabel), state)
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
    meta = state.meta
    kind = meta.get("kind", Kind.LABEL.value)
    first = _first(p)
    if kind == Kind.RATING.value:
        answers: NDArray[Any] = p.numbers
        gold: NDArray[Any] = np.array([as_number(g) for g in p.gold], dtype=np.float64)
        never = ~np.isfinite(answers) | ~first
    elif kind == Kind.MULTILABEL.value:
        answers = chosen_options(p.sets, meta["options"])
        gold = set_gold(p.gold, meta["options"])
        never = ~first
    else:
        code_of = {str(c): i for i, c in enumerate(meta["categories"])}

        def coded(values: list[str | None]) -> NDArray[np.int64]:
            return np.array([code_of.get(str(v).strip(), -1) if v is not None else -1
                             for v in values], dtype=np.int64)  # fmt: skip

        answers, gold = coded(p.labels), coded(p.gold)
        never = (answers < 0) | ~first  # a class the reference does not know, a repeat
    scores, nulls, ready = score_arrivals(Arrived(p.ids, p.workers, p.items, answers, gold), state)
    out: list[Row] = []
    for i in np.flatnonzero(~p.scored):
        if ready[i] >= 0:
            out.append((int(p.ids[i]), int(p.workers[i]), float(scores[i]), float(nulls[i]),
                        int(ready[i])))  # fmt: skip
        elif never[i]:
            out.append((int(p.ids[i]), int(p.workers[i]), None, None, int(p.ids[i])))
    return out


def as_number(x: object) -> float:
    """``x`` as a float; NaN where it is none (a gold value that is not a number)."""
    try:
        return float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return np.nan


def chosen_options(sets: list[tuple[str, ...]], options: list[str]) -> NDArray[np.int8]:
    """(n, A) 1 where a judgment selected the option, else 0; options the reference does not
    know are left out."""
    code_of = {str(o): k for k, o in enumerate(options)}
    out = np.zeros((len(sets), len(options)), dtype=np.int8)
    for i, chosen in enumerate(sets):
        for name in chosen:
            k = code_of.get(str(name))
            if k is not None:
                out[i, k] = 1
    return out


def set_gold(gold: list[str | None] | NDArray[np.object_], options: list[str]) -> NDArray[np.int8]:
    """(n, A) each judgment's item's gold set over the ``options``: 1 in the set, 0 not (-1
    everywhere: no gold). A gold set is its annotations joined by ``|``."""
    out = np.full((len(gold), len(options)), -1, dtype=np.int8)
    code_of = {str(o): k for k, o in enumerate(options)}
    for i, g in enumerate(gold):
        if g is None:
            continue
        out[i] = 0
        for name in str(g).split("|"):
            k = code_of.get(name.strip())
            if k is not None:
                out[i, k] = 1
    return out


@dataclass(frozen=True)
class Arrived:
    """Judgments as the live scores take them: database ids (their order of arrival), the
    workers' database ids, items (any codes), the answers and the items' gold. Labels: answers
    and gold as codes of the reference's categories (-1: none); ratings: the values (NaN: none);
    sets: (n, A) 0/1 over the reference's options, gold (n, A) 1/0 (-1: none)."""

    ids: NDArray[np.int64]
    workers: NDArray[np.int64]
    items: NDArray[np.int64]
    codes: NDArray[Any]
    gold: NDArray[Any]


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
    order = np.argsort(j.ids, kind="stable")
    got = _score_kind(j, state, order)
    scores, nulls = np.empty_like(got.scores), np.empty_like(got.nulls)
    ready = np.empty_like(got.ready)
    scores[order], nulls[order] = got.scores, got.nulls
    ready[order] = np.where(got.ready >= 0, j.ids[order][np.maximum(got.ready, 0)], -1)
    return scores, nulls, ready


def worker_columns(workers: NDArray[np.int64], state: State) -> NDArray[np.float64]:
    """(n, k) the reference's estimates of each judgment's worker (NaN: a worker it has not
    seen)."""
    known = state.array
    out = np.full((workers.size, max(known.shape[1] - 1, 0) if known.ndim == 2 else 0), np.nan)
    if known.size:
        row = {int(w): r for r, w in enumerate(known[:, 0].astype(np.int64).tolist())}
        at = np.array([row.get(int(w), -1) for w in workers], dtype=np.int64)
        out[at >= 0] = known[at[at >= 0], 1:]
    return out


def set_arrivals(j: Arrived, state: State) -> SetArrivals:
    """A multi-label campaign's judgments as :func:`~monitor.metrics.stop_kinds.set_arrival_scores`
    takes them (in the order of ``j``)."""
    accuracy = worker_columns(j.workers, state)[:, 0]
    accuracy = np.where(np.isfinite(accuracy), accuracy, float(state.meta["typical"]))
    return SetArrivals(j.items, j.codes.astype(np.int8), _first(j), coin_weights(accuracy, 2),
                       j.gold.astype(np.int8))  # fmt: skip


def label_weights(
    est: NDArray[np.float64], codes: NDArray[np.int64], meta: dict[str, Any]
) -> NDArray[np.float64]:
    """What each answer of a label campaign adds to its item's log-likelihood
    (:class:`~monitor.metrics.stopping.Arrivals`' ``weights``): from its worker's confusion
    matrix where the run kept one (``est``'s columns after the accuracy), else one coin at the
    worker's accuracy, or the typical worker's where the run has none. A run that kept no
    matrices (many classes, or a run before they were kept) gives one coin for every answer:
    (n,) log odds, not (n, K) rows."""
    K = len(meta["categories"])
    accuracy = np.where(np.isfinite(est[:, 0]), est[:, 0], float(meta["typical"]))
    coins = coin_weights(accuracy, K)
    if est.shape[1] != 1 + K * K:
        return coins  # (n,): one coin each
    rows = np.zeros((codes.size, K))
    rows[np.arange(codes.size), np.maximum(codes, 0)] = coins
    confusion = est[:, 1:].reshape(-1, K, K)
    known = np.isfinite(confusion).all(axis=(1, 2))
    rows[known] = confusion_weights(confusion[known], codes[known])
    return rows


def _score_kind(j: Arrived, state: State, order: NDArray[np.int64]) -> ArrivalScores:
    meta = state.meta
    kind = meta.get("kind", Kind.LABEL.value)
    line, least = float(meta["line"]), int(meta["reference"])
    if kind == Kind.RATING.value:
        est = worker_columns(j.workers, state)
        typical = float(meta["typical"])
        values = np.where(_first(j), j.codes.astype(np.float64), np.nan)
        bias = np.where(np.isfinite(est[:, 0]), est[:, 0], 0.0)
        a = RatingArrivals(j.items, values, bias, rating_weights(est[:, 1], typical),
                           j.gold.astype(np.float64))  # fmt: skip
        scale = (float(meta["scale"][0]), float(meta["scale"][1]))
        ref = RatingReference(line, typical, scale, least, bool(meta.get("censored", True)))
        return rating_arrival_scores(a[order], ref)
    if kind == Kind.MULTILABEL.value:
        prior = np.asarray(meta["prior"], dtype=np.float64)
        balance = np.asarray(meta["balance"], dtype=np.float64) if "balance" in meta else None
        return set_arrival_scores(set_arrivals(j, state)[order], prior, line, balance, least)
    codes = np.where(_first(j), j.codes, -1)
    weights = label_weights(worker_columns(j.workers, state), codes, meta)
    arrivals = Arrivals(j.items, codes, weights, j.gold)[order]
    prior = np.asarray(meta["prior"], dtype=np.float64)
    return arrival_scores(arrivals, Reference(prior, line, least))


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
    test = stop_test(codes, position, payoffs(meta, scores, nulls), n_workers=db_ids.size,
                     alpha=alpha)  # fmt: skip
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
