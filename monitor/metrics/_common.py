"""Shared conventions of the metric modules: undefined values and integer coding."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray


@dataclass(frozen=True)
class Undefined:
    """Why a measure has no value (one value in the whole campaign, p_e = 1, ...)."""

    reason: str


@dataclass(frozen=True)
class Interval:
    """A two-sided interval, for instance a bootstrap 95% interval or an HPD."""

    low: float
    high: float
    level: float = 0.95


def encode(labels: ArrayLike) -> tuple[NDArray[np.int64], NDArray]:
    """Map arbitrary labels to codes 0..k-1.

    Returns ``(codes, uniques)`` with ``uniques[codes] == labels``; ``uniques`` is sorted.
    """
    uniques, codes = np.unique(np.asarray(labels), return_inverse=True)
    return codes.astype(np.int64).reshape(-1), uniques


def check_same_length(**arrays: NDArray) -> int:
    """Raise ValueError unless all arrays are one-dimensional with the same length."""
    lengths = {name: np.shape(a) for name, a in arrays.items()}
    shapes = set(lengths.values())
    if len(shapes) != 1 or len(next(iter(shapes))) != 1:
        described = ", ".join(f"{k} {v}" for k, v in lengths.items())
        raise ValueError(f"Expected one-dimensional arrays of equal length, got {described}.")
    return next(iter(shapes))[0]


def squarem_jump(
    t0: NDArray[np.float64], t1: NDArray[np.float64], t2: NDArray[np.float64]
) -> NDArray[np.float64] | None:
    """The SQUAREM extrapolation (Varadhan & Roland 2008, *Scand. J. Statist.* 35:335, scheme
    S3) from a point and two plain steps of a fixed-point map, ``t1 = F(t0)``, ``t2 = F(t1)``:
    ``t0 - 2 a r + a^2 v`` with ``r = t1 - t0``, ``v = t2 - 2 t1 + t0`` and ``a = -|r| / |v|``;
    None when ``a`` would be -1 (the jump is the two plain steps themselves)."""
    r = t1 - t0
    v = t2 - 2 * t1 + t0
    nv = float(np.linalg.norm(v))
    alpha = min(-float(np.linalg.norm(r)) / nv, -1.0) if nv > 0 else -1.0
    if alpha >= -1.0:
        return None
    return t0 - 2 * alpha * r + alpha * alpha * v
