"""Distance-aware reliability model for ordinal and interval ratings.

Model (Raykar et al. 2010, "Learning from crowds", *JMLR* 11:1297-1322, section 3, without item
features; cf. CATD, Li et al. 2014, "A confidence-aware approach for truth discovery on long-tail
data", *PVLDB* 8(4):425-436)::

    x_ij = mu_i + b_j + e_ij,    e_ij ~ N(0, s_j^2)

Rating scales are numbers, never nominal categories: a judgment 2 points off costs twice one point
off. Estimated by alternating weighted least squares (the EM of Raykar et al. with a flat prior on
``mu``), each step vectorised with ``bincount``:

1. ``mu_i = sum_j w_j (x_ij - b_j) / sum_j w_j`` with ``w_j = 1 / s_j^2`` (gold items: ``mu_i``
   fixed to gold); posterior sd ``sqrt(1 / sum_j w_j)`` (0 for gold).
2. Leave-one-out residuals ``r_ij = x_ij - mu_i^(-j)``, with ``mu_i^(-j)`` the same weighted mean
   without judgment ``ij`` and variance ``v_ij = 1 / (sum_j' w_j' - w_j)``: a worker's own answer
   does not pull the truth towards itself (with full residuals a trusted worker's ``s_j`` collapses
   on items with few judgments). Items judged once carry no information on workers.
3. Bias ``b_j = sum_i r_ij / (m_j + k_j)``, the posterior mean under a hierarchical prior
   ``b_j ~ N(0, tau^2)``, ``k_j = max(1, s_j^2 / tau^2)`` pseudo-judgments of bias 0 with
   ``tau^2`` estimated from the data at every step (:func:`~monitor.metrics.ratings.priors.bias_prior`; 1 pseudo-judgment with
   fewer than ``MIN_WORKERS`` workers). With a fixed single pseudo-judgment a worker who judged
   two items kept two thirds of their two residuals as a "bias": 180 interchangeable workers
   on 2 items each gave item means with MSE 52 against the plain mean's 32; with the estimated
   prior the biases shrink to 0 and the means are the plain ones (MSE 32). Then the gauge
   ``sum_j m_j b_j = 0`` (biases are defined against the crowd). Gold adds back one common offset
   ``c``, the one that makes the model's weighted item mean unbiased on the gold items:
   ``sum_gold w_j (x_ij - [free_ij] (b_j + c) - g_i) = 0``. Letting the gold-anchored biases
   float instead (no gauge) is the plain least-squares answer without censoring, but with censoring
   the free judgments are a selected sample (near 0 only the positive errors escape the bound), so
   every bias came out too high and, anchored by 10% gold items, pulled every other item's mean
   down: on affect (10% gold) the non-gold MAE went 10.0 -> 11.7, mean |bias| 10.7 -> 24.5.
   With the offset: MAE 10.0 with or without gold.
   Judgments at a bound of the scale are censored (``censored=True``): "0" on a 0..100 scale
   means "0 or less", so they are left out of the bias and not bias-corrected (a cheap stand-in
   for a Tobit likelihood). On the affect ratings (Snow et al. 2008), where 68% of the judgments
   are 0, correcting them moved the item means away from the expert truth (MAE 10.7 against 10.4
   for the plain mean; 10.0 with censoring).
4. Noise ``s_j^2 = (nu s0^2 + sum_i [(r_ij - b_j)^2 - v_ij]) / (nu + m_j)``: the posterior mode
   of an inverse-gamma prior worth ``nu`` judgments at the pooled variance ``s0^2`` (or
   ``prior_weight`` judgments at ``worker_prior^2``), ``nu`` estimated from how much more the
   workers' residual variances spread than their few judgments explain (:func:`~monitor.metrics.ratings.priors.noise_prior`,
   at least 2, so 2 judgments never give ``s_j = 0``; 2 with fewer than ``MIN_WORKERS``
   workers): workers whose noises cannot be told apart get the pooled noise, and the means
   are the plain ones; floored at ``noise_floor * (max - min)``.

Stops when ``mu``, ``b`` and ``s`` move by less than ``tol * (max - min)``.

Items with two judgments. The residual of a worker against the one other judgment has variance
``s_j^2 + s_p^2``, and step 4 subtracts the partner's current ``s_p^2``: raising every ``s^2`` by
``d`` lowers every update by ``d``, so the plain iteration flips back and forth (the golden case
``rating_two_raters`` never converged, nor did 3 or 10 workers with two judgments per item). The
step on ``s_j^2`` is damped by ``1 / (1 + c_j)``, ``c_j = mean_i v_ij^2 sum_{j' != j} w_j'^2`` in
[0, 1] (the slope of that update; 1 for two judgments, about ``1 / (k - 1)`` for ``k``), which
leaves the fixed point unchanged. Two workers who judged only items together, two judgments per
item, no gold and no history (``shared_noise``), have only ``s_a^2 + s_b^2`` identified: they share
one ``s^2 = (prior + sum r^2) / (prior weight + 2 m)`` (their differences have variance ``2 s^2``),
and their biases, whose updates swap each other (slope ``-m / (m + 1)``), move by half steps.

- Interval on ``s_j``: ``d s_j^2 / s^2 ~ chi2(d)`` with ``d = d_j + 2`` (prior included) and
  ``d_j = m_j^2 / sum_i (1 + v_ij / s_j^2)^2`` the effective degrees of freedom: the estimate
  ``mean_i (r_ij^2 - v_ij)`` has variance ``2 sum_i (s_j^2 + v_ij)^2 / m_j^2``, more than the
  ``2 s_j^4 / m_j`` of ``m_j`` exact residuals when the truths are themselves uncertain.
- ``chance_sd``: the sd of the item means. Any answerer independent of the truth, answering
  ``X_i``, has residual variance ``var(X) + var(mu) >= var(mu)``, reached by a constant answerer
  (its bias absorbs the constant); a uniform random answerer is worse, ``sqrt(range^2 / 12 +
  var(mu))``. ``floor_sd = (1 - floor_margin) chance_sd``.
- ``worker_chance_sd``: the noise sd the model would give worker ``j`` if the same answers were
  shuffled across their items (independent of the truth): ``sqrt(var_j(y) + var_j(mu) + d_j^2)``
  with ``y`` the bias-corrected answers and ``d_j`` their mean offset from ``mu`` (0 unless
  censored judgments keep part of the offset), as ``s_j^2 = var_j(y) + var_j(mu) + d_j^2 -
  2 cov_j(y, mu)``; each variance is shrunk with 2 pseudo-judgments
  to the pooled one (a worker with one judgment gets the crowd's), and at least the noise floor.
  ``s_j`` below it means answers
  that covary with the truth; a constant or random answerer sits at it, so the flags use
  ``worker_floor_sd = (1 - floor_margin) * worker_chance_sd`` (flag when ``low > worker_floor_sd``:
  with the default 0.2, an unbiased worker passes while their noise sd is below about 1.9 sd of the
  truth). The campaign-wide ``chance_sd`` is not used for flags: on real ratings (affect, Snow et
  al. 2008) workers use a wider range than the truth, so most honest workers have ``s_j`` above the
  truth's sd although their answers correlate with it.
- Ambiguous items: ``item_spread`` is the sd of the item's bias-corrected judgments around ``mu_i``
  (``n_i - 1`` degrees of freedom), ``expected_spread = sqrt(mean of s_j^2 of its judges)``, and
  ``spread_p`` the p-value of ``sum_j (x_ij - b_j - mu_i)^2 / s_j^2 ~ chi2(n_i - 1)`` (NaN below
  two judgments or on gold items).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from monitor.metrics.common import check_same_length, noise_sd_floor
from monitor.metrics.ratings.priors import bias_prior, noise_prior
from monitor.metrics.ratings.squarem import Sweep, squarem


@dataclass(frozen=True, eq=False)
class RatingModel:
    """Per-worker bias and noise, per-item mean (Raykar et al. 2010; cf. CATD, Li et al. 2014)."""

    mean: NDArray[np.float64] = field(repr=False)  # (N,) NaN unjudged (gold: the gold)
    sd: NDArray[np.float64] = field(repr=False)  # (N,)
    bias: NDArray[np.float64] = field(repr=False)  # (W,)
    noise_sd: NDArray[np.float64] = field(repr=False)  # (W,)
    low: NDArray[np.float64] = field(repr=False)  # (W,) interval on noise_sd
    high: NDArray[np.float64] = field(repr=False)
    n: NDArray[np.int64] = field(repr=False)  # (W,)
    chance_sd: float
    floor_sd: float
    worker_chance_sd: NDArray[np.float64] = field(repr=False)  # (W,)
    worker_floor_sd: NDArray[np.float64] = field(repr=False)  # (W,)
    item_spread: NDArray[np.float64] = field(repr=False)  # (N,)
    expected_spread: NDArray[np.float64] = field(repr=False)  # (N,)
    spread_p: NDArray[np.float64] = field(repr=False)  # (N,)
    iterations: int
    converged: bool
    # (W,) noise sd shared with the one other worker they judged every item with (not identified
    # one by one: only s_a^2 + s_b^2 is); a default so the dataclass keeps its field order
    shared_noise: NDArray[np.bool_] = field(repr=False, default_factory=lambda: np.zeros(0, bool))


class RatingJudgments(NamedTuple):
    """What a run's rating model is fitted on: the latest judgment of each worker and item
    (codes and values), each item's gold (NaN where none), the workers' history prior (None
    without history) and the scale."""

    items: NDArray[np.int64]
    workers: NDArray[np.int64]
    values: NDArray[np.float64]
    gold: NDArray[np.float64]
    prior: NDArray[np.float64] | None
    scale: tuple[float, float]


class Judgments(NamedTuple):
    """The judgments as the model's steps take them: item codes ``it``, worker codes ``wk``,
    values ``x`` and which of them sit at a bound of the scale (``at_bound``, censored: "0" on
    a 0..100 scale means "0 or less")."""

    it: NDArray[np.int64]
    wk: NDArray[np.int64]
    x: NDArray[np.float64]
    at_bound: NDArray[np.bool_]

    @classmethod
    def coded(
        cls,
        items: ArrayLike,
        workers: ArrayLike,
        values: ArrayLike,
        sizes: tuple[int, int],
        scale: tuple[float, float],
        censored: bool,
    ) -> Judgments:
        """The judgments checked: codes in ``0..n - 1`` for ``sizes`` (items, workers), one
        value each; censored at the bounds of ``scale`` where ``censored``."""
        it = as_codes("items", items, sizes[0])
        wk = as_codes("workers", workers, sizes[1])
        x = np.asarray(values, dtype=np.float64).reshape(-1)
        check_same_length(items=it, workers=wk, values=x)
        return cls(it, wk, x, at_scale_bound(x, scale, censored))


def at_scale_bound(
    x: NDArray[np.float64], scale: tuple[float, float], censored: bool
) -> NDArray[np.bool_]:
    """Which values sit at a bound of ``scale`` (none unless ``censored``)."""
    # a judgment at a bound of the scale is censored: it says "here or beyond"
    lo, hi = float(scale[0]), float(scale[1])
    return ((x == lo) | (x == hi)) if censored else np.zeros(x.size, dtype=bool)


class Priors(NamedTuple):
    """What a fit knows besides its judgments: ``gold`` (N,), NaN where none; per worker (W,)
    the history prior's variance ``prior_var`` (NaN where none) and weight ``pw``, and whether
    their noise is shared with a partner's (``tied``, :func:`tied_pairs`)."""

    gold: NDArray[np.float64]
    prior_var: NDArray[np.float64]
    pw: NDArray[np.float64]
    tied: NDArray[np.bool_]

    @classmethod
    def none(cls, n_items: int, n_workers: int) -> Priors:
        """No gold, no history and no tied pair (what a local update fits)."""
        return cls(
            np.full(n_items, np.nan),
            np.full(n_workers, np.nan),
            np.zeros(n_workers),
            np.zeros(n_workers, dtype=bool),
        )


