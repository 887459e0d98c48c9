"""Dawid-Skene: worker confusion matrices and item truths estimated together by EM.

Dawid & Skene (1979), "Maximum likelihood estimation of observer error-rates using the EM
algorithm", *Applied Statistics* 28(1):20-28. Item ``i`` has a latent class ``z_i`` with prior
``pi_k``; worker ``w`` answers ``l`` with probability ``e_w[k, l] = P(answer l | z_i = k)``.

- E-step: ``T[i, k] ∝ pi_k * prod_{judgments (i, w, l)} e_w[k, l]`` (in logs, one sparse product
  ``B @ log e`` with ``B`` the item x (worker, answer) count matrix).
- M-step: ``pi_k = mean_i T[i, k]`` over judged items; ``n_w[k, l] = sum_{judgments (i, w, l)}
  T[i, k]`` (one sparse product ``A @ T``), ``e_w[k, l] = n_w[k, l] / sum_l n_w[k, l]``.

No Python loop over judgments or workers: each iteration is two sparse-dense products.

Choices (documented, the paper leaves them open):

- **Start as crowd-kit's ``DawidSkene``** (Ustalov et al., crowd-kit 1.4): ``T`` starts at the
  majority-vote shares (``init="majority"``), ``pi`` and ``e`` are fitted to it, then each
  iteration is E-step, gold clamp, M-step. With ``smoothing=0``, ``min_judgments=0`` and
  ``min_item_judgments=1`` each step is crowd-kit's (cells of answers a worker gave are floored
  at 1e-10, as there), so from the same start the iterates are the same.
- **Stop** when the EM lower bound per judgment, ``F = [sum_i sum_k T[i,k] log pi_k +
  sum_{judgments} sum_k T[i,k] log e_w[k,l] + H(T)] / n``, changes by less than ``tol``. crowd-kit
  counts ``log pi_k`` once per judgment instead of once per item and stops as soon as its
  objective *falls*: on the duck data (Welinder et al. 2010) it stops after 2 iterations, at
  88.9% label accuracy, where running to convergence gives 89.8%. Where crowd-kit runs to
  convergence both end at the same labels.
- **Smoothing** (Dirichlet MAP): each confusion row gets ``smoothing`` pseudo-judgments spread as
  the pooled row of all workers, ``e_w[k, .] ∝ n_w[k, .] + s * E[k, .]`` with ``E[k, .]`` the
  pooled confusion row; a worker with few judgments on class ``k`` then looks like the crowd on
  ``k`` instead of getting a 0/1 row from two judgments.
- **One-coin fallback** (workers with fewer than ``min_judgments`` judgments in their counts,
  below): one accuracy ``p_w = (c_w + s * p_pool) / (n_w + s)`` with ``c_w = sum_l n_w[l, l]``
  the soft count of correct answers and ``p_pool`` the pooled accuracy; errors are spread as
  the crowd errs, ``e_w[k, l] = (1 - p_w) * D[k, l]`` for ``l != k`` where ``D`` is the pooled
  off-diagonal error distribution (rows normalised; uniform where the crowd never erred on
  ``k``).
- **History** (``worker_prior``, an accuracy ``a_w``): ``prior_weight`` pseudo-judgments, spread
  over classes by ``pi`` and over answers as ``a_w`` on the diagonal and ``(1 - a_w) D`` off it.
- **Exact ties** (classes the data cannot tell apart): the posteriors are rounded to 1e-10 at
  every E-step (:func:`_snap`), so a tie split equally at the majority-vote start stays split
  equally whatever the classes' codes or the judgments' order; labels of a tied item go to the
  class of highest prior, then the first declared (:func:`tie_break`).
- **Gold** items have ``T`` clamped to their one-hot class at the start and after every E-step.
- **Items judged once** (fewer than ``min_item_judgments``, gold aside) enter no worker's counts
  ``n_w``. A lone answer cannot be checked against anyone: it says only how often the worker
  gives each answer, and that speaks of their errors only if the items they alone judged are
  drawn like the rest (classes in proportion ``pi``). They often are not (an expert given the
  hard cases, a worker alone on a batch of one kind), and EM then reads the difference as errors,
  which it confirms through its own soft counts: the lone items' posteriors go to the class
  prior, which makes the worker look wrong there, which keeps the posteriors at the prior. On
  adult2 (Ipeirotis et al. 2010) an annotator alone on 21 of their 23 sites, right on 14 of the
  15 with an expert truth, was fitted an accuracy of 0.31, and 9 of those 15 were exported as
  the commonest class against their answer. The workers are measured on items others judged too; the lone items' posteriors still
  come from the fitted matrices. ``min_item_judgments=1`` counts every item (crowd-kit's).
- **Accuracy** ``acc_w = sum_k pi_k e_w[k, k]``; its interval is the Wilson score interval
  (``monitor.metrics.labels.gold.wilson_interval``) on ``acc_w`` as a share of ``m_w`` trials,
  ``m_w`` the worker's judgments that enter their counts plus history pseudo-judgments (none:
  the interval is [0, 1]). Like a Beta(c + 1, m - c + 1) posterior it is wide for few
  judgments (3 judgments: at least 0.4 wide) and shrinks as ``1 / sqrt(m_w)``; unlike the
  equal-tailed Beta interval it always contains the estimate (one judgment, right: Wilson
  [0.21, 1], Beta [0.16, 0.99]).
- **Chance** ``max_k pi_k``: an answerer whose answers are independent of the truth, with answer
  distribution ``q``, reaches ``sum_k pi_k q_k <= max_k pi_k`` (equality: always answering the
  commonest class), so no truth-independent answerer beats it. Such answerers sit *at* chance, so a
  flag ``high < chance`` catches only the confidently worse; ``floor = chance + floor_margin *
  (1 - chance)`` lies above them.
- **Per-worker chance** ``worker_chance_w = sum_k pi_k q_wk`` with ``q_wk = sum_t pi_t e_w[t, k]``
  the worker's answer distribution: the accuracy of the same answers shuffled across items
  (``acc_w > worker_chance_w`` is Cohen's kappa of the worker against the truth being positive).
  On skewed classes the campaign-wide chance is too high a bar: with ``pi = (0.9, 0.1)`` a worker
  with sensitivity 0.8 and specificity 0.86 (accuracy 0.85) is informative, yet below ``max pi``;
  their own chance is 0.735. The flags use ``worker_floor = worker_chance + floor_margin *
  (1 - worker_chance)`` (flag when ``high < worker_floor``), which a constant or random answerer
  falls below and an informative worker does not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, NamedTuple, TypedDict, Unpack

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import sparse

from monitor.metrics.common import accuracy_floor, bounded_codes, check_keywords, check_same_length
from monitor.metrics.labels.gold import wilson_interval

EPS = 1e-10
"""The label models' floor of probabilities and denominators."""


