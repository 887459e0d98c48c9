"""A worker's agreement with the others, and the co-determination of truths and weights.

Mizzaro, *Qualità 3: Accordo* (Social Computing, lecture 23): "quanto [il worker] correla con
l'aggregato degli altri worker (sullo stesso task)" -- aggregate everyone **but** the worker
(leave-one-out), then measure the worker against it. The co-determination algorithm (Li et al.,
*Crowdsourced Data Management*, Algorithm 1, as in the lecture) alternates: truth = aggregation
weighted by worker quality; quality = agreement with the aggregated truth; until the qualities
stop changing (``tol``) or ``max_iter`` is reached.

Choices (the lecture leaves them open):

- labels: agreement with the majority of the *other* judgments of the item; when the others'
  majority is tied between k categories and the worker's is one of them, the judgment counts 1/k.
  ``pairwise_agreement`` also gives the share of the other judgments equal to the worker's.
- ratings: Pearson correlation between the worker's values and the mean of the other judgments
  of the same items (correlation, as the lecture says, so a worker who is consistently one point
  high still counts as agreeing); ``mean_abs_diff`` gives the absolute gap as well.
- only items with at least one other judgment count; a worker without any such item, or whose
  values (or the others' means) do not vary, has an undefined agreement, with the reason.
- co-determination uses the full weighted aggregate (as in the lecture, the worker's own vote
  included) and weight = max(quality, 0); an undefined quality gives weight 0. An item whose
  judges all have weight 0 falls back to the unweighted aggregate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, TypedDict, Unpack

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import sparse

from monitor.metrics.agreement.krippendorff import ValueCounts, as_codes, check_domain
from monitor.metrics.common import check_keywords, check_same_length, squarem_jump

Kind = Literal["label", "rating"]


@dataclass(frozen=True, eq=False)
class WorkerAgreement:
    """Leave-one-out agreement of each worker with the others, arrays of shape (W,).

    ``agreement`` is NaN exactly where ``reasons[w]`` is not None (not defined)."""

    kind: Kind
    method: str
    agreement: NDArray[np.float64] = field(repr=False)
    n_items: NDArray[np.int64] = field(repr=False)
    reasons: tuple[str | None, ...] = field(repr=False)
    pairwise_agreement: NDArray[np.float64] | None = field(default=None, repr=False)
    mean_abs_diff: NDArray[np.float64] | None = field(default=None, repr=False)

    def value(self, worker: int) -> float | None:
        v = float(self.agreement[worker])
        return None if np.isnan(v) else v


class _KindOption(TypedDict):
    kind: Kind


class JudgmentOptions(_KindOption, total=False):
    """The keyword arguments :func:`worker_vs_aggregate` and :func:`codetermination` share:
    ``kind`` (required), ``"label"`` or ``"rating"``; ``n_values``, the number of codes;
    ``value_domain`` (shape (V,)), the number behind each code for ratings (default: the codes
    themselves); ``n_workers``, one more than the largest worker code (default: from the
    data)."""

    n_values: int | None
    value_domain: ArrayLike | None
    n_workers: int | None


def _inputs(
    items: ArrayLike,
    workers: ArrayLike,
    codes: ArrayLike,
    options: JudgmentOptions,
    n_items: int | None,
) -> tuple[NDArray, NDArray, NDArray, NDArray, int, int]:
    """The judgments as checked codes (TypeError on a missing or unknown option, ValueError on
    a bad kind or code), the value domain and the numbers of workers and items."""
    check_keywords(options, JudgmentOptions.__required_keys__, JudgmentOptions.__optional_keys__)
    kind = options["kind"]
    if kind not in ("label", "rating"):
        raise ValueError(f"kind must be 'label' or 'rating', got {kind!r}.")
    n_values, value_domain = options.get("n_values"), options.get("value_domain")
    n_workers = options.get("n_workers")
    domain = check_domain(value_domain) if value_domain is not None else None
    c = as_codes("codes", codes, domain.size if domain is not None else n_values)
    if domain is None:
        v = n_values if n_values is not None else (int(c.max()) + 1 if c.size else 1)
        domain = np.arange(v, dtype=np.float64)
    i = as_codes("items", items, n_items)
    w = as_codes("workers", workers, n_workers)
    check_same_length(items=i, workers=w, codes=c)
    n_w = n_workers if n_workers is not None else (int(w.max()) + 1 if w.size else 0)
    n_i = n_items if n_items is not None else (int(i.max()) + 1 if i.size else 0)
    return i, w, c, domain, n_w, n_i


def _own_counts(items: NDArray, codes: NDArray, n_values: int) -> NDArray[np.int64]:
    """For each judgment, how many judgments of its item carry its value (itself included)."""
    _, inv, cnt = np.unique(items * n_values + codes, return_inverse=True, return_counts=True)
    return cnt[inv.reshape(-1)]


def _majority_credit(vc: ValueCounts, items: NDArray, codes: NDArray) -> NDArray[np.float64]:
    """Credit of each judgment for matching the others' majority (1/k on a k-way tie)."""
    mat = vc.counts
    c = mat.data.astype(np.int64)
    rows = np.repeat(np.arange(vc.n_items), np.diff(mat.indptr))
    top1 = np.zeros(vc.n_items, dtype=np.int64)
    np.maximum.at(top1, rows, c)
    k1 = np.bincount(rows, weights=c == top1[rows], minlength=vc.n_items)
    below = np.where(c < top1[rows], c, 0)
    top2 = np.zeros(vc.n_items, dtype=np.int64)
    np.maximum.at(top2, rows, below)
    k2 = np.bincount(rows, weights=(c == top2[rows]) & (c < top1[rows]), minlength=vc.n_items)
    own = _own_counts(items, codes, vc.n_values)
    t1, t2 = top1[items], top2[items]
    sole_top = (own == t1) & (k1[items] == 1)
    credit = np.zeros(items.size)
    clear = sole_top & (t2 < t1 - 1)
    credit[clear] = 1.0
    tied = sole_top & (t2 == t1 - 1)
    credit[tied] = 1.0 / (1.0 + k2[items][tied])
    return credit


