"""The rating model brought up to date after new judgments on a few items (local update).

Every step of :func:`~monitor.metrics.ratings.model.rating_model` is a function of per-item sums
(``sum_j w_j``, ``sum_j w_j y_ij``, ``sum_j w_j^2``) and of six per-worker sums over the
worker's judgments (the ``bincount(wk, ...)`` of the sweep), given the biases ``b`` and noise
variances ``s^2`` (``w = 1 / s^2``)::

    m_j  = #{ok}                      mb_j = #{ok, not censored}
    R_j  = sum_free r_ij              CB_j = sum_free v_ij^2 q_ij
    A_j  = sum_ok (r_ij^2 - v_ij)     C_j  = sum_ok v_ij^2 q_ij

(``r_ij = x_ij - mu_i^(-j)``, ``v_ij`` its variance, ``q_ij = sum_{j' != j} w_j'^2`` on the
item). The step is then ``b_j = (CB_j b_j + R_j) / (CB_j + mb_j + k_j)`` (gauge: minus the
``mb``-weighted mean), ``ss_j = A_j - 2 b_j R_j + b_j^2 mb_j``, ``s0^2 = sum_j ss_j / sum_j m_j``,
``s_j^2 = (c_j s_j^2 + (nu s0^2 + ss_j) / (nu + m_j)) / (1 + c_j)`` with ``c_j = C_j / m_j``,
the priors' weights ``k_j`` (:func:`~monitor.metrics.ratings.priors.bias_prior`) and ``nu``
(:func:`~monitor.metrics.ratings.priors.noise_prior`) functions of the same sums: the full sweep
without gold, history priors or tied pairs. An item's part of the sums depends
only on its own judgments and their judges' ``b, s``: worker ``j``'s part through the other
judges of the item (``r_ij``, ``v_ij``, ``q_ij`` leave ``j`` out).

A run keeps the sums over every item at the parameters it ended with, and their derivatives
by the other workers' parameters (:func:`worker_jacobian`, a sparse (4 W, W) matrix, at a
linearisation point that is kept until the pipeline refits globally). The next run subtracts
the touched items' old part (their judgments as the last run counted them, at the parameters
it was added with), which leaves the untouched items' sums, and iterates over the touched
items' judgments alone, the untouched items' sums to first order:
``S(b, w) = S(b', w') + J_b (b - b') + J_w (w - w')``. Freezing them instead (order zero) is
not enough: with 5 judgments per item a worker's sums follow their co-judges' parameters
with slopes about 1/4 each, and the parameters move by a few 1e-3 of the scale after 1% new
judgments, so the frozen fit missed the full one by 2e-3 to 1e-2 (measured at 200k and 1M
judgments); to first order it is within 1e-5 to 2e-4.

The result is checked globally: one pass over every judgment at the final parameters
computes the outputs, the sums for the next run, and the step the full iteration would take
from there. That step's largest move of a bias or noise sd (``global_move``) is the full fit's
stopping statistic: the full fit stops below ``tol * (max - min)``; its plain iteration
contracts by about 0.7 a sweep, so the distance to the fixed point is about
``0.7 / 0.3 ~ 2.3`` times the move (measured: 2 to 3). Above ``move_tol``, a second round
starts from there, the untouched items' sums exact at the new parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import sparse

from monitor.metrics.common import check_same_length, group_mean
from monitor.metrics.ratings.model import (
    Judgments,
    Priors,
    RatingModel,
    RatingOptions,
    as_codes,
    at_scale_bound,
    model_outputs,
    scale_span,
    tied_pairs,
)
from monitor.metrics.ratings.priors import bias_prior, noise_prior
from monitor.metrics.ratings.squarem import Sweep, squarem

N_SUMS = 6  # m, mb, R, CB, A, C
N_BLOCKS = 4  # dR/db, dA/db, dR/dw, dA/dw


@dataclass(frozen=True, eq=False)
class ModelState:
    """What a run keeps for the next local update: the per-worker sums over every judgment at
    the parameters ``bias``, ``noise_sd``, and their derivatives by the other workers'
    parameters (:func:`worker_jacobian`) taken at ``at_bias``, ``at_noise``.

    ``sums`` : ndarray, shape (W, 6), columns m, mb, R, CB, A, C (module docstring);
    ``jac`` : sparse, shape (4 W, W)."""

    bias: NDArray[np.float64]  # (W,)
    noise_sd: NDArray[np.float64]  # (W,)
    sums: NDArray[np.float64]  # (W, 6)
    at_bias: NDArray[np.float64]  # (W,)
    at_noise: NDArray[np.float64]  # (W,)
    jac: sparse.csr_array

    def to_arrays(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(W, 10): bias, noise sd, the sums, the linearisation point; (nnz, 3): the
        derivatives as (row, column, value)."""
        coo = self.jac.tocoo()
        return (
            np.column_stack([self.bias, self.noise_sd, self.sums, self.at_bias, self.at_noise]),
            np.column_stack([coo.row, coo.col, coo.data]).astype(np.float64),
        )

    @classmethod
    def from_arrays(cls, a: NDArray[np.float64], jac: NDArray[np.float64]) -> ModelState:
        """The inverse of :meth:`to_arrays`."""
        W = a.shape[0]
        if a.ndim != 2 or a.shape[1] != 4 + N_SUMS or jac.ndim != 2 or jac.shape[1] != 3:
            raise ValueError("a model state is a (W, 10) and an (nnz, 3) array.")
        rows, cols = jac[:, 0].astype(np.int64), jac[:, 1].astype(np.int64)
        m = sparse.csr_array((jac[:, 2], (rows, cols)), shape=(N_BLOCKS * W, W))
        return cls(a[:, 0], a[:, 1], a[:, 2:8], a[:, 8], a[:, 9], m)


