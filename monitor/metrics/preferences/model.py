"""Reliability model for preferences: item scores and annotator reliability estimated together.

Crowd-BT (Chen, Bennett, Collins-Thompson & Horvitz, "Pairwise ranking aggregation in a
crowdsourced setting", WSDM 2013) with Davidson's (1970, *JASA* 65:317) ties and a position bias
per annotator. Annotator ``k`` compares ``l`` (left) with ``r`` (right), ``d = s_l - s_r``:

* tie: ``P(tie) = nu_k / (nu_k + 2 cosh(d / 2))``, Davidson's tie with the annotator's own
  ``nu_k = exp(lambda_k)``;
* strict answers: ``P(left | strict) = eta_k sig(d + b_k) + (1 - eta_k) sig(b_k - d)``: with
  probability ``eta_k`` the annotator answers along the Bradley-Terry outcome of the pair, else
  against it (Crowd-BT), and ``b_k`` is a log-odds offset toward the left slot in both branches.
  At ``eta = 1``, ``b = 0`` this is Davidson's model (``P(left) = (1 - P(tie)) sig(d)``).

Priors (the fit is their joint mode, by L-BFGS on variables scaled by their curvature; every
step is vectorised over comparisons):

* items ``s_i ~ N(0, SCORE_SD^2)``, weak: an item that only wins, one judged once, or a
  component of the comparison graph cut off from the rest stays finite;
* ``logit eta_k ~ N(m_k, RELIABILITY_SD^2)``: ``m_k = logit`` of the annotator's history accuracy
  when ``prior_accuracy`` gives one, else the crowd's ``mu``: an annotator with few answers is
  shrunk toward the crowd (or their history), one with many is not;
* ``b_k ~ N(0, sigma_b^2)``, ``sigma_b`` the crowd's (below); ``lambda_k ~ N(mu_t, TIE_SD^2)``,
  ``mu_t`` free (the crowd's mean tie propensity).

**The crowd's accuracy** ``expit(mu)`` is the share of strict answers that go along the
*leave-one-out* consensus: each answer's posterior probability of following the Bradley-Terry
outcome, computed with the scores that the other comparisons give (a cavity: the comparison's own
Fisher weight removed from the two items' precisions, its pull on them undone by one Newton step,
and the logistic averaged over the remaining uncertainty, ``sig(x / sqrt(1 + pi v / 8))``, MacKay
1992; the scores' variances by belief propagation). The plain joint mode of ``mu`` is no
estimate: the scores, fitted to each answer, explain disagreement as closeness of the items and
``mu`` runs off to ``+inf`` (every ``eta = 1``) where each pair is judged once; an empirical-Bayes
Beta-binomial on the EM's expected counts does the same. **The crowd's bias spread**
``sigma_b`` maximises the marginal likelihood of the annotators' unshrunk biases given the
scores (:func:`_bias_sd`); it falls to its floor ``BIAS_SD_MIN`` when the sides were randomised.
The fit alternates a fit at fixed ``(mu, sigma_b)`` with their updates (``mu`` by Newton's step
toward the fixed point) until ``mu`` moves by less than ``MU_TOL`` and ``sigma_b`` by less than
``BIAS_TOL``; a cold start's first fit stops early (``FIRST_TOL``).

**Gold** pairs clamp the consensus outcome: a comparison of a pair with gold order ``o`` enters
the scores as an answer along ``o`` by a perfect annotator (``log sig(o d)``), and the annotator's
strict answer enters only their reliability, ``P(answer = o) = eta_k``. A gold pair with equal
gold orders nothing: it is an ordinary comparison.

Intervals and per-annotator summaries: :mod:`monitor.metrics.preferences.model_summary`.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import NamedTuple, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize, special

from monitor.metrics.lbfgs import lbfgs
from monitor.metrics.preferences.accuracy import TrueAccuracy, consensus_right, true_accuracy
from monitor.metrics.preferences.model_data import Layout, PreferenceData, gold_order, prepare
from monitor.metrics.preferences.model_summary import (
    FisherTerms,
    PreferenceModel,
    PreferenceStart,
    annotator_information,
    fisher_terms,
    score_variance,
    sigmoid,
    summarise,
)
from monitor.metrics.preferences.posterior import (
    BIAS_SD,
    RELIABILITY_SD,
    SCORE_SD,
    TIE_SD,
    Posterior,
)

__all__ = ["PreferenceModel", "PreferenceStart", "gold_order", "preference_model", "prepare"]

BIAS_SD_MIN = 0.05
"""Floor of the crowd's bias sd: 0.05 logits is a 51% preference, nothing a user would act on;
below it the empirical-Bayes update only creeps toward 0."""
START_ACCURACY = 0.8
"""Starting eta and crowd accuracy: the crowd is taken to be better than chance (Crowd-BT's
likelihood is unchanged when every score changes sign and every eta becomes 1 - eta; the start
picks the side where the crowd is right)."""
MU_TOL = 2e-3
"""The crowd's accuracy is settled when an update moves it by less than this."""
BIAS_TOL = 0.05
"""The crowd's bias sd is settled when an update moves it by less than 5% of itself."""
MAX_OUTER = 8
CROWD_MIN = 1e-3
"""The crowd's accuracy stays within [CROWD_MIN, 1 - CROWD_MIN] (its logit is a prior mean)."""
FIRST_TOL = 0.1
"""A cold start's first fit, which only seeds the crowd's accuracy, stops at this gradient."""
FAST_TOL = 3e-3
"""Single-precision iterations stop at this scaled gradient; double precision takes it on."""


