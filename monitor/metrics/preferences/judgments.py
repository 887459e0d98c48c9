"""Pairwise preference judgments: input conventions, canonical pairs and position bias.

Input convention shared by this module and :mod:`monitor.metrics.preferences.intraobserver`:

- ``workers, left, right : ndarray, shape (n,)`` non-negative integer codes;
- ``outcome : ndarray, shape (n,)`` int8, ``+1`` left preferred, ``-1`` right preferred, ``0`` tie
  (:func:`parse_outcomes` maps ``"left"/"right"/"tie"``);
- ``order : ndarray, shape (n,)`` time order, optional (default: array position). When a worker
  judges a pair more than once, in either orientation, the latest judgment counts; equal orders
  are broken by array position, later wins.

Canonical orientation: a judgment becomes the *relation* of the smaller item code to the larger,
``+1`` (``">"``, smaller preferred), ``-1`` (``"<"``), ``0`` (``"="``).

Item scores from preferences: the reliability model (:mod:`monitor.metrics.preferences.model`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.stats import binomtest

from monitor.metrics.common import Undefined, check_same_length

LEFT, TIE, RIGHT = 1, 0, -1
#: Canonical label codes for agreement measures: index = relation + 1.
CANONICAL_LABELS: tuple[str, str, str] = ("<", "=", ">")
_OUTCOME_WORDS = {"left": LEFT, "right": RIGHT, "tie": TIE}


def parse_outcomes(values: ArrayLike) -> NDArray[np.int8]:
    """Map ``"left"``, ``"right"``, ``"tie"`` (any case, surrounding blanks ignored) to +1, -1, 0.

    >>> parse_outcomes(["left", "tie", "Right"]).tolist()
    [1, 0, -1]
    """
    arr = np.asarray(values, dtype=str)
    words = np.char.strip(np.char.lower(arr.reshape(-1)))
    out = np.zeros(words.shape, dtype=np.int8)
    known = np.zeros(words.shape, dtype=bool)
    for word, code in _OUTCOME_WORDS.items():
        hit = words == word
        out[hit] = code
        known |= hit
    if not known.all():
        bad = int(np.flatnonzero(~known)[0])
        raise ValueError(
            f"Preference at position {bad} is {arr.reshape(-1)[bad]!r}; expected 'left', "
            "'right' or 'tie'."
        )
    return out


# --------------------------------------------------------------------------- validation


@dataclass(frozen=True)
class Judgments:
    """Validated judgments in canonical orientation, shape (n,) each.

    ``lo < hi`` are the item codes, ``rel`` the relation of ``lo`` to ``hi`` (+1, 0, -1),
    ``order`` the time order as float, ``n_workers``/``n_items`` one more than the largest code.
    """

    workers: NDArray[np.int64]
    lo: NDArray[np.int64]
    # validated judgments; TriangleState's and WorkerAccuracy's fields alike in shape are
    # per-pair and per-worker results
    hi: NDArray[np.int64]
    rel: NDArray[np.int8]
    order: NDArray[np.float64]
    n_workers: int
    n_items: int


def _int_codes(name: str, a: ArrayLike) -> NDArray[np.int64]:
    arr = np.asarray(a)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name} must hold integer codes, got dtype {arr.dtype}.")
    arr = arr.astype(np.int64, copy=False)
    if arr.size and arr.min() < 0:
        raise ValueError(f"{name} must hold non-negative codes, found {arr.min()}.")
    return arr


def validate(
    workers: ArrayLike,
    left: ArrayLike,
    # the inputs of triangle_state and transitivity, which it checks
    right: ArrayLike,
    outcome: ArrayLike,
    order: ArrayLike | None = None,
    *,
    n_workers: int | None = None,
    n_items: int | None = None,
) -> Judgments:
    """Check the input convention and return the judgments in canonical orientation."""
    w = _int_codes("workers", workers)
    a = _int_codes("left", left)
    b = _int_codes("right", right)
    o = np.asarray(outcome)
    t = np.arange(len(w), dtype=np.float64) if order is None else np.asarray(order)
    check_same_length(workers=w, left=a, right=b, outcome=o, order=t)
    if o.size and not np.issubdtype(o.dtype, np.integer):
        raise ValueError(
            f"outcome must be integer codes +1/-1/0, got dtype {o.dtype}; "
            "use parse_outcomes for strings."
        )
    if o.size and not np.isin(o, (-1, 0, 1)).all():
        raise ValueError("outcome must hold only +1 (left), -1 (right) and 0 (tie).")
    if not np.issubdtype(t.dtype, np.number):
        raise ValueError(f"order must be numeric, got dtype {t.dtype}.")
    t = t.astype(np.float64)
    if not np.isfinite(t).all():
        raise ValueError("order must be finite.")
    same = np.flatnonzero(a == b)
    if same.size:
        raise ValueError(
            f"Judgment at position {same[0]} compares item {a[same[0]]} with itself; "
            "a pair needs two different items."
        )
    nw = int(w.max()) + 1 if w.size else 0
    ni = int(max(a.max(), b.max())) + 1 if a.size else 0
    if n_workers is not None:
        if n_workers < nw:
            raise ValueError(f"n_workers is {n_workers} but a worker code is {nw - 1}.")
        nw = n_workers
    if n_items is not None:
        if n_items < ni:
            raise ValueError(f"n_items is {n_items} but an item code is {ni - 1}.")
        ni = n_items
    lo = np.minimum(a, b)
    hi = np.maximum(a, b)
    rel = np.where(a < b, o, -o).astype(np.int8)
    return Judgments(w, lo, hi, rel, t, nw, ni)


def pair_keys(j: Judgments, n_items: int | None = None) -> NDArray[np.int64]:
    """One int64 key per (worker, lo, hi): ``(worker * I + lo) * I + hi``."""
    n_i = j.n_items if n_items is None else n_items
    if max(j.n_workers, 1) * max(n_i, 1) * max(n_i, 1) >= 2**62:
        raise ValueError(
            f"{j.n_workers} workers x {n_i}^2 items overflow 64-bit pair keys; "
            "split the campaign or recode items per worker."
        )
    return (j.workers * n_i + j.lo) * n_i + j.hi


def latest(keys: NDArray[np.int64], order: NDArray[np.float64]) -> NDArray[np.int64]:
    """Positions of the latest judgment of each key (sorted by key): latest order, then position."""
    idx, group = sort_by_key(keys, order)
    last = np.ones(len(idx), dtype=bool)
    last[:-1] = group[1:] != group[:-1]
    return idx[last]


def sort_by_key(
    keys: NDArray[np.int64], order: NDArray[np.float64]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Positions sorted by (key, order, position) and the group number (rank of key) of each."""
    if len(order) < 2 or np.all(order[1:] >= order[:-1]):
        idx = np.argsort(keys, kind="stable")
    else:
        by_time = np.argsort(order, kind="stable")
        idx = by_time[np.argsort(keys[by_time], kind="stable")]
    k = keys[idx]
    group = np.zeros(len(idx), dtype=np.int64)
    if len(idx):
        np.cumsum(k[1:] != k[:-1], out=group[1:])
    return idx, group