@dataclass(frozen=True)
class RatingOptions:
    """The settings of :func:`rating_model` that decide its flags, noise floor, biases and
    censoring, with its defaults: a local update
    (:func:`~monitor.metrics.ratings.update.rating_model_update`) takes the same."""

    confidence: float = 0.95
    noise_floor: float = 0.01
    floor_margin: float = 0.2
    bias: bool = True
    censored: bool = True

    def floor2(self, span: float) -> float:
        """The floor of a noise variance on a scale ``span`` wide, ``(noise_floor * span)^2``."""
        return (self.noise_floor * span) ** 2


def scale_span(scale: tuple[float, float]) -> float:
    """``max - min`` of a rating ``scale`` (min, max), which must have max > min."""
    lo_s, hi_s = float(scale[0]), float(scale[1])
    if not hi_s > lo_s:
        raise ValueError(f"scale must be (min, max) with max > min, got {scale}.")
    return hi_s - lo_s


def as_codes(name: str, x: ArrayLike, upper: int) -> NDArray[np.int64]:
    a = np.asarray(x).reshape(-1)
    if a.size and (a.min() < 0 or a.max() >= upper):
        raise ValueError(f"{name} must lie in 0..{upper - 1}.")
    return a.astype(np.int64, copy=False)  # only read: no copy of the caller's int64 codes