# --------------------------------------------------------------------------- fit


@overload
def _per_code(name: str, values: None, size: int) -> None: ...
@overload
def _per_code(name: str, values: ArrayLike, size: int) -> NDArray[np.float64]: ...
def _per_code(name: str, values: ArrayLike | None, size: int) -> NDArray[np.float64] | None:
    if values is None:
        return None
    arr = np.asarray(values, dtype=np.float64).reshape(-1)
    if arr.shape != (size,):
        raise ValueError(f"{name} must have one entry per code ({size}), got shape {arr.shape}.")
    return arr


def _logit(name: str, acc: NDArray[np.float64] | None, size: int) -> NDArray[np.float64]:
    """logit of probabilities (NaN kept), clipped to [0.001, 0.999]."""
    if acc is None:
        return np.full(size, np.nan)
    bad = np.isfinite(acc) & ((acc < 0) | (acc > 1))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name}[{k}] is {acc[k]}; an accuracy must lie in [0, 1] (NaN: none).")
    return special.logit(np.clip(acc, 1e-3, 1 - 1e-3))


def preference_model(
    workers: ArrayLike,
    left: ArrayLike,
    right: ArrayLike,
    outcome: ArrayLike,
    *,
    n_workers: int | None = None,
    n_items: int | None = None,
    ties_allowed: bool = True,
    position_bias: bool = True,
    gold: ArrayLike | None = None,
    prior_accuracy: ArrayLike | None = None,
    init: PreferenceStart | None = None,
    max_iter: int = 1000,
    tol: float = 1e-3,
    confidence: float = 0.95,
) -> PreferenceModel:
    """Fit Crowd-BT with ties and position bias (module docstring) to every comparison.

    ``workers, left, right, outcome : (n,)`` in the convention of
    :mod:`monitor.metrics.preferences.judgments` (repeats are observations). ``gold : (n,)`` the gold order
    of each comparison's pair: positive when the left item is the better, negative when the right
    one, 0 for equal gold, NaN for none (:func:`gold_order` builds it from items' gold values).
    ``prior_accuracy : (W,)`` an annotator's accuracy from history (NaN: none), the centre of
    their reliability prior instead of the crowd's. ``init`` warm-starts every parameter (NaN
    entries, new items and new annotators start cold).

    ``tol`` bounds the largest gradient of the log posterior in variables scaled by their
    curvature, about the distance to the mode in posterior sds; ``max_iter`` caps the L-BFGS
    iterations over all the fits of the crowd's accuracy. A warm fit stops at the same ``tol``
    and ``MU_TOL`` as a cold one, so the two agree within a few ``tol`` posterior sds (the
    tolerance test in tests/metrics checks 0.01 sd). Ties are modelled when ``ties_allowed`` and
    some answer is a tie (else ``nu = 0``); a tie when ties are not allowed is an error.
    ``position_bias=False`` fixes every ``b_k`` at 0.
    """
    if max_iter < 1 or not tol > 0:
        raise ValueError("max_iter must be >= 1 and tol > 0.")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}.")
    D = prepare(workers, left, right, outcome, gold, n_workers, n_items)
    n_ties = len(D.y) - D.b
    if n_ties and not ties_allowed:
        raise ValueError(
            f"The campaign allows no ties but {n_ties} answers are ties; "
            "pass ties_allowed=True or remove them."
        )
    lay = Layout(D.n_items, D.n_workers, position_bias, n_ties > 0)
    prior = _logit("prior_accuracy", _per_code("prior_accuracy", prior_accuracy, lay.n_workers),
                   lay.n_workers)  # fmt: skip
    x = _start(D, lay, prior, init)
    crowd = START_ACCURACY
    if init is not None and init.crowd_accuracy is not None:
        crowd = float(np.clip(init.crowd_accuracy, 0.01, 0.99))
    fast = Posterior(D, lay, prior, float(special.logit(crowd)), np.float32)
    post = Posterior(D, lay, prior, fast.mu, np.float64)
    if lay.bias:
        known = init.crowd_bias_sd if init is not None else None
        start = float(known) if known is not None else _raw_bias_sd(D, lay.n_workers)
        post.bias_sd = fast.bias_sd = max(start, BIAS_SD_MIN)
    iterations, converged, messages = 0, False, None
    # a cold first fit only approaches the mode: the crowd's accuracy will still move
    fit_tol = tol if init is not None else max(10 * tol, FIRST_TOL)
    terms = fisher_terms(D, lay, x)
    for _ in range(MAX_OUTER):
        scale = 1.0 / np.sqrt(_curvature(D, lay, terms, post.bias_sd))
        x, nit, fitted = _minimise(fast, post, x, scale, fit_tol, max_iter - iterations)
        iterations += nit
        terms = fisher_terms(D, lay, x)
        new, slope, messages = crowd_accuracy(D, lay, post, x, terms, messages)
        move = abs(new - special.expit(post.mu))
        bias_sd = _bias_sd(D, lay, x, terms, post.bias_sd) if lay.bias else post.bias_sd
        bias_move = abs(np.log(bias_sd / post.bias_sd))
        if move < MU_TOL and bias_move < BIAS_TOL and fit_tol <= tol:
            converged = fitted
            break
        if iterations >= max_iter:
            break
        if move >= MU_TOL:
            # Newton's step on logit(new(mu)) - mu, at most 2 logits
            step = (special.logit(new) - post.mu) / max(1 - slope, 0.1)
            post.mu = fast.mu = post.mu + float(np.clip(step, -2, 2))
        post.bias_sd = fast.bias_sd = bias_sd
        fit_tol = tol
    f, _ = post(x)
    fit = summarise(D, lay, x, terms, post.mu, -f, converged, iterations, max_iter,
                    tol, confidence, (SCORE_SD, RELIABILITY_SD, post.bias_sd, TIE_SD),
                    messages)  # fmt: skip
    equal = None
    if gold is not None:
        equal = np.asarray(gold, dtype=np.float64).reshape(-1)[D.order] == 0
    truth = answer_accuracy(Fitted(D, lay, x, terms, messages), confidence, equal)
    right = np.full(D.w.size, np.nan)  # by input position: each strict answer's c_n
    right[D.order[: D.b]] = truth.right
    return replace(fit, answer_accuracy=truth.accuracy, answer_accuracy_low=truth.low,
                   answer_accuracy_high=truth.high, answer_strict=truth.strict,
                   answer_right=right)  # fmt: skip


