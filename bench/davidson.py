"""Bradley-Terry with ties: Davidson (1970), *On extending the Bradley-Terry model to
accommodate ties in paired comparison experiments* (JASA 65:317), fitted campaign-wide by
Newton's method. The reference fit of the benches and tests; a campaign's item scores come from
the reliability model (:mod:`monitor.metrics.preferences.model`). Input conventions:
:mod:`monitor.metrics.preferences.judgments`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import sparse
from scipy.sparse import csgraph
from scipy.sparse.linalg import LinearOperator, cg

from monitor.metrics.common import Undefined
from monitor.metrics.preferences.judgments import validate


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