def _warm(name: str, x: ArrayLike, n: int, fill: float) -> NDArray[np.float64]:
    a = np.asarray(x, dtype=np.float64).reshape(-1)
    if a.size != n:
        raise ValueError(f"{name} must have shape ({n},), NaN where none.")
    return np.where(np.isfinite(a), a, fill)


def _worker_chance(
    wk: NDArray[np.int64], x: NDArray[np.float64], mu: NDArray[np.float64], n_workers: int
) -> NDArray[np.float64]:
    """``sqrt(var_j(x) + var_j(mu) + d_j^2)``, each variance shrunk with 2 pseudo-judgments to the
    pool, ``d_j = sum (x - mu) / (n_j + 2)`` the offset the bias did not remove (censored)."""
    n = np.bincount(wk, minlength=n_workers).astype(np.float64)
    out = (np.bincount(wk, weights=x - mu, minlength=n_workers) / (n + 2.0)) ** 2
    for v in (x, mu):
        pool = float(np.var(v)) if v.size else 0.0
        mean = np.bincount(wk, weights=v, minlength=n_workers) / np.maximum(n, 1.0)
        ss = np.bincount(wk, weights=(v - mean[wk]) ** 2, minlength=n_workers)
        out += (ss + 2.0 * pool) / (np.maximum(n - 1.0, 0.0) + 2.0)
    return np.sqrt(out)


