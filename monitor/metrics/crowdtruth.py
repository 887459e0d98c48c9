"""CrowdTruth 2.0 quality metrics: UQS, WQS = WUA x WWA, AQS and UAS, vectorised.

Dumitrache, Inel, Aroyo, Timmermans, Welty, "CrowdTruth 2.0: Quality Metrics for
Crowdsourcing with Disagreement" (SAD/CrowdBias 2018, arXiv:1808.06080). The default
``variant="package"`` reproduces the reference implementation, CrowdTruth-core 2.1
(``crowdtruth`` on PyPI), to rounding, because published results use it. It departs from
the paper in these ways (``variant="paper"`` undoes the first two):

1. Worker vectors hold annotation *counts*, not binary indicators: an annotation repeated in
   one judgment counts twice (the paper's ``WorkVec`` is binary).
2. From the second iteration on, WUA compares the worker's vector scaled by its WQS with the
   WQS-weighted sum of the other workers' vectors; the paper uses ``MediaUnitVec(u) -
   WorkVec(i, u)``, the unweighted sum of the others.
3. Every metric of an iteration uses the previous iteration's values (AQS, UQS, WWA, WUA,
   then the weighted unit vectors are rebuilt); the loop stops when the largest absolute
   change of any UQS, WQS or AQS is below ``tol`` (the paper: a sum of changes), so the
   reported UQS is one iteration behind the reported WQS, while UAS uses the final WQS.
4. Denominators below 1e-8 become 1e-8: an annotation nobody picks gets AQS = 1e-8, a unit on
   which all workers disagree gets UQS = 0, a WUA cosine with a (near) zero vector is 1e-8.
5. AQS averages ``P_a(i|j)`` over ordered worker pairs that share a unit and for which the
   denominator of ``P_a(i|j)`` is positive; units with a single judgment are dropped, and so
   are workers left without units.

Monitor's own conventions, where the package is silent or inconsistent:

- Judgments with no annotation are dropped (the package's empty-row removal).
- Several judgments by one worker on one unit are merged into one vector, the sum of their
  counts (the package counts both in the unit vector but keeps only the last one in the
  pairwise metrics). A unit is kept when at least two distinct workers judged it, which is
  the package's "more than one judgment" rule whenever there are no duplicates.
- Open tasks: each unit's vector space is the annotations seen in it; with one global
  annotation index the absent annotations are zeros, which change no cosine. AQS is not
  computed (all annotations weigh 1).

Everything is a sparse product over the judgment x annotation entries; the pairwise sums of
UQS and WWA use ``sum_{j != i} w_j cos(i, j) = z_i . (sum_j w_j z_j) - w_i |z_i|^2`` with
AQS-weighted unit-normalised vectors ``z``, and AQS's sum over worker pairs is a product of
block-diagonal (annotation x worker) by (annotation x unit) matrices.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from monitor.metrics._common import check_same_length

__all__ = [
    "CrowdTruthResult",
    "CrowdTruthScores",
    "crowdtruth",
    "crowdtruth_local",
    "label_counts",
    "multilabel_counts",
    "pairwise_outcomes",
]

FLOOR = 1e-8
"""The reference package's smallest denominator (``SMALL_NUMBER_CONST``)."""

Variant = Literal["package", "paper"]


@dataclass(frozen=True)
class CrowdTruthScores:
    """The state a warm start needs: scores indexed by code, NaN where unknown.

    uqs : shape (U,); wqs : shape (W,); aqs : shape (A,) or None (open task).
    """

    uqs: NDArray[np.float64]
    wqs: NDArray[np.float64]
    aqs: NDArray[np.float64] | None


