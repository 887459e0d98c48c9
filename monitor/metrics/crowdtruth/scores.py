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

from dataclasses import dataclass, fields
from typing import Literal

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from monitor.metrics.common import check_same_length
from monitor.metrics.crowdtruth.layout import (
    Step,
    build_layout,
    check_codes,
    code_count,
    jacobi_step,
    label_counts,
    multilabel_counts,
    pairwise_outcomes,
    ratios,
    unit_annotation_scores,
)

__all__ = [
    "CrowdTruthIteration",
    "CrowdTruthResult",
    "CrowdTruthScores",
    "crowdtruth",
    "crowdtruth_local",
    "label_counts",
    "multilabel_counts",
    "pairwise_outcomes",
]


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
class CrowdTruthIteration:
    """One iteration's CrowdTruth 2.0 scores, indexed by worker, unit and annotation code.

    uqs : shape (U,)
    uas : csr_array, shape (U, A); stored entries are the annotations seen in the unit
        (``.toarray()`` gives zeros elsewhere)
    wqs, wwa, wua : shape (W,)
    aqs : shape (A,), None for open tasks
    """

    uqs: NDArray[np.float64]
    uas: sp.csr_array
    wqs: NDArray[np.float64]
    wwa: NDArray[np.float64]
    wua: NDArray[np.float64]
    aqs: NDArray[np.float64] | None


@dataclass(frozen=True)
class CrowdTruthResult(CrowdTruthIteration):
    """CrowdTruth 2.0 scores, indexed by worker, unit and annotation code: the last
    iteration's (the fields of :class:`CrowdTruthIteration`) and the run's.

    Units dropped (fewer than two distinct workers, or not in the data) have NaN scores and
    ``unit_kept`` False; workers without a kept unit have NaN and ``worker_kept`` False.
    ``uas`` rows of dropped units are empty.

    initial : the first iteration of a cold start (all scores 1), whatever the warm start
    unit_kept : shape (U,) bool; worker_kept : shape (W,) bool
    judgment_kept : shape (n,) bool, the judgments that entered the computation
    iterations : number of iterations run; converged : whether the largest change of the
        last iteration was below ``tol``; max_change : that largest change.
    worker_sums : shape (W, 4), the sums WWA and WUA of the last iteration are ratios of
        (numerator and denominator of WWA, then of WUA), summed over the worker's units: what
        :func:`crowdtruth_local` needs to update the scores after new judgments.
    """

    initial: CrowdTruthIteration
    unit_kept: NDArray[np.bool_]
    worker_kept: NDArray[np.bool_]
    judgment_kept: NDArray[np.bool_]
    iterations: int
    # alike in shape to ratings/phi_measure.PhiResult's fields, another model's
    converged: bool
    max_change: float
    closed: bool
    variant: Variant
    worker_sums: NDArray[np.float64] | None = None

    @property
    def scores(self) -> CrowdTruthScores:
        """The scores to pass as ``warm_start`` to the next run."""
        return CrowdTruthScores(uqs=self.uqs, wqs=self.wqs, aqs=self.aqs)


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
    initial : compute the ``initial`` scores (the first iteration from all ones). With a
        warm start that is one extra sweep; False leaves them NaN (``initial.uas`` empty).
    """
    w = check_codes(workers, "workers")
    u = check_codes(units, "units")
    n = check_same_length(workers=w, units=u)
    counts = _counts(annotations, n)
    n_w = code_count(w, n_workers, "n_workers")
    n_u = code_count(u, n_units, "n_units")
    if n_w and n_u and n_w > np.iinfo(np.int64).max // n_u:
        raise ValueError("n_workers x n_units is too large to index worker-unit pairs.")
    if isinstance(max_iter, bool) or not isinstance(max_iter, int | np.integer) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}.")
    if not np.isfinite(tol) or tol < 0:
        raise ValueError(f"tol must be a finite non-negative number, got {tol!r}.")
    if variant not in ("package", "paper"):
        raise ValueError(f"variant must be 'package' or 'paper', got {variant!r}.")
    n_ann = counts.shape[1]

    layout, unit_kept, worker_kept, judgment_kept = build_layout(
        w, u, counts, n_w, n_u, bool(closed), binary=variant == "paper"
    )
    weighted = variant == "package"
    ones_u, ones_w, ones_a = np.ones(n_u), np.ones(n_w), np.ones(n_ann)

    if not judgment_kept.any():
        return _empty(n_u, n_w, n_ann, (unit_kept, worker_kept, judgment_kept), closed, variant)

    first = (
        jacobi_step(layout, ones_u, ones_w, ones_a, weighted)
        if initial or warm_start is None
        else None
    )
    if warm_start is None:
        uqs, wqs, aqs = ones_u, ones_w, ones_a
    else:
        uqs, wqs, aqs = _warm(warm_start, n_u, n_w, n_ann, closed)

    step = first if warm_start is None else None
    iterations, change = 0, np.inf
    while iterations < max_iter:
        if step is None:
            step = jacobi_step(layout, uqs, wqs, aqs, weighted)
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

    if first is None:  # not asked for: NaN, as for undefined scores
        first = _undefined_step(n_u, n_w, n_ann)
        uas_initial = sp.csr_array((n_u, n_ann))
    else:
        uas_initial = unit_annotation_scores(layout, ones_w)
    return _result(
        last,
        first,
        (unit_annotation_scores(layout, last.wqs), uas_initial),
        (unit_kept, worker_kept, judgment_kept),
        stop=(iterations, change, tol),
        closed=closed,
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
    # alike in shape to labels/export_accuracy.expected_set_accuracy's inputs: other data
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
    w = check_codes(workers, "workers")
    u = check_codes(units, "units")
    n = check_same_length(workers=w, units=u)
    counts = _counts(annotations, n)
    old = np.asarray(seen, dtype=bool).reshape(-1)
    check_same_length(workers=w, seen=old)
    n_w = code_count(w, n_workers, "n_workers")
    n_u = code_count(u, n_units, "n_units")
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
    before, *_ = build_layout(w[rows], u[rows], counts[rows], n_w, n_u, False, binary)
    if before.pw.size:
        frozen -= jacobi_step(before, uqs_in, wqs_in, aqs, weighted).sums
        # what the unchanged units add is a sum of non-negative terms: the stored sums were
        # taken one iteration before the stored scores, so the difference can dip below zero
        # for a worker whose every unit changed, and a negative WQS would then make the unit
        # scores explode (-7e22 on a real campaign grown in chunks of 400)
        np.maximum(frozen, 0.0, out=frozen)
    layout, block_kept, block_workers, judgment_kept = build_layout(
        w, u, counts, n_w, n_u, False, binary
    )
    unit_kept = ~np.isnan(uqs0) | block_kept
    worker_kept = ~np.isnan(wqs0) | block_workers
    uqs, wqs = uqs_in, wqs_in
    iterations, change = 0, 0.0
    sums = frozen
    while judgment_kept.any() and iterations < max_iter:
        step = jacobi_step(layout, uqs, wqs, aqs, weighted)
        sums = frozen + step.sums
        wwa, wua = ratios(sums)
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
    wwa, wua = ratios(sums)
    return _result(
        Step(uqs, wwa, wua, aqs, sums),
        _undefined_step(n_u, n_w, n_ann),
        (
            unit_annotation_scores(layout, wqs) if layout.pw.size else sp.csr_array((n_u, n_ann)),
            sp.csr_array((n_u, n_ann)),
        ),
        (unit_kept, worker_kept, judgment_kept),
        stop=(iterations, change, tol),
        closed=closed,
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
    kept: tuple[NDArray[np.bool_], NDArray[np.bool_], NDArray[np.bool_]],
    closed: bool,
    variant: Variant,
) -> CrowdTruthResult:
    """No unit has two workers yet: every score undefined, nothing to iterate (``kept`` as
    :func:`_result` takes it)."""
    nan = _undefined_step(n_u, n_w, n_ann)
    uas = sp.csr_array((n_u, n_ann))
    return _result(
        nan,
        nan,
        (uas, uas.copy()),
        kept,
        stop=(0, 0.0, np.inf),  # nothing to iterate: converged whatever the tolerance
        closed=closed,
        variant=variant,
        worker_sums=None,
    )


def _undefined_step(n_u: int, n_w: int, n_ann: int) -> Step:
    """An iteration's scores all undefined (NaN), with no worker sums."""
    nan_w = np.full(n_w, np.nan)
    return Step(np.full(n_u, np.nan), nan_w, nan_w, np.full(n_ann, np.nan), np.empty((0, 4)))