def tied_pairs(
    j: Judgments, n_i: NDArray[np.float64], is_gold: NDArray[np.bool_], free: NDArray[np.bool_]
) -> tuple[NDArray[np.bool_], NDArray[np.int64]]:
    """Workers whose noise sds are not identified one by one: two workers (``free``: no history
    prior) who only judged items together, two judgments per item, no gold. Only the sum ``s_a^2 +
    s_b^2`` (the variance of their differences) is identified, so they share ``s^2``. Returns
    (tied, group): the group of a tied worker is the smaller code of the pair, else its own code.
    ``n_i``: (N,) judgments per item; ``is_gold``: (N,); ``free``: (W,).
    """
    it, wk = j.it, j.wk
    n_workers = free.size
    codes = np.arange(n_workers)
    on_item = np.bincount(it, weights=wk.astype(np.float64), minlength=n_i.size)
    pair = (n_i[it] == 2) & ~is_gold[it]
    other = ((n_i[it] > 2) | is_gold[it]).astype(np.float64)  # judgments that identify s_j
    partner = (on_item[it] - wk).astype(np.int64)
    hi = np.full(n_workers, -1, dtype=np.int64)
    lo = np.full(n_workers, n_workers, dtype=np.int64)
    np.maximum.at(hi, wk[pair], partner[pair])
    np.minimum.at(lo, wk[pair], partner[pair])
    one = (hi >= 0) & (hi == lo) & (hi != codes) & free
    one &= np.bincount(wk, weights=other, minlength=n_workers) == 0
    p = np.where(one, hi, 0)
    tied = one & one[p] & (p[p] == codes)
    return tied, np.where(tied, np.minimum(codes, p), codes)