@dataclass(frozen=True, eq=False)
class LabelFit:
    """What every label model's result holds (Dawid-Skene, one-coin, multilabel): each
    worker's accuracy, its interval and judgments (:class:`MeasuredAccuracy`), the campaign's
    chance and the flags' floor above it (:class:`ChanceFloor`), and how EM ended."""

    accuracy: NDArray[np.float64] = field(repr=False)  # (W,)
    low: NDArray[np.float64] = field(repr=False)
    high: NDArray[np.float64] = field(repr=False)
    n: NDArray[np.int64] = field(repr=False)
    chance: float
    floor: float
    iterations: int
    converged: bool


@dataclass(frozen=True, eq=False)
class SingleLabelFit(LabelFit):
    """A single-label model's result (:class:`LabelFit`) with each worker's own chance and
    floor (:class:`WorkerAccuracy`) and the log-likelihood."""

    worker_chance: NDArray[np.float64] = field(repr=False)  # (W,)
    worker_floor: NDArray[np.float64] = field(repr=False)  # (W,)
    log_likelihood: float


@dataclass(frozen=True, eq=False)
class LabelModel(SingleLabelFit):
    """Dawid & Skene (1979) EM with full confusion matrices; one-coin fallback for workers
    with few judgments; gold items clamp their truth."""

    posterior: NDArray[np.float64] = field(repr=False)  # (N, K)
    labels: NDArray[np.int64] = field(repr=False)  # (N,) -1 unjudged (gold: the gold class)
    confusion: NDArray[np.float64] = field(repr=False)  # (W, K, K) [truth k, answer l]
    prior: NDArray[np.float64] = field(repr=False)  # (K,)
    one_coin: NDArray[np.bool_] = field(repr=False)


