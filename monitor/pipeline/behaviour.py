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

The tests themselves are pure (:mod:`monitor.metrics.behaviour`); this module codes the
answers and stores the values. The values come from the raw answers alone, so an incremental run and a full one give the same. The rules
(:mod:`monitor.rules.worker`) correct the p-values for testing every worker (Holm).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from monitor.core.catalog import Kind
from monitor.core.results import Value
from monitor.metrics.behaviour import Answers, SideTest, constant_answer, side_test
from monitor.pipeline.collect import Values, num
from monitor.pipeline.params import Coded, Params

SHOWN = ("left", "tie", "right")
"""A preference's answer as shown on the screen (code 0, 1, 2)."""


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
    answers = Answers(workers, units, canon, shown, flipped)
    test = constant_answer(answers, W, V, pairwise=coded.kind == Kind.PAIRWISE)
    n_w, k, modal, expected, p_const = test.n, test.k, test.modal, test.expected, test.p_value
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
        sides = side_test(answers, W)
        if sides is not None:
            _store_sides(out, a.worker_ids, sides)
    return out


def _store_sides(out: Values, worker_ids: NDArray[np.object_], sides: SideTest) -> None:
    """``side_test`` per worker with a strict answer."""
    n, k, expected, p = sides.n, sides.k, sides.expected, sides.p_value
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