class AggregateOptions(JudgmentOptions, total=False):
    """The keyword arguments of :func:`worker_vs_aggregate`: :class:`JudgmentOptions`, and
    ``value_counts``, the items' value counts of these judgments, when the caller has them."""

    value_counts: ValueCounts | None


def worker_vs_aggregate(
    items: ArrayLike, workers: ArrayLike, codes: ArrayLike, **options: Unpack[AggregateOptions]
) -> WorkerAgreement:
    """Each worker against the aggregate of the other workers on the same items.

    ``items``, ``workers``, ``codes`` : int arrays, shape (n,); ``options``:
    :class:`AggregateOptions` (``kind``, required, the codes' ranges, the value counts).
    Labels: share of the worker's judgments that match the others' majority. Ratings: Pearson
    correlation with the others' mean.
    """
    value_counts = options.pop("value_counts", None)
    i, w, c, domain, n_w, n_i = _inputs(items, workers, codes, options, None)
    kind = options["kind"]
    vc = value_counts
    if vc is None or vc.n_judgments != i.size or not np.array_equal(vc.value_domain, domain):
        vc = ValueCounts.from_judgments(i, c, n_items=n_i, value_domain=domain)
    m = vc.n[i]
    shared = m >= 2
    n_shared = np.bincount(w[shared], minlength=n_w).astype(np.int64)
    reasons: list[str | None] = [
        None if k > 0 else "not defined: no item judged by this worker and someone else"
        for k in n_shared
    ]
    safe = np.maximum(n_shared, 1)
    if kind == "label":
        credit = _majority_credit(vc, i, c)
        own = _own_counts(i, c, vc.n_values)
        share = np.where(shared, (own - 1) / np.maximum(m - 1, 1), 0.0)
        agreement = np.bincount(w[shared], weights=credit[shared], minlength=n_w) / safe
        pairwise = np.bincount(w[shared], weights=share[shared], minlength=n_w) / safe
        agreement[n_shared == 0] = np.nan
        pairwise[n_shared == 0] = np.nan
        return WorkerAgreement(
            kind, "majority of the others", agreement, n_shared, tuple(reasons),
            pairwise_agreement=pairwise,
        )  # fmt: skip
    x = domain[c] - vc.origin
    y = np.where(shared, (vc.s1[i] - x) / np.maximum(m - 1, 1), 0.0)
    ws, xs, ys = w[shared], x[shared], y[shared]
    corr = _pearson_by_group(ws, xs, ys, n_w, domain)
    for j in np.flatnonzero(np.isnan(corr) & (n_shared > 0)):
        reasons[j] = (
            "not defined: the worker shares a single item with the others"
            if n_shared[j] == 1
            else "not defined: the worker's values or the others' means do not vary"
        )
    mad = np.bincount(ws, weights=np.abs(xs - ys), minlength=n_w) / safe
    mad[n_shared == 0] = np.nan
    return WorkerAgreement(
        kind, "pearson correlation with the others' mean", corr, n_shared, tuple(reasons),
        mean_abs_diff=mad,
    )  # fmt: skip