def _result(
    last: Step,
    first: Step,
    uas: tuple[sp.csr_array, sp.csr_array],
    kept: tuple[NDArray[np.bool_], NDArray[np.bool_], NDArray[np.bool_]],
    *,
    stop: tuple[int, float, float],
    closed: bool,
    variant: Variant,
    worker_sums: NDArray[np.float64] | None,
) -> CrowdTruthResult:
    """The result of the ``last`` and ``first`` iterations' scores (``uas``: their UAS, in that
    order), NaN outside the kept units and workers (``kept``: units, workers, judgments); AQS
    only for a closed task. ``stop``: the iterations run, the last one's largest change and the
    tolerance it is held to (converged when below)."""
    unit_kept, worker_kept, judgment_kept = kept
    iterations, change, tol = stop
    final, initial = (
        _iteration(step, scores, unit_kept, worker_kept, closed)
        for step, scores in zip((last, first), uas, strict=True)
    )
    return CrowdTruthResult(
        **{f.name: getattr(final, f.name) for f in fields(CrowdTruthIteration)},
        initial=initial,
        unit_kept=unit_kept,
        worker_kept=worker_kept,
        judgment_kept=judgment_kept,
        iterations=iterations,
        converged=bool(change < tol),
        max_change=float(change),
        closed=bool(closed),
        variant=variant,
        worker_sums=worker_sums,
    )


def _iteration(
    step: Step,
    uas: sp.csr_array,
    unit_kept: NDArray[np.bool_],
    worker_kept: NDArray[np.bool_],
    closed: bool,
) -> CrowdTruthIteration:
    """An iteration's scores, NaN outside the kept units and workers; AQS only for a closed
    task."""
    return CrowdTruthIteration(
        uqs=np.where(unit_kept, step.uqs, np.nan),
        uas=uas,
        wqs=np.where(worker_kept, step.wqs, np.nan),
        wwa=np.where(worker_kept, step.wwa, np.nan),
        wua=np.where(worker_kept, step.wua, np.nan),
        aqs=step.aqs.copy() if closed else None,
    )
