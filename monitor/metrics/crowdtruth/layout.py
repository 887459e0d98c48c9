"""CrowdTruth 2.0's vectors (Dumitrache et al. 2018; :mod:`monitor.metrics.crowdtruth.scores`):
annotation counts per judgment, their sparse layout by worker and unit, and one iteration of
the metrics over them, every step a sparse product over the judgment x annotation entries."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from monitor.metrics.common import check_same_length

FLOOR = 1e-8
"""The reference package's smallest denominator (``SMALL_NUMBER_CONST``)."""
SUM_BLOCK = 1 << 20
"""Entries summed at a time by the layout's summing operators."""


# ----------------------------------------------------------------------------- helpers


def label_counts(codes: ArrayLike, n_categories: int | None = None) -> sp.csr_array:
    """One-hot judgment x annotation counts for single labels (or rating scale positions).

    codes : shape (n,), integer category codes 0..K-1. Returns a csr_array of shape (n, K).
    """
    c = check_codes(codes, "codes")
    k = code_count(c, n_categories, "n_categories")
    n = c.shape[0]
    index = np.int32 if max(n, k) < 2**31 else np.int64  # 32-bit: half the memory
    return sp.csr_array((np.ones(n), c.astype(index), np.arange(n + 1, dtype=index)), shape=(n, k))


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
    j = check_codes(judgment, "judgment")
    a = check_codes(annotation, "annotation")
    check_same_length(judgment=j, annotation=a)
    n = code_count(j, n_judgments, "n_judgments")
    k = code_count(a, n_annotations, "n_annotations")
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
    lo, hi, o = (
        check_codes(left, "left"),
        check_codes(right, "right"),
        check_codes(outcome, "outcome"),
    )
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


def check_codes(values: ArrayLike, name: str) -> NDArray[np.int64]:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a one-dimensional array, got shape {arr.shape}.")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name} must hold integer codes, got dtype {arr.dtype}.")
    arr = arr.astype(np.int64, copy=False)  # no copy of large int64 codes
    if arr.size and arr.min() < 0:
        raise ValueError(f"{name} must hold non-negative codes.")
    return arr


def code_count(codes: NDArray[np.int64], given: int | None, name: str) -> int:
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
        # np.add.at adds in the order np.bincount does (the same sums, bit for bit), a block
        # at a time: bincount would copy every 32-bit key to a 64-bit one first
        out = np.zeros(self.n)
        for lo in range(0, self.keys.shape[0], SUM_BLOCK):
            np.add.at(out, self.keys[lo : lo + SUM_BLOCK], v[lo : lo + SUM_BLOCK])
        return out


@dataclass(frozen=True)
class Layout:
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

    x: list[sp.csr_array]  # (W, U) per annotation (its transpose is made when needed)
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


def build_layout(
    workers: NDArray[np.int64],
    units: NDArray[np.int64],
    counts: sp.csr_array,
    n_workers: int,
    n_units: int,
    closed: bool,
    binary: bool,
) -> tuple[Layout, NDArray[np.bool_], NDArray[np.bool_], NDArray[np.bool_]]:
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
    del key  # judgment-sized arrays go as soon as they are used: the peak is this function's
    pw = pair_keys // n_units
    pu = pair_keys % n_units
    n_pairs = pair_keys.shape[0]
    del pair_keys
    worker_kept = np.zeros(n_workers, dtype=bool)
    worker_kept[pw] = True

    # merge a worker's judgments on one unit (sum of counts), rows sorted by pair
    if n_pairs == kept_rows.shape[0]:  # one judgment per pair: its row, in pair order
        in_order = np.empty_like(kept_rows)
        in_order[pair_of_row] = kept_rows
        merged = counts[in_order]
        del in_order
    else:
        merged = _group(pair_of_row, n_pairs) @ counts[kept_rows]
    del kept_rows, pair_of_row
    merged = sp.csr_array(merged)
    merged.sum_duplicates()
    merged.eliminate_zeros()
    small = max(n, n_workers, n_units, n_pairs * max(n_ann, 1)) < 2**31
    index = np.int32 if small else np.int64  # 32-bit positions: half the memory
    ep: NDArray[Any] = np.repeat(np.arange(n_pairs, dtype=index), np.diff(merged.indptr))
    ea = merged.indices.astype(index, copy=False)
    x = merged.data.astype(np.float64, copy=False)
    del merged
    if binary:
        x = np.ones_like(x)

    cell_keys, ec = _unique(pu[ep] * np.int64(n_ann) + ea)
    cell_unit = cell_keys // n_ann
    cell_ann = cell_keys % n_ann
    n_cells = cell_keys.shape[0]
    entries_per_pair = np.bincount(ep, minlength=n_pairs)
    cells_per_unit = np.bincount(cell_unit, minlength=n_units)
    covers_unit = entries_per_pair == cells_per_unit[pu]
    del entries_per_pair, cells_per_unit

    del cell_keys
    if small:  # kept for every iteration: 32-bit positions (one array at a time)
        pw, pu, ec = pw.astype(np.int32), pu.astype(np.int32), ec.astype(np.int32)
        cell_unit, cell_ann = cell_unit.astype(np.int32), cell_ann.astype(np.int32)

    layout = Layout(
        n_workers=n_workers,
        n_units=n_units,
        n_ann=n_ann,
        pw=pw,
        pu=pu,
        ep=ep,
        ea=ea,
        x=x,
        # alike in shape to the label models' results (label_model, multilabel_model): other fields
        ec=ec,
        cell_unit=cell_unit,
        cell_ann=cell_ann,
        pair_sum=_Sum(ep, n_pairs),
        cell_sum=_Sum(ec, n_cells),
        unit_sum=_Sum(pu, n_units),
        unit_cell_sum=_Sum(cell_unit, n_units),
        worker_sum=_Sum(pw, n_workers),
        covers_unit=covers_unit,
        aqs_ops=None,
    )
    if closed:
        layout = replace(layout, aqs_ops=_aqs_operators(layout))
    return layout, unit_kept, worker_kept, judgment_kept


