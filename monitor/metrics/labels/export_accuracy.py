"""The expected accuracy of the exported labels: the share of items whose answer is right.

A reliability model's own posteriors are overconfident: they treat each worker's accuracy as
known. Here each draw ``s`` of ``draws`` takes every worker's accuracy from its posterior given
the worker's answers, ``acc_w ~ Beta(a_w m_w + 1, (1 - a_w) m_w + 1)`` (``a_w`` the model's
accuracy, ``m_w`` the worker's judgments), and scores the exported label ``l_i`` of each item
under the one-coin model (Dawid & Skene 1979 with one accuracy per worker, errors spread evenly
over the ``K - 1`` other classes, class prior ``pi``):

``p_is = pi_l exp(B_il) / sum_k pi_k exp(B_ik)``, ``B_ik = sum_{judgments (i, w) answering k}
log(acc_w (K - 1) / (1 - acc_w))``

(a class nobody answered has ``B_ik = 0``, so the cost is linear in the judgments, whatever
``K``). A gold item's label is right: ``p_is = 1``.

The one-coin model takes the judgments of an item as independent given its class. They are not:
they share the item's difficulty (a hard item misleads many workers at once), and the model's
posteriors, taken as they are, expect the exported labels of rte to be right on 98.6% of the
items where they are on 92.9%. Each item's evidence is therefore counted as that of its
effective number of independent judgments, ``n_i / (1 + (n_i - 1) rho)`` (Kish's design effect,
*Survey Sampling*, 1965, with ``rho`` the correlation of the judgments of one item):
``B_ik`` is multiplied by ``t_i = 1 / (1 + (n_i - 1) rho)``. ``rho`` is fitted to the answers
themselves, with no truth: it maximises the likelihood of each judgment predicted from the
other judgments of its item (leave one out), ``P(answer l) = p_l acc_w + (1 - p_l) (1 - acc_w)
/ (K - 1)`` with ``p`` the tempered posterior of the others (``t = 1 / (1 + (n_i - 2) rho)``
for the ``n_i - 1`` of them): where the workers split more often than independent answers
would, ``rho`` grows and the posteriors of split items fall. ``rho = 0`` is the plain model
(:func:`held_out_rho`). The expectation is ``E = mean_s mean_i p_is``.
Its variance has two parts: the model's, ``var_s(mean_i p_is)`` over the draws, and the items'
(which of them turn out right is a Poisson-binomial draw), ``mean_s sum_i p_is (1 - p_is) / N^2``.
The interval is ``E +- z sqrt(model + items)``, clipped to [0, 1]. The draws are scored one at
a time: the memory is a few values per item and per answered (item, class) cell, whatever the
number of draws.

Multi-label sets (:func:`expected_set_accuracy`): each option of each item is one binary unit
(answered by every judgment of the item, chosen or not); an exported set is right when every
option is, ``p_is = prod_a p_ias``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import ndtri

DRAWS = 100
"""Draws of the workers' accuracies: the model's part of the variance to within about 15%."""
ACC_CLIP = (1e-6, 1.0 - 1e-6)


@dataclass(frozen=True)
class ExpectedAccuracy:
    """``value``: expected share right; ``low``/``high``: its interval; ``n``: items scored;
    ``model_sd``, ``items_sd``: the two parts of its standard deviation; ``posterior``: the
    model's own mean posterior of the exported labels (for comparison)."""

    value: float
    low: float
    high: float
    n: int
    model_sd: float
    items_sd: float


def _draw_accuracy(
    accuracy: NDArray[np.float64], n: NDArray[np.float64], draws: int, rng: np.random.Generator
) -> NDArray[np.float64]:
    a = np.clip(np.nan_to_num(accuracy, nan=0.5), *ACC_CLIP)
    m = np.maximum(np.nan_to_num(n, nan=0.0), 0.0)
    return np.clip(rng.beta(a * m + 1.0, (1.0 - a) * m + 1.0, size=(draws, a.size)), *ACC_CLIP)