class Fitted(NamedTuple):
    """A fit's scores with what reading them takes: the data and layout, the parameters ``x``,
    their Fisher terms and the belief-propagation messages of the scores' variances (None:
    from scratch)."""

    D: PreferenceData
    lay: Layout
    x: NDArray[np.float64]
    terms: FisherTerms
    messages: NDArray[np.float64] | None = None


def answer_accuracy(
    fitted: Fitted, confidence: float = 0.95, equal: NDArray[np.bool_] | None = None
) -> TrueAccuracy:
    """Each annotator's expected share of answers along the true order, with its interval
    (:mod:`monitor.metrics.preferences.accuracy`): a strict answer off gold is right with the
    chance the consensus of the other annotators gives (:func:`consensus_cavity`), one on a
    gold pair is right or wrong as gold says, a tie is wrong. ``equal : (n,)`` in block order,
    the comparisons whose gold says the two items are equal: there a tie is right and a strict
    answer wrong."""
    D, lay = fitted.D, fitted.lay
    a, b, c = D.a, D.b, D.c
    mean, var = consensus_cavity(fitted)
    off = consensus_right(D.y[:a], mean, var)
    workers, n_ties = D.w[:b], np.bincount(D.w[b:], minlength=lay.n_workers)
    if equal is not None and equal.any():
        off = np.where(equal[:a], 0.0, off)
        tie_right = np.flatnonzero(equal[c:]) + c
        workers = np.concatenate([workers, D.w[tie_right]])
        n_ties = n_ties - np.bincount(D.w[tie_right], minlength=lay.n_workers)
    right = np.concatenate([off, (D.y[a:b] == D.o[a:b]).astype(np.float64),
                            np.ones(len(workers) - b)])  # fmt: skip
    truth = true_accuracy(workers, right, n_ties, lay.n_workers, confidence)
    return replace(truth, right=right[:b])


