"""Phi in a run, behind one signature (:func:`phi_run`): the exact posterior on a grid of
log p, reusing the last run's grid (each distinct item statistic's log L on it, kept as the
state ``phi_grid``) while it was made for the same model, else from scratch
(:mod:`monitor.metrics.ratings.phi_measure`)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.core.results import State
from monitor.incremental.warm import WarmStart

STATE = "phi_grid"


def phi_run(
    items: NDArray[np.int64],
    values: NDArray[np.float64],
    *,
    scale: tuple[float, float],
    n_items: int,
    gold: NDArray[np.float64],
    options: Any,
    warm: WarmStart | None,
) -> tuple[Any, State | None]:
    """Phi of the ratings ``values`` of ``items`` (``options``:
    :class:`~monitor.pipeline.params.PhiOptions`), and the grid the next run may reuse."""
    from monitor.metrics.ratings.phi_grid import PhiGrid
    from monitor.metrics.ratings.phi_measure import Engine, phi

    engines: dict[str, Engine] = {"map": "map", "full": "exact", "nuts": "nuts"}
    engine = engines[options.phi]
    meta = {"scale": list(scale), "mapping": options.phi_mapping, "prior": options.phi_prior}
    kept = warm.states.get(STATE) if warm is not None else None
    grid = PhiGrid.from_array(kept.array) if kept is not None and kept.meta == meta else None
    res = phi(
        items,
        values,
        scale_min=scale[0],
        scale_max=scale[1],
        n_items=n_items,
        gold=gold if np.isfinite(gold).any() else None,
        engine=engine,
        seed=options.seed,
        mapping=options.phi_mapping,
        prior=options.phi_prior,
        grid=grid,
    )
    state = State(meta, res.grid.to_array()) if res.grid is not None else None
    return res, state
