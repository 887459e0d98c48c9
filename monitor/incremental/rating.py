"""The rating model in a run, behind one signature (:func:`rating_run`): updated locally over
the items with new judgments when the last run's state applies and the result is accepted
(:mod:`monitor.metrics.ratings.update`; ``docs/operations.md``), else fitted over every judgment,
warm-started from the last run's means, biases and noise sds where it kept them. The rating
model's values are stored by :mod:`monitor.pipeline.reliability`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.core.results import State
from monitor.incremental.warm import WarmStart, digest
from monitor.metrics.common import group_mean
from monitor.metrics.ratings.model import RatingJudgments, RatingOptions
from monitor.store.arrays import CampaignArrays, latest_per_pair

WORKER_STATE = "model_workers"  # (W, 2): each worker's bias and noise sd
OLD_STATE = "model_init"  # (N,): the item means, kept by runs before the means were read back

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


def local_update(arrays, options, warm, meta, items, workers, values, scale, parameters):  # noqa: ANN001, ANN202, PLR0913
    """The rating model updated over the items with new judgments only
    (:func:`~monitor.metrics.ratings.update.rating_model_update`), or None when it does not
    apply or misses its budget: no state of the last run for these items and workers, a
    judgment committed late below its watermark, more than ``LOCAL_SHARE`` of the judgments
    on touched items, no convergence, one more full step still moving a bias or noise sd by
    more than ``LOCAL_MOVE`` of the scale's width, or the parameters gone further than
    ``LOCAL_DRIFT`` from where the state's derivatives were taken. The reason goes into the
    run's parameters."""
    from monitor.metrics.ratings.update import ModelState, rating_model_update

    def no(reason: str) -> None:
        if warm is not None:
            parameters["update"] = f"global: {reason}"

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
        scale=scale, max_iter=options.model_max_iter, tol=options.model_tol,
        move_tol=LOCAL_MOVE, max_rounds=LOCAL_ROUNDS,
        fit_options=RatingOptions(floor_margin=options.quality_margin),
    )  # fmt: skip
    if fit is None:
        return no("tied workers, or the local iteration did not converge")
    if fit.global_move > LOCAL_MOVE * span:
        return no(f"a full step would still move {fit.global_move:.2g}")
    if fit.drift > LOCAL_DRIFT * span:
        return no(f"drift {fit.drift:.2g} since the derivatives were taken")
    parameters.update(
        update="local", local_judgments=fit.local_judgments, rounds=fit.rounds,
        global_move=fit.global_move, drift=fit.drift,
    )  # fmt: skip
    return fit


@dataclass(frozen=True)
class RatingRun:
    """The rating model of a run, whether it started from the last run, the states it keeps
    for the next one and how it was reached (``parameters``)."""

    model: Any
    warm_start: bool
    states: dict[str, State] = field(default_factory=dict)
    parameters: dict[str, Any] = field(default_factory=dict)


def rating_run(
    arrays: CampaignArrays, options: Any, warm: WarmStart | None, data: RatingJudgments
) -> RatingRun:
    """The rating model on the latest judgment of each worker and item: updated locally, or
    fitted over every judgment (from scratch without ``warm``); ``options``:
    :class:`~monitor.pipeline.params.ModelOptions`."""
    from monitor.metrics.ratings.update import model_state

    items, workers, values, gold, prior, scale = data

    N, W = len(arrays.item_ids), len(arrays.worker_ids)
    meta = {"model": "rating_model", "scale": list(scale)}
    parameters: dict[str, Any] = {}
    # gold and history priors enter every step: the local update leaves them out
    plain = not np.isfinite(gold).any() and prior is None
    local = None
    if plain:
        local = local_update(arrays, options, warm, meta, items, workers, values, scale,
                             parameters)  # fmt: skip
    states: dict[str, State] = {}
    if local is not None:
        res, state, warm_start = local.model, local.state, True
    else:
        res, warm_start = _global_fit(arrays, options, warm, meta, items, workers, values,
                                      gold, prior, scale)  # fmt: skip
        state = None
        if plain and state_fits(items, N, W):  # what the next run's local update starts from
            state = model_state(items, workers, values, bias=res.bias, noise_sd=res.noise_sd,
                                n_items=N, n_workers=W, scale=scale)  # fmt: skip
    if state is not None and state.jac.nnz <= LOCAL_MAX_ENTRIES:
        smeta = state_meta(arrays, meta, N, W)
        table, jac = state.to_arrays()
        states[LOCAL_STATE] = State(smeta, table)
        states[LOCAL_JACOBIAN] = State(smeta, jac)
    states[WORKER_STATE] = State(meta, np.column_stack([res.bias, res.noise_sd]))
    return RatingRun(res, warm_start, states, parameters)


def _warm_array(
    warm: WarmStart | None, meta: dict[str, Any], rows: int, key: str
) -> NDArray | None:
    """The previous run's model state ``key`` when it was made for the same model (codes of
    items and workers are stable: the rows of the new ones are NaN)."""
    state = warm.states.get(key) if warm is not None else None
    if state is None or state.meta != meta or state.array.shape[0] > rows:
        return None
    a = np.full((rows, *state.array.shape[1:]), np.nan)
    a[: state.array.shape[0]] = state.array
    return a


def _global_fit(arrays, options, warm, meta, items, workers, values, gold, prior, scale):  # noqa: ANN001, ANN202, PLR0913
    """The rating model over every judgment, warm-started from the last run's means, biases
    and noise sds where it kept them; and whether it was."""
    from monitor.metrics.ratings.model import rating_model

    N, W = len(arrays.item_ids), len(arrays.worker_ids)
    per_worker = _warm_array(warm, meta, W, WORKER_STATE)
    start = None
    if per_worker is not None:
        assert warm is not None
        # the means as the last run stored them (to within the value tolerance); runs of
        # earlier versions kept them again as a state
        start = _warm_array(warm, meta, N, OLD_STATE)
        if start is None:
            start = warm.aligned("item", "model_mean", arrays.item_ids, default=np.nan)
    if start is not None:
        mean = group_mean(items, values, N)
        new = ~np.isfinite(start)
        start[new] = mean[new]
        start = np.where(np.isfinite(start), start, (scale[0] + scale[1]) / 2)
    else:
        per_worker = None
    res = rating_model(
        items, workers, values, n_items=N, n_workers=W, scale=scale,
        gold=gold if np.isfinite(gold).any() else None, worker_prior=prior, init=start,
        init_bias=None if per_worker is None else per_worker[:, 0],
        init_noise=None if per_worker is None else per_worker[:, 1],
        max_iter=options.model_max_iter, tol=options.model_tol,
        floor_margin=options.quality_margin,
    )  # fmt: skip
    return res, start is not None