def worker_sums(
    j: Judgments, b: NDArray[np.float64], var: NDArray[np.float64], n_items: int, n_workers: int
) -> tuple[NDArray[np.float64], NDArray[np.bool_], NDArray[np.float64], NDArray[np.float64]]:
    """The item means and the six per-worker sums of one step from ``b``, ``var`` over the
    judgments ``j`` (every judgment of each item they touch, no gold, no tied pairs).

    Returns (mu (N,), ok (n,), loo_v (n,), sums (W, 6))."""
    it, wk, x, at_bound = j
    w = 1.0 / var[wk]
    y = np.where(at_bound, x, x - b[wk])
    s_sum = np.bincount(it, weights=w * y, minlength=n_items)
    w_sum = np.bincount(it, weights=w, minlength=n_items)
    mu = s_sum / np.where(w_sum > 0, w_sum, 1.0)
    ws = w_sum[it]
    loo_w = ws - w
    ok = loo_w > 1e-12 * ws
    safe = np.where(ok, loo_w, 1.0)
    loo_v = 1.0 / safe
    r = np.where(ok, x - (s_sum[it] - w * y) / safe, 0.0)
    okf = ok.astype(np.float64)
    free = np.where(at_bound, 0.0, okf)
    q = np.bincount(it, weights=w * w, minlength=n_items)[it] - w * w
    v2q = np.where(ok, loo_v * loo_v * q, 0.0)
    cols = (okf, free, free * r, free * v2q, np.where(ok, r * r - loo_v, 0.0), v2q)
    sums = np.column_stack([np.bincount(wk, weights=c, minlength=n_workers) for c in cols])
    return mu, ok, loo_v, sums.astype(np.float64, copy=False)


@dataclass(frozen=True, eq=False)
class LocalFit:
    """A locally updated model and the state the next run starts from. ``global_move``: the
    largest move of a bias or noise sd that one step of the full iteration would still make;
    ``drift``: the largest distance of a bias or noise sd from the point the derivatives were
    taken at (both in the scale's units)."""

    model: RatingModel
    state: ModelState
    global_move: float
    drift: float
    local_judgments: int
    rounds: int = 1


def _grow(jac: sparse.csr_array, W0: int, W: int) -> sparse.csr_array:
    """The (4 W0, W0) blocks of ``jac`` as (4 W, W), zero for the new workers."""
    if W0 == W:
        return jac
    coo = jac.tocoo()
    block, j = np.divmod(coo.row, W0) if W0 else (coo.row, coo.row)
    return sparse.csr_array((coo.data, (block * W + j, coo.col)), shape=(N_BLOCKS * W, W))


def _extend(a: NDArray[np.float64], n: int, fill: float) -> NDArray[np.float64]:
    out = np.full(n, fill)
    out[: a.size] = np.where(np.isfinite(a), a, fill)
    return out