@dataclass(frozen=True)
class CrowdTruthResult:
    """CrowdTruth 2.0 scores, indexed by worker, unit and annotation code.

    Units dropped (fewer than two distinct workers, or not in the data) have NaN scores and
    ``unit_kept`` False; workers without a kept unit have NaN and ``worker_kept`` False.
    ``uas`` rows of dropped units are empty. The ``*_initial`` fields are the first iteration
    of a cold start (all scores 1), whatever the warm start.

    uqs, uqs_initial : shape (U,)
    uas, uas_initial : csr_array, shape (U, A); stored entries are the annotations seen in
        the unit (``.toarray()`` gives zeros elsewhere)
    wqs, wwa, wua and their ``*_initial`` : shape (W,)
    aqs, aqs_initial : shape (A,), None for open tasks
    unit_kept : shape (U,) bool; worker_kept : shape (W,) bool
    judgment_kept : shape (n,) bool, the judgments that entered the computation
    iterations : number of iterations run; converged : whether the largest change of the
        last iteration was below ``tol``; max_change : that largest change.
    worker_sums : shape (W, 4), the sums WWA and WUA of the last iteration are ratios of
        (numerator and denominator of WWA, then of WUA), summed over the worker's units: what
        :func:`crowdtruth_local` needs to update the scores after new judgments.
    """

    uqs: NDArray[np.float64]
    uas: sp.csr_array
    wqs: NDArray[np.float64]
    wwa: NDArray[np.float64]
    wua: NDArray[np.float64]
    aqs: NDArray[np.float64] | None
    uqs_initial: NDArray[np.float64]
    uas_initial: sp.csr_array
    wqs_initial: NDArray[np.float64]
    wwa_initial: NDArray[np.float64]
    wua_initial: NDArray[np.float64]
    aqs_initial: NDArray[np.float64] | None
    unit_kept: NDArray[np.bool_]
    worker_kept: NDArray[np.bool_]
    judgment_kept: NDArray[np.bool_]
    iterations: int
    converged: bool
    max_change: float
    closed: bool
    variant: Variant
    worker_sums: NDArray[np.float64] | None = None

    @property
    def scores(self) -> CrowdTruthScores:
        """The scores to pass as ``warm_start`` to the next run."""
        return CrowdTruthScores(uqs=self.uqs, wqs=self.wqs, aqs=self.aqs)


# ----------------------------------------------------------------------------- helpers


def label_counts(codes: ArrayLike, n_categories: int | None = None) -> sp.csr_array:
    """One-hot judgment x annotation counts for single labels (or rating scale positions).

    codes : shape (n,), integer category codes 0..K-1. Returns a csr_array of shape (n, K).
    """
    c = _codes(codes, "codes")
    k = _size(c, n_categories, "n_categories")
    n = c.shape[0]
    return sp.csr_array((np.ones(n), c, np.arange(n + 1)), shape=(n, k))


def multilabel_counts(
    judgment: ArrayLike,
    annotation: ArrayLike,
    n_judgments: int,
    n_annotations: int | None = None,
) -> sp.csr_array:
    """Judgment x annotation counts from (judgment index, annotation code) pairs.

    judgment, annotation : shape (m,). A pair given twice counts twice, as the package does
    for an annotation repeated in one answer. Returns a csr_array of shape (n_judgments, A).
    """
    j = _codes(judgment, "judgment")
    a = _codes(annotation, "annotation")
    check_same_length(judgment=j, annotation=a)
    n = _size(j, n_judgments, "n_judgments")
    k = _size(a, n_annotations, "n_annotations")
    out = sp.csr_array((np.ones(j.shape[0]), (j, a)), shape=(n, k))
    out.sum_duplicates()
    return out


def pairwise_outcomes(
    left: ArrayLike, right: ArrayLike, outcome: ArrayLike
) -> tuple[NDArray[np.int64], NDArray[np.int64], sp.csr_array]:
    """Units and annotations of pairwise judgments: the outcome of the ordered pair.

    left, right : shape (n,) item codes (left != right); outcome : shape (n,), 0 = left
    preferred, 1 = right preferred, 2 = tie. Each pair is put in order (smaller code first)
    and its outcome flipped when the judgment showed it the other way round, so (a, b, left)
    and (b, a, right) are the same annotation on the same unit.

    Returns ``(units, pairs, annotations)``: unit codes (n,), the ordered item pair of each
    unit (U, 2), and one-hot outcome counts (n, 3).
    """
    lo, hi, o = _codes(left, "left"), _codes(right, "right"), _codes(outcome, "outcome")
    check_same_length(left=lo, right=hi, outcome=o)
    if np.any(lo == hi):
        raise ValueError("A pairwise judgment must compare two different items.")
    if np.any(o > 2):
        raise ValueError("Pairwise outcomes must be 0 (left), 1 (right) or 2 (tie).")
    swap = lo > hi
    flipped = np.where(swap & (o < 2), 1 - o, o)
    pairs = np.stack([np.minimum(lo, hi), np.maximum(lo, hi)], axis=1)
    uniq, units = np.unique(pairs, axis=0, return_inverse=True)
    return units.reshape(-1).astype(np.int64), uniq.astype(np.int64), label_counts(flipped, 3)


def _codes(values: ArrayLike, name: str) -> NDArray[np.int64]:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a one-dimensional array, got shape {arr.shape}.")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name} must hold integer codes, got dtype {arr.dtype}.")
    arr = arr.astype(np.int64, copy=False)  # no copy of large int64 codes
    if arr.size and arr.min() < 0:
        raise ValueError(f"{name} must hold non-negative codes.")
    return arr