@dataclass(frozen=True, eq=False)
class Codetermination:
    """Truths and worker weights determined together.

    Attributes
    ----------
    truth : ndarray, shape (N,)
        Labels: the weighted-majority code (lowest code on a tie), -1 for items without
        judgments. Ratings: the weighted mean value, NaN for items without judgments.
    weights : ndarray, shape (W,)
        Final weights, max(quality, 0); 0 where quality is undefined.
    quality : ndarray, shape (W,)
        Agreement with the aggregated truth on items with two or more judgments; NaN where not
        defined (no such item, or for ratings no variation).
    """

    kind: Kind
    truth: NDArray = field(repr=False)
    weights: NDArray[np.float64] = field(repr=False)
    quality: NDArray[np.float64] = field(repr=False)
    converged: bool
    iterations: int
    max_change: float


def codetermination(
    items: ArrayLike,
    workers: ArrayLike,
    codes: ArrayLike,
    *,
    n_items: int | None = None,
    initial_weights: ArrayLike | None = None,
    max_iter: int = 500,
    tol: float = 1e-6,
    **options: Unpack[JudgmentOptions],
) -> Codetermination:
    """Iterative co-determination of item truths and worker weights (lecture 23, Li et al.).

    Repeat: truth_i = weighted majority (labels) or weighted mean (ratings) with the current
    weights; quality_w = agreement of the worker with the truths (labels: share of the worker's
    judgments equal to the truth, 1/k on a k-way tie; ratings: Pearson correlation); weight =
    max(quality, 0). Stops when one round changes no weight by ``tol`` or more (``converged``)
    or after ``max_iter`` rounds. Ratings are accelerated by SQUAREM (see :func:`_squarem`):
    the plain rounds contract slowly near the fixed point. Labels take plain rounds (the map is
    piecewise constant); a weight vector met twice is a cycle and stops the iteration
    unconverged, as does a rating map that jumps between two states (an item whose judges all
    reach weight 0 falls back to the unweighted mean, so the map is not continuous at 0).

    The map can have several fixed points: ``initial_weights`` (shape (W,), default all 1)
    chooses the start, and two starts can end at different fixed points. The pipeline always
    starts from equal weights so that an incremental run equals a full one. ``options``:
    :class:`JudgmentOptions` (``kind``, required, and the codes' ranges, as for
    :func:`worker_vs_aggregate`); ``n_items``: one more than the largest item code.
    """
    i, w, c, domain, n_w, n_i = _inputs(items, workers, codes, options, n_items)
    kind = options["kind"]
    if not isinstance(max_iter, int | np.integer) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}.")
    if not tol > 0:
        raise ValueError(f"tol must be positive, got {tol!r}.")
    if initial_weights is None:
        q = np.ones(n_w)
    else:
        q = np.asarray(initial_weights, dtype=np.float64)
        if q.shape != (n_w,) or not np.all(np.isfinite(q)) or np.any(q < 0):
            raise ValueError(f"initial_weights must be {n_w} finite non-negative numbers.")
        q = q.copy()
    v = domain.size
    m = np.bincount(i, minlength=n_i)
    shared = m[i] >= 2
    n_shared = np.bincount(w[shared], minlength=n_w)
    x = domain[c]
    if kind == "rating":
        rounds = _RatingRounds(i, w, x, m, shared, n_i, n_w, domain)
    else:  # the (item, label) cells answered, sorted by item then label: memory O(judgments)
        cells, cell = np.unique(i * v + c, return_inverse=True)
        cell = cell.reshape(-1)
        row, col = cells // v, cells % v
        plain = np.bincount(cell, minlength=cells.size).astype(np.float64)

    def step(q: NDArray[np.float64]) -> tuple[NDArray, NDArray, NDArray[np.float64]]:
        """One round of the algorithm: truths from the weights ``q``, then the qualities and
        the new weights from those truths."""
        if kind == "label":
            votes = np.bincount(cell, weights=q[w], minlength=cells.size)
            dead = np.bincount(row, weights=votes, minlength=n_i) <= 0
            votes = np.where(dead[row], plain, votes)
            top = np.zeros(n_i)
            np.maximum.at(top, row, votes)
            is_top = votes >= top[row] * (1 - 1e-12)
            k = np.bincount(row, weights=is_top, minlength=n_i)
            truth = np.full(n_i, v, np.int64)  # the first label of the highest vote
            hit = votes == top[row]
            np.minimum.at(truth, row[hit], col[hit])
            truth[m == 0] = -1
            credit = is_top[cell] / k[i]
            score = np.bincount(w[shared], weights=credit[shared], minlength=n_w)
            quality = np.where(n_shared > 0, score / np.maximum(n_shared, 1), np.nan)
        else:
            truth, quality = rounds(q)
        return truth, quality, np.where(np.isnan(quality), 0.0, np.maximum(quality, 0.0))

    return _squarem(kind, step, q, max_iter, tol)