class _LabelSizes(TypedDict):
    """A label model's code ranges: ``items`` in ``0..n_items - 1``, and so on."""

    n_items: int
    n_workers: int
    n_classes: int


class FitSettings(TypedDict, total=False):
    """The settings every EM label model here takes (Dawid-Skene, one-coin, multilabel), each
    optional, their defaults in :data:`FIT_DEFAULTS`: ``max_iter`` (100), ``tol`` (1e-6): when
    EM stops; ``confidence`` (0.95): of the workers' intervals; ``smoothing`` (1):
    pseudo-judgments at the pooled rates; ``floor_margin`` (0.2): where the flag floor lies
    between chance and 1; ``min_item_judgments`` (2): items with fewer judgments (gold aside)
    enter no worker's counts."""

    max_iter: int
    tol: float
    confidence: float
    smoothing: float
    floor_margin: float
    min_item_judgments: int


FIT_DEFAULTS: FitSettings = {
    "max_iter": 100,
    "tol": 1e-6,
    "confidence": 0.95,
    "smoothing": 1.0,
    "floor_margin": 0.2,
    "min_item_judgments": 2,
}


class _LabelSettings(FitSettings, total=False):
    """A single-label model's settings besides the fit's, each optional (defaults in
    ``_DEFAULTS``)."""

    gold: ArrayLike | None
    worker_prior: ArrayLike | None
    prior_weight: float


class LabelOptions(_LabelSizes, _LabelSettings):
    """The keyword arguments :func:`dawid_skene` and the one-coin model
    (:func:`monitor.metrics.labels.one_coin.one_coin_dawid_skene`) share.

    ``n_items``, ``n_workers``, ``n_classes``: the codes' ranges. ``gold``: (N,) class of gold
    items, -1 elsewhere. ``worker_prior``: (W,) accuracy from history, NaN where none, worth
    ``prior_weight`` judgments (10). The rest: :class:`FitSettings` (``smoothing``: Dirichlet
    pseudo-judgments per confusion row, 0: crowd-kit's estimates).
    """


_DEFAULTS: _LabelSettings = {
    **FIT_DEFAULTS,
    "gold": None,
    "worker_prior": None,
    "prior_weight": 10.0,
}


class LabelInputs(NamedTuple):
    """A label model's judgments as checked codes, with gold and history per item and worker."""

    items: NDArray[np.int64]
    workers: NDArray[np.int64]
    labels: NDArray[np.int64]
    gold: NDArray[np.int64] | None  # (N,) gold class, -1 elsewhere
    history: NDArray[np.float64]  # (W,) accuracy from history, 0 where none
    history_weight: NDArray[np.float64]  # (W,) its pseudo-judgments, 0 where none
    options: LabelOptions  # every option, the defaults filled in