class _OneCoin:
    """The one-coin posterior of each unit's exported class, for one draw of the workers'
    accuracies at a time: the layout of the (unit, answered class) cells is made once; each
    call costs a few passes over the judgments and holds one value per unit (never a
    draws x units matrix)."""

    def __init__(
        self,
        units: NDArray[np.int64],
        workers: NDArray[np.int64],
        answers: NDArray[np.int64],
        exported: NDArray[np.int64],
        prior: NDArray[np.float64],
    ) -> None:
        U, K = exported.size, prior.size
        self.U, self.K, self.workers = U, K, workers
        self.n = np.bincount(units, minlength=U).astype(np.float64)  # judgments per unit
        cells, self.where = np.unique(units * K + answers, return_inverse=True)
        self.n_cells = cells.size
        self.row, col = cells // K, cells % K
        pi = np.clip(prior, 1e-12, None)
        pi = pi / pi.sum()
        rest = 1.0 - np.bincount(self.row, weights=pi[col], minlength=U)  # unanswered classes
        self.rest = np.clip(rest, 0.0, None)
        row = self.row
        self.starts = np.flatnonzero(np.r_[True, row[1:] != row[:-1]]) if row.size else row
        self.pi_col = pi[col]
        self.hit = col == exported[row]
        self.unanswered = (exported >= 0) & (np.bincount(row[self.hit], minlength=U) == 0)
        self.pi_unanswered = pi[exported[self.unanswered]]
        self.temper = np.ones(self.n_cells)  # t_i of each cell's unit (temper_by)

    def temper_by(self, rho: float) -> None:
        """Count each unit's evidence as that of its effective judgments (module docstring)."""
        self.temper = self.tempering(rho)[self.row]

    def tempering(self, rho: float, others: bool = False) -> NDArray[np.float64]:
        """(U,): ``t_i = 1 / (1 + (n_i - 1) rho)``; ``others``: for the ``n_i - 1`` judgments
        left beside one."""
        m = np.maximum(self.n - (2.0 if others else 1.0), 0.0)
        return 1.0 / (1.0 + m * rho)

    def _log_odds(self, a: NDArray[np.float64]) -> NDArray[np.float64]:
        """Each judgment's weight of evidence, ``log(acc_w (K - 1) / (1 - acc_w))``."""
        return np.log(a * max(self.K - 1, 1) / (1.0 - a))[self.workers]

    def _normalise(
        self, b: NDArray[Any]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """For cell log-odds ``b``: each unit's shift ``top`` (its largest ``B``, at least 0:
        the unanswered classes sit at ``B = 0``), each cell's ``pi_k exp(B - top)`` and each
        unit's sum of them over all its classes, ``z``."""
        row, U = self.row, self.U
        top = np.zeros(U)
        if row.size:  # cells are sorted by unit
            top[row[self.starts]] = np.maximum(np.maximum.reduceat(b, self.starts), 0.0)
        term = self.pi_col * np.exp(b - top[row])
        z = np.bincount(row, weights=term, minlength=U) + self.rest * np.exp(-top)
        return top, term, z

    def held_out_loss(self, a: NDArray[np.float64], rho: float) -> float:
        """Minus the log-likelihood of each judgment predicted from the others of its unit
        (module docstring), for accuracies ``a`` (W,) and correlation ``rho``."""
        row, K = self.row, self.K
        own = self._log_odds(a)
        b = np.bincount(self.where, weights=own, minlength=self.n_cells)
        t = self.tempering(rho, others=True)
        top, term, z = self._normalise(b * t[row])
        cell, unit = self.where, row[self.where]
        left = self.pi_col[cell] * np.exp(t[unit] * (b[cell] - own) - top[unit])  # without j
        others = np.maximum(z[unit] - term[cell], 0.0)
        p = left / (left + others)  # the others' posterior of the class j answered
        aj = a[self.workers]
        agree = p * aj + (1.0 - p) * (1.0 - aj) / max(K - 1, 1)
        return float(-np.log(np.maximum(agree, 1e-300)).sum())

    def __call__(self, a: NDArray[np.float64]) -> NDArray[np.float64]:
        """(U,): each unit's probability that its exported class is right, for accuracies
        ``a`` (W,)."""
        row, U = self.row, self.U
        w = self._log_odds(a)
        top, term, z = self._normalise(
            np.bincount(self.where, weights=w, minlength=self.n_cells) * self.temper
        )
        mine = np.bincount(row[self.hit], weights=term[self.hit], minlength=U).astype(np.float64)
        mine[self.unanswered] = self.pi_unanswered * np.exp(-top[self.unanswered])
        return mine / z


RHO_BOUNDS = (1e-4, 10.0)
"""Where :func:`held_out_rho` looks for ``rho`` (then compares with 0, independence): at 10, ten
judgments of an item count as 1.1."""


def held_out_rho(models: list[_OneCoin], accuracy: NDArray[np.float64]) -> float:
    """The correlation ``rho`` of the judgments of one unit that best predicts each judgment
    from the others of its unit, over the units of ``models`` (module docstring); 0 where
    independence predicts as well. A bounded search over ``log rho``."""
    from scipy.optimize import minimize_scalar

    a = np.clip(np.nan_to_num(accuracy, nan=0.5), *ACC_CLIP)

    def loss(log_rho: float) -> float:
        return sum(m.held_out_loss(a, float(np.exp(log_rho))) for m in models)

    found = minimize_scalar(loss, bounds=tuple(np.log(RHO_BOUNDS)), method="bounded",
                            options={"xatol": 0.05})  # fmt: skip
    independent = sum(m.held_out_loss(a, 0.0) for m in models)
    return float(np.exp(found.x)) if found.fun < independent else 0.0


def _summary(draws: Iterable[NDArray[np.float64]], confidence: float) -> ExpectedAccuracy:
    """Value and interval from each draw's (N,) probabilities of being right (module
    docstring), one draw at a time."""
    means: list[float] = []
    spread: list[float] = []  # sum_i p_is (1 - p_is) per draw
    N = 0
    for p in draws:
        N = p.size
        if N == 0:
            break
        means.append(float(p.mean()))
        spread.append(float((p * (1.0 - p)).sum()))
    if N == 0:
        nan = float("nan")
        return ExpectedAccuracy(nan, nan, nan, 0, nan, nan)
    per_draw = np.asarray(means)
    value = float(per_draw.mean())
    model_var = float(per_draw.var(ddof=1)) if per_draw.size > 1 else 0.0
    items_var = float(np.mean(spread)) / N**2
    z = float(ndtri(0.5 + confidence / 2.0))
    half = z * np.sqrt(model_var + items_var)
    return ExpectedAccuracy(
        value,
        float(max(0.0, value - half)),
        float(min(1.0, value + half)),
        N,
        float(np.sqrt(model_var)),
        float(np.sqrt(items_var)),
    )


def expected_accuracy(
    items: ArrayLike,
    workers: ArrayLike,
    answers: ArrayLike,
    exported: ArrayLike,
    accuracy: ArrayLike,
    n: ArrayLike,
    prior: ArrayLike,
    *,
    gold: ArrayLike | None = None,
    draws: int = DRAWS,
    confidence: float = 0.95,
    seed: int = 0,
) -> ExpectedAccuracy:
    """The expected share of items whose exported label is right, with its interval (module
    docstring). ``items``, ``workers``, ``answers``: one entry per judgment (codes);
    ``exported``: (N,) the exported class per item, -1 for none (not scored); ``accuracy``,
    ``n``: (W,) each worker's accuracy and judgments; ``prior``: (K,) the class prior;
    ``gold``: (N,) bool, items whose label is known (right by construction).

    Two workers of accuracy 0.9 answering class 0 on one item, equal priors:
    ``p = 0.81 / (0.81 + 0.01) = 0.988`` for known accuracies; drawn from Beta(91, 11) each,
    a little less.

    >>> r = expected_accuracy([0, 0], [0, 1], [0, 0], [0], [0.9, 0.9], [100, 100], [0.5, 0.5])
    >>> round(r.value, 2), r.n, r.low <= r.value <= r.high
    (0.98, 1, True)
    """
    it = np.asarray(items, dtype=np.int64)
    wk = np.asarray(workers, dtype=np.int64)
    ans = np.asarray(answers, dtype=np.int64)
    ex = np.asarray(exported, dtype=np.int64)
    acc = np.asarray(accuracy, dtype=np.float64)
    cnt = np.asarray(n, dtype=np.float64)
    pi = np.asarray(prior, dtype=np.float64)
    rng = np.random.default_rng(seed)
    drawn = _draw_accuracy(acc, cnt, draws, rng)
    posterior = _OneCoin(it, wk, ans, ex, pi)
    posterior.temper_by(held_out_rho([posterior], acc))
    scored = (ex >= 0) & (np.bincount(it, minlength=ex.size) > 0)
    known = np.asarray(gold, dtype=bool)[scored] if gold is not None else None

    def each_draw() -> Iterator[NDArray[np.float64]]:
        for a in drawn:
            p = posterior(a)[scored]
            if known is not None:
                p[known] = 1.0
            yield p

    return _summary(each_draw(), confidence)


def expected_set_accuracy(
    items: ArrayLike,
    workers: ArrayLike,
    chosen: ArrayLike,
    exported: ArrayLike,
    accuracy: ArrayLike,
    n: ArrayLike,
    prior: ArrayLike,
    *,
    draws: int = DRAWS,
    confidence: float = 0.95,
    seed: int = 0,
) -> ExpectedAccuracy:
    """Multi-label sets: the expected share of items whose exported set is exactly right.
    ``items``, ``workers``: one entry per judgment; ``chosen``: (judgments, A) bool, the
    options each judgment chose; ``exported``: (N, A) bool, the exported sets (items without a
    judgment are not scored); ``prior``: (A,) each option's share of items that hold it.

    >>> r = expected_set_accuracy([0, 0], [0, 1], [[1, 0], [1, 0]], [[1, 0]],
    ...                           [0.9, 0.9], [100, 100], [0.5, 0.5])
    >>> round(r.value, 2)
    0.97
    """
    it = np.asarray(items, dtype=np.int64)
    wk = np.asarray(workers, dtype=np.int64)
    ch = np.asarray(chosen, dtype=bool)
    ex = np.asarray(exported, dtype=bool)
    N, A = ex.shape
    q = np.asarray(prior, dtype=np.float64)
    rng = np.random.default_rng(seed)
    drawn = _draw_accuracy(np.asarray(accuracy, dtype=np.float64),
                           np.asarray(n, dtype=np.float64), draws, rng)  # fmt: skip
    options = [_OneCoin(it, wk, ch[:, a].astype(np.int64), ex[:, a].astype(np.int64),
                        np.array([1.0 - q[a], q[a]])) for a in range(A)]  # fmt: skip
    rho = held_out_rho(options, np.asarray(accuracy, dtype=np.float64))
    for option in options:
        option.temper_by(rho)
    judged = np.bincount(it, minlength=N) > 0

    def each_draw() -> Iterator[NDArray[np.float64]]:
        for acc in drawn:
            right = np.ones(N)
            for option in options:
                right *= option(acc)
            yield right[judged]

    return _summary(each_draw(), confidence)


__all__ = ["ExpectedAccuracy", "expected_accuracy", "expected_set_accuracy"]
