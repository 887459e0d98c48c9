"""Pairwise preference judgments: input conventions, canonical pairs, bias, and scores.

Input convention shared by this module and :mod:`monitor.metrics.transitivity`:

- ``workers, left, right : ndarray, shape (n,)`` non-negative integer codes;
- ``outcome : ndarray, shape (n,)`` int8, ``+1`` left preferred, ``-1`` right preferred, ``0`` tie
  (:func:`parse_outcomes` maps ``"left"/"right"/"tie"``);
- ``order : ndarray, shape (n,)`` time order, optional (default: array position). When a worker
  judges a pair more than once, in either orientation, the latest judgment counts; equal orders
  are broken by array position, later wins.

Canonical orientation: a judgment becomes the *relation* of the smaller item code to the larger,
``+1`` (``">"``, smaller preferred), ``-1`` (``"<"``), ``0`` (``"="``).

Scores from preferences follow Marchiori, Minervini et al., *Aligning Intraobserver Agreement by
Transitivity* §5 (the counting function of Roberts' representation theorem) per annotator, and
Davidson (1970), *On extending the Bradley-Terry model to accommodate ties in paired comparison
experiments* (JASA 65:317), campaign-wide.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import sparse
from scipy.sparse import csgraph
from scipy.sparse.linalg import LinearOperator, cg
from scipy.stats import binomtest

from monitor.metrics._common import Undefined, check_same_length

LEFT, TIE, RIGHT = 1, 0, -1
#: Canonical label codes for agreement measures: index = relation + 1.
CANONICAL_LABELS: tuple[str, str, str] = ("<", "=", ">")
_OUTCOME_WORDS = {"left": LEFT, "right": RIGHT, "tie": TIE}


def parse_outcomes(values: ArrayLike) -> NDArray[np.int8]:
    """Map ``"left"``, ``"right"``, ``"tie"`` (any case, surrounding blanks ignored) to +1, -1, 0.

    >>> parse_outcomes(["left", "tie", "Right"]).tolist()
    [1, 0, -1]
    """
    arr = np.asarray(values, dtype=str)
    words = np.char.strip(np.char.lower(arr.reshape(-1)))
    out = np.zeros(words.shape, dtype=np.int8)
    known = np.zeros(words.shape, dtype=bool)
    for word, code in _OUTCOME_WORDS.items():
        hit = words == word
        out[hit] = code
        known |= hit
    if not known.all():
        bad = int(np.flatnonzero(~known)[0])
        raise ValueError(
            f"Preference at position {bad} is {arr.reshape(-1)[bad]!r}; expected 'left', "
            "'right' or 'tie'."
        )
    return out


# --------------------------------------------------------------------------- validation


@dataclass(frozen=True)
class Judgments:
    """Validated judgments in canonical orientation, shape (n,) each.

    ``lo < hi`` are the item codes, ``rel`` the relation of ``lo`` to ``hi`` (+1, 0, -1),
    ``order`` the time order as float, ``n_workers``/``n_items`` one more than the largest code.
    """

    workers: NDArray[np.int64]
    lo: NDArray[np.int64]
    hi: NDArray[np.int64]
    rel: NDArray[np.int8]
    order: NDArray[np.float64]
    n_workers: int
    n_items: int


def _int_codes(name: str, a: ArrayLike) -> NDArray[np.int64]:
    arr = np.asarray(a)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name} must hold integer codes, got dtype {arr.dtype}.")
    arr = arr.astype(np.int64, copy=False)
    if arr.size and arr.min() < 0:
        raise ValueError(f"{name} must hold non-negative codes, found {arr.min()}.")
    return arr


def validate(
    workers: ArrayLike,
    left: ArrayLike,
    right: ArrayLike,
    outcome: ArrayLike,
    order: ArrayLike | None = None,
    *,
    n_workers: int | None = None,
    n_items: int | None = None,
) -> Judgments:
    """Check the input convention and return the judgments in canonical orientation."""
    w = _int_codes("workers", workers)
    a = _int_codes("left", left)
    b = _int_codes("right", right)
    o = np.asarray(outcome)
    t = np.arange(len(w), dtype=np.float64) if order is None else np.asarray(order)
    check_same_length(workers=w, left=a, right=b, outcome=o, order=t)
    if o.size and not np.issubdtype(o.dtype, np.integer):
        raise ValueError(
            f"outcome must be integer codes +1/-1/0, got dtype {o.dtype}; "
            "use parse_outcomes for strings."
        )
    if o.size and not np.isin(o, (-1, 0, 1)).all():
        raise ValueError("outcome must hold only +1 (left), -1 (right) and 0 (tie).")
    if not np.issubdtype(t.dtype, np.number):
        raise ValueError(f"order must be numeric, got dtype {t.dtype}.")
    t = t.astype(np.float64)
    if not np.isfinite(t).all():
        raise ValueError("order must be finite.")
    same = np.flatnonzero(a == b)
    if same.size:
        raise ValueError(
            f"Judgment at position {same[0]} compares item {a[same[0]]} with itself; "
            "a pair needs two different items."
        )
    nw = int(w.max()) + 1 if w.size else 0
    ni = int(max(a.max(), b.max())) + 1 if a.size else 0
    if n_workers is not None:
        if n_workers < nw:
            raise ValueError(f"n_workers is {n_workers} but a worker code is {nw - 1}.")
        nw = n_workers
    if n_items is not None:
        if n_items < ni:
            raise ValueError(f"n_items is {n_items} but an item code is {ni - 1}.")
        ni = n_items
    lo = np.minimum(a, b)
    hi = np.maximum(a, b)
    rel = np.where(a < b, o, -o).astype(np.int8)
    return Judgments(w, lo, hi, rel, t, nw, ni)


def pair_keys(j: Judgments, n_items: int | None = None) -> NDArray[np.int64]:
    """One int64 key per (worker, lo, hi): ``(worker * I + lo) * I + hi``."""
    n_i = j.n_items if n_items is None else n_items
    if max(j.n_workers, 1) * max(n_i, 1) * max(n_i, 1) >= 2**62:
        raise ValueError(
            f"{j.n_workers} workers x {n_i}^2 items overflow 64-bit pair keys; "
            "split the campaign or recode items per worker."
        )
    return (j.workers * n_i + j.lo) * n_i + j.hi


def latest(keys: NDArray[np.int64], order: NDArray[np.float64]) -> NDArray[np.int64]:
    """Positions of the latest judgment of each key (sorted by key): latest order, then position."""
    idx, group = sort_by_key(keys, order)
    last = np.ones(len(idx), dtype=bool)
    last[:-1] = group[1:] != group[:-1]
    return idx[last]


def sort_by_key(
    keys: NDArray[np.int64], order: NDArray[np.float64]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Positions sorted by (key, order, position) and the group number (rank of key) of each."""
    if len(order) < 2 or np.all(order[1:] >= order[:-1]):
        idx = np.argsort(keys, kind="stable")
    else:
        by_time = np.argsort(order, kind="stable")
        idx = by_time[np.argsort(keys[by_time], kind="stable")]
    k = keys[idx]
    group = np.zeros(len(idx), dtype=np.int64)
    if len(idx):
        np.cumsum(k[1:] != k[:-1], out=group[1:])
    return idx, group


