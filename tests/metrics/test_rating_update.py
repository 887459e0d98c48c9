"""The rating model's local update (monitor.metrics.ratings.update): its sums and derivatives are
those of the full sweep, it is exact when every item is touched or nothing changed, it lands
within the documented tolerance of a full fit whenever its global check accepts it (random
campaigns, several increments, new items and new workers), and it declines tied workers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from monitor.metrics.ratings.model import Judgments, rating_model
from monitor.metrics.ratings.update import (
    ModelState,
    model_state,
    rating_model_update,
    worker_jacobian,
    worker_sums,
)

SCALE = (1.0, 5.0)
SPAN = SCALE[1] - SCALE[0]
LOCAL_MOVE = 5e-5  # monitor.pipeline.model_update.LOCAL_MOVE: the pipeline's acceptance
MODEL_TOL = 1e-3  # docs/operations.md: the reliability model's values, incremental vs full
FIELDS = ("bias", "noise_sd", "low", "high", "mean", "sd", "item_spread", "spread_p")


def campaign(
    rng: np.random.Generator, n_items: int, n_workers: int, per_item: int, first: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ratings 1-5 of items ``first..first+n_items``, ``per_item`` distinct workers each, with
    a bias and a noise sd per worker (seeded by the worker's code, so every call agrees)."""
    items = np.repeat(np.arange(first, first + n_items), per_item)
    workers = np.concatenate(
        [rng.choice(n_workers, per_item, replace=False) for _ in range(n_items)]
    )
    truth = 1.0 + (items * 2654435761 % 5)
    bias = np.array([np.random.default_rng(w).normal(0, 0.3) for w in range(n_workers)])
    noise = np.array([np.random.default_rng(w + 99).uniform(0.3, 1.5) for w in range(n_workers)])
    x = np.clip(np.rint(truth + bias[workers] + rng.normal(0, 1, items.size) * noise[workers]),
                *SCALE)  # fmt: skip
    return items, workers, x


def state_of(it, wk, x, n_items: int, n_workers: int):  # noqa: ANN001, ANN201
    fit = rating_model(it, wk, x, n_items=n_items, n_workers=n_workers, scale=SCALE)
    return fit, model_state(it, wk, x, bias=fit.bias, noise_sd=fit.noise_sd, n_items=n_items,
                            n_workers=n_workers, scale=SCALE)  # fmt: skip


def largest_difference(a, b) -> float:  # noqa: ANN001
    return max(float(np.nanmax(np.abs(getattr(a, f) - getattr(b, f)), initial=0.0))
               for f in FIELDS)  # fmt: skip


def test_the_derivatives_are_those_of_the_sums() -> None:
    rng = np.random.default_rng(0)
    it, wk, x = campaign(rng, 60, 8, 4)
    j = Judgments(it, wk, x, (x == SCALE[0]) | (x == SCALE[1]))
    b, var = rng.normal(0, 0.3, 8), rng.uniform(0.3, 2.0, 8)
    jac = worker_jacobian(j, b, var, 60, 8).toarray()
    h = 1e-6
    for p in range(8):
        e = np.zeros(8)
        e[p] = h
        sums = lambda b, v: worker_sums(j, b, v, 60, 8)[3]  # noqa: E731
        db = (sums(b + e, var) - sums(b - e, var)) / (2 * h)
        dw = (sums(b, 1 / (1 / var + e)) - sums(b, 1 / (1 / var - e))) / (2 * h)
        # blocks R, A by the biases, then by the weights (columns 2 and 4 of the sums)
        want = [db[:, 2], db[:, 4], dw[:, 2], dw[:, 4]]
        for k, col in enumerate(want):
            np.testing.assert_allclose(jac[k * 8 : (k + 1) * 8, p], col, atol=1e-6)
        assert np.abs(db[:, [0, 1, 3, 5]]).max() < 1e-6  # counts and CB, C: no bias in them