def rating_model(
    items: ArrayLike,
    workers: ArrayLike,
    values: ArrayLike,
    *,
    n_items: int,
    n_workers: int,
    scale: tuple[float, float],
    gold: ArrayLike | None = None,
    worker_prior: ArrayLike | None = None,
    init: ArrayLike | None = None,
    init_bias: ArrayLike | None = None,
    init_noise: ArrayLike | None = None,
    max_iter: int = 100,
    # the settings a local update takes too, as one RatingOptions (its defaults); dawid_skene's
    # keywords alike in shape are the label model's own
    tol: float = 1e-6,
    confidence: float = RatingOptions.confidence,
    noise_floor: float = RatingOptions.noise_floor,
    prior_weight: float = 10.0,
    floor_margin: float = RatingOptions.floor_margin,
    bias: bool = RatingOptions.bias,
    censored: bool = RatingOptions.censored,
) -> RatingModel:
    """Fit ``x_ij = mu_i + b_j + e_ij`` (see the module docstring for formulas and choices).

    ``gold``: (N,) gold values, NaN where none. ``worker_prior``: (W,) noise sd from history, NaN
    where none, worth ``prior_weight`` judgments. ``init``: (N,) warm start of the means;
    ``init_bias``, ``init_noise``: (W,) warm start of the biases and noise sds (NaN where none:
    a new worker starts at bias 0 and the pooled noise), so that a run after a few new judgments
    starts next to its fixed point instead of 30-odd steps away.
    ``bias=False`` fixes ``b_j = 0`` (a worker's offset then counts as noise). ``censored``:
    judgments at a bound of the scale neither inform nor receive the bias correction.
    """
    span = scale_span(scale)
    if max_iter < 1 or not 0.0 < confidence < 1.0 or noise_floor <= 0 or prior_weight < 0:
        raise ValueError("need max_iter >= 1, 0 < confidence < 1, noise_floor > 0.")
    j = Judgments.coded(items, workers, values, (n_items, n_workers), scale, censored)
    it, wk, x, at_bound = j
    if not np.all(np.isfinite(x)):
        raise ValueError("values must be finite numbers.")
    options = RatingOptions(confidence, noise_floor, floor_margin, bias, censored)
    floor2 = options.floor2(span)
    n_i = np.bincount(it, minlength=n_items).astype(np.float64)

    g = np.full(n_items, np.nan)
    if gold is not None:
        g = np.asarray(gold, dtype=np.float64).reshape(-1)
        if g.size != n_items:
            raise ValueError(f"gold must have shape ({n_items},), NaN where none.")
    is_gold = ~np.isnan(g)
    jg = is_gold[it]

    prior_var = np.full(n_workers, np.nan)
    pw = np.zeros(n_workers)
    if worker_prior is not None:
        wp = np.asarray(worker_prior, dtype=np.float64).reshape(-1)
        if wp.size != n_workers or np.any(wp < 0):
            raise ValueError(f"worker_prior must have shape ({n_workers},), sds >= 0 or NaN.")
        known = ~np.isnan(wp)
        prior_var[known] = np.maximum(wp[known] ** 2, floor2)
        pw[known] = prior_weight

    plain = np.bincount(it, weights=x, minlength=n_items) / np.maximum(n_i, 1.0)
    mu = plain.copy()
    if init is not None:
        mu = np.asarray(init, dtype=np.float64).reshape(-1).copy()
        if mu.size != n_items:
            raise ValueError(f"init must have shape ({n_items},).")
        mu = np.where(np.isnan(mu), plain, mu)
    mu = np.where(is_gold, g, mu)
    b = np.zeros(n_workers)
    s0 = max(float(np.mean((x - mu[it]) ** 2)) if x.size else floor2, floor2)
    var = np.where(np.isnan(prior_var), s0, prior_var)
    if init_bias is not None:
        b = _warm("init_bias", init_bias, n_workers, 0.0)
    if init_noise is not None:
        sd0 = _warm("init_noise", init_noise, n_workers, np.nan)
        var = np.where(np.isnan(sd0), var, np.maximum(sd0**2, floor2))

    tied, group = tied_pairs(j, n_i, is_gold, np.isnan(prior_var))
    pooled = [s0]

    def sweep(b: NDArray[np.float64], var: NDArray[np.float64]) -> Sweep:
        """One step of the alternating least squares from biases ``b`` and noise ``var``."""
        # judgment-sized temporaries are freed as soon as they are used (the fit's peak
        # memory is this function's); every value is computed as before
        w = 1.0 / var[wk]
        y = np.where(at_bound, x, x - b[wk])
        wy = w * y
        del y
        s_sum = np.bincount(it, weights=wy, minlength=n_items)
        w_sum = np.bincount(it, weights=w, minlength=n_items)
        new_mu = np.where(is_gold, g, s_sum / np.where(w_sum > 0, w_sum, 1.0))
        # leave-one-out means and their variances (gold: known exactly)
        w_all = w_sum[it]
        loo_w = w_all - w
        ok = (loo_w > 1e-12 * w_all) | jg
        del w_all
        safe = np.where(ok & ~jg, loo_w, 1.0)
        del loo_w
        loo_mu = np.where(jg, g[it], (s_sum[it] - wy) / safe)
        del wy
        loo_v = np.where(jg, 0.0, 1.0 / safe)
        del safe
        r = np.where(ok, x - loo_mu, 0.0)
        del loo_mu
        ok_f = ok.astype(np.float64)
        m = np.bincount(wk, weights=ok_f, minlength=n_workers)
        free = np.where(at_bound, 0.0, ok_f)
        del ok_f
        m_b = np.bincount(wk, weights=free, minlength=n_workers)
        R = np.bincount(wk, weights=free * r, minlength=n_workers)
        # damped step, as for s^2 below: b_j's update uses its partners' biases (through the
        # leave-one-out mean) with slopes w_p / loo_w; with two judgments per item opposite
        # biases swap back and forth (slope -m / (m + 1)). c_b = sum_i sum_p (w_p / loo_w)^2 /
        # (m_b + 1) bounds that slope; the step 1 / (1 + c_b) keeps the fixed point
        w2 = w * w
        q = np.bincount(it, weights=w2, minlength=n_items)[it] - w2
        del w2
        loo_v2 = loo_v**2
        cb = free * np.where(jg, 0.0, q * loo_v2)
        cb = np.bincount(wk, weights=cb, minlength=n_workers)
        # sum_i v_ij^2 sum_{j' != j} w_j'^2 over the judgments with a leave-one-out mean
        c = np.bincount(wk, weights=np.where(ok & ~jg, loo_v2 * q, 0.0), minlength=n_workers)
        del q, loo_v2
        kappa = np.ones(n_workers)
        if bias:
            A = np.bincount(wk, weights=np.where(ok, r * r - loo_v, 0.0), minlength=n_workers)
            kappa = bias_prior(var, m_b, R, A, c, m)
        new_bias, cb = R / (m_b + kappa), cb / (m_b + kappa)
        new_bias = (cb * b + new_bias) / (1.0 + cb)
        if not bias:
            new_bias[:] = 0.0
        elif m.sum() > 0:
            # gauge: biases against the crowd; with gold, one common offset on top (below)
            new_bias -= np.sum(m_b * new_bias) / max(m_b.sum(), 1.0)
            fg = free * jg
            if fg.sum() > 0:
                # the offset that makes the weighted item mean of the gold items' judgments
                # (censored ones as given) equal their gold in aggregate
                res_g = np.where(jg, x - free * new_bias[wk] - np.nan_to_num(g[it]), 0.0)
                new_bias += float(np.sum(w * res_g) / np.sum(w * fg))
                del res_g
            del fg
        del w, free
        shift = np.where(at_bound, 0.0, new_bias[wk])
        # a tied pair's residuals are differences of two judgments, variance 2 s^2 (not s^2 +
        # the partner's current s^2, whose update would swap the two values back and forth)
        e2 = np.where(ok, (r - shift) ** 2 - np.where(tied[wk], 0.0, loo_v), 0.0)
        del r, shift
        ss = np.bincount(wk, weights=e2, minlength=n_workers)
        per = np.where(tied, 2.0, 1.0)  # residual variance per unit of s_j^2
        if m.sum() > 0:
            pooled[0] = max(float(np.sum(ss / per) / m.sum()), floor2)
        centre = np.where(np.isnan(prior_var), pooled[0], prior_var)
        nu = noise_prior(ss / per, m, c, pooled[0])
        weight = np.where(np.isnan(prior_var), nu, pw)
        num = np.bincount(group, weights=weight * centre + ss, minlength=n_workers)[group]
        den = np.bincount(group, weights=weight + per * m, minlength=n_workers)[group]
        new_var = np.maximum(num / np.maximum(den, 1e-12), floor2)
        # damped step: the partners' s^2 enter v_ij, so adding d to every s^2 moves this update
        # by -c_j d, c_j = mean_i v_ij^2 sum_{j' != j} w_j'^2 in [0, 1] (1 when every item has
        # two judgments: the level flips back and forth); the step 1 / (1 + c_j) removes that
        # slope and keeps the fixed point
        c = np.where(tied, 0.0, c / np.maximum(m, 1.0))
        new_var = (c * var + new_var) / (1.0 + c)
        return Sweep(new_mu, new_bias, new_var, ok, loo_v)

    fit = squarem(sweep, mu, b, var, max_iter, tol * span)
    return model_outputs(j, fit, Priors(g, prior_var, pw, tied), options, span)


