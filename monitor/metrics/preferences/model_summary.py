"""Intervals and per-annotator summaries of the preference reliability model.

The model and its fit: :mod:`monitor.metrics.preferences.model`. Everything here is computed at
the fitted mode ``x``:

* ``accuracy`` = ``eta_k``: the probability that a strict answer of annotator ``k`` goes along
  the consensus (Bradley-Terry) outcome of the pair; 0.5 for an annotator answering at random,
  whatever their tie rate, since ties are modelled apart. Interval: Laplace on ``logit eta_k``
  given the item scores, from the expected (Fisher) information of the annotator's own strict
  answers plus the prior precision, jointly with ``b_k`` (2 x 2 per annotator). On the logit
  scale the posterior is close to normal; mapped back the interval stays inside (0, 1) and is
  asymmetric near the ends. Unlike a Beta posterior built from the EM's expected counts it counts
  the mixture's missing information (an answer on a pair of nearly equal items says little about
  ``eta``), so it is never narrower than the answers warrant.
* ``agreement``: the model's expected share of the annotator's answers (ties count as not along)
  that go along the consensus order of their pairs, ``sign(d)`` or the gold order:
  ``mean_n (1 - P(tie)_n) [eta sig(|d_n| + o_n b) + (1 - eta) sig(o_n b - |d_n|)]``, linear in
  ``eta``, so its interval is ``eta``'s mapped; ``agreement_floor`` is its value at ``eta = 1/2``:
  what the same annotator (own ties, own position bias) reaches answering at random.
* ``position_bias`` ``b_k`` in log-odds toward the left slot (0: none) and ``tie_propensity``
  ``nu_k / (2 + nu_k)``, the tie probability between two equal items: Laplace intervals.
* ``score`` ``s_i`` (log-strength): Laplace interval from the inverse of the scores' Hessian
  given the annotators' parameters, ``B' diag(w) B + I / SCORE_SD^2`` with ``w`` each
  comparison's expected information about its ``d`` (:func:`score_variance`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from scipy import special

from monitor.metrics.preferences.model_data import Layout, PreferenceData, directed_edges

EXACT_SE_MAX_ITEMS = 2000
"""Up to this many items the score variances come from a dense Cholesky factor (0.3 s at 2000)."""


def sigmoid(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """``1 / (1 + exp(-x))`` with one ``exp`` (several times faster than ``special.expit``)."""
    with np.errstate(over="ignore"):
        out = np.exp(-x)
    out += 1.0
    return np.reciprocal(out, out=out)


@dataclass(frozen=True, eq=False)
class PreferenceStart:
    """A warm start: arrays by item code (I,) and annotator code (W,); NaN where unknown."""

    score: NDArray[np.float64]
    accuracy: NDArray[np.float64]
    position_bias: NDArray[np.float64] | None = None
    tie_propensity: NDArray[np.float64] | None = None
    crowd_accuracy: float | None = None
    crowd_bias_sd: float | None = None


@dataclass(frozen=True, eq=False)
class PreferenceModel:
    """Crowd-BT with ties and position bias (:mod:`monitor.metrics.preferences.model`).

    Arrays by item code (I,) or annotator code (W,); codes without comparisons hold their prior.
    ``*_low`` / ``*_high`` bound the ``confidence`` intervals. ``answer_accuracy`` is the
    expected share of the annotator's answers along the true order of their pairs (a tie wrong),
    judged through the leave-one-out consensus and its chance of being right
    (:mod:`monitor.metrics.preferences.accuracy`). ``n_strict`` counts strict answers,
    ``n_gold`` strict answers on gold pairs that order their items. ``crowd_accuracy`` is the
    crowd's ``expit(mu)``; ``crowd_bias_sd`` the crowd's sd of position bias (None when not
    modelled); ``crowd_tie_propensity`` the tie propensity at the crowd's ``mu_t``
    (None when ties are not modelled). ``score_se_exact`` says whether the score intervals come
    from the exact inverse Hessian (else belief propagation, :func:`score_variance`).
    """

    score: NDArray[np.float64] = field(repr=False)
    score_se: NDArray[np.float64] = field(repr=False)
    score_low: NDArray[np.float64] = field(repr=False)
    score_high: NDArray[np.float64] = field(repr=False)
    n_item_comparisons: NDArray[np.int64] = field(repr=False)
    accuracy: NDArray[np.float64] = field(repr=False)
    accuracy_low: NDArray[np.float64] = field(repr=False)
    accuracy_high: NDArray[np.float64] = field(repr=False)
    agreement: NDArray[np.float64] = field(repr=False)
    agreement_low: NDArray[np.float64] = field(repr=False)
    agreement_high: NDArray[np.float64] = field(repr=False)
    agreement_floor: NDArray[np.float64] = field(repr=False)
    position_bias: NDArray[np.float64] = field(repr=False)
    position_bias_low: NDArray[np.float64] = field(repr=False)
    position_bias_high: NDArray[np.float64] = field(repr=False)
    tie_propensity: NDArray[np.float64] = field(repr=False)
    tie_propensity_low: NDArray[np.float64] = field(repr=False)
    tie_propensity_high: NDArray[np.float64] = field(repr=False)
    n_judgments: NDArray[np.int64] = field(repr=False)
    n_strict: NDArray[np.int64] = field(repr=False)
    n_ties: NDArray[np.int64] = field(repr=False)
    n_gold: NDArray[np.int64] = field(repr=False)
    crowd_accuracy: float
    crowd_bias_sd: float | None
    crowd_tie_propensity: float | None
    ties_modelled: bool
    bias_modelled: bool
    score_se_exact: bool
    log_posterior: float
    confidence: float
    converged: bool
    iterations: int
    max_iter: int
    tol: float
    answer_accuracy: NDArray[np.float64] | None = field(default=None, repr=False)
    answer_accuracy_low: NDArray[np.float64] | None = field(default=None, repr=False)
    answer_accuracy_high: NDArray[np.float64] | None = field(default=None, repr=False)
    # the strict answers' accuracy alone (W,), and each strict answer's chance of being along
    # the true order given the others (by input position, NaN for ties): the stop test's
    answer_strict: NDArray[np.float64] | None = field(default=None, repr=False)
    answer_right: NDArray[np.float64] | None = field(default=None, repr=False)

    def start(self) -> PreferenceStart:
        """This fit as a warm start for the next one."""
        return PreferenceStart(
            self.score,
            self.accuracy,
            self.position_bias if self.bias_modelled else None,
            self.tie_propensity if self.ties_modelled else None,
            self.crowd_accuracy,
            self.crowd_bias_sd,
        )


@dataclass(frozen=True)
class FisherTerms:
    """Per comparison (in the model's block order): ``d``, ``eta`` of its annotator, ``up =
    sig(b + d)``, ``dn = sig(b - d)``, ``q = P(left | strict)``, ``p_tie``, ``gold`` (a mask),
    and ``weight``, the expected information about ``d`` of one such comparison."""

    d: NDArray[np.float64]
    eta: NDArray[np.float64]
    up: NDArray[np.float64]
    dn: NDArray[np.float64]
    q: NDArray[np.float64]
    p_tie: NDArray[np.float64]
    gold: NDArray[np.bool_]
    weight: NDArray[np.float64]


def fisher_terms(D: PreferenceData, lay: Layout, x: NDArray[np.float64]) -> FisherTerms:
    """Outcome probabilities and the information about ``d`` of each comparison at ``x``.

    Off gold, the three outcomes tie / left / right have probabilities ``p``, ``(1 - p) q``,
    ``(1 - p) (1 - q)``, whose Fisher information about ``d`` is ``p'^2 / (p (1 - p)) + (1 - p)
    q'^2 / (q (1 - q))`` (the cross terms cancel). On gold pairs the scores see ``log sig(o d)``:
    ``sig(d) sig(-d)``, plus the tie term."""
    s, g, b, lam, _ = lay.unpack(x)
    d = s[D.left] - s[D.right]
    e = sigmoid(g)[D.w]
    bw = b[D.w] if b is not None else 0.0
    up, dn = sigmoid(bw + d), sigmoid(bw - d)
    q = dn + e * (up - dn)
    gold = np.zeros(len(d), dtype=bool)
    gold[D.a : D.c] = True
    if lam is not None:
        nu_u = np.exp(lam)[D.w] * np.exp(-0.5 * np.abs(d))
        p_tie = nu_u / (nu_u + 1 + np.exp(-np.abs(d)))
        # dP(tie)/dd = -tanh(d/2) P(tie) P(strict) / 2, over P(tie) P(strict)
        tie_info = 0.25 * np.tanh(0.5 * d) ** 2 * p_tie * (1 - p_tie)
    else:
        p_tie = np.zeros(len(d))
        tie_info = 0.0
    dq = e * up * (1 - up) - (1 - e) * dn * (1 - dn)
    strict_info = (1 - p_tie) * dq**2 / np.maximum(q * (1 - q), 1e-300)
    sd = sigmoid(d)
    weight = np.where(gold, sd * (1 - sd), strict_info) + tie_info
    return FisherTerms(d, e, up, dn, q, p_tie, gold, weight)


def annotator_information(
    D: PreferenceData, F: FisherTerms, n_workers: int, rel_sd: float, bias_sd: float | None
) -> tuple[NDArray, NDArray, NDArray]:
    """Per annotator, the expected information about (logit eta, b) of their own strict answers
    given the scores, plus the prior precisions: ``(i_gg, i_gb, i_bb)``, each (W,) (zeros for the
    bias terms when ``bias_sd`` is None: no bias modelled)."""
    a, bb, W, e = D.a, D.b, n_workers, F.eta
    qv = np.maximum(F.q * (1 - F.q), 1e-300)[:a]
    dq_g = (e * (1 - e) * (F.up - F.dn))[:a]
    i_gg = np.bincount(D.w[:a], dq_g**2 / qv, W) + 1 / rel_sd**2
    i_gg += np.bincount(D.w[a:bb], e[a:bb] * (1 - e[a:bb]), W)
    if bias_sd is None:
        return i_gg, np.zeros(W), np.zeros(W)
    dq_b = (e * F.up * (1 - F.up) + (1 - e) * F.dn * (1 - F.dn))[:a]
    i_gb = np.bincount(D.w[:a], dq_g * dq_b / qv, W)
    i_bb = np.bincount(D.w[:a], dq_b**2 / qv, W) + 1 / bias_sd**2
    return i_gg, i_gb, i_bb


def tie_share(lam: NDArray[np.float64] | float) -> NDArray[np.float64]:
    """``nu / (2 + nu)`` for ``nu = exp(lam)``: the tie probability between two equal items."""
    return special.expit(np.asarray(lam, dtype=np.float64) - np.log(2.0))


def summarise(
    D: PreferenceData,
    lay: Layout,
    x: NDArray[np.float64],
    F: FisherTerms,
    mu: float,
    log_post: float,
    converged: bool,
    iterations: int,
    max_iter: int,
    tol: float,
    confidence: float,
    sds: tuple[float, float, float, float],
    messages: NDArray[np.float64] | None = None,
) -> PreferenceModel:
    """The :class:`PreferenceModel` at the mode ``x``, whose :func:`fisher_terms` are ``F``
    (module docstring); ``sds`` are the prior sds of scores, logit eta, bias and log nu."""
    score_sd, rel_sd, bias_sd, tie_sd = sds
    n_i, W, a, bb = lay.n_items, lay.n_workers, D.a, D.b
    s, g, b, lam, mu_t = lay.unpack(x)
    z = float(special.ndtri(0.5 + confidence / 2))
    i_gg, i_gb, i_bb = annotator_information(D, F, W, rel_sd, bias_sd if b is not None else None)
    if b is not None:
        det = i_gg * i_bb - i_gb**2
        sd_g, sd_b = np.sqrt(i_bb / det), np.sqrt(i_gg / det)
        bias, b_lo, b_hi = b.copy(), b - z * sd_b, b + z * sd_b
    else:
        sd_g = 1 / np.sqrt(i_gg)
        bias = b_lo = b_hi = np.zeros(W)
    eta, eta_lo, eta_hi = special.expit(g), special.expit(g - z * sd_g), special.expit(g + z * sd_g)
    # agreement with the consensus order, c0 + eta * c1
    o = np.where(F.gold, D.o, np.sign(F.d))
    beta = o * (b[D.w] if b is not None else 0.0)
    dist = np.abs(F.d)
    hi_p = np.where(F.gold, 1.0, special.expit(dist + beta))
    lo_p = np.where(F.gold, 0.0, special.expit(beta - dist))
    n_all = np.bincount(D.w, minlength=W).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        c0 = np.bincount(D.w, (1 - F.p_tie) * lo_p, W) / n_all
        c1 = np.bincount(D.w, (1 - F.p_tie) * (hi_p - lo_p), W) / n_all
    var, exact, _ = score_variance(
        D.pair, D.pairs, F.weight, n_i, 1 / score_sd**2, messages=messages, edges=D.edges
    )
    se = np.sqrt(var)
    if lam is not None:
        sd_t = 1 / np.sqrt(np.bincount(D.w, F.p_tie * (1 - F.p_tie), W) + 1 / tie_sd**2)
        tie, tie_lo, tie_hi = tie_share(lam), tie_share(lam - z * sd_t), tie_share(lam + z * sd_t)
        crowd_tie: float | None = float(tie_share(mu_t))
    else:
        tie = tie_lo = tie_hi = np.zeros(W)
        crowd_tie = None
    n_strict = np.bincount(D.w[:bb], minlength=W)
    return PreferenceModel(
        score=s.copy(),
        score_se=se,
        score_low=s - z * se,
        score_high=s + z * se,
        n_item_comparisons=(
            np.bincount(D.left, minlength=n_i) + np.bincount(D.right, minlength=n_i)
        ),
        accuracy=eta,
        accuracy_low=eta_lo,
        accuracy_high=eta_hi,
        agreement=c0 + eta * c1,
        agreement_low=c0 + eta_lo * c1,
        agreement_high=c0 + eta_hi * c1,
        agreement_floor=c0 + 0.5 * c1,
        position_bias=bias,
        position_bias_low=b_lo,
        position_bias_high=b_hi,
        tie_propensity=tie,
        tie_propensity_low=tie_lo,
        tie_propensity_high=tie_hi,
        n_judgments=n_all.astype(np.int64),
        n_strict=n_strict,
        n_ties=n_all.astype(np.int64) - n_strict,
        n_gold=np.bincount(D.w[a:bb], minlength=W),
        crowd_accuracy=float(special.expit(mu)),
        crowd_bias_sd=bias_sd if b is not None else None,
        crowd_tie_propensity=crowd_tie,
        ties_modelled=lay.ties,
        bias_modelled=lay.bias,
        score_se_exact=exact,
        log_posterior=log_post,
        confidence=confidence,
        converged=converged,
        iterations=iterations,
        max_iter=max_iter,
        tol=tol,
    )


def score_variance(
    pair: NDArray[np.int64],
    pairs: NDArray[np.int64],
    weight: NDArray[np.float64],
    n_items: int,
    prior_precision: float,
    exact_max: int = EXACT_SE_MAX_ITEMS,
    rtol: float = 1e-4,
    messages: NDArray[np.float64] | None = None,
    edges: tuple[NDArray[np.int64], ...] | None = None,
) -> tuple[NDArray[np.float64], bool, NDArray[np.float64] | None]:
    """Diagonal of ``H^-1``, ``H = B' diag(weight) B + prior_precision I`` (``B`` the comparison x
    item incidence matrix, +1 left, -1 right), and whether it is exact. ``pair : (n,)`` the code
    of each comparison's unordered pair, ``pairs : (P, 2)`` its items.

    Exact (dense Cholesky) up to ``exact_max`` items. Beyond, the variances of Gaussian belief
    propagation on the graph of compared pairs (Weiss & Freeman 2001, *Neural Computation* 13):
    the precision item ``j`` sends item ``i`` over a link of total weight ``w`` is the series
    combination ``w p / (w + p)`` of ``w`` and ``j``'s precision without that link ``p``, iterated
    until no message moves by ``rtol`` of itself. ``H`` is diagonally dominant, so the iteration
    converges (Malioutov, Johnson & Willsky 2006, *JMLR* 7); its variances are exact on trees and
    low on graphs with short cycles, since they count only backtracking walks (the test on dense
    blocks bounds the error). ``messages`` (returned, shape (2P,)) restart the iteration from a
    previous call's, a few sweeps instead of many when the weights moved little; ``edges`` is
    :func:`~monitor.metrics.preferences.model_data.directed_edges` of ``pairs``, when the caller keeps it."""
    w = np.bincount(pair, weights=weight, minlength=len(pairs))
    i, j = pairs[:, 0], pairs[:, 1]
    if n_items <= exact_max:
        H = np.zeros((n_items, n_items))
        H[i, j] = H[j, i] = -w
        H[np.diag_indices(n_items)] = prior_precision + np.bincount(i, w, n_items)
        H[np.diag_indices(n_items)] += np.bincount(j, w, n_items)
        inv_chol = np.linalg.inv(np.linalg.cholesky(H))
        return (inv_chol**2).sum(axis=0), True, None
    src, dst, twin = directed_edges(pairs) if edges is None else edges
    ww = np.concatenate([w, w])
    msg = np.zeros(len(ww)) if messages is None or len(messages) != len(ww) else messages
    for _ in range(100):
        rest = prior_precision + np.bincount(dst, msg, n_items)[src] - msg[twin]
        new = ww * rest / (ww + rest)
        done = np.all(np.abs(new - msg) <= rtol * new)
        msg = new
        if done:
            break
    return 1 / (prior_precision + np.bincount(dst, msg, n_items)), False, msg
