"""The rating model's local update in a run: whether the last run's state applies, the items
that received judgments and their judgments as the last run counted them, and whether the
result is accepted (:mod:`monitor.metrics.rating_update`; ``docs/operations.md``). The rating
model's values are stored by :mod:`monitor.pipeline.quality`."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.pipeline.collect import digest
from monitor.store.arrays import CampaignArrays, latest_per_pair

LOCAL_STATE = "model_sums"  # (W, 10): parameters, per-worker sums, linearisation point
LOCAL_JACOBIAN = "model_jacobian"  # (nnz, 3): the sums' derivatives by the parameters
LOCAL_SHARE = 0.1  # at most this share of the judgments on items with new judgments
LOCAL_MOVE = 5e-5  # accept while a full step moves no bias or noise sd by more (x width)
LOCAL_ROUNDS = 3  # local rounds, each checked by one pass over every judgment
LOCAL_DRIFT = 0.05  # refit (and take new derivatives) beyond this drift (x width)
LOCAL_MAX_ENTRIES = 250_000  # keep no derivatives with more (row, column) entries than this


def state_fits(items: NDArray[np.int64], n_items: int, n_workers: int) -> bool:
    """Whether the derivatives fit in ``LOCAL_MAX_ENTRIES``: 4 blocks of at most ``W^2``
    entries, and of at most one per ordered pair of judgments on an item."""
    n_i = np.bincount(items, minlength=n_items).astype(np.int64)
    return 4 * min(n_workers**2, int(np.sum(n_i * (n_i - 1)))) <= LOCAL_MAX_ENTRIES


def state_meta(arrays: CampaignArrays, meta: dict[str, Any], n: int, w: int) -> dict[str, Any]:
    """What a local-update state depends on: the model, and the items and workers its rows
    are (digests of their database ids, as the bootstrap states keep)."""
    return {
        **meta,
        "n_items": n,
        "n_workers": w,
        "items": digest(arrays.item_db_ids[:n]),
        "workers": digest(arrays.worker_db_ids[:w]),
    }


def local_update(arrays, settings, warm, meta, items, workers, values, scale, parameters):  # noqa: ANN001, ANN202, PLR0913
    """The rating model updated over the items with new judgments only
    (:func:`~monitor.metrics.rating_update.rating_model_update`), or None when it does not
    apply or misses its budget: no state of the last run for these items and workers, a
    judgment committed late below its watermark, more than ``LOCAL_SHARE`` of the judgments
    on touched items, no convergence, one more full step still moving a bias or noise sd by
    more than ``LOCAL_MOVE`` of the scale's width, or the parameters gone further than
    ``LOCAL_DRIFT`` from where the state's derivatives were taken. The reason goes into the
    run's parameters."""
    from monitor.metrics.rating_update import ModelState, rating_model_update

    def no(reason: str) -> None:
        if warm is not None:
            parameters["model"]["update"] = f"global: {reason}"

    table = warm.states.get(LOCAL_STATE) if warm is not None else None
    jac = warm.states.get(LOCAL_JACOBIAN) if warm is not None else None
    if warm is None or table is None or jac is None:
        return no("no state from the last run")
    N, W = len(arrays.item_ids), len(arrays.worker_ids)
    n0, w0 = int(table.meta.get("n_items", -1)), int(table.meta.get("n_workers", -1))
    if (
        not (0 <= n0 <= N and 0 <= w0 <= W)
        or table.meta != state_meta(arrays, meta, n0, w0)
        or jac.meta != table.meta
        or table.array.shape[0] != w0
    ):
        return no("the state does not match")
    arrived = warm.arrived(arrays)
    if arrived is None:
        return no("judgments committed below the last watermark")
    seen, mark = arrived.seen, arrived.touched
    touched = np.flatnonzero(mark)
    on_touched = mark[items]
    if int(on_touched.sum()) > LOCAL_SHARE * items.size:
        return no(f"more than {LOCAL_SHARE:.0%} of the judgments on items with new ones")
    idx = np.flatnonzero(seen & mark[arrays.items])
    idx = idx[latest_per_pair(arrays.workers[idx], arrays.items[idx], arrays.order[idx])]
    span = scale[1] - scale[0]
    fit = rating_model_update(
        items, workers, values, touched=touched, old_items=arrays.items[idx],
        old_workers=arrays.workers[idx], old_values=arrays.values[idx],
        previous=ModelState.from_arrays(table.array, jac.array), n_items=N, n_workers=W,
        scale=scale, max_iter=settings.model_max_iter, tol=settings.model_tol,
        move_tol=LOCAL_MOVE, max_rounds=LOCAL_ROUNDS, floor_margin=settings.quality_margin,
    )  # fmt: skip
    if fit is None:
        return no("tied workers, or the local iteration did not converge")
    if fit.global_move > LOCAL_MOVE * span:
        return no(f"a full step would still move {fit.global_move:.2g}")
    if fit.drift > LOCAL_DRIFT * span:
        return no(f"drift {fit.drift:.2g} since the derivatives were taken")
    parameters["model"].update(
        update="local", local_judgments=fit.local_judgments, rounds=fit.rounds,
        global_move=fit.global_move, drift=fit.drift,
    )  # fmt: skip
    return fit