def _squarem(
    kind: Kind,
    step: Callable[[NDArray[np.float64]], tuple[NDArray, NDArray, NDArray[np.float64]]],
    q: NDArray[np.float64],
    max_iter: int,
    tol: float,
) -> Codetermination:
    """Iterate ``step`` to its fixed point; ratings accelerated by SQUAREM (Varadhan & Roland
    2008, *Scand. J. Statist.* 35:335, scheme S3).

    The plain iteration contracts slowly near its fixed point (rates of 0.9 and more on
    rating campaigns): it stopped at ``max_iter`` still moving, far from the fixed point (the
    distance is about change x rate / (1 - rate), not ``change``). SQUAREM extrapolates from
    two plain rounds, q' = q - 2 a r + a^2 v with r = F(q) - q, v = F(F(q)) - 2F(q) + q and
    a = -|r| / |v| (at most -1, the plain two rounds), kept in [0, 1], then takes one plain
    round from q'; an extrapolation that does not shrink the change is dropped for the plain
    rounds. Every evaluation of F counts as one iteration; it stops when one round changes no
    weight by ``tol`` or more. The label map is piecewise constant: a weight vector met twice
    is a cycle, reported as not converged.
    """
    seen: dict[bytes, int] = {}
    change, it = np.inf, 0

    def round_(q: NDArray[np.float64]) -> tuple[tuple, float]:
        nonlocal it
        it += 1
        res = step(q)
        return res, float(np.max(np.abs(res[2] - q))) if q.size else 0.0

    res, change = round_(q)
    while True:
        if change < tol:
            return Codetermination(kind, res[0], res[2], res[1], True, it, change)
        key = res[2].tobytes()
        if it >= max_iter or key in seen:
            return Codetermination(kind, res[0], res[2], res[1], False, it, change)
        seen[key] = it
        q1 = res[2]
        res2, change2 = round_(q1)
        if kind == "label":  # piecewise constant: nothing to extrapolate
            q, res, change = q1, res2, change2
            continue
        if change2 < tol or it >= max_iter:
            res, change = res2, change2
            continue
        jump = squarem_jump(q, q1, res2[2])
        if jump is not None:
            jump = np.clip(jump, 0.0, 1.0)
            res3, change3 = round_(jump)
            if change3 < change2:
                q, res, change = jump, res3, change3
                continue
        q, res, change = q1, res2, change2