def _minimise(
    fast: Posterior,
    exact: Posterior,
    x: NDArray[np.float64],
    scale: NDArray[np.float64],
    tol: float,
    budget: int,
) -> tuple[NDArray[np.float64], int, bool]:
    """L-BFGS on the single-precision posterior down to ``FAST_TOL``, then on the double-precision
    one (near the mode single precision cannot resolve the decrease a line search needs, and
    L-BFGS wanders); returns the mode, the iterations and whether the largest scaled gradient is
    within ``tol``."""
    nit, ok = 0, False
    for post, target in ((fast, max(tol, FAST_TOL)), (exact, tol)):
        if budget - nit < 1:
            break
        z, k, ok = lbfgs(partial(_scaled, post, scale=scale), x / scale, target, budget - nit)
        x, nit = z * scale, nit + k
        if ok and target <= tol:
            break
    return x, nit, ok


def _raw_bias_sd(D: PreferenceData, n_workers: int) -> float:
    """A starting sd of position bias from each annotator's raw share of "left" among strict
    answers off gold (what it is when the sides are randomised): the spread of their log odds
    beyond what binomial noise explains, at least ``BIAS_SD_MIN``, at most ``BIAS_SD``."""
    ws = D.w[: D.a]
    n = np.bincount(ws, minlength=n_workers)
    seen = n > 0
    if not seen.any():
        return BIAS_SD
    lefts = np.bincount(ws, D.y[: D.a] > 0, n_workers)[seen]
    q = (lefts + 0.5) / (n[seen] + 1)
    spread = np.mean(special.logit(q) ** 2 - 1 / ((n[seen] + 1) * q * (1 - q)))
    return float(np.clip(np.sqrt(max(spread, 0.0)), BIAS_SD_MIN, BIAS_SD))