def _size(codes: NDArray[np.int64], given: int | None, name: str) -> int:
    needed = int(codes.max()) + 1 if codes.size else 0
    if given is None:
        return needed
    if int(given) < needed:
        raise ValueError(f"{name} is {given}, but the codes go up to {needed - 1}.")
    return int(given)


# ----------------------------------------------------------------------------- layout


@dataclass(frozen=True)
class _Sum:
    """The summing operator of ``keys``: ``S @ v`` adds ``v[k]`` into group ``keys[k]``, as the
    sparse (n, len(keys)) matrix of ones would, in the same order, without the matrix."""

    keys: NDArray[np.int64]
    n: int

    def __matmul__(self, v: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.bincount(self.keys, weights=v, minlength=self.n)


@dataclass(frozen=True)
class _Layout:
    """Sparse structure of one campaign: pairs p = (worker, unit), entries e = (p, a) with
    a positive count, cells c = (unit, a) seen; operators sum entries or pairs into groups."""

    n_workers: int
    n_units: int
    n_ann: int
    pw: NDArray[np.int64]  # (P,) worker of each pair
    pu: NDArray[np.int64]  # (P,) unit of each pair
    ep: NDArray[np.int64]  # (E,) pair of each entry
    ea: NDArray[np.int64]  # (E,) annotation of each entry
    x: NDArray[np.float64]  # (E,) count
    ec: NDArray[np.int64]  # (E,) cell of each entry
    cell_unit: NDArray[np.int64]
    cell_ann: NDArray[np.int64]
    pair_sum: _Sum  # (P, E)
    cell_sum: _Sum  # (C, E)
    unit_sum: _Sum  # (U, P)
    unit_cell_sum: _Sum  # (U, C)
    worker_sum: _Sum  # (W, P)
    covers_unit: NDArray[np.bool_]  # (P,) the pair has an entry in every cell of its unit
    aqs_ops: _AqsOperators | None


@dataclass(frozen=True)
class _AqsOperators:
    """Per annotation a: X_a[i, u] = count of a by worker i on unit u, and J[i, u] = 1 when i
    judged u. Block by block, N_a = X_a diag(uqs) X_a^T and D_a = J diag(uqs) X_a^T hold the
    numerator and denominator of P_a(i|j) for every ordered worker pair (J needs no mask by
    the cell (u, a): X_a[j, u] > 0 already says someone gave a on u)."""

    x: list[sp.csr_array]  # (W, U) per annotation
    x_t: list[sp.csr_array]  # (U, W) per annotation
    j: sp.csr_array  # (W, U)


def _group(keys: NDArray[np.int64], n_groups: int) -> sp.csr_array:
    """Sparse (n_groups, len(keys)) summing operator."""
    n = keys.shape[0]
    return sp.csr_array((np.ones(n), (keys, np.arange(n))), shape=(n_groups, n))


def _unique(keys: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Sorted unique keys and the position of each key among them (``np.unique`` with
    ``return_inverse``, by one sort: numpy's hash-based unique is slower here)."""
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    first = np.empty(ordered.shape[0], dtype=bool)
    first[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    inverse = np.empty(keys.shape[0], dtype=np.int64)
    inverse[order] = np.cumsum(first) - 1
    return ordered[first], inverse


def _ragged_arange(lengths: NDArray[np.int64]) -> NDArray[np.int64]:
    """Concatenation of arange(k) for each k in lengths."""
    total = int(lengths.sum())
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.arange(total, dtype=np.int64) - starts


def _layout(
    workers: NDArray[np.int64],
    units: NDArray[np.int64],
    counts: sp.csr_array,
    n_workers: int,
    n_units: int,
    closed: bool,
    binary: bool,
) -> tuple[_Layout, NDArray[np.bool_], NDArray[np.bool_], NDArray[np.bool_]]:
    n, n_ann = counts.shape
    nonempty = np.diff(counts.indptr) > 0
    # a unit is kept when two distinct workers judged it
    key = workers * np.int64(n_units) + units
    pair_keys, _ = _unique(key[nonempty])
    n_workers_per_unit = np.bincount(pair_keys % n_units, minlength=n_units)
    unit_kept = n_workers_per_unit >= 2
    judgment_kept = nonempty & unit_kept[units]
    kept_rows = np.flatnonzero(judgment_kept)
    pair_keys, pair_of_row = _unique(key[kept_rows])
    pw = pair_keys // n_units
    pu = pair_keys % n_units
    n_pairs = pair_keys.shape[0]
    worker_kept = np.zeros(n_workers, dtype=bool)
    worker_kept[pw] = True

    # merge a worker's judgments on one unit (sum of counts), rows sorted by pair
    merged = _group(pair_of_row, n_pairs) @ counts[kept_rows]
    merged = sp.csr_array(merged)
    merged.sum_duplicates()
    merged.eliminate_zeros()
    ep = np.repeat(np.arange(n_pairs, dtype=np.int64), np.diff(merged.indptr))
    ea = merged.indices.astype(np.int64)
    x = merged.data.astype(np.float64)
    if binary:
        x = np.ones_like(x)

    cell_keys, ec = _unique(pu[ep] * np.int64(n_ann) + ea)
    cell_unit = cell_keys // n_ann
    cell_ann = cell_keys % n_ann
    n_cells = cell_keys.shape[0]
    entries_per_pair = np.bincount(ep, minlength=n_pairs)
    cells_per_unit = np.bincount(cell_unit, minlength=n_units)
    covers_unit = entries_per_pair == cells_per_unit[pu]

    aqs_ops = None
    if closed:
        aqs_ops = _aqs_operators(pw, pu, ep, ea, x, n_workers, n_units, n_ann)

    layout = _Layout(
        n_workers=n_workers,
        n_units=n_units,
        n_ann=n_ann,
        pw=pw,
        pu=pu,
        ep=ep,
        ea=ea,
        x=x,
        ec=ec,
        cell_unit=cell_unit,
        cell_ann=cell_ann,
        pair_sum=_Sum(ep, n_pairs),
        cell_sum=_Sum(ec, n_cells),
        unit_sum=_Sum(pu, n_units),
        unit_cell_sum=_Sum(cell_unit, n_units),
        worker_sum=_Sum(pw, n_workers),
        covers_unit=covers_unit,
        aqs_ops=aqs_ops,
    )
    return layout, unit_kept, worker_kept, judgment_kept


def _aqs_operators(
    pw: NDArray[np.int64],
    pu: NDArray[np.int64],
    ep: NDArray[np.int64],
    ea: NDArray[np.int64],
    x: NDArray[np.float64],
    n_workers: int,
    n_units: int,
    n_ann: int,
) -> _AqsOperators:
    shape = (n_workers, n_units)
    order = np.argsort(ea, kind="stable")
    bounds = np.searchsorted(ea[order], np.arange(n_ann + 1))
    blocks = []
    for a in range(n_ann):
        e = order[bounds[a] : bounds[a + 1]]
        block = sp.csr_array((x[e], (pw[ep[e]], pu[ep[e]])), shape=shape)
        block.sum_duplicates()
        blocks.append(block)
    j = sp.csr_array((np.ones(pw.shape[0]), (pw, pu)), shape=shape)
    return _AqsOperators(x=blocks, x_t=[sp.csr_array(b.T) for b in blocks], j=j)


# ----------------------------------------------------------------------------- iteration


@dataclass(frozen=True)
class _Step:
    uqs: NDArray[np.float64]
    wwa: NDArray[np.float64]
    wua: NDArray[np.float64]
    wqs: NDArray[np.float64]
    aqs: NDArray[np.float64]
    sums: NDArray[np.float64]  # (W, 4): numerator and denominator of WWA, then of WUA


def _with_data(m: sp.csr_array, data: NDArray[np.float64]) -> sp.csr_array:
    return sp.csr_array((data, m.indices, m.indptr), shape=m.shape)


def _aqs(ops: _AqsOperators, uqs: NDArray, wqs: NDArray, n_ann: int) -> NDArray[np.float64]:
    """AQS(a) = sum_{i != j} w_i w_j P_a(i|j) / sum_{i != j} w_i w_j over ordered pairs with a
    positive denominator of P_a(i|j) (the package's rule)."""
    j = _with_data(ops.j, uqs[ops.j.indices])
    num = sp.csr_array(
        sp.block_diag(
            [
                _with_data(x, x.data * uqs[x.indices]) @ x_t
                for x, x_t in zip(ops.x, ops.x_t, strict=True)
            ],
            format="csr",
        )
    )
    den = sp.csr_array(sp.block_diag([j @ x_t for x_t in ops.x_t], format="csr"))
    den.eliminate_zeros()
    positive = den.data > 0
    inverse = _with_data(den, np.where(positive, 1.0 / np.where(positive, den.data, 1.0), 0.0))
    ratio = sp.csr_array(num.multiply(inverse))
    pattern = _with_data(den, positive.astype(np.float64))
    w = np.tile(wqs, n_ann)
    w2 = w * w
    top = w * (ratio @ w) - w2 * ratio.diagonal()
    bottom = w * (pattern @ w) - w2 * pattern.diagonal()
    top = top.reshape(n_ann, -1).sum(axis=1)
    bottom = bottom.reshape(n_ann, -1).sum(axis=1)
    ok = bottom > FLOOR
    out = np.where(ok, top / np.where(ok, bottom, 1.0), FLOOR)
    return np.maximum(out, FLOOR)


def _step(L: _Layout, uqs: NDArray, wqs: NDArray, aqs: NDArray, weighted_wua: bool) -> _Step:
    """One Jacobi iteration: every metric from the previous iteration's values."""
    x, ep, ec = L.x, L.ep, L.ec
    wp = wqs[L.pw]
    up = uqs[L.pu]
    ae = aqs[L.ea]

    # AQS-weighted, normalised vectors: WCos(i, j) = z_i . z_j
    norm2 = L.pair_sum @ (ae * x * x)
    z = x * np.sqrt(ae) / np.sqrt(norm2[ep])
    weighted = wp[ep] * z
    zw = L.cell_sum @ weighted
    # c_p = sum_{j != i on u} w_j WCos(i, j); subtracting the worker's own term entry by
    # entry leaves an exact zero where nobody else gave the annotation
    others_z = zw[ec]
    others_z -= weighted
    others_z *= z
    c = L.pair_sum @ others_z
    del z, weighted, zw, others_z  # entry-sized: free them before the next ones
    w_sum = L.unit_sum @ wp
    uqs_num = 0.5 * (L.unit_sum @ (wp * c))
    uqs_den = 0.5 * (w_sum * w_sum - L.unit_sum @ (wp * wp))
    new_uqs = uqs_num / np.maximum(uqs_den, FLOOR)

    wwa_num = L.worker_sum @ (up * c)
    wwa_den = L.worker_sum @ (up * (w_sum[L.pu] - wp))

    # WUA: cosine of the worker's vector with the (weighted) sum of the others on the unit
    om = wp if weighted_wua else np.ones_like(wp)
    own = om[ep] * x
    unit_vec = L.cell_sum @ own
    others = unit_vec[ec] - own
    num = L.pair_sum @ (ae * own * others)
    dw = L.pair_sum @ (ae * own * own)
    # others' norm: the pair's own cells, plus the unit's cells the worker left empty
    unit_sq = L.unit_cell_sum @ (aqs[L.cell_ann] * unit_vec * unit_vec)
    untouched = unit_sq[L.pu] - L.pair_sum @ (ae * unit_vec[ec] ** 2)
    untouched = np.where(L.covers_unit, 0.0, np.maximum(untouched, 0.0))
    ds = L.pair_sum @ (ae * others * others) + untouched
    del own, others, unit_vec
    root = np.sqrt(dw * ds)
    small = root < FLOOR
    cos = np.where(small, FLOOR, num / np.where(small, 1.0, root))
    sums = np.column_stack([wwa_num, wwa_den, L.worker_sum @ (up * cos), L.worker_sum @ up])
    wwa, wua = _ratios(sums)

    new_aqs = aqs if L.aqs_ops is None else _aqs(L.aqs_ops, uqs, wqs, L.n_ann)
    return _Step(uqs=new_uqs, wwa=wwa, wua=wua, wqs=wua * wwa, aqs=new_aqs, sums=sums)


def _ratios(sums: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """WWA and WUA from their per-worker sums (``_Step.sums``)."""
    return sums[:, 0] / np.maximum(sums[:, 1], FLOOR), sums[:, 2] / np.maximum(sums[:, 3], FLOOR)


def _uas(L: _Layout, wqs: NDArray) -> sp.csr_array:
    """UAS(u, a) = sum_i WorkVec(i, u)[a] WQS(i) / sum_i WQS(i), per cell seen."""
    wp = wqs[L.pw]
    top = L.cell_sum @ (wp[L.ep] * L.x)
    bottom = np.maximum(L.unit_sum @ wp, FLOOR)[L.cell_unit]
    return sp.csr_array((top / bottom, (L.cell_unit, L.cell_ann)), shape=(L.n_units, L.n_ann))


# ----------------------------------------------------------------------------- entry point


def crowdtruth(
    workers: ArrayLike,
    units: ArrayLike,
    annotations: ArrayLike | sp.sparray | sp.spmatrix,
    *,
    closed: bool = True,
    n_workers: int | None = None,
    n_units: int | None = None,
    max_iter: int = 100,
    tol: float = 1e-3,
    warm_start: CrowdTruthScores | CrowdTruthResult | None = None,
    variant: Variant = "package",
    initial: bool = True,
) -> CrowdTruthResult:
    """CrowdTruth 2.0 metrics (Dumitrache et al. 2018) for one campaign.

    workers, units : shape (n,), integer codes of each judgment.
    annotations : shape (n, A), non-negative counts (scipy.sparse or dense); see
        ``label_counts``, ``multilabel_counts`` and ``pairwise_outcomes``.
    closed : closed task (same annotation set on every unit, AQS computed) or open task.
    max_iter, tol : stop when the largest change of any UQS, WQS or AQS is below ``tol``
        (0.001 in the package), or after ``max_iter`` iterations (``converged`` False).
    warm_start : a previous run's scores (``result.scores``), aligned by code; new or NaN
        entries start at 1. A cold start (None) matches the package exactly.
    variant : "package" (CrowdTruth-core 2.1) or "paper" (binary vectors, WUA against the
        unweighted sum of the other workers); see the module docstring.
    initial : compute the ``*_initial`` fields (the first iteration from all ones). With a
        warm start that is one extra sweep; False leaves them NaN (``uas_initial`` empty).
    """
    w = _codes(workers, "workers")
    u = _codes(units, "units")
    n = check_same_length(workers=w, units=u)
    counts = _counts(annotations, n)
    n_w = _size(w, n_workers, "n_workers")
    n_u = _size(u, n_units, "n_units")
    if n_w and n_u and n_w > np.iinfo(np.int64).max // n_u:
        raise ValueError("n_workers x n_units is too large to index worker-unit pairs.")
    if isinstance(max_iter, bool) or not isinstance(max_iter, int | np.integer) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}.")
    if not np.isfinite(tol) or tol < 0:
        raise ValueError(f"tol must be a finite non-negative number, got {tol!r}.")
    if variant not in ("package", "paper"):
        raise ValueError(f"variant must be 'package' or 'paper', got {variant!r}.")
    n_ann = counts.shape[1]

    layout, unit_kept, worker_kept, judgment_kept = _layout(
        w, u, counts, n_w, n_u, bool(closed), binary=variant == "paper"
    )
    weighted = variant == "package"
    ones_u, ones_w, ones_a = np.ones(n_u), np.ones(n_w), np.ones(n_ann)

    if not judgment_kept.any():
        return _empty(n_u, n_w, n_ann, closed, variant, unit_kept, worker_kept, judgment_kept)

    first = (
        _step(layout, ones_u, ones_w, ones_a, weighted) if initial or warm_start is None else None
    )
    if warm_start is None:
        uqs, wqs, aqs = ones_u, ones_w, ones_a
    else:
        uqs, wqs, aqs = _warm(warm_start, n_u, n_w, n_ann, closed)

    step = first if warm_start is None else None
    iterations, change = 0, np.inf
    while iterations < max_iter:
        if step is None:
            step = _step(layout, uqs, wqs, aqs, weighted)
        change = max(
            float(np.max(np.abs(step.uqs - uqs)[unit_kept], initial=0.0)),
            float(np.max(np.abs(step.wqs - wqs)[worker_kept], initial=0.0)),
            float(np.max(np.abs(step.aqs - aqs), initial=0.0)) if closed else 0.0,
        )
        uqs, wqs, aqs = step.uqs, step.wqs, step.aqs
        iterations += 1
        last, step = step, None
        if change < tol:
            break

    def units_out(v: NDArray) -> NDArray[np.float64]:
        return np.where(unit_kept, v, np.nan)

    def workers_out(v: NDArray) -> NDArray[np.float64]:
        return np.where(worker_kept, v, np.nan)

    if first is None:  # not asked for: NaN, as for undefined scores
        nan_u, nan_w = np.full(n_u, np.nan), np.full(n_w, np.nan)
        first = _Step(nan_u, nan_w, nan_w, nan_w, np.full(n_ann, np.nan), np.empty((0, 4)))
        uas_initial = sp.csr_array((n_u, n_ann))
    else:
        uas_initial = _uas(layout, ones_w)
    return CrowdTruthResult(
        uqs=units_out(last.uqs),
        uas=_uas(layout, last.wqs),
        wqs=workers_out(last.wqs),
        wwa=workers_out(last.wwa),
        wua=workers_out(last.wua),
        aqs=last.aqs.copy() if closed else None,
        uqs_initial=units_out(first.uqs),
        uas_initial=uas_initial,
        wqs_initial=workers_out(first.wqs),
        wwa_initial=workers_out(first.wwa),
        wua_initial=workers_out(first.wua),
        aqs_initial=first.aqs.copy() if closed else None,
        unit_kept=unit_kept,
        worker_kept=worker_kept,
        judgment_kept=judgment_kept,
        iterations=iterations,
        converged=bool(change < tol),
        max_change=float(change),
        closed=bool(closed),
        variant=variant,
        worker_sums=last.sums,
    )


def crowdtruth_local(
    workers: ArrayLike,
    units: ArrayLike,
    annotations: ArrayLike | sp.sparray | sp.spmatrix,
    seen: ArrayLike,
    *,
    previous: CrowdTruthScores,
    worker_sums: ArrayLike,
    n_workers: int,
    n_units: int,
    closed: bool = True,
    max_iter: int = 100,
    tol: float = 1e-3,
    variant: Variant = "package",
) -> CrowdTruthResult:
    """CrowdTruth 2.0 brought up to date on a block of units after new judgments, without a
    pass over the other units.

    ``workers``, ``units``, ``annotations``: every judgment of the block's units (those with
    new judgments, say); ``seen``: (n,) bool, the judgments the previous result counted.
    ``previous``: that result's scores by code (NaN where undefined: units and workers not
    kept); ``worker_sums``: its :attr:`CrowdTruthResult.worker_sums`.

    WWA and WUA are ratios of sums over a worker's units. Each worker's sums are split into
    the block's part, computed afresh every iteration, and the rest, frozen: the previous sums
    minus the block's part as the previous judgments and scores gave it. The iteration
    (:func:`crowdtruth`'s, on the block's pairs only) updates the block's UQS and every
    worker's WQS, WWA and WUA until no score moves by ``tol``. The units outside the block
    keep their previous UQS (``uas`` rows empty: the caller keeps the previous ones), and
    closed tasks keep their previous AQS. What is left out is the response of the frozen part
    to the moves of the workers' scores: of the order of those moves (times the spread of the
    cosines), so a caller bounds their sum and runs :func:`crowdtruth` when it is spent.
    ``iterations`` counts the block's iterations; ``judgment_kept`` is of the given judgments.
    """
    w = _codes(workers, "workers")
    u = _codes(units, "units")
    n = check_same_length(workers=w, units=u)
    counts = _counts(annotations, n)
    old = np.asarray(seen, dtype=bool).reshape(-1)
    check_same_length(workers=w, seen=old)
    n_w = _size(w, n_workers, "n_workers")
    n_u = _size(u, n_units, "n_units")
    n_ann = counts.shape[1]
    if variant not in ("package", "paper"):
        raise ValueError(f"variant must be 'package' or 'paper', got {variant!r}.")
    if closed and (previous.aqs is None or len(previous.aqs) != n_ann):
        raise ValueError("a closed task needs the previous AQS of every annotation.")
    sums_in = np.asarray(worker_sums, dtype=np.float64)
    if sums_in.ndim != 2 or sums_in.shape[1] != 4 or sums_in.shape[0] > n_w:
        raise ValueError(f"worker_sums must have shape (W, 4) with W <= {n_w}.")

    def padded(v: ArrayLike | None, size: int) -> NDArray[np.float64]:
        out = np.full(size, np.nan)
        if v is not None:
            a = np.asarray(v, dtype=np.float64).reshape(-1)
            if a.size > size:
                raise ValueError("previous scores do not fit the codes of this run.")
            out[: a.size] = a
        return out

    uqs0, wqs0 = padded(previous.uqs, n_u), padded(previous.wqs, n_w)
    aqs = np.ones(n_ann) if not closed else np.asarray(previous.aqs, dtype=np.float64)
    binary, weighted = variant == "paper", variant == "package"
    # the scores the iteration reads: undefined ones as a cold start has them (1)
    uqs_in, wqs_in = np.nan_to_num(uqs0, nan=1.0), np.nan_to_num(wqs0, nan=1.0)

    frozen = np.zeros((n_w, 4))
    frozen[: sums_in.shape[0]] = sums_in
    rows = np.flatnonzero(old)
    before, *_ = _layout(w[rows], u[rows], counts[rows], n_w, n_u, False, binary)
    if before.pw.size:
        frozen -= _step(before, uqs_in, wqs_in, aqs, weighted).sums
    layout, block_kept, block_workers, judgment_kept = _layout(
        w, u, counts, n_w, n_u, False, binary
    )
    unit_kept = ~np.isnan(uqs0) | block_kept
    worker_kept = ~np.isnan(wqs0) | block_workers
    uqs, wqs = uqs_in, wqs_in
    iterations, change = 0, 0.0
    sums = frozen
    while judgment_kept.any() and iterations < max_iter:
        step = _step(layout, uqs, wqs, aqs, weighted)
        sums = frozen + step.sums
        wwa, wua = _ratios(sums)
        new_uqs = np.where(block_kept, step.uqs, uqs)
        new_wqs = np.where(worker_kept, wwa * wua, wqs)
        change = max(
            float(np.max(np.abs(new_uqs - uqs)[block_kept], initial=0.0)),
            float(np.max(np.abs(new_wqs - wqs)[worker_kept], initial=0.0)),
        )
        uqs, wqs = new_uqs, new_wqs
        iterations += 1
        if change < tol:
            break
    wwa, wua = _ratios(sums)
    nan_u, nan_w = np.full(n_u, np.nan), np.full(n_w, np.nan)

    def workers_out(v: NDArray) -> NDArray[np.float64]:
        return np.where(worker_kept, v, np.nan)

    return CrowdTruthResult(
        uqs=np.where(unit_kept, uqs, np.nan),
        uas=_uas(layout, wqs) if layout.pw.size else sp.csr_array((n_u, n_ann)),
        wqs=workers_out(wwa * wua),
        wwa=workers_out(wwa),
        wua=workers_out(wua),
        aqs=aqs.copy() if closed else None,
        uqs_initial=nan_u,
        uas_initial=sp.csr_array((n_u, n_ann)),
        wqs_initial=nan_w,
        wwa_initial=nan_w.copy(),
        wua_initial=nan_w.copy(),
        aqs_initial=np.full(n_ann, np.nan) if closed else None,
        unit_kept=unit_kept,
        worker_kept=worker_kept,
        judgment_kept=judgment_kept,
        iterations=iterations,
        converged=bool(change < tol),
        max_change=float(change),
        closed=bool(closed),
        variant=variant,
        worker_sums=sums,
    )


def _counts(annotations: ArrayLike | sp.sparray | sp.spmatrix, n: int) -> sp.csr_array:
    if sp.issparse(annotations):
        counts = sp.csr_array(annotations, dtype=np.float64)
    else:
        dense = np.asarray(annotations)
        if dense.ndim != 2:
            raise ValueError(f"annotations must be two-dimensional, got shape {dense.shape}.")
        if not (np.issubdtype(dense.dtype, np.number) or dense.dtype == bool):
            raise ValueError(f"annotations must hold numbers, got dtype {dense.dtype}.")
        counts = sp.csr_array(dense.astype(np.float64))
    if counts.ndim != 2 or counts.shape[0] != n:
        raise ValueError(
            f"annotations must have one row per judgment ({n}), got shape {counts.shape}."
        )
    counts.sum_duplicates()
    if not np.all(np.isfinite(counts.data)) or np.any(counts.data < 0):
        raise ValueError("annotations must hold finite, non-negative counts.")
    counts.eliminate_zeros()
    return counts


def _warm(
    start: CrowdTruthScores | CrowdTruthResult, n_u: int, n_w: int, n_ann: int, closed: bool
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    def aligned(values: NDArray | None, size: int, name: str, positive: bool) -> NDArray:
        out = np.ones(size)
        if values is None:
            return out
        v = np.asarray(values, dtype=np.float64)
        if v.ndim != 1 or v.shape[0] > size:
            raise ValueError(
                f"warm_start.{name} has shape {v.shape}, which does not fit the {size} codes "
                "of this run; codes must keep their meaning between runs."
            )
        known = ~np.isnan(v)
        bad = ~np.isfinite(v[known]) | (v[known] <= 0 if positive else v[known] < 0)
        if bad.any():
            sign = "positive" if positive else "non-negative"
            raise ValueError(f"warm_start.{name} must be {sign} or NaN.")
        out[: v.shape[0]] = np.where(known, v, 1.0)
        return out

    return (
        aligned(start.uqs, n_u, "uqs", positive=False),
        aligned(start.wqs, n_w, "wqs", positive=False),
        aligned(start.aqs if closed else None, n_ann, "aqs", positive=True),
    )


def _empty(
    n_u: int,
    n_w: int,
    n_ann: int,
    closed: bool,
    variant: Variant,
    unit_kept: NDArray[np.bool_],
    worker_kept: NDArray[np.bool_],
    judgment_kept: NDArray[np.bool_],
) -> CrowdTruthResult:
    """No unit has two workers yet: every score undefined, nothing to iterate."""
    nan_u, nan_w = np.full(n_u, np.nan), np.full(n_w, np.nan)
    aqs = np.full(n_ann, np.nan) if closed else None
    uas = sp.csr_array((n_u, n_ann))
    return CrowdTruthResult(
        uqs=nan_u,
        uas=uas,
        wqs=nan_w,
        wwa=nan_w.copy(),
        wua=nan_w.copy(),
        aqs=aqs,
        uqs_initial=nan_u.copy(),
        uas_initial=uas.copy(),
        wqs_initial=nan_w.copy(),
        wwa_initial=nan_w.copy(),
        wua_initial=nan_w.copy(),
        aqs_initial=None if aqs is None else aqs.copy(),
        unit_kept=unit_kept,
        worker_kept=worker_kept,
        judgment_kept=judgment_kept,
        iterations=0,
        converged=True,
        max_change=0.0,
        closed=bool(closed),
        variant=variant,
    )