def _aqs_operators(L: Layout) -> _AqsOperators:
    """The AQS operators of a closed task, from the layout's pairs and entries."""
    shape = (L.n_workers, L.n_units)
    order = np.argsort(L.ea, kind="stable")
    bounds = np.searchsorted(L.ea[order], np.arange(L.n_ann + 1))
    blocks = []
    for a in range(L.n_ann):
        e = order[bounds[a] : bounds[a + 1]]
        block = sp.csr_array((L.x[e], (L.pw[L.ep[e]], L.pu[L.ep[e]])), shape=shape)
        block.sum_duplicates()
        blocks.append(_small_indices(block))
    # J's values are never read (_aqs puts the units' UQS in their place): one byte each
    j = sp.csr_array((np.ones(L.pw.shape[0], dtype=np.int8), (L.pw, L.pu)), shape=shape)
    return _AqsOperators(x=blocks, j=_small_indices(j))


def _small_indices(m: sp.csr_array) -> sp.csr_array:
    """``m`` with 32-bit indices where they fit (half the memory of 64-bit ones)."""
    if max(m.shape) < 2**31 and m.nnz < 2**31:
        m.indices = m.indices.astype(np.int32, copy=False)
        m.indptr = m.indptr.astype(np.int32, copy=False)
    return m


# ----------------------------------------------------------------------------- iteration


@dataclass(frozen=True)
class Step:
    """One iteration's scores (WQS is WUA x WWA); agreement/poisson.Update, alike in shape, is
    a change of features."""

    uqs: NDArray[np.float64]
    wwa: NDArray[np.float64]
    wua: NDArray[np.float64]
    aqs: NDArray[np.float64]
    sums: NDArray[np.float64]  # (W, 4): numerator and denominator of WWA, then of WUA

    @property
    def wqs(self) -> NDArray[np.float64]:
        return self.wua * self.wwa


def _with_data(m: sp.csr_array, data: NDArray[np.float64]) -> sp.csr_array:
    return sp.csr_array((data, m.indices, m.indptr), shape=m.shape)


def _aqs(ops: _AqsOperators, uqs: NDArray, wqs: NDArray, n_ann: int) -> NDArray[np.float64]:
    """AQS(a) = sum_{i != j} w_i w_j P_a(i|j) / sum_{i != j} w_i w_j over ordered pairs with a
    positive denominator of P_a(i|j) (the package's rule)."""
    j = _with_data(ops.j, uqs[ops.j.indices])
    num_blocks, den_blocks = [], []
    for x in ops.x:  # one transpose at a time, not all of them kept
        x_t = sp.csr_array(x.T)
        num_blocks.append(_with_data(x, x.data * uqs[x.indices]) @ x_t)
        den_blocks.append(j @ x_t)
        del x_t
    num = sp.csr_array(sp.block_diag(num_blocks, format="csr"))
    den = sp.csr_array(sp.block_diag(den_blocks, format="csr"))
    del num_blocks, den_blocks
    den.eliminate_zeros()
    # a denominator below the smallest normal float (units whose scores fell to a denormal)
    # counts as none: its inverse would overflow to inf, and inf x 0 is NaN in every score
    positive = den.data > np.finfo(np.float64).tiny
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