# --------------------------------------------------------------------------- canonical pairs


@dataclass(frozen=True)
class CanonicalPairs:
    """Pairwise judgments as units and labels for nominal agreement measures and CrowdTruth.

    ``pairs : (P, 2)`` the unordered pairs ``(lo, hi)``, ``lo < hi``; ``pair : (k,)`` the pair code
    of each kept judgment; ``workers : (k,)``; ``label : (k,)`` index into ``CANONICAL_LABELS``
    (``"<"``, ``"="``, ``">"``: the relation of ``lo`` to ``hi``); ``rows : (k,)`` the input
    positions kept.
    """

    pairs: NDArray[np.int64]
    pair: NDArray[np.int64]
    workers: NDArray[np.int64]
    label: NDArray[np.int64]
    rows: NDArray[np.int64]
    labels: tuple[str, str, str] = CANONICAL_LABELS


def canonical_pairs(
    workers: ArrayLike,
    left: ArrayLike,
    right: ArrayLike,
    outcome: ArrayLike,
    order: ArrayLike | None = None,
    *,
    latest_only: bool = True,
) -> CanonicalPairs:
    """Map each unordered pair to a unit code and each judgment to a canonical label.

    With ``latest_only`` a worker's repeated judgments of a pair collapse to the latest, so each
    worker contributes one label per unit (what alpha and percent agreement expect).
    """
    j = validate(workers, left, right, outcome, order)
    rows = latest(pair_keys(j), j.order) if latest_only else np.arange(len(j.workers))
    pk = j.lo[rows] * max(j.n_items, 1) + j.hi[rows]
    upk, pair = np.unique(pk, return_inverse=True)
    n_i = max(j.n_items, 1)
    pairs = np.stack([upk // n_i, upk % n_i], axis=1) if upk.size else np.zeros((0, 2), np.int64)
    return CanonicalPairs(
        pairs=pairs,
        pair=pair.astype(np.int64).reshape(-1),
        workers=j.workers[rows],
        label=j.rel[rows].astype(np.int64) + 1,
        rows=rows.astype(np.int64),
    )


# --------------------------------------------------------------------------- bias and ties


@dataclass(frozen=True)
class AnnotatorBias:
    """One annotator's answering habits over all their judgments (repeats included).

    ``left_share`` is the share of "left" among strict answers; ``p_value`` the two-sided exact
    binomial test of ``left_share == 1/2`` (None with ``undefined`` when no strict answer).
    """

    worker: int
    n_judgments: int
    n_ties: int
    tie_rate: float
    n_strict: int
    n_left: int
    left_share: float | None
    p_value: float | None
    undefined: Undefined | None = None


def position_bias(workers: ArrayLike, outcome: ArrayLike) -> tuple[AnnotatorBias, ...]:
    """Tie rate and position bias per annotator (workers with judgments, by code).

    ``workers, outcome : (n,)``. Tie rate = ties / judgments; position bias = binomial test of the
    "left" count among the strict answers (scipy.stats.binomtest, p = 1/2, two-sided).
    """
    w = _int_codes("workers", workers)
    o = np.asarray(outcome)
    check_same_length(workers=w, outcome=o)
    if o.size and not np.isin(o, (-1, 0, 1)).all():
        raise ValueError("outcome must hold only +1 (left), -1 (right) and 0 (tie).")
    nw = int(w.max()) + 1 if w.size else 0
    n = np.bincount(w, minlength=nw)
    ties = np.bincount(w, weights=(o == TIE), minlength=nw).astype(np.int64)
    lefts = np.bincount(w, weights=(o == LEFT), minlength=nw).astype(np.int64)
    out = []
    for wk in np.flatnonzero(n):
        strict = int(n[wk] - ties[wk])
        if strict:
            p = float(binomtest(int(lefts[wk]), strict, 0.5).pvalue)
            share, why = lefts[wk] / strict, None
        else:
            p, share, why = None, None, Undefined("The annotator gave no strict answer.")
        out.append(
            AnnotatorBias(
                int(wk), int(n[wk]), int(ties[wk]), ties[wk] / n[wk], strict, int(lefts[wk]),
                None if share is None else float(share), p, why,
            )
        )  # fmt: skip
    return tuple(out)


# --------------------------------------------------------------------------- counting scores


@dataclass(frozen=True)
class CountingScores:
    """Roberts' counting function per annotator on the items where it is a scale (paper §5).

    Entries, shape (k,): ``workers``, ``items``, ``scores`` (f(x)), ``groups`` (a code for the
    component of the worker's graph the item lies in; scores compare only within one group).
    Per annotator, shape (W,):
    ``n_items`` seen, ``n_qualifying`` items scored.
    """

    workers: NDArray[np.int64]
    items: NDArray[np.int64]
    scores: NDArray[np.int64]
    groups: NDArray[np.int64]
    n_items: NDArray[np.int64]
    n_qualifying: NDArray[np.int64]


def counting_scores(
    workers: ArrayLike,
    left: ArrayLike,
    right: ArrayLike,
    outcome: ArrayLike,
    order: ArrayLike | None = None,
) -> CountingScores:
    """f(x) = number of y != x with x ≽ y (x preferred to y or tied with it), per annotator.

    Theorem 1 of the paper (Roberts 1985, p. 107): f(x) >= f(y) iff x ≽ y holds exactly when ≽ is
    transitive and strongly complete. The annotator's graph of judged pairs (latest judgments)
    splits into connected components; a component qualifies when every pair in it is judged
    (complete) and f reproduces every judgment (equivalent to transitivity). A tie therefore
    adds one to both items, as ≽ holds both ways; the reflexive x ≽ x is left out, which shifts
    every score by the same 1.
    """
    j = validate(workers, left, right, outcome, order)
    keys = pair_keys(j)
    rows = latest(keys, j.order)
    n_i = max(j.n_items, 1)
    w, lo, hi, rel = j.workers[rows], j.lo[rows], j.hi[rows], j.rel[rows]
    node_lo, node_hi = w * n_i + lo, w * n_i + hi
    nodes, inv = np.unique(np.concatenate([node_lo, node_hi]), return_inverse=True)
    m, k = len(rows), len(nodes)
    ia, ib = inv[:m], inv[m:]
    graph = sparse.coo_matrix((np.ones(m), (ia, ib)), shape=(k, k)).tocsr()
    _, comp = csgraph.connected_components(graph, directed=False)
    size = np.bincount(comp)
    edges = np.bincount(comp[ia], minlength=len(size))
    f = np.bincount(ia, weights=rel >= 0, minlength=k) + np.bincount(
        ib, weights=rel <= 0, minlength=k
    )
    f = f.astype(np.int64)
    represented = np.sign(f[ia] - f[ib]) == rel
    broken = np.bincount(comp[ia], weights=~represented, minlength=len(size)) > 0
    good = (edges == size * (size - 1) // 2) & ~broken
    keep = good[comp]
    node_w = nodes // n_i
    comp_kept = comp[keep]
    _, group = np.unique(comp_kept, return_inverse=True)
    nw = j.n_workers
    return CountingScores(
        workers=node_w[keep],
        items=nodes[keep] % n_i,
        scores=f[keep],
        groups=group.reshape(-1).astype(np.int64),
        n_items=np.bincount(node_w, minlength=nw),
        n_qualifying=np.bincount(node_w[keep], minlength=nw),
    )


# --------------------------------------------------------------------------- Bradley-Terry


@dataclass(frozen=True)
class DavidsonFit:
    """Bradley-Terry with ties (Davidson 1970), fitted by Newton's method.

    P(i > j) = pi_i / D, P(i = j) = nu sqrt(pi_i pi_j) / D, D = pi_i + pi_j + nu sqrt(pi_i pi_j),
    with ``log_strength = log pi`` in the gauge sum(log pi) = 0. ``items : (k,)`` the item codes
    that occur, ``log_strength, se : (k,)``; ``se`` from the inverse observed information (the
    Moore-Penrose inverse under the gauge), None above ``se_max_items`` or when undefined.
    ``tie_parameter`` is nu (0 and not fitted when the data hold no tie).
    """

    items: NDArray[np.int64]
    log_strength: NDArray[np.float64] | None
    se: NDArray[np.float64] | None
    tie_parameter: float | None
    tie_parameter_se: float | None
    log_likelihood: float | None
    n_comparisons: int
    n_ties: int
    converged: bool
    iterations: int
    max_iter: int
    tol: float
    undefined: Undefined | None = None
    se_undefined: Undefined | None = None


def _davidson_terms(x, ia, ib, wa, wb, tt, fit_ties, k):
    """Negative log-likelihood, gradient and the per-pair Hessian blocks at x."""
    a, b = x[ia], x[ib]
    n = wa + wb + tt
    if fit_ties:
        lam = x[k]
        t = lam + 0.5 * (a + b)
        mx = np.maximum(np.maximum(a, b), t)
        ea, eb, et = np.exp(a - mx), np.exp(b - mx), np.exp(t - mx)
        s = ea + eb + et
        pa, pb, pt = ea / s, eb / s, et / s
        log_d = mx + np.log(s)
        nll = float(np.sum(n * log_d - wa * a - wb * b - tt * t))
    else:
        mx = np.maximum(a, b)
        ea, eb = np.exp(a - mx), np.exp(b - mx)
        s = ea + eb
        pa, pb, pt = ea / s, eb / s, np.zeros_like(a)
        nll = float(np.sum(n * (mx + np.log(s)) - wa * a - wb * b))
    ma, mb = pa + 0.5 * pt, pb + 0.5 * pt
    grad = np.zeros(len(x))
    grad[:k] = np.bincount(ia, n * ma - wa - 0.5 * tt, k) + np.bincount(
        ib, n * mb - wb - 0.5 * tt, k
    )
    if fit_ties:
        grad[k] = float(np.sum(n * pt - tt))
    blocks = {
        "aa": n * (pa + 0.25 * pt - ma * ma),
        "bb": n * (pb + 0.25 * pt - mb * mb),
        "ab": n * (0.25 * pt - ma * mb),
        "al": n * (0.5 * pt - ma * pt),
        "bl": n * (0.5 * pt - mb * pt),
        "ll": n * (pt - pt * pt),
    }
    return nll, grad, blocks


class _Hessian:
    """Hessian of the negative log-likelihood as theta block A (sparse, fixed pattern), tie column
    c and corner d, plus ``shift * u u^T`` (u = ones on theta: the gauge, fixing sum theta = 0)
    and a ridge on theta."""

    def __init__(self, ia, ib, k: int, fit_ties: bool) -> None:
        rows = np.concatenate([ia, ib, np.arange(k)])
        cols = np.concatenate([ib, ia, np.arange(k)])
        self.perm = np.lexsort((cols, rows))
        counts = np.bincount(rows, minlength=k)
        self.indptr = np.r_[0, np.cumsum(counts)]
        self.indices = cols[self.perm].astype(np.int32)
        self.ia, self.ib, self.k, self.fit_ties = ia, ib, k, fit_ties

    def set(self, blocks, ridge: float, shift: float) -> None:
        ia, ib, k = self.ia, self.ib, self.k
        diag = np.bincount(ia, blocks["aa"], k) + np.bincount(ib, blocks["bb"], k) + ridge
        data = np.concatenate([blocks["ab"], blocks["ab"], diag])[self.perm]
        self.a = sparse.csr_matrix((data, self.indices, self.indptr), shape=(k, k))
        self.diag = diag + shift
        self.c = np.bincount(ia, blocks["al"], k) + np.bincount(ib, blocks["bl"], k)
        self.d = float(blocks["ll"].sum())
        self.shift = shift

    @property
    def dim(self) -> int:
        return self.k + int(self.fit_ties)

    def matvec(self, v: NDArray[np.float64]) -> NDArray[np.float64]:
        k = self.k
        out = np.empty(self.dim)
        out[:k] = self.a @ v[:k] + self.shift * v[:k].sum()
        if self.fit_ties:
            out[:k] += self.c * v[k]
            out[k] = self.c @ v[:k] + self.d * v[k]
        return out

    def dense(self) -> NDArray[np.float64]:
        k = self.k
        h = np.zeros((self.dim, self.dim))
        h[:k, :k] = self.a.toarray() + self.shift
        if self.fit_ties:
            h[:k, k] = h[k, :k] = self.c
            h[k, k] = self.d
        return h

    def solve(self, rhs: NDArray[np.float64], rtol: float) -> NDArray[np.float64]:
        if self.dim <= 1500:
            return np.linalg.solve(self.dense(), rhs).astype(np.float64, copy=False)
        pre_d = np.r_[self.diag, self.d] if self.fit_ties else self.diag
        op = LinearOperator((self.dim, self.dim), matvec=self.matvec)
        pre = LinearOperator((self.dim, self.dim), matvec=lambda v: v / pre_d)
        x, _ = cg(op, rhs, rtol=rtol, maxiter=5 * self.dim, M=pre)
        return x


def davidson(
    left: ArrayLike,
    right: ArrayLike,
    outcome: ArrayLike,
    *,
    max_iter: int = 100,
    tol: float = 1e-9,
    regularization: float = 0.0,
    se_max_items: int = 2000,
    init: DavidsonFit | NDArray[np.float64] | None = None,
) -> DavidsonFit:
    """Fit Davidson's Bradley-Terry model with ties to all judgments (repeats are observations).

    ``left, right, outcome : (n,)`` in the module's convention. The negative log-likelihood is
    convex in (log pi, log nu), so Newton's method with backtracking converges from 0; ``tol``
    bounds the largest Newton step. The maximum-likelihood estimate exists when the graph with an
    arc i -> j for every win of i over j or tie between them is strongly connected (Hunter 2004,
    extended to ties) and, with ties, some answer is strict; otherwise the result is undefined
    unless ``regularization > 0`` adds the ridge penalty ``regularization/2 * |log pi|^2``.
    ``init`` warm-starts Newton: a previous fit (matched by item code; new items start at 0, the
    tie parameter is reused) or log-strengths of the occurring items in code order.
    """
    if max_iter < 1 or tol <= 0 or regularization < 0:
        raise ValueError("max_iter must be >= 1, tol > 0 and regularization >= 0.")
    zeros = np.zeros(len(np.asarray(left)), dtype=np.int64)
    j = validate(zeros, left, right, outcome)
    items, inv = np.unique(np.concatenate([j.lo, j.hi]), return_inverse=True)
    k, n = len(items), len(j.lo)
    pk, pinv = np.unique(inv[:n] * max(k, 1) + inv[n:], return_inverse=True)
    ia, ib = pk // max(k, 1), pk % max(k, 1)
    wa = np.bincount(pinv, j.rel > 0, len(pk))
    wb = np.bincount(pinv, j.rel < 0, len(pk))
    tt = np.bincount(pinv, j.rel == 0, len(pk))
    n_ties = int(tt.sum())
    fit_ties = n_ties > 0

    def undefined(why: str) -> DavidsonFit:
        return DavidsonFit(
            items, None, None, None, None, None, n, n_ties, False, 0, max_iter, tol, Undefined(why)
        )

    if k < 2:
        return undefined("Fewer than two items were compared.")
    if fit_ties and n_ties == n:
        return undefined("Every answer is a tie, so the tie parameter has no finite estimate.")
    if regularization == 0:
        fwd = (wa + tt) > 0
        bwd = (wb + tt) > 0
        arcs = sparse.coo_matrix(
            (np.ones(fwd.sum() + bwd.sum()),
             (np.concatenate([ia[fwd], ib[bwd]]), np.concatenate([ib[fwd], ia[bwd]]))),
            shape=(k, k),
        )  # fmt: skip
        n_comp, _ = csgraph.connected_components(arcs, directed=True, connection="strong")
        if n_comp > 1:
            return undefined(
                f"The win/tie graph has {n_comp} strongly connected components, so some strengths "
                "diverge (an item never loses or never wins against the rest); pass "
                "regularization > 0 for a penalised fit."
            )
    x = np.zeros(k + int(fit_ties))
    if fit_ties:
        x[k] = np.log(2.0 * n_ties / (n - n_ties))
    if isinstance(init, DavidsonFit):
        if init.log_strength is not None:
            pos = np.minimum(np.searchsorted(init.items, items), len(init.items) - 1)
            known = init.items[pos] == items
            x[:k] = np.where(known, init.log_strength[pos], 0.0)
            if fit_ties and init.tie_parameter:
                x[k] = np.log(init.tie_parameter)
    elif init is not None:
        start = np.asarray(init, dtype=np.float64)
        if start.shape != (k,):
            raise ValueError(f"init must hold {k} log-strengths, one per occurring item.")
        x[:k] = start
    if not regularization:
        x[:k] -= x[:k].mean()

    def objective(x):
        nll, g, blocks = _davidson_terms(x, ia, ib, wa, wb, tt, fit_ties, k)
        th = x[:k]
        nll += 0.5 * regularization * float(th @ th)
        g[:k] += regularization * th
        return nll, g, blocks

    nll, g, blocks = objective(x)
    hess = _Hessian(ia, ib, k, fit_ties)
    # without a ridge the likelihood is flat along (1, ..., 1, 0): the shift u u^T makes the Newton
    # system regular and its solution keeps sum(theta) fixed (the gradient is orthogonal to u)
    shift = 0.0 if regularization else 1.0
    converged, it = False, 0
    for it in range(1, max_iter + 1):  # noqa: B007
        hess.set(blocks, regularization, shift)
        step = hess.solve(-g, rtol=min(0.1, float(np.sqrt(np.abs(g).max()))))
        alpha, slope = 1.0, float(g @ step)
        while True:
            trial = x + alpha * step
            t_nll, t_g, t_blocks = objective(trial)
            if t_nll <= nll + 1e-4 * alpha * slope or alpha < 1e-10:
                break
            alpha *= 0.5
        x, nll, g, blocks = trial, t_nll, t_g, t_blocks
        if np.max(np.abs(alpha * step)) < tol:
            converged = True
            break
    if not regularization:
        x[:k] -= x[:k].mean()
    se = lam_se = None
    se_why = None
    if k > se_max_items:
        se_why = Undefined(f"{k} items exceed se_max_items = {se_max_items}.")
    else:
        hess.set(blocks, regularization, shift)
        h = hess.dense()
        u = np.r_[np.ones(k), np.zeros(int(fit_ties))]
        # Moore-Penrose inverse of the observed information: the covariance in the gauge
        # sum(theta) = 0, (H + u u^T)^-1 - u u^T / |u|^4. With a ridge H is regular, but its
        # smallest eigenvalue (the ridge, along u) would swamp every variance: project the
        # covariance onto the gauge, P H^-1 P with P = I - u u^T / k.
        if regularization:
            proj = np.eye(h.shape[0]) - np.outer(u, u) / k
            cov = proj @ np.linalg.inv(h) @ proj
        else:
            cov = np.linalg.inv(h) - np.outer(u, u) / k**2
        var = np.clip(np.diag(cov), 0, None)
        se = np.sqrt(var[:k])
        if fit_ties:
            lam_se = float(np.exp(x[k]) * np.sqrt(var[k]))
    loglik = -(nll - 0.5 * regularization * float(x[:k] @ x[:k]))
    nu = float(np.exp(x[k])) if fit_ties else 0.0
    return DavidsonFit(
        items, x[:k].copy(), se, nu, lam_se if fit_ties else None, loglik, n, n_ties,
        converged, it, max_iter, tol, None, se_why,
    )  # fmt: skip