def _bias_sd(
    D: PreferenceData, lay: Layout, x: NDArray[np.float64], terms: FisherTerms, current: float
) -> float:
    """The crowd's sd of position bias ``sigma`` by maximum marginal likelihood given the scores
    and reliabilities: each annotator's unshrunk bias ``b_k (I_k + 1 / current^2) / I_k`` (``I_k``
    the information of their strict answers about ``b_k``) is taken as ``N(0, sigma^2 + 1 /
    I_k)``. One step lands at the estimate (an EM step on ``sigma^2`` only creeps toward it when
    the crowd has little bias); at least ``BIAS_SD_MIN``."""
    b = lay.unpack(x)[2]
    i_gg, i_gb, i_bb = annotator_information(D, terms, lay.n_workers, RELIABILITY_SD, current)
    info = i_bb - 1 / current**2 - i_gb**2 / i_gg
    seen = info > 1e-9
    if not seen.any():
        return current
    v = 1 / info[seen]
    raw2 = (b[seen] * (info[seen] + 1 / current**2) * v) ** 2

    def nll(log_var: float) -> float:
        tot = np.exp(log_var) + v
        return float(np.sum(np.log(tot) + raw2 / tot))

    best = optimize.minimize_scalar(
        nll, bounds=(2 * np.log(BIAS_SD_MIN), 2 * np.log(10.0)), method="bounded"
    )
    return float(max(np.exp(0.5 * best.x), BIAS_SD_MIN))


def strict_pull(
    D: PreferenceData, lay: Layout, x: NDArray[np.float64]
) -> tuple[NDArray, NDArray, NDArray, NDArray, NDArray | float, NDArray]:
    """For each strict answer off gold (rows ``[0, a)``) at the parameters ``x``: its annotator,
    its answer ``y``, its pair's score difference ``d``, the annotator's ``eta``, the offset
    ``y b`` (0 without position bias) and the answer's pull on ``d``, ``d log P(y) / dd``."""
    a = D.a
    s, g, b, _, _ = lay.unpack(x)
    ws, ys = D.w[:a], D.y[:a]
    d = s[D.left[:a]] - s[D.right[:a]]
    e = sigmoid(g)[ws]
    yb = ys * b[ws] if b is not None else 0.0
    A, C = sigmoid(yb + ys * d), sigmoid(yb - ys * d)
    grad_d = ys * (e * A * (1 - A) - (1 - e) * C * (1 - C)) / (C + e * (A - C))
    return ws, ys, d, e, yb, grad_d


def crowd_accuracy(
    D: PreferenceData,
    lay: Layout,
    post: Posterior,
    x: NDArray[np.float64],
    terms: FisherTerms,
    messages: NDArray[np.float64] | None = None,
) -> tuple[float, float, NDArray[np.float64] | None]:
    """The share of strict answers along the leave-one-out consensus (module docstring): the
    posterior probability that each answer follows the Bradley-Terry outcome, with the scores
    of the pair taken from every other comparison; gold answers count as they are.

    Also returns the slope of its logit in ``mu`` with the scores held (each ``eta_k`` moves by
    ``var(logit eta_k) / RELIABILITY_SD^2`` per unit of ``mu``), for a Newton step toward the
    fixed point, and the belief-propagation messages of the scores' variances."""
    a = D.a
    if D.b == 0:
        return float(special.expit(post.mu)), 0.0, messages
    ws, ys, d, e, yb, grad_d = strict_pull(D, lay, x)
    weight = terms.weight
    var, _, messages = score_variance(D.pair, D.pairs, weight, lay.n_items, 1 / SCORE_SD**2, 0,
                                      1e-3, messages, D.edges)  # fmt: skip
    # the comparison's own information removed from the variance of d (var_l + var_r)
    v_d = var[D.left[:a]] + var[D.right[:a]]
    v = v_d / np.maximum(1 - weight[:a] * v_d, 0.05)
    d_cav = d - grad_d * v
    k = 1 / np.sqrt(1 + np.pi * v / 8)
    A, C = sigmoid((yb + ys * d_cav) * k), sigmoid((yb - ys * d_cav) * k)
    P = C + e * (A - C)
    along = (D.y[a : D.b] == D.o[a : D.b]).sum()
    n = a + D.b - D.a
    share = float(np.clip(((e * A / P).sum() + along) / n, CROWD_MIN, 1 - CROWD_MIN))
    i_gg, i_gb, i_bb = annotator_information(D, terms, lay.n_workers, RELIABILITY_SD,
                                             post.bias_sd if lay.bias else None)  # fmt: skip
    var_g = i_bb / (i_gg * i_bb - i_gb**2) if lay.bias else 1 / i_gg
    moves = np.where(post.has_prior, 0.0, var_g / RELIABILITY_SD**2)
    slope = float((A * C / P**2 * e * (1 - e) * moves[ws]).sum() / n)
    return share, slope / (share * (1 - share)), messages