def test_the_state_adds_up_over_blocks_of_items() -> None:
    rng = np.random.default_rng(7)
    it, wk, x = campaign(rng, 120, 9, 4)
    order = rng.permutation(it.size)
    it, wk, x = it[order], wk[order], x[order]
    b, sd = rng.normal(0, 0.2, 9), rng.uniform(0.5, 1.5, 9)
    kw = dict(bias=b, noise_sd=sd, n_items=125, n_workers=9, scale=SCALE)
    whole = model_state(it, wk, x, **kw)  # type: ignore[arg-type]
    for chunk in (1, 7, 100):
        part = model_state(it, wk, x, chunk=chunk, **kw)  # type: ignore[arg-type]
        np.testing.assert_allclose(part.sums, whole.sums, atol=1e-9)
        np.testing.assert_allclose(part.jac.toarray(), whole.jac.toarray(), atol=1e-9)


def test_every_item_touched_is_the_full_fit() -> None:
    rng = np.random.default_rng(1)
    it, wk, x = campaign(rng, 200, 10, 4)
    _, state = state_of(it, wk, x, 200, 10)
    x2 = x.copy()
    x2[:100] = np.clip(x2[:100] + 1, *SCALE)
    loc = rating_model_update(
        it, wk, x2, touched=np.arange(200), old_items=it, old_workers=wk, old_values=x,
        previous=state, n_items=200, n_workers=10, scale=SCALE, tol=1e-12, max_iter=1000,
    )  # fmt: skip
    full = rating_model(it, wk, x2, n_items=200, n_workers=10, scale=SCALE, tol=1e-12,
                        max_iter=1000)  # fmt: skip
    assert loc is not None
    assert largest_difference(loc.model, full) < 1e-9
    assert loc.global_move < 1e-10


def test_nothing_changed_is_the_last_fit() -> None:
    rng = np.random.default_rng(2)
    it, wk, x = campaign(rng, 200, 10, 4)
    fit, state = state_of(it, wk, x, 200, 10)
    touched = np.arange(5)
    on = np.isin(it, touched)
    loc = rating_model_update(
        it, wk, x, touched=touched, old_items=it[on], old_workers=wk[on], old_values=x[on],
        previous=state, n_items=200, n_workers=10, scale=SCALE,
    )  # fmt: skip
    # the last fit stopped at a step below tol: one or two more steps, no further
    assert loc is not None
    assert loc.model.iterations <= 2
    assert loc.global_move < 1e-6 * SPAN
    np.testing.assert_allclose(loc.model.bias, fit.bias, atol=1e-5)
    np.testing.assert_allclose(loc.model.noise_sd, fit.noise_sd, atol=1e-5)
    # the state goes through the arrays a run keeps
    again = ModelState.from_arrays(*loc.state.to_arrays())
    np.testing.assert_array_equal(again.jac.toarray(), loc.state.jac.toarray())
    np.testing.assert_array_equal(again.sums, loc.state.sums)


def test_one_percent_more_lands_next_to_the_full_fit() -> None:
    rng = np.random.default_rng(3)
    N, W = 4000, 40
    it, wk, x = campaign(rng, N, W, 5)
    _, state = state_of(it, wk, x, N, W)
    for k in range(3):  # new items, then new judgments on known items by a new worker
        if k < 2:
            a, b, c = campaign(rng, 40, W, 5, first=N)
            N += 40
        else:
            a = np.repeat(np.arange(40), 1)
            b, c = np.full(40, W), np.clip(np.rint(3 + rng.normal(0, 1, 40)), *SCALE)
            W += 1
        old = np.isin(it, np.unique(a))
        old_it, old_wk, old_x = it[old], wk[old], x[old]
        it, wk, x = np.r_[it, a], np.r_[wk, b], np.r_[x, c]
        loc = rating_model_update(
            it, wk, x, touched=np.unique(a), old_items=old_it, old_workers=old_wk,
            old_values=old_x, previous=state, n_items=N, n_workers=W, scale=SCALE,
        )  # fmt: skip
        full = rating_model(it, wk, x, n_items=N, n_workers=W, scale=SCALE)
        assert loc is not None
        assert loc.global_move <= LOCAL_MOVE * SPAN
        assert largest_difference(loc.model, full) < MODEL_TOL / 4
        state = loc.state