class _RatingRounds:
    """The rating rounds of :func:`codetermination` as sparse products over the item x worker
    table of the judgments (a judgment repeated by its worker adds to its cell): the truths
    ``A q / B q`` (A the values, B the counts), then each worker's Pearson correlation with
    the truths of the items shared with others, from ``Dx' t`` (Dx the worker-centred values),
    ``Bs' t`` and ``Bs' t^2`` (Bs the counts on shared items). A product costs one pass over
    the table's cells, no gather of the truths per judgment.

    ``syy = sum t^2 - (sum t)^2 / k`` is taken as zero below ``1e-12 sum t^2`` (its rounding):
    truths that vary by less than a millionth of their size count as not varying."""

    def __init__(
        self,
        i: NDArray, w: NDArray, x: NDArray[np.float64], m: NDArray, shared: NDArray[np.bool_],
        n_i: int, n_w: int, domain: NDArray[np.float64],
    ) -> None:  # fmt: skip
        self.origin = float((domain[0] + domain[-1]) / 2)
        x = x - self.origin
        k = np.bincount(w[shared], minlength=n_w).astype(np.float64)
        dx = np.where(shared, x - (np.bincount(w[shared], weights=x[shared], minlength=n_w)
                                   / np.maximum(k, 1))[w], 0.0)  # fmt: skip
        self.sxx = np.bincount(w, weights=dx * dx, minlength=n_w)
        self.k, self.kk = k, np.maximum(k, 1)
        self.scale = max(float(np.ptp(domain)), 1e-300) ** 2 * 1e-24 * self.kk
        shape = (n_i, n_w)
        where = sparse.coo_array((np.arange(1.0, i.size + 1), (i, w)), shape=shape).tocsr()
        if where.nnz == i.size:  # no repeated cell: each cell holds its judgment's number
            at = where.data.astype(np.int64) - 1
            indices, indptr = where.indices, where.indptr
            del where  # its judgment numbers: judgment-sized arrays go as soon as they are used
            self.a = sparse.csr_array((x[at], indices, indptr), shape=shape)
            self.b = sparse.csr_array((np.ones(at.size), indices, indptr), shape=shape)
            dxt = sparse.csr_array((dx[at], indices, indptr), shape=shape).T
            del dx
            bst = sparse.csr_array((shared[at].astype(np.float64), indices, indptr),
                                   shape=shape).T  # fmt: skip
            del at
        else:
            self.a = sparse.coo_array((x, (i, w)), shape=shape).tocsr()
            self.b = sparse.coo_array((np.ones(i.size), (i, w)), shape=shape).tocsr()
            dxt = sparse.coo_array((dx, (w, i)), shape=shape[::-1]).tocsr()
            bst = sparse.coo_array((shared.astype(np.float64), (w, i)), shape=shape[::-1]).tocsr()
        self.dxt, self.bst = dxt, bst
        self.plain = np.bincount(i, weights=x, minlength=n_i) / np.maximum(m, 1)
        self.judged = m > 0

    def __call__(self, q: NDArray[np.float64]) -> tuple[NDArray, NDArray[np.float64]]:
        tot, num = self.b @ q, self.a @ q
        t = np.where(tot > 0, num / np.where(tot > 0, tot, 1), self.plain)
        t = np.where(self.judged, t, 0.0)
        s1, s2, sxy = self.bst @ t, self.bst @ (t * t), self.dxt @ t
        syy = s2 - s1 * s1 / self.kk
        out = np.full(self.k.size, np.nan)
        ok = (self.k >= 2) & (self.sxx > self.scale) & (syy > self.scale) & (syy > 1e-12 * s2)
        # rounding can carry the ratio past +-1
        out[ok] = np.clip(sxy[ok] / np.sqrt(self.sxx[ok] * syy[ok]), -1.0, 1.0)
        return np.where(self.judged, t + self.origin, np.nan), out


def _pearson_by_group(
    g: NDArray, x: NDArray, y: NDArray, n_groups: int, domain: NDArray
) -> NDArray[np.float64]:
    """Pearson correlation of ``x`` and ``y`` within each group ``g`` (centred sums: two
    passes); NaN for groups of fewer than two or without variation."""
    return _PearsonByGroup(g, x, n_groups, domain)(y)


class _PearsonByGroup:
    """:func:`_pearson_by_group` against a fixed ``x``: its group means and centred sum of
    squares are computed once, whatever ``y`` it is then correlated with."""

    def __init__(self, g: NDArray, x: NDArray, n_groups: int, domain: NDArray) -> None:
        self.g, self.n_groups = g, n_groups
        self.k = np.bincount(g, minlength=n_groups).astype(np.float64)
        self.kk = np.maximum(self.k, 1)
        self.dx = x - (np.bincount(g, weights=x, minlength=n_groups) / self.kk)[g]
        self.sxx = np.bincount(g, weights=self.dx * self.dx, minlength=n_groups)
        self.scale = max(float(np.ptp(domain)), 1e-300) ** 2 * 1e-24 * self.kk

    def __call__(self, y: NDArray) -> NDArray[np.float64]:
        g, n = self.g, self.n_groups
        dy = y - (np.bincount(g, weights=y, minlength=n) / self.kk)[g]
        syy = np.bincount(g, weights=dy * dy, minlength=n)
        sxy = np.bincount(g, weights=self.dx * dy, minlength=n)
        out = np.full(n, np.nan)
        ok = (self.k >= 2) & (self.sxx > self.scale) & (syy > self.scale)
        # rounding can carry the ratio past +-1
        out[ok] = np.clip(sxy[ok] / np.sqrt(self.sxx[ok] * syy[ok]), -1.0, 1.0)
        return out