def _scaled(
    post: Posterior, z: NDArray[np.float64], scale: NDArray[np.float64]
) -> tuple[float, NDArray[np.float64]]:
    f, g = post(z * scale)
    return f, g * scale


def _curvature(
    D: PreferenceData, lay: Layout, terms: FisherTerms, bias_sd: float
) -> NDArray[np.float64]:
    """The diagonal of the expected information at ``terms``' point: scaling every parameter by
    its posterior sd makes the problem nearly isotropic, and L-BFGS needs far fewer steps on
    sparse comparison graphs."""
    n_i, W = lay.n_items, lay.n_workers
    out = np.empty(lay.size)
    w = terms.weight
    out[:n_i] = np.bincount(D.left, w, n_i) + np.bincount(D.right, w, n_i) + 1 / SCORE_SD**2
    i_gg, _, i_bb = annotator_information(D, terms, W, RELIABILITY_SD,
                                          bias_sd if lay.bias else None)  # fmt: skip
    out[lay.g : lay.b] = i_gg
    if lay.bias:
        out[lay.b : lay.t] = i_bb
    if lay.ties:
        p = terms.p_tie
        out[lay.t : -1] = np.bincount(D.w, p * (1 - p), W) + 1 / TIE_SD**2
        out[-1] = max(W, 1) / TIE_SD**2
    return out


def _start(
    D: PreferenceData, lay: Layout, prior: NDArray[np.float64], init: PreferenceStart | None
) -> NDArray[np.float64]:
    n_i, W = lay.n_items, lay.n_workers
    x = np.zeros(lay.size)
    # scores start at the log odds of each item's share of wins (ties half), shrunk by one
    # win and one loss: most of the way to the mode on sparse designs, for two bincounts
    won = np.bincount(D.left, (D.y + 1) / 2, n_i) + np.bincount(D.right, (1 - D.y) / 2, n_i)
    seen = np.bincount(D.left, minlength=n_i) + np.bincount(D.right, minlength=n_i)
    x[:n_i] = special.logit((won + 1) / (seen + 2))
    g = np.where(np.isfinite(prior), prior, special.logit(START_ACCURACY))
    lam = np.zeros(W)
    if lay.ties:
        rate = (len(D.y) - D.b) / len(D.y)
        lam[:] = np.log(2 * rate / (1 - rate)) if rate < 1 else 0.0
    if init is not None:
        s0 = _per_code("init.score", init.score, n_i)
        x[:n_i] = np.where(np.isfinite(s0), s0, x[:n_i])
        a0 = _logit("init.accuracy", _per_code("init.accuracy", init.accuracy, W), W)
        g = np.where(np.isfinite(a0), a0, g)
        if lay.bias and init.position_bias is not None:
            b0 = _per_code("init.position_bias", init.position_bias, W)
            x[lay.b : lay.t] = np.where(np.isfinite(b0), b0, 0.0)
        if lay.ties and init.tie_propensity is not None:
            p0 = _logit("init.tie_propensity", _per_code("init.tie_propensity",
                        init.tie_propensity, W), W)  # fmt: skip
            lam = np.where(np.isfinite(p0), p0 + np.log(2.0), lam)
    x[lay.g : lay.b] = g
    if lay.ties:
        x[lay.t : -1] = lam
        x[-1] = lam.mean() if W else 0.0
    return x