def rating_model_update(
    items: ArrayLike,
    workers: ArrayLike,
    values: ArrayLike,
    *,
    touched: ArrayLike,
    old_items: ArrayLike,
    old_workers: ArrayLike,
    old_values: ArrayLike,
    previous: ModelState,
    n_items: int,
    n_workers: int,
    scale: tuple[float, float],
    max_iter: int = 100,
    tol: float = 1e-6,
    move_tol: float = 2.5e-5,
    max_rounds: int = 3,
    fit_options: RatingOptions | None = None,
) -> LocalFit | None:
    """Bring the model of the last run up to date by iterating over the ``touched`` items only
    (module docstring).

    ``items``, ``workers``, ``values``: every (latest) judgment now. ``touched``: (T,) codes of
    the items whose judgments changed since the last run; ``old_*``: those items' judgments as
    the last run counted them. ``previous``: the last run's state (workers beyond its rows are
    new). No gold and no history priors (the caller refits globally). A round iterates over the
    touched items to ``tol`` and then takes one pass over every judgment; while a full step from
    there would move a bias or noise sd by more than ``move_tol * (max - min)``, the next round
    starts from there (the untouched items' sums then exact again), at most ``max_rounds``
    rounds. Returns None where the local step is not the model's (a pair of workers whose noise
    is tied, see :func:`~monitor.metrics.ratings.model.tied_pairs`; no item with two judgments)
    or the local iteration does not converge. ``fit_options``: the full fit's settings (its
    defaults where None): an update flags and censors as a full fit does.
    """
    span = scale_span(scale)
    options = RatingOptions() if fit_options is None else fit_options
    floor2, bias, censored = options.floor2(span), options.bias, options.censored
    j = Judgments.coded(items, workers, values, (n_items, n_workers), scale, censored)
    it, wk, x, at_bound = j
    t = np.unique(as_codes("touched", touched, n_items))
    W0, W = previous.bias.size, n_workers
    if W < W0 or previous.sums.shape != (W0, N_SUMS) or previous.jac.shape != (N_BLOCKS * W0, W0):
        raise ValueError("previous must describe at most n_workers workers.")
    n_i = np.bincount(it, minlength=n_items).astype(np.float64)
    no_gold = np.zeros(n_items, dtype=bool)
    if not np.any(n_i >= 2) or tied_pairs(j, n_i, no_gold, np.ones(W, dtype=bool))[0].any():
        return None  # no residual at all (the full fit keeps its first pooled variance); tied

    code = np.full(n_items, -1, dtype=np.int64)
    code[t] = np.arange(t.size)
    o_it = as_codes("old_items", old_items, n_items)
    o_wk = as_codes("old_workers", old_workers, max(W0, 1))
    o_x = np.asarray(old_values, dtype=np.float64).reshape(-1)
    check_same_length(old_items=o_it, old_workers=o_wk, old_values=o_x)
    if np.any(code[o_it] < 0) or (o_wk.size and o_wk.max() >= W0):
        raise ValueError("old judgments must be on touched items, by known workers.")
    old = Judgments(code[o_it], o_wk, o_x, at_scale_bound(o_x, scale, censored))
    sel = np.flatnonzero(code[it] >= 0)
    local = Judgments(code[it[sel]], wk[sel], x[sel], at_bound[sel])

    # the untouched items' sums at the last parameters, and their derivatives
    b0, v0 = _extend(previous.bias, W, 0.0), _extend(previous.noise_sd**2, W, np.nan)
    bj, vj = _extend(previous.at_bias, W, 0.0), _extend(previous.at_noise**2, W, np.nan)
    new = np.isnan(v0)
    if new.any():  # new workers start at the touched items' pooled residual variance
        l_it, l_x = local.it, local.x
        plain = group_mean(l_it, l_x, t.size)
        s0 = max(float(np.mean((l_x - plain[l_it]) ** 2)) if l_x.size else floor2, floor2)
        v0, vj = np.where(new, s0, v0), np.where(np.isnan(vj), s0, vj)
    frozen = np.zeros((W, N_SUMS))
    frozen[:W0] = previous.sums
    frozen -= worker_sums(old, b0, v0, t.size, W)[3]
    jac = _grow(previous.jac, W0, W)
    jac = jac - worker_jacobian(old, bj, vj, t.size, W)
    jb, jw = jac[: 2 * W], jac[2 * W :]
    at = [b0, 1.0 / v0]  # where the frozen sums are exact

    def step(
        sums: NDArray[np.float64], b: NDArray[np.float64], var: NDArray[np.float64]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """One step of the rating model's iteration from its per-worker sums (module
        docstring); the same step as the full sweep without gold, history priors or tied
        pairs."""
        m, mb, R, CB, A, C = sums.T
        kappa = bias_prior(var, mb, R, A, C, m) if bias else np.ones_like(b)
        new_b = R / (mb + kappa)
        cb = CB / (mb + kappa)
        new_b = (cb * b + new_b) / (1.0 + cb)
        if not bias:
            new_b = np.zeros_like(b)
        elif m.sum() > 0:
            new_b = new_b - np.sum(mb * new_b) / max(mb.sum(), 1.0)
        ss = A - 2.0 * new_b * R + new_b * new_b * mb
        pooled = max(float(ss.sum() / m.sum()), floor2) if m.sum() > 0 else floor2
        nu = noise_prior(ss, m, C, pooled)
        new_var = np.maximum((nu * pooled + ss) / np.maximum(nu + m, 1e-12), floor2)
        c = C / np.maximum(m, 1.0)
        return new_b, (c * var + new_var) / (1.0 + c)

    def sweep(b: NDArray[np.float64], var: NDArray[np.float64]) -> Sweep:
        """A step on the touched items, the others' sums to first order in the parameters."""
        mu, ok, loo_v, live = worker_sums(local, b, var, t.size, W)
        db, dw = jb @ (b - at[0]), jw @ (1.0 / var - at[1])
        lin = frozen + live
        lin[:, 2] += db[:W] + dw[:W]
        lin[:, 4] += db[W:] + dw[W:]
        nb, nv = step(lin, b, var)
        return Sweep(mu, nb, nv, ok, loo_v)

    used = np.bincount(wk, minlength=W) > 0
    b, var, iterations = b0, v0, 0
    for rounds in range(1, max_rounds + 1):
        fit = squarem(sweep, np.zeros(t.size), b, var, max_iter, tol * span)
        if not fit.converged:
            return None
        b, var, iterations = fit.b, fit.var, iterations + fit.iterations
        # one pass over every judgment: outputs, the next run's sums, the step of the full fit
        mu, ok, loo_v, total = worker_sums(j, b, var, n_items, W)
        nb, nv = step(total, b, var)
        sd = np.sqrt(var)
        move = max(
            float(np.max(np.abs(nb - b)[used], initial=0.0)),
            float(np.max(np.abs(np.sqrt(nv) - sd)[used], initial=0.0)),
        )
        if move <= move_tol * span or rounds == max_rounds:
            break
        # again from here: the untouched items' sums exact at these parameters
        frozen = total - worker_sums(local, b, var, t.size, W)[3]
        at[:] = [b, 1.0 / var]
    bj, sj = np.where(new, b, bj), np.where(new, sd, np.sqrt(vj))
    drift = max(
        float(np.max(np.abs(b - bj)[used], initial=0.0)),
        float(np.max(np.abs(sd - sj)[used], initial=0.0)),
    )
    jac = jac + worker_jacobian(local, bj, sj**2, t.size, W)
    fit = Sweep(mu, b, var, ok, loo_v, iterations, True)
    model = model_outputs(j, fit, Priors.none(n_items, W), options, span)
    state = ModelState(b.copy(), sd, total, bj, sj, sparse.csr_array(jac))
    return LocalFit(model, state, move, drift, int(sel.size), rounds)


def model_state(
    items: ArrayLike,
    workers: ArrayLike,
    values: ArrayLike,
    *,
    bias: ArrayLike,
    noise_sd: ArrayLike,
    n_items: int,
    n_workers: int,
    scale: tuple[float, float],
    censored: bool = True,
    chunk: int = 1_000_000,
) -> ModelState:
    """The state a local update starts from, at a fitted model's ``bias`` and ``noise_sd``
    ((W,), NaN for workers without judgments): the sums and their derivatives over every
    judgment, added up over blocks of whole items of about ``chunk`` judgments (an item's
    part depends on its judgments alone; the blocks bound the memory)."""
    it, wk, x, at_bound = Judgments.coded(
        items, workers, values, (n_items, n_workers), scale, censored
    )
    b = _extend(np.asarray(bias, dtype=np.float64), n_workers, 0.0)
    sd = _extend(np.asarray(noise_sd, dtype=np.float64), n_workers, 1.0)
    W = n_workers
    total = np.zeros((W, N_SUMS))
    jac = sparse.csr_array((N_BLOCKS * W, W))
    order = np.argsort(it, kind="stable")
    ends = np.cumsum(np.bincount(it, minlength=n_items))
    cuts = np.unique(np.searchsorted(ends, np.arange(chunk, it.size, chunk)))
    for lo, hi in zip(np.r_[0, cuts + 1], np.r_[cuts + 1, n_items], strict=True):
        sub = order[(ends[lo - 1] if lo else 0) : ends[hi - 1] if hi else 0]
        if not sub.size:
            continue
        part = Judgments(it[sub] - lo, wk[sub], x[sub], at_bound[sub])
        total += worker_sums(part, b, sd**2, int(hi - lo), W)[3]
        jac = jac + worker_jacobian(part, b, sd**2, int(hi - lo), W)
    return ModelState(b, sd, total, b.copy(), sd.copy(), sparse.csr_array(jac))


def worker_jacobian(
    j: Judgments, b: NDArray[np.float64], var: NDArray[np.float64], n_items: int, n_workers: int
) -> sparse.csr_array:
    """The derivatives of the per-worker sums R and A by the biases and by the weights
    ``w = 1 / s^2`` of the workers co-judging the items: (4 W, W), blocks in that order, rows
    the summing worker ``j``, columns ``p``. With ``L = sum_{p != j} w_p``:
    ``dr_ij / db_p = w_p / L``, ``dr_ij / dw_p = -(y_p - mu_i^(-j)) / L``,
    ``dv_ij / dw_p = -1 / L^2``; each a product of a factor of ``j`` and one of ``p`` on the
    item, so a block is ``F_j^T G_p`` (sparse item x worker matrices) less the ``p = j``
    terms. CB and C damp the step (``b = (CB b + R) / (CB + mb + 1)`` and the like for
    ``s^2``): the fixed point of ``s^2`` does not depend on them, that of ``b`` only through
    the gauge's common shift; they are kept at order zero (with their derivatives the
    results at 200k judgments were the same to two digits). It takes :func:`worker_sums`'
    arguments: the derivatives of its sums over the same judgments."""
    W, n = n_workers, j.it.size
    # item x worker matrices are built row by row: the judgments sorted by item
    order = np.argsort(j.it, kind="stable")
    it, wk, x, at_bound = (a[order] for a in j)
    indptr = np.zeros(n_items + 1, dtype=np.int64)
    np.cumsum(np.bincount(it, minlength=n_items), out=indptr[1:])
    w = 1.0 / var[wk]
    y = np.where(at_bound, x, x - b[wk])
    s_sum = np.bincount(it, weights=w * y, minlength=n_items)
    ws = np.bincount(it, weights=w, minlength=n_items)[it]
    loo_w = ws - w
    ok = loo_w > 1e-12 * ws
    inv = np.where(ok, 1.0 / np.where(ok, loo_w, 1.0), 0.0)
    okf = ok.astype(np.float64)
    free = np.where(at_bound, 0.0, okf)
    loo = (s_sum[it] - w * y) * inv
    r = np.where(ok, x - loo, 0.0)
    wb = np.where(at_bound, 0.0, w)
    one = np.ones(n)
    # (factor of j, factor of p, block)
    terms = (
        (free * inv, wb, 0),
        (2.0 * r * inv, wb, 1),
        (-free * inv, y, 2),
        (free * loo * inv, one, 2),
        (-2.0 * r * inv, y, 3),
        (2.0 * r * loo * inv + okf * inv**2, one, 3),
    )
    out = sparse.csr_array((N_BLOCKS * W, W))
    diag = np.zeros((N_BLOCKS, W))
    for g in (wb, y, one):
        mine = [(f, k) for f, gg, k in terms if gg is g]
        blocks = np.array([k for _, k in mine])
        left = sparse.csr_array(
            (
                np.column_stack([f for f, _ in mine]).ravel(),
                (wk[:, None] + W * blocks[None, :]).ravel(),
                indptr * len(mine),
            ),
            shape=(n_items, N_BLOCKS * W),
        )
        right = sparse.csr_array((g, wk, indptr), shape=(n_items, W))
        out = out + left.T @ right
        for f, k in mine:
            diag[k] += np.bincount(wk, weights=f * g, minlength=W)
    rows = np.arange(N_BLOCKS * W)
    return out - sparse.csr_array((diag.ravel(), (rows, rows % W)), shape=(N_BLOCKS * W, W))