def model_outputs(
    j: Judgments, fit: Sweep, priors: Priors, options: RatingOptions, span: float
) -> RatingModel:
    """The model's outputs from its ``fit`` (means, biases, noise variances, the last step's
    ``ok`` and ``loo_v``): one vectorised pass over the judgments (module docstring for the
    formulas). The items and workers are those of ``priors`` (gold (N,), the rest (W,))."""
    it, wk, x, at_bound = j
    mu, b, var, ok, loo_v = fit.mu, fit.b, fit.var, fit.ok, fit.loo_v
    g, prior_var, pw, tied = priors
    n_items, n_workers = g.size, prior_var.size
    noise_floor, confidence = options.noise_floor, options.confidence
    floor_margin = options.floor_margin
    is_gold = ~np.isnan(g)
    n_i = np.bincount(it, minlength=n_items).astype(np.float64)
    n_w = np.bincount(wk, minlength=n_workers).astype(np.int64)
    judged = n_i > 0
    var_j = var[wk]
    w_sum = np.bincount(it, weights=1.0 / var_j, minlength=n_items)
    mean = np.where(is_gold, g, np.where(judged, mu, np.nan))
    sd = np.where(is_gold, 0.0, np.where(judged, 1.0 / np.sqrt(np.maximum(w_sum, 1e-300)), np.nan))
    noise_sd = np.sqrt(var)
    # effective degrees of freedom: each residual carries the variance of its leave-one-out mean
    infl = np.where(ok, (1.0 + loo_v / var_j) ** 2, 0.0)
    m_ok = np.bincount(wk, weights=ok.astype(np.float64), minlength=n_workers)
    d_eff = m_ok**2 / np.maximum(np.bincount(wk, weights=infl, minlength=n_workers), 1e-300)
    dof = d_eff + np.where(np.isnan(prior_var), 2.0, pw)
    tail = (1.0 - confidence) / 2.0
    low = np.sqrt(dof * var / special.chdtri(dof, tail))
    high = np.sqrt(dof * var / special.chdtri(dof, 1.0 - tail))

    y = np.where(at_bound, x, x - b[wk])
    mu_j = mu[it]
    res = y - mu_j
    res2 = res * res
    many = (n_i >= 2) & ~is_gold
    df = np.maximum(n_i - 1.0, 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        item_spread = np.sqrt(np.bincount(it, weights=res2, minlength=n_items) / df)
        expected = np.sqrt(np.bincount(it, weights=var_j, minlength=n_items) / n_i)
        chi = np.bincount(it, weights=res2 / var_j, minlength=n_items)
    item_spread = np.where(many, item_spread, np.nan)
    expected = np.where(many, expected, np.nan)
    spread_p = np.where(many, special.chdtrc(df, chi), np.nan)
    wchance = np.maximum(_worker_chance(wk, y, mu_j, n_workers), noise_floor * span)
    chance_sd = float(np.std(mean[judged])) if judged.any() else 0.0
    chance_sd = max(chance_sd, noise_floor * span)
    return RatingModel(
        mean=mean,
        sd=sd,
        bias=np.where(n_w > 0, b, np.nan),
        noise_sd=np.where(n_w > 0, noise_sd, np.nan),
        low=np.where(n_w > 0, low, np.nan),
        high=np.where(n_w > 0, high, np.nan),
        n=n_w,
        chance_sd=chance_sd,
        floor_sd=noise_sd_floor(chance_sd, floor_margin),
        worker_chance_sd=np.where(n_w > 0, wchance, np.nan),
        worker_floor_sd=np.where(n_w > 0, noise_sd_floor(wchance, floor_margin), np.nan),
        item_spread=item_spread,
        expected_spread=expected,
        spread_p=spread_p,
        # keyword lists alike in shape in ingest/api.py (a reader's options): nothing in common
        iterations=fit.iterations,
        converged=fit.converged,
        shared_noise=tied,
    )