@st.composite
def increments(draw: st.DrawFn) -> tuple[int, int, list[tuple[str, int]]]:
    seed = draw(st.integers(0, 2**16))
    workers = draw(st.integers(6, 15))
    kinds = st.sampled_from(["new items", "again", "new worker"])
    steps = draw(st.lists(st.tuples(kinds, st.integers(1, 12)), min_size=1, max_size=4))
    return seed, workers, steps


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(increments())
def test_an_accepted_local_update_is_within_the_tolerance_of_a_full_fit(case) -> None:  # noqa: ANN001
    seed, W, steps = case
    rng = np.random.default_rng(seed)
    N = 300
    it, wk, x = campaign(rng, N, W, int(rng.integers(3, 6)))
    _, state = state_of(it, wk, x, N, W)
    for kind, k in steps:
        if kind == "new items":
            a, b, c = campaign(rng, k, W, 4, first=N)
            N += k
        else:  # new judgments on known items, replacing a worker's earlier one there
            a = rng.choice(N, k, replace=False)
            b = np.full(k, W) if kind == "new worker" else rng.integers(0, W, k)
            W += kind == "new worker"
            c = np.clip(np.rint(3 + rng.normal(0, 1.2, k)), *SCALE)
        touched = np.unique(a)
        old = np.isin(it, touched)
        keep = ~np.isin(it * 1000 + wk, a * 1000 + b)  # the latest judgment per worker and item
        old_it, old_wk, old_x = it[old], wk[old], x[old]
        it, wk, x = np.r_[it[keep], a], np.r_[wk[keep], b], np.r_[x[keep], c]
        loc = rating_model_update(
            it, wk, x, touched=touched, old_items=old_it, old_workers=old_wk, old_values=old_x,
            previous=state, n_items=N, n_workers=W, scale=SCALE,
        )  # fmt: skip
        full = rating_model(it, wk, x, n_items=N, n_workers=W, scale=SCALE, tol=1e-10,
                            max_iter=2000)  # fmt: skip
        if loc is not None and loc.global_move <= LOCAL_MOVE * SPAN and full.converged:
            assert largest_difference(loc.model, full) <= MODEL_TOL
            state = loc.state
        else:  # the pipeline refits globally and takes the state there
            state = model_state(it, wk, x, bias=full.bias, noise_sd=full.noise_sd, n_items=N,
                                n_workers=W, scale=SCALE)  # fmt: skip


def test_tied_workers_are_left_to_the_full_fit() -> None:
    # two workers who judged only items together, two judgments per item
    it = np.repeat(np.arange(30), 2)
    wk = np.tile([0, 1], 30)
    x = np.clip(np.rint(3 + np.random.default_rng(4).normal(0, 1, 60)), *SCALE)
    _, state = state_of(it, wk, x, 30, 2)
    on = it == 0
    out = rating_model_update(
        it, wk, x, touched=[0], old_items=it[on], old_workers=wk[on], old_values=x[on],
        previous=state, n_items=30, n_workers=2, scale=SCALE,
    )  # fmt: skip
    assert out is None


def test_items_judged_once_are_left_to_the_full_fit() -> None:
    it, wk = np.arange(20), np.arange(20) % 4
    x = np.clip(np.rint(3 + np.random.default_rng(6).normal(0, 1, 20)), *SCALE)
    _, state = state_of(it, wk, x, 20, 4)
    out = rating_model_update(
        it, wk, x, touched=[0], old_items=[], old_workers=[], old_values=[], previous=state,
        n_items=20, n_workers=4, scale=SCALE,
    )  # fmt: skip
    assert out is None


def test_inputs_are_checked() -> None:
    rng = np.random.default_rng(5)
    it, wk, x = campaign(rng, 50, 6, 3)
    _, state = state_of(it, wk, x, 50, 6)
    kw = dict(previous=state, n_items=50, scale=SCALE)
    with pytest.raises(ValueError, match="at most n_workers"):
        rating_model_update(it[wk < 5], wk[wk < 5], x[wk < 5], touched=[0], old_items=[],
                            old_workers=[], old_values=[], n_workers=5, **kw)  # type: ignore[arg-type]  # fmt: skip
    with pytest.raises(ValueError, match="touched items"):
        rating_model_update(it, wk, x, touched=[0], old_items=[1], old_workers=[0],
                            old_values=[3.0], n_workers=6, **kw)  # type: ignore[arg-type]  # fmt: skip