def jacobi_step(L: Layout, uqs: NDArray, wqs: NDArray, aqs: NDArray, weighted_wua: bool) -> Step:
    """One Jacobi iteration: every metric from the previous iteration's values."""
    x, ep, ec = L.x, L.ep, L.ec
    # pair- and entry-sized arrays are freed as soon as they are used (the step's peak is
    # the run's, at millions of judgments); every value is computed as before
    wp = wqs[L.pw]
    ae = aqs[L.ea]

    # AQS-weighted, normalised vectors: WCos(i, j) = z_i . z_j
    norm2 = L.pair_sum @ (ae * x * x)
    z = x * np.sqrt(ae) / np.sqrt(norm2[ep])
    del norm2
    weighted = wp[ep] * z
    zw = L.cell_sum @ weighted
    # c_p = sum_{j != i on u} w_j WCos(i, j); subtracting the worker's own term entry by
    # entry leaves an exact zero where nobody else gave the annotation
    others_z = zw[ec]
    others_z -= weighted
    # a sum of non-negative terms less one of them is non-negative: where rounding leaves it
    # a hair below zero (a worker alone on the annotation, weights not exact in binary), zero
    # it, or a unit's score comes out negative and the next run refuses it as a warm start
    np.maximum(others_z, 0.0, out=others_z)
    others_z *= z
    c = L.pair_sum @ others_z
    del z, weighted, zw, others_z  # entry-sized: free them before the next ones
    w_sum = L.unit_sum @ wp
    uqs_num = 0.5 * (L.unit_sum @ (wp * c))
    uqs_den = 0.5 * (w_sum * w_sum - L.unit_sum @ (wp * wp))
    new_uqs = uqs_num / np.maximum(uqs_den, FLOOR)

    up = uqs[L.pu]
    wwa_num = L.worker_sum @ (up * c)
    del c
    wwa_den = L.worker_sum @ (up * (w_sum[L.pu] - wp))
    wua_den = L.worker_sum @ up
    del up  # taken again for WUA's numerator

    # WUA: cosine of the worker's vector with the (weighted) sum of the others on the unit
    om = wp if weighted_wua else np.ones_like(wp)
    own = om[ep] * x
    del om, wp
    unit_vec = L.cell_sum @ own
    others = unit_vec[ec] - own
    num = L.pair_sum @ (ae * own * others)
    dw = L.pair_sum @ (ae * own * own)
    del own
    others_sq = L.pair_sum @ (ae * others * others)
    del others
    # others' norm: the pair's own cells, plus the unit's cells the worker left empty
    unit_sq = L.unit_cell_sum @ (aqs[L.cell_ann] * unit_vec * unit_vec)
    own_sq = L.pair_sum @ (ae * unit_vec[ec] ** 2)
    del unit_vec, ae
    untouched = unit_sq[L.pu] - own_sq
    del unit_sq, own_sq
    untouched = np.where(L.covers_unit, 0.0, np.maximum(untouched, 0.0))
    ds = others_sq + untouched
    del others_sq, untouched
    root = np.sqrt(dw * ds)
    small = root < FLOOR
    cos = np.where(small, FLOOR, num / np.where(small, 1.0, root))
    del num, dw, ds, root, small
    wua_num = L.worker_sum @ (uqs[L.pu] * cos)
    del cos
    sums = np.column_stack([wwa_num, wwa_den, wua_num, wua_den])
    wwa, wua = ratios(sums)

    new_aqs = aqs if L.aqs_ops is None else _aqs(L.aqs_ops, uqs, wqs, L.n_ann)
    return Step(uqs=new_uqs, wwa=wwa, wua=wua, aqs=new_aqs, sums=sums)


def ratios(sums: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """WWA and WUA from their per-worker sums (``Step.sums``)."""
    return sums[:, 0] / np.maximum(sums[:, 1], FLOOR), sums[:, 2] / np.maximum(sums[:, 3], FLOOR)


def unit_annotation_scores(L: Layout, wqs: NDArray) -> sp.csr_array:
    """UAS(u, a) = sum_i WorkVec(i, u)[a] WQS(i) / sum_i WQS(i), per cell seen."""
    wp = wqs[L.pw]
    top = L.cell_sum @ (wp[L.ep] * L.x)
    bottom = np.maximum(L.unit_sum @ wp, FLOOR)[L.cell_unit]
    return sp.csr_array((top / bottom, (L.cell_unit, L.cell_ann)), shape=(L.n_units, L.n_ann))
