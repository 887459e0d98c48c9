"""Answering habits tested on each worker's own answers (every kind but multi-label).

- ``constant_answer``: the share of the worker's answers that are their commonest one (the same
  label, rating, side or tie), with the exact probability that a worker who answers each of
  their questions as the *other* workers did would give that answer at least as often.
- ``side_test`` (preferences): the share of "left" among the worker's strict answers, with the
  two-sided exact probability of a split at least as lopsided from a worker who picks the
  left item as often as the other annotators did on the same pairs, in the same order on the
  screen (their tie rate drops out: the test reads strict answers only). Where the sides are
  shown in random order (``pairs plan`` randomises them) and nobody else judged a pair, that is
  a fair coin.
- ``distinct_answers`` (campaign): how many different answers the campaign holds (1: everyone
  gave the same answer, and nothing tells the workers apart).

Each question's expected answer is the others' share of it on that question, smoothed toward
the campaign's share (``(others giving it + share) / (others + 1)``: a question nobody else
answered counts at the campaign's share). The count over the worker's questions is then
Poisson-binomial and its tails are exact
(:func:`monitor.metrics.preferences.flags.poisson_binomial_sf`). The values come from the raw
answers alone, so an incremental run and a full one give the same. The rules
(:mod:`monitor.rules.worker`) correct the p-values for testing every worker (Holm).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from monitor.catalog import Kind
from monitor.metrics.preferences.flags import poisson_binomial_sf
from monitor.pipeline.collect import Values, num
from monitor.pipeline.params import Coded, Params
from monitor.results import Value

SHOWN = ("left", "tie", "right")
"""A preference's answer as shown on the screen (code 0, 1, 2)."""


def _lookup(keys: NDArray[np.int64], counts: NDArray[np.int64], query: NDArray[np.int64]):
    """``counts`` of each ``query`` key among the sorted unique ``keys`` (0 where absent)."""
    if not keys.size:
        return np.zeros(query.size, dtype=np.int64)
    at = np.clip(np.searchsorted(keys, query), 0, keys.size - 1)
    return np.where(keys[at] == query, counts[at], 0)


def _others_share(
    workers: NDArray[np.int64],
    units: NDArray[np.int64],
    canon: NDArray[np.int64],
    target: NDArray[np.int64],
    n_values: int,
    prior: NDArray[np.float64],
) -> NDArray[np.float64]:
    """For each answer, the share of the *other* workers' answers on its unit that equal
    ``target`` (canonical code), smoothed toward ``prior[target]`` with one pseudo-answer."""
    n_units = int(units.max()) + 1 if units.size else 0
    unit_value = units * n_values + canon
    uv_keys, uv_counts = np.unique(unit_value, return_counts=True)
    own_key = (workers * n_units + units) * n_values + canon
    own_keys, own_counts = np.unique(own_key, return_counts=True)
    u_total = np.bincount(units, minlength=n_units)
    wu_keys, wu_counts = np.unique(workers * n_units + units, return_counts=True)
    q_uv = units * n_values + target
    q_own = (workers * n_units + units) * n_values + target
    others_v = _lookup(uv_keys, uv_counts, q_uv) - _lookup(own_keys, own_counts, q_own)
    others = u_total[units] - _lookup(wu_keys, wu_counts, workers * n_units + units)
    return (others_v + prior[target]) / (others + 1.0)


