"""The preference model's log posterior at a fixed crowd accuracy: its likelihood, its priors
and their gradient.

The model (Crowd-BT with Davidson's ties and a position bias per annotator) and the choice of
its priors: :mod:`monitor.metrics.preferences.model`, which finds the posterior's mode.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from monitor.metrics.preferences.model_data import Layout, PreferenceData
from monitor.metrics.preferences.model_summary import sigmoid

SCORE_SD = 3.0
"""Prior sd of an item's log-strength: 95% of the items within +-6 logits (a 0.998 preference),
wide enough for any spread real preferences show, narrow enough to keep every score finite."""
RELIABILITY_SD = 1.0
"""Prior sd of logit eta around the crowd's mean: one sd multiplies an annotator's odds of
answering along the order by e; at eta = 0.9 the prior weighs as much as about 11 strict answers
of a perfectly informative kind, far fewer of the usual (the Fisher information of a strict
answer about logit eta is ``eta (1 - eta) (2 sig(|d|) - 1)^2``)."""
BIAS_SD = 1.0
"""Starting sd of the position biases (one logit: a 73% preference for the left of two equal
items); the fit replaces it by the crowd's (module docstring)."""
TIE_SD = 1.0
"""Prior sd of log nu around the crowd's mean: one sd multiplies the tie odds by about e."""


class Posterior:
    """Negative log posterior and its gradient at a fixed crowd mean ``mu``."""

    def __init__(
        self,
        data: PreferenceData,
        lay: Layout,
        prior_logit: NDArray[np.float64],
        mu: float,
        dtype: type = np.float32,
    ):
        self.data, self.lay, self.mu, self.dt = data, lay, mu, dtype
        self.bias_sd = BIAS_SD
        self.has_prior = np.isfinite(prior_logit)
        self.prior_logit = np.where(self.has_prior, prior_logit, 0.0)
        self.n_tie = np.bincount(data.w[data.b :], minlength=lay.n_workers).astype(np.float64)
        self.gold_along = (data.y[data.a : data.b] == data.o[data.a : data.b]).astype(np.float64)
        self.y32: NDArray = data.y.astype(dtype)
        self.tie_row: NDArray = (data.y == 0).astype(dtype)

    def centre(self) -> NDArray[np.float64]:
        return np.where(self.has_prior, self.prior_logit, self.mu)

    def __call__(self, x: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        D, lay, dt = self.data, self.lay, self.dt
        s, g, b, lam, mu_t = lay.unpack(x)
        W, n_i, a, bb, c = lay.n_workers, lay.n_items, D.a, D.b, D.c
        # per-comparison arithmetic in single precision (half the memory traffic, twice the
        # speed of exp and log); every sum over comparisons is accumulated in double
        d = s.astype(dt)[D.left] - s.astype(dt)[D.right]
        eta = sigmoid(g)
        grad = np.zeros_like(x)
        gd = np.zeros_like(d)
        # strict answers off gold pairs: the Crowd-BT mixture with the left offset
        ws, ys = D.w[:a], self.y32[:a]
        yd = ys * d[:a]
        e: NDArray = eta.astype(dt)[ws]
        if b is not None:
            yb = ys * b.astype(dt)[ws]
            A, C = sigmoid(yb + yd), sigmoid(yb - yd)
            tA, tC = A * (1 - A), C * (1 - C)
        else:
            A = sigmoid(yd)
            C = 1 - A
            tA = A * C
            tC = tA.copy()
        # floored: a trial step of the line search may push both branches to 0
        P = np.maximum(C + e * (A - C), dt(1e-30))
        ll = float(np.log(P).sum(dtype=np.float64))
        inv = np.reciprocal(P)
        tA *= e * inv
        tC *= (1 - e) * inv
        gd[:a] = ys * (tA - tC)
        g_eta = np.bincount(ws, weights=e * (1 - e) * (A - C) * inv, minlength=W).astype(float)
        if b is not None:
            grad[lay.b : lay.t] = np.bincount(ws, weights=ys * (tA + tC), minlength=W)
            grad[lay.b : lay.t] -= b / self.bias_sd**2
            ll -= 0.5 * float((b**2).sum()) / self.bias_sd**2
        # strict answers on gold pairs: along the gold order with probability eta
        wg, along = D.w[a:bb], self.gold_along
        eg = eta[wg]
        ll += float(np.log(np.where(along > 0, eg, 1 - eg)).sum())
        g_eta += np.bincount(wg, weights=along - eg, minlength=W)
        # gold pairs clamp the consensus outcome: an answer along gold by a perfect annotator
        og = self.y32[:0] if a == c else D.o[a:c].astype(dt)
        pg = sigmoid(og * d[a:c])
        ll += float(np.log(pg).sum(dtype=np.float64))
        gd[a:c] += og * (1 - pg)
        if lam is not None:
            # P(tie) = nu / (nu + 2 cosh(d/2)) = nu u / (nu u + 1 + u^2) with u = exp(-|d|/2);
            # d log P(strict)/dd = tanh(d/2) P(tie) / 2, d log P(tie)/dd = -tanh(d/2) P(strict) / 2
            nu = np.exp(lam).astype(dt)[D.w]
            u = np.exp(dt(-0.5) * np.abs(d))
            nu *= u
            p_tie = nu / (nu + 1 + u * u)
            chosen = np.maximum(np.where(self.tie_row, p_tie, 1 - p_tie), dt(1e-30))
            ll += float(np.log(chosen).sum(dtype=np.float64))
            gd += dt(0.5) * np.tanh(dt(0.5) * d) * (p_tie - self.tie_row)
            dev = lam - mu_t
            grad[lay.t : -1] = self.n_tie - np.bincount(D.w, p_tie, W) - dev / TIE_SD**2
            grad[-1] = dev.sum() / TIE_SD**2
            ll -= 0.5 * float((dev**2).sum()) / TIE_SD**2
        grad[:n_i] = np.bincount(D.left, gd, n_i) - np.bincount(D.right, gd, n_i) - s / SCORE_SD**2
        dev = g - self.centre()
        grad[lay.g : lay.b] = g_eta - dev / RELIABILITY_SD**2
        ll -= 0.5 * float((s**2).sum()) / SCORE_SD**2
        ll -= 0.5 * float((dev**2).sum()) / RELIABILITY_SD**2
        return -ll, -grad