def label_inputs(
    items: ArrayLike, workers: ArrayLike, labels: ArrayLike, options: LabelOptions
) -> LabelInputs:
    """The arguments of :func:`dawid_skene` and of the one-coin model checked (TypeError on a
    missing or unknown option, ValueError on any out of range), the history ``worker_prior``
    spread into an accuracy and a weight per worker."""
    check_keywords(options, LabelOptions.__required_keys__, LabelOptions.__optional_keys__)
    o: LabelOptions = {**_DEFAULTS, **options}
    n_items, n_workers, k = o["n_items"], o["n_workers"], int(o["n_classes"])
    if k < 1 or n_items < 0 or n_workers < 0:
        raise ValueError("n_classes must be >= 1 and n_items, n_workers >= 0.")
    if (
        o["max_iter"] < 1
        or not 0.0 < o["confidence"] < 1.0
        or o["smoothing"] < 0
        or o["prior_weight"] < 0
    ):
        raise ValueError("need max_iter >= 1, 0 < confidence < 1, smoothing, prior_weight >= 0.")
    it = bounded_codes("items", items, n_items)
    wk = bounded_codes("workers", workers, n_workers)
    lb = bounded_codes("labels", labels, k)
    check_same_length(items=it, workers=wk, labels=lb)
    g = None
    gold, worker_prior = o["gold"], o["worker_prior"]
    if gold is not None:
        g = np.asarray(gold).reshape(-1).astype(np.int64)
        if g.size != n_items or g.min(initial=-1) < -1 or g.max(initial=-1) >= k:
            raise ValueError(f"gold must have shape ({n_items},) with codes in -1..{k - 1}.")
    hist = np.zeros(n_workers)
    hist_weight = np.zeros(n_workers)
    if worker_prior is not None:
        wp = np.asarray(worker_prior, dtype=np.float64).reshape(-1)
        if wp.size != n_workers or np.any((wp < 0) | (wp > 1)):
            raise ValueError(f"worker_prior must have shape ({n_workers},) with values in [0, 1].")
        known = ~np.isnan(wp)
        hist[known] = wp[known]
        hist_weight[known] = o["prior_weight"]
    return LabelInputs(it, wk, lb, g, hist, hist_weight, o)