def measure(coded: Coded, params: Params) -> Values:
    """``constant_answer`` and ``side_test`` per worker, ``distinct_answers`` for the
    campaign."""
    a = coded.arrays
    out = params.values(coded.info.name)
    if coded.kind == Kind.MULTILABEL or a.n == 0:
        return out
    W = len(a.worker_ids)
    if coded.kind == Kind.PAIRWISE:
        left, right, outcome = a.comparisons
        flipped = left > right
        lo, hi = np.minimum(left, right), np.maximum(left, right)
        _, units = np.unique(lo * max(len(a.item_ids), 1) + hi, return_inverse=True)
        shown = (1 - outcome.astype(np.int64)).astype(np.int64)  # 0 left, 1 tie, 2 right
        canon = np.where(flipped, 2 - shown, shown)  # 0 first item better, 1 tie, 2 second
        workers = a.workers
        names: list[str] = list(SHOWN)
    else:
        keep = np.isfinite(a.values)
        if keep.all():  # the arrays themselves, not copies of every judgment's codes
            keep = slice(None)  # type: ignore[assignment]
        workers, items = a.workers[keep], a.items[keep]
        codes, shown = np.unique(a.values[keep], return_inverse=True)
        shown = shown.reshape(-1).astype(np.int64)
        canon, units = shown, items.astype(np.int64, copy=False)
        flipped = np.zeros(shown.size, bool)
        if coded.kind == Kind.LABEL and a.categories:
            names = [a.categories[int(c)] for c in codes]
        else:
            names = [f"{c:g}" for c in codes]
    units = units.reshape(-1).astype(np.int64, copy=False)
    V = len(names)
    out.campaign_value("distinct_answers", int(np.unique(canon).size), n=int(canon.size))
    if not canon.size:
        return out
    prior = np.bincount(canon, minlength=V) / canon.size
    n_w = np.bincount(workers, minlength=W)
    by_answer = np.bincount(workers * V + shown, minlength=W * V).reshape(W, V)
    modal = by_answer.argmax(axis=1)
    k = by_answer[np.arange(W), modal]
    mine = modal[workers]
    target = np.where(flipped, 2 - mine, mine) if coded.kind == Kind.PAIRWISE else mine
    p = np.clip(_others_share(workers, units, canon, target, V, prior), 0.0, 1.0)
    p_const = poisson_binomial_sf(workers, p, k, W)
    expected = np.bincount(workers, weights=p, minlength=W)
    for w in np.flatnonzero(n_w):
        out.values.append(
            Value(
                "worker",
                str(a.worker_ids[w]),
                "constant_answer",
                num(k[w] / n_w[w]),
                n=int(n_w[w]),
                detail={
                    "answer": names[int(modal[w])],
                    "count": int(k[w]),
                    "expected": num(expected[w]),
                    "p_value": num(p_const[w]),
                },
            )
        )
    if coded.kind == Kind.PAIRWISE:
        _side_test(out, a.worker_ids, workers, units, canon, shown, flipped, W)
    return out


def _side_test(
    out: Values,
    worker_ids: NDArray[np.object_],
    workers: NDArray[np.int64],
    units: NDArray[np.int64],
    canon: NDArray[np.int64],
    shown: NDArray[np.int64],
    flipped: NDArray[np.bool_],
    W: int,
) -> None:
    """The two-sided exact test of the worker's "left" count among their strict answers."""
    strict = shown != 1
    w, u, c = workers[strict], units[strict], canon[strict]
    f, s = flipped[strict], shown[strict]
    if not w.size:
        return
    # the others' share of "the first item better" among their strict answers on the pair
    first = np.where(c == 0, 1, 0)
    prior = np.array([first.mean(), 1 - first.mean()])
    p_first = _others_share(w, u, c // 2, np.zeros(w.size, np.int64), 2, prior)
    p_left = np.clip(np.where(f, 1 - p_first, p_first), 0.0, 1.0)
    n = np.bincount(w, minlength=W)
    k = np.bincount(w, weights=s == 0, minlength=W).astype(np.int64)
    upper = poisson_binomial_sf(w, p_left, k, W)
    lower = poisson_binomial_sf(w, 1 - p_left, n - k, W)
    p = np.minimum(1.0, 2 * np.minimum(upper, lower))
    expected = np.bincount(w, weights=p_left, minlength=W)
    for i in np.flatnonzero(n):
        out.values.append(
            Value(
                "worker",
                str(worker_ids[i]),
                "side_test",
                num(k[i] / n[i]),
                n=int(n[i]),
                detail={
                    "n_left": int(k[i]),
                    "expected_left": num(expected[i]),
                    "p_value": num(p[i]),
                },
            )
        )
