"""Intraobserver agreement from transitivity, with incremental triangle counts.

Marchiori, Minervini et al., *Aligning Intraobserver Agreement by Transitivity*, §3.1: per
annotator, P_A is the share of fully judged triplets {x, y, z} (all three pairs judged) whose
relations are those of a weak order, P_E the chance of that (13/27 with ties allowed, 6/8 with
strict preferences), and kappa = (P_A - P_E) / (1 - P_E). §4: pairs whose order the annotator's
own judgments already imply need not be asked.

The triangles (fully judged triplets) are counted, and kept up to date, by
:mod:`monitor.metrics.preferences.triangles`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import sparse

from monitor.metrics.common import Undefined
from monitor.metrics.preferences.judgments import latest, pair_keys, validate
from monitor.metrics.preferences.triangles import TriangleState, triangle_state

P_E_WEAK = 13 / 27
P_E_STRICT = 6 / 8


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class AnnotatorTransitivity:
    """One annotator's transitivity (paper §3.1) and test-retest consistency.

    ``p_a`` = n_transitive / n_triplets; ``kappa`` uses the campaign's ``p_e`` (13/27 with ties
    allowed, 6/8 otherwise); ``kappa_weak`` always uses 13/27, ``kappa_strict`` 6/8 and is given
    only in campaigns without ties. With no fully judged triplet these are None and
    ``undefined`` says why. Test-retest: over the pairs judged more than once, the share of
    agreeing pairs among all pairs of judgments of the same pair (canonical orientation),
    ``retest_agreement`` (None without repeats).
    """

    worker: int
    n_judgments: int
    n_pairs_judged: int
    n_triplets: int
    n_transitive: int
    p_a: float | None
    p_e: float
    kappa: float | None
    kappa_weak: float | None
    kappa_strict: float | None
    has_ties: bool
    n_repeated_pairs: int
    retest_agreement: float | None
    undefined: Undefined | None = None


@dataclass(frozen=True)
class Cycles:
    """Intransitive triplets with the judgments forming them, shape (c,) and (c, 3).

    ``items`` are sorted item codes x < y < z; ``relations`` the latest relations of (x, y),
    (y, z), (x, z) (+1 first preferred, 0 tie, -1), ``judgment_ids`` the judgments they come from.
    """

    workers: NDArray[np.int64]
    items: NDArray[np.int64]
    relations: NDArray[np.int64]
    judgment_ids: NDArray[np.int64]


@dataclass(frozen=True)
class Transitivity:
    """Per-annotator transitivity (workers with judgments, by code) and the cycles."""

    annotators: tuple[AnnotatorTransitivity, ...]
    cycles: Cycles
    ties_allowed: bool
    p_e: float

    def annotator(self, worker: int) -> AnnotatorTransitivity:
        """The record of one worker code (KeyError when it has no judgment)."""
        for a in self.annotators:
            if a.worker == worker:
                return a
        raise KeyError(worker)


def _kappa(p_a: float, p_e: float) -> float:
    return (p_a - p_e) / (1 - p_e)


def summarize(state: TriangleState, *, ties_allowed: bool = True) -> Transitivity:
    """Per-annotator results from a :class:`TriangleState` (fresh or updated)."""
    n_i, nw = state.n_items, state.n_workers
    if not ties_allowed and state.n_ties.any():
        bad = int(np.flatnonzero(state.n_ties)[0])
        raise ValueError(
            f"The campaign allows no ties but worker {bad} answered 'tie' "
            f"{state.n_ties[bad]} times."
        )
    node = state.keys // n_i
    canon = node % n_i < state.keys % n_i
    wk = node[canon] // n_i
    c = state.counts[canon]
    n_pairs = np.bincount(wk, minlength=nw)
    tot = c.sum(axis=1)
    rep = tot > 1
    agree_pairs = (c * (c - 1) // 2).sum(axis=1)
    n_rep = np.bincount(wk, rep, nw).astype(np.int64)
    agree = np.bincount(wk, agree_pairs, nw)
    comps = np.bincount(wk, tot * (tot - 1) // 2, nw)
    p_e = P_E_WEAK if ties_allowed else P_E_STRICT
    out = []
    for w in np.flatnonzero(state.n_judgments):
        t, ok = int(state.n_triplets[w]), int(state.n_transitive[w])
        p_a: float | None
        k: float | None
        kw: float | None
        ks: float | None
        if t:
            p_a = ok / t
            kw, ks, k, why = _kappa(p_a, P_E_WEAK), None, _kappa(p_a, p_e), None
            if not ties_allowed:
                ks = _kappa(p_a, P_E_STRICT)
        else:
            p_a = k = kw = ks = None
            why = Undefined("No fully judged triplet: no three items with all three pairs judged.")
        out.append(
            AnnotatorTransitivity(
                int(w), int(state.n_judgments[w]), int(n_pairs[w]), t, ok, p_a, p_e, k, kw, ks,
                bool(state.n_ties[w]), int(n_rep[w]),
                float(agree[w] / comps[w]) if n_rep[w] else None, why,
            )
        )  # fmt: skip
    cw, ci = state.cycle_workers, state.cycle_items
    srt = np.lexsort((ci[:, 2], ci[:, 1], ci[:, 0], cw)) if len(cw) else np.zeros(0, np.int64)
    cw, ci = cw[srt], ci[srt]
    cycles = Cycles(cw, ci, state.relations(cw, ci), state.judgment_ids(cw, ci))
    return Transitivity(tuple(out), cycles, ties_allowed, p_e)


def transitivity(
    workers: ArrayLike,
    left: ArrayLike,
    # triangle_state's inputs, passed on to it
    right: ArrayLike,
    outcome: ArrayLike,
    order: ArrayLike | None = None,
    ids: ArrayLike | None = None,
    *,
    ties_allowed: bool = True,
) -> Transitivity:
    """Intraobserver kappa from transitivity for every annotator (paper §3.1).

    ``workers, left, right, outcome, order, ids : (n,)``; latest judgment of a pair counts.
    Raises ValueError when ``ties_allowed`` is False and a tie occurs.
    """
    return summarize(
        triangle_state(workers, left, right, outcome, order, ids), ties_allowed=ties_allowed
    )


# --------------------------------------------------------------------------- implied pairs (§4)


@dataclass(frozen=True)
class ImpliedPairs:
    """Unjudged pairs whose order an annotator's own judgments imply, shape (k,) each.

    ``items (k, 2)`` sorted item codes (lo, hi), ``relations`` the implied relation of lo to hi
    (+1, 0, -1). ``count (W,)`` per worker.
    """

    workers: NDArray[np.int64]
    items: NDArray[np.int64]
    relations: NDArray[np.int64]
    count: NDArray[np.int64]


def implied_pairs(
    workers: ArrayLike,
    left: ArrayLike,
    right: ArrayLike,
    outcome: ArrayLike,
    order: ArrayLike | None = None,
) -> ImpliedPairs:
    """Pairs a campaign can skip because transitivity decides them (paper §4).

    With ≽ the annotator's weak preference (latest judgments; a tie gives both directions) and R
    its reflexive-transitive closure, an unjudged pair {a, b} is implied a > b when some chain
    a ≽ ... ≽ b contains a strict step and no chain leads back (b R a fails), and a = b when
    a R b and b R a through ties only. Pairs whose chains contradict each other are not implied.
    Closure by repeated squaring of the boolean reachability matrix of all annotators at once.
    """
    j = validate(workers, left, right, outcome, order)
    n_i, nw = max(j.n_items, 1), j.n_workers
    rows = latest(pair_keys(j), j.order)
    w, lo, hi, rel = j.workers[rows], j.lo[rows], j.hi[rows], j.rel[rows]
    nodes, inv = np.unique(np.r_[w * n_i + lo, w * n_i + hi], return_inverse=True)
    m, k = len(rows), len(nodes)
    a, b = inv[:m], inv[m:]
    # weak arcs x -> y for x ≽ y; strict arcs for x > y
    src = np.r_[a[rel >= 0], b[rel <= 0]]
    dst = np.r_[b[rel >= 0], a[rel <= 0]]
    s_src = np.r_[a[rel > 0], b[rel < 0]]
    s_dst = np.r_[b[rel > 0], a[rel < 0]]

    def boolean(r: NDArray[np.int64], c: NDArray[np.int64]) -> sparse.csr_matrix:
        return sparse.csr_matrix((np.ones(len(r), dtype=np.int8), (r, c)), shape=(k, k))

    reach = boolean(np.r_[src, np.arange(k)], np.r_[dst, np.arange(k)])
    for _ in range(max(1, int(np.ceil(np.log2(max(k, 2)))) + 1)):
        nxt = reach @ reach
        nxt.data[:] = 1
        if nxt.nnz == reach.nnz:
            break
        reach = nxt
    strict = reach @ boolean(s_src, s_dst) @ reach
    strict.data[:] = 1
    sym = (reach + reach.T).tocoo()
    x, y = sym.row[sym.row < sym.col], sym.col[sym.row < sym.col]

    def entries(
        mat: sparse.csr_matrix, r: NDArray[np.int64], c: NDArray[np.int64]
    ) -> NDArray[np.bool_]:
        return np.asarray(mat[r, c]).reshape(-1) > 0 if len(r) else np.zeros(0, dtype=bool)

    f_xy, f_yx = entries(reach, x, y), entries(reach, y, x)
    s_xy, s_yx = entries(strict, x, y), entries(strict, y, x)
    gt = s_xy & ~f_yx
    lt = s_yx & ~f_xy
    eq = f_xy & f_yx & ~s_xy & ~s_yx
    ok = gt | lt | eq
    px, py = x[ok], y[ok]
    pr = np.where(gt, 1, np.where(lt, -1, 0))[ok]
    wk = nodes[px] // n_i
    ia, ib = nodes[px] % n_i, nodes[py] % n_i
    lo2, hi2 = np.minimum(ia, ib), np.maximum(ia, ib)
    pr = np.where(ia < ib, pr, -pr)
    judged = np.zeros(len(wk), dtype=bool)
    if len(wk):
        have = (w * n_i + lo) * n_i + hi
        q = (wk * n_i + lo2) * n_i + hi2
        p = np.minimum(np.searchsorted(have, q), len(have) - 1)
        judged = have[p] == q
    sel = ~judged
    srt = np.lexsort((hi2[sel], lo2[sel], wk[sel]))
    wk, lo2, hi2, pr = wk[sel][srt], lo2[sel][srt], hi2[sel][srt], pr[sel][srt]
    return ImpliedPairs(
        wk, np.stack([lo2, hi2], axis=1), pr.astype(np.int64), np.bincount(wk, minlength=nw)
    )