def worker_interval(
    accuracy: NDArray[np.float64],
    n: NDArray[np.int64],
    trials: NDArray[np.float64] | NDArray[np.int64],
    confidence: float,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """A label model's interval on each worker's accuracy: the Wilson interval with ``trials``
    (the judgments that enter the worker's counts, and any history pseudo-judgments); [0, 1] for
    a worker whose ``n`` judgments none of count (judged only alone: nothing measures them, their
    accuracy is the crowd's, any value holds)."""
    low, high = wilson_interval(accuracy, trials, confidence)
    alone = (n > 0) & (trials == 0)
    low[alone], high[alone] = 0.0, 1.0
    return low, high


class MeasuredAccuracy(TypedDict):
    """The per-worker fields every label model shares: accuracy, its interval, the judgments."""

    accuracy: NDArray[np.float64]
    low: NDArray[np.float64]
    high: NDArray[np.float64]
    n: NDArray[np.int64]


def measured_accuracy(
    accuracy: NDArray[np.float64],
    n: NDArray[np.int64],
    trials: NDArray[np.float64] | NDArray[np.int64],
    confidence: float,
) -> MeasuredAccuracy:
    """Each worker's accuracy with its interval (:func:`worker_interval` on ``trials``) and
    judgments ``n``."""
    low, high = worker_interval(accuracy, n, trials, confidence)
    return {"accuracy": accuracy, "low": low, "high": high, "n": n}


class ChanceFloor(TypedDict):
    """A label model's chance level and the flags' floor above it."""

    chance: float
    floor: float


def chance_floor(chance: float, floor_margin: float) -> ChanceFloor:
    """``chance`` and the floor ``chance + floor_margin (1 - chance)`` the flags use."""
    return {"chance": chance, "floor": accuracy_floor(chance, floor_margin)}


class WorkerAccuracy(MeasuredAccuracy, ChanceFloor):
    """The per-worker fields the single-label models share: :class:`MeasuredAccuracy`, the
    campaign's chance with its floor, and each worker's chance with theirs."""

    worker_chance: NDArray[np.float64]
    worker_floor: NDArray[np.float64]


def worker_accuracy(
    ins: LabelInputs,
    accuracy: NDArray[np.float64],
    n: NDArray[np.int64],
    counted: NDArray[np.float64] | NDArray[np.int64],
    chance: float,
    worker_chance: NDArray[np.float64],
) -> WorkerAccuracy:
    """Each worker's ``accuracy`` with its interval (:func:`measured_accuracy`, the trials the
    ``counted`` judgments and the history pseudo-judgments of ``ins``), the campaign's and the
    worker's chance, and the floors ``chance + floor_margin (1 - chance)`` the flags use; NaN
    accuracy and chance for the workers without judgments (``n`` 0)."""
    o = ins.options
    accuracy = np.where(n > 0, accuracy, np.nan)
    worker_chance = np.where(n > 0, worker_chance, np.nan)
    return {
        **measured_accuracy(accuracy, n, counted + ins.history_weight, o["confidence"]),
        **chance_floor(chance, o["floor_margin"]),
        "worker_chance": worker_chance,
        "worker_floor": accuracy_floor(worker_chance, o["floor_margin"]),
    }


def _softmax_rows(s: NDArray[np.float64]) -> NDArray[np.float64]:
    """Row-wise softmax, in place (column-wise max and a product with ones: numpy's reductions
    along a short last axis are several times slower)."""
    top = s[:, 0].copy()
    for k in range(1, s.shape[1]):
        np.maximum(top, s[:, k], out=top)
    s -= top[:, None]
    np.exp(s, out=s)
    s /= (s @ np.ones(s.shape[1]))[:, None]
    return s


class _Design:
    """Sparse incidence of judgments: ``B`` (N x W*K) and ``A = B.T`` (W*K x N)."""

    def __init__(self, items: NDArray, workers: NDArray, labels: NDArray, n: int, w: int, k: int):
        wl = workers * k + labels
        ones = np.ones(items.size)
        self.B = sparse.csr_matrix((ones, (items, wl)), shape=(n, w * k))
        self.B.sum_duplicates()
        # A = B.T as a CSC view: A @ T then walks the items in order and scatters into the small
        # (W*K, K) result, which stays in cache (about 5x faster than a CSR copy of A)
        self.A = self.B.T
        self.per_item = np.bincount(items, minlength=n).astype(np.float64)
        self.present = np.bincount(wl, minlength=w * k).reshape(w, k) > 0  # (W, answer)
        self.w, self.k = w, k

    def counts(self, t: NDArray[np.float64]) -> NDArray[np.float64]:
        """``n_w[k, l]``, shape (W, truth K, answer K)."""
        return np.asarray(self.A @ t).reshape(self.w, self.k, self.k).transpose(0, 2, 1)

    def log_scores(self, log_conf: NDArray[np.float64]) -> NDArray[np.float64]:
        """``sum_{judgments of i} log e_w[k, l]``, shape (N, K)."""
        flat = log_conf.transpose(0, 2, 1).reshape(self.w * self.k, self.k)
        return np.asarray(self.B @ flat)


def _pooled(counts: NDArray[np.float64]) -> tuple[NDArray, NDArray, float]:
    """Pooled confusion rows ``E``, off-diagonal error distribution ``D``, pooled accuracy."""
    k = counts.shape[1]
    total = counts.sum(axis=0)
    rows = total.sum(axis=1, keepdims=True)
    pooled = np.where(rows > 0, total / np.where(rows > 0, rows, 1.0), 1.0 / k)
    off = total * (1.0 - np.eye(k))
    off_rows = off.sum(axis=1, keepdims=True)
    uniform = (1.0 - np.eye(k)) / max(k - 1, 1)
    errs = np.where(off_rows > 0, off / np.where(off_rows > 0, off_rows, 1.0), uniform)
    grand = total.sum()
    p_pool = float(np.trace(total) / grand) if grand > 0 else 1.0 / k
    return pooled, errs, p_pool


class _Fixed(NamedTuple):
    """What every M-step of one fit reads besides the soft counts and the prior."""

    present: NDArray[np.bool_]  # (W, answer) the answers each worker gave
    one_coin: NDArray[np.bool_]  # (W,) the workers fitted one accuracy
    smoothing: float
    hist: NDArray[np.float64]  # (W,) accuracy from history
    hist_weight: NDArray[np.float64]  # (W,) its pseudo-judgments


def _m_step(
    counts: NDArray[np.float64], prior: NDArray[np.float64], fixed: _Fixed
) -> NDArray[np.float64]:
    """Confusion matrices (W, K, K) from soft counts, with smoothing, one-coin and history."""
    present, one_coin, smoothing, hist, hist_weight = fixed
    k = counts.shape[1]
    eye = np.eye(k)
    pooled, errs, p_pool = _pooled(counts)
    has_hist = hist_weight > 0
    if has_hist.any():  # history pseudo-judgments: a_w on the diagonal, (1 - a_w) D off it
        shape = hist[:, None, None] * eye + (1.0 - hist[:, None, None]) * errs
        counts = counts + (hist_weight[:, None, None] * prior[None, :, None]) * shape
    if smoothing > 0:
        num = np.maximum(counts + smoothing * pooled[None], EPS)
    else:  # crowd-kit: floor the cells of answers the worker gave, others stay 0
        num = np.where(present[:, None, :], np.maximum(counts, EPS), 0.0)
    sums = num.sum(axis=2, keepdims=True)
    conf = np.where(sums > 0, num / np.where(sums > 0, sums, 1.0), 1.0 / k)
    if one_coin.any():
        oc = counts[one_coin]
        c = np.trace(oc, axis1=1, axis2=2)
        m = oc.sum(axis=(1, 2))
        p = (c + smoothing * p_pool) / np.maximum(m + smoothing, EPS)
        p = np.where(m + smoothing > 0, p, p_pool)
        # floored as the cells of the full matrices: a worker right on every judgment (p = 1)
        # must still make the other classes improbable, not impossible-and-ignored (_log of 0)
        conf[one_coin] = np.maximum(p[:, None, None] * eye + (1.0 - p[:, None, None]) * errs, EPS)
    return conf


SNAP = 1e-10  # posteriors are kept on this grid (exact ties stay exact, see _snap)


def _snap(t: NDArray[np.float64]) -> NDArray[np.float64]:
    """Posteriors rounded to a multiple of ``SNAP`` and renormalised, in place. Classes the
    data cannot tell apart (an exact tie: relabelling them maps the data onto itself) get equal
    posteriors at the majority-vote start and at every EM step, up to rounding errors of 1e-16
    that depend on the order of the sums (the labels' codes, the order of the judgments); the
    tie is a saddle of the likelihood that EM leaves along those errors, towards one of the
    mirror-image solutions, so the answer depended on how the classes were numbered. Rounding
    to ``SNAP`` removes the errors and keeps a tie split equally."""
    np.round(t / SNAP, out=t)
    t *= SNAP
    t /= t.sum(axis=1, keepdims=True)
    return t


def tie_break(t: NDArray[np.float64], prior: NDArray[np.float64]) -> NDArray[np.int64]:
    """Each row's class of highest posterior; among exactly tied classes the one of highest
    prior ``pi_k`` (the commoner class in the data), then the first in the declared order."""
    top = t.max(axis=1, keepdims=True) if t.size else t
    return (
        np.argmax(np.where(t == top, prior[None, :], -1.0), axis=1)
        if t.size
        else np.zeros(0, np.int64)
    )


def _log(x: NDArray[np.float64]) -> NDArray[np.float64]:
    with np.errstate(divide="ignore"):
        return np.where(x > 0, np.log(np.maximum(x, EPS)), 0.0)


def dawid_skene(
    items: ArrayLike,
    workers: ArrayLike,
    labels: ArrayLike,
    *,
    min_judgments: int = 20,
    init: Literal["majority"] | ArrayLike = "majority",
    **options: Unpack[LabelOptions],
) -> LabelModel:
    """Dawid-Skene EM (see the module docstring for the formulas and choices).

    ``items``, ``workers``, ``labels``: one entry per judgment (codes). ``min_judgments``:
    workers with fewer judgments in their counts get the one-coin fallback. ``init``:
    ``"majority"`` or an (N, K) warm start of ``T``. ``options``: :class:`LabelOptions` (the
    codes' ranges ``n_items``, ``n_workers``, ``n_classes``, required; gold, history and the
    fit's settings).
    """
    ins = label_inputs(items, workers, labels, options)
    it, wk, lb, g, hist, hist_weight, o = ins
    n_items, n_workers, k = o["n_items"], o["n_workers"], int(o["n_classes"])
    max_iter, tol, smoothing = o["max_iter"], o["tol"], o["smoothing"]
    d = _Design(it, wk, lb, n_items, n_workers, k)
    judged = d.per_item > 0
    rows: slice | NDArray[np.bool_] = slice(None) if judged.all() else judged  # avoid copies
    n_w = np.bincount(wk, minlength=n_workers).astype(np.int64)
    clamp = np.flatnonzero(g >= 0) if g is not None else np.empty(0, np.int64)
    learn = d.per_item >= o["min_item_judgments"]
    learn[clamp] = True
    # the items that enter the workers' counts (module docstring); None: all of them
    taught = None if learn[judged].all() else learn.astype(np.float64)[:, None]
    m_w = np.bincount(wk, learn[it], n_workers) if taught is not None else n_w
    one_coin = m_w < min_judgments
    onehot = np.eye(k)[g[clamp]] if g is not None else np.empty((0, k))

    if isinstance(init, str):
        if init != "majority":
            raise ValueError(f"init must be 'majority' or an (N, K) array, got {init!r}.")
        votes = np.bincount(it * k + lb, minlength=n_items * k).reshape(n_items, k).astype(float)
        t = votes / np.maximum(votes.sum(axis=1, keepdims=True), 1.0)
    else:
        t = np.array(init, dtype=np.float64)
        if t.shape != (n_items, k) or np.any(t < 0) or not np.all(np.isfinite(t)):
            raise ValueError(f"init must be an ({n_items}, {k}) array of non-negative weights.")
        t = t / np.maximum(t.sum(axis=1, keepdims=True), EPS)
    t[clamp] = onehot

    ones = np.ones(int(judged.sum()))

    def prior_of(t: NDArray[np.float64]) -> NDArray[np.float64]:
        p = ones @ t[rows] / ones.size if judged.any() else np.full(k, 1.0 / k)
        return np.maximum(p, EPS)

    fixed = _Fixed(d.present, one_coin, smoothing, hist, hist_weight)
    prior = prior_of(t)
    counts = d.counts(t if taught is None else t * taught)
    conf = _m_step(counts, prior, fixed)
    loss = -np.inf
    converged = False
    iterations = 0
    while iterations < max_iter:
        iterations += 1
        t = _snap(_softmax_rows(d.log_scores(_log(conf)) + np.log(prior)))
        t[clamp] = onehot
        prior = prior_of(t)
        counts = d.counts(t if taught is None else t * taught)
        conf = _m_step(counts, prior, fixed)
        tj = t[rows]
        joint = float(np.sum(counts * _log(conf)) + (ones @ tj) @ np.log(prior))
        ent = np.maximum(tj, EPS)
        np.log(ent, out=ent)
        ent *= tj
        new_loss = (joint - float(ent.sum())) / max(it.size, 1)
        if abs(new_loss - loss) < tol:
            converged = True
            break
        loss = new_loss

    scores = d.log_scores(_log(conf)) + np.log(prior)
    top = scores.max(axis=1)
    log_lik = float(np.sum((top + np.log(np.exp(scores - top[:, None]).sum(axis=1)))[judged]))
    t[~judged] = prior / prior.sum()
    t[clamp] = onehot
    out_labels = np.where(judged, tie_break(t, prior), -1).astype(np.int64)
    out_labels[clamp] = g[clamp] if g is not None else out_labels[clamp]

    prior_n = prior / prior.sum()
    acc = np.einsum("k,wkk->w", prior_n, conf)
    w_chance = np.einsum("t,wtk,k->w", prior_n, conf, prior_n)
    per_worker = worker_accuracy(ins, acc, n_w, m_w, float(prior_n.max()), w_chance)
    return LabelModel(
        posterior=t,
        labels=out_labels,
        confusion=conf,
        prior=prior_n,
        one_coin=one_coin,
        **per_worker,
        iterations=iterations,
        converged=converged,
        log_likelihood=log_lik,
    )