# --------------------------------------------------------------------------- canonical pairs


@dataclass(frozen=True)
class CanonicalPairs:
    """Pairwise judgments as units and labels for nominal agreement measures and CrowdTruth.

    ``pairs : (P, 2)`` the unordered pairs ``(lo, hi)``, ``lo < hi``; ``pair : (k,)`` the pair code
    of each kept judgment; ``workers : (k,)``; ``label : (k,)`` index into ``CANONICAL_LABELS``
    (``"<"``, ``"="``, ``">"``: the relation of ``lo`` to ``hi``); ``rows : (k,)`` the input
    positions kept.
    """

    pairs: NDArray[np.int64]
    pair: NDArray[np.int64]
    workers: NDArray[np.int64]
    label: NDArray[np.int64]
    rows: NDArray[np.int64]
    labels: tuple[str, str, str] = CANONICAL_LABELS


def canonical_pairs(
    workers: ArrayLike,
    left: ArrayLike,
    # alike in shape to labels/export_accuracy.expected_accuracy's inputs: other data
    right: ArrayLike,
    outcome: ArrayLike,
    order: ArrayLike | None = None,
    *,
    latest_only: bool = True,
) -> CanonicalPairs:
    """Map each unordered pair to a unit code and each judgment to a canonical label.

    With ``latest_only`` a worker's repeated judgments of a pair collapse to the latest, so each
    worker contributes one label per unit (what alpha and percent agreement expect).
    """
    j = validate(workers, left, right, outcome, order)
    rows = latest(pair_keys(j), j.order) if latest_only else np.arange(len(j.workers))
    pk = j.lo[rows] * max(j.n_items, 1) + j.hi[rows]
    upk, pair = np.unique(pk, return_inverse=True)
    n_i = max(j.n_items, 1)
    pairs = np.stack([upk // n_i, upk % n_i], axis=1) if upk.size else np.zeros((0, 2), np.int64)
    return CanonicalPairs(
        pairs=pairs,
        pair=pair.astype(np.int64).reshape(-1),
        workers=j.workers[rows],
        label=j.rel[rows].astype(np.int64) + 1,
        rows=rows.astype(np.int64),
    )


# --------------------------------------------------------------------------- bias and ties


@dataclass(frozen=True)
class AnnotatorBias:
    """One annotator's answering habits over all their judgments (repeats included).

    ``left_share`` is the share of "left" among strict answers; ``p_value`` the two-sided exact
    binomial test of ``left_share == 1/2`` (None with ``undefined`` when no strict answer).
    """

    worker: int
    n_judgments: int
    n_ties: int
    tie_rate: float
    n_strict: int
    n_left: int
    left_share: float | None
    p_value: float | None
    undefined: Undefined | None = None


def position_bias(workers: ArrayLike, outcome: ArrayLike) -> tuple[AnnotatorBias, ...]:
    """Tie rate and position bias per annotator (workers with judgments, by code).

    ``workers, outcome : (n,)``. Tie rate = ties / judgments; position bias = binomial test of the
    "left" count among the strict answers (scipy.stats.binomtest, p = 1/2, two-sided).
    """
    w = _int_codes("workers", workers)
    o = np.asarray(outcome)
    check_same_length(workers=w, outcome=o)
    if o.size and not np.isin(o, (-1, 0, 1)).all():
        raise ValueError("outcome must hold only +1 (left), -1 (right) and 0 (tie).")
    nw = int(w.max()) + 1 if w.size else 0
    n = np.bincount(w, minlength=nw)
    ties = np.bincount(w, weights=(o == TIE), minlength=nw).astype(np.int64)
    lefts = np.bincount(w, weights=(o == LEFT), minlength=nw).astype(np.int64)
    out = []
    for wk in np.flatnonzero(n):
        strict = int(n[wk] - ties[wk])
        if strict:
            p = float(binomtest(int(lefts[wk]), strict, 0.5).pvalue)
            share, why = lefts[wk] / strict, None
        else:
            p, share, why = None, None, Undefined("The annotator gave no strict answer.")
        out.append(
            AnnotatorBias(
                int(wk), int(n[wk]), int(ties[wk]), ties[wk] / n[wk], strict, int(lefts[wk]),
                None if share is None else float(share), p, why,
            )
        )  # fmt: skip
    return tuple(out)