def consensus_cavity(fitted: Fitted) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """For each strict answer off gold (rows ``[0, a)``), the mean and variance of its pair's
    score difference ``d`` given the comparisons of every *other* annotator:

    * the annotator's answers on the same pair are one site on ``d``: their total Fisher weight
      removed and their total pull ``g`` undone by one Newton step, ``d - g v``, where ``v`` is
      the variance of ``d`` without them. It comes from the joint precision of the pair's two
      items, ``[[t_i + w, -w], [-w, t_j + w]]``: ``t_i`` the precision of item ``i`` without
      the pair's link (its Gaussian belief-propagation cavity, exact on a tree), ``w`` the
      other annotators' weight on the pair, so ``v = (t_i + t_j + 4 w) / (t_i t_j + w (t_i +
      t_j))``. (The two items' variances alone, their covariance left out, overstate ``v``
      where the link is much of what is known of them, pairs judged once: the step then
      overshoots, and the consensus turns against every answer of a chain of comparisons.)
    * their answers on other pairs touching either item: their weight removed from that item's
      precision, and their pull on it undone over the item's variance without any of their
      answers, ``s_i - var'_i g_i``;
    * no cavity is wider than the prior (``SCORE_SD^2`` per item): an item only the annotator
      compared goes back to the prior's mean, not past it."""
    D, lay, x, terms, messages = fitted
    a, N = D.a, lay.n_items
    _, _, d, _, _, grad_d = strict_pull(D, lay, x)
    var, _, msg = score_variance(D.pair, D.pairs, terms.weight, N, 1 / SCORE_SD**2, 0,
                                 1e-3, messages, D.edges)  # fmt: skip
    assert msg is not None  # belief propagation (no exact variances asked for)
    n = len(D.w)
    # gold rows inform the scores through the clamp, gold's information, not the annotator's
    w_all = terms.weight.copy()
    w_all[a : D.c] = 0.0
    pull_all = np.zeros(n)
    pull_all[:a] = grad_d
    # one site per (annotator, pair), oriented low item minus high item
    orient = np.where(D.left == D.pairs[D.pair, 0], 1.0, -1.0)
    site, at = np.unique(D.w * len(D.pairs) + D.pair, return_inverse=True)
    at = at.reshape(-1)
    w_site = np.bincount(at, w_all, len(site))[at[:a]]
    g_site = np.bincount(at, orient * pull_all, len(site))[at[:a]] * orient[:a]
    # per (annotator, item): weight and pull over all their comparisons
    keys, inv = np.unique(np.concatenate([D.w * N + D.left, D.w * N + D.right]),
                          return_inverse=True)  # fmt: skip
    inv = inv.reshape(-1)
    w_item = np.bincount(inv, np.concatenate([w_all, w_all]), len(keys))
    p_item = np.bincount(inv, np.concatenate([pull_all, -pull_all]), len(keys))
    kl, kr = inv[:a], inv[n : n + a]
    # each item's precision without the pair's link: its belief minus the message over the
    # link (edge p carries pairs[p, 0] -> pairs[p, 1], edge P + p the reverse)
    P, p = len(D.pairs), D.pair[:a]
    forward = D.left[:a] == D.pairs[p, 0]
    into_left = np.where(forward, msg[P + p], msg[p])
    into_right = np.where(forward, msg[p], msg[P + p])
    w_rest = np.maximum(np.bincount(D.pair, terms.weight, P)[p] - w_site, 0.0)
    # the other pairs' share of the annotator's weight and pull on each item
    shifts, t_sides = [], []
    for k_, item, sign, into in ((kl, D.left[:a], 1.0, into_left),
                                 (kr, D.right[:a], -1.0, into_right)):  # fmt: skip
        w_other = np.maximum(w_item[k_] - w_site, 0.0)
        p_other = p_item[k_] - sign * g_site
        # the prior stays: no cavity is wider than it (a wider one would step past the prior's
        # mean and turn an annotator's own consistency into a consensus against them)
        t_sides.append(np.maximum(1 / var[item] - into - w_other, 1 / SCORE_SD**2))
        # the other pairs' pull is undone over the item's cavity without any of the annotator's
        # answers: an item only they compared returns exactly to the prior's mean
        v_all = np.minimum(var[item] / np.maximum(1 - w_item[k_] * var[item], 0.05), SCORE_SD**2)
        shifts.append(sign * v_all * p_other)
    t_i, t_j = t_sides
    out_v = np.minimum((t_i + t_j + 4 * w_rest) / (t_i * t_j + w_rest * (t_i + t_j)),
                       2 * SCORE_SD**2)  # fmt: skip
    out_d = d - g_site * out_v - shifts[0] - shifts[1]
    return out_d, out_v
