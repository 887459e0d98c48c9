"""The rating model's local update through the pipeline, on both backends: an incremental run
after a few new judgments (new items, new judgments on known items, a new worker) updates the
model locally and matches a full run within the documented tolerance; it refits globally, and
says why, with gold, when most items are touched, or when the kept state does not describe the
campaign."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from sqlalchemy import Engine, update

from monitor.core.results import State
from monitor.core.settings import Settings
from monitor.incremental.rating import LOCAL_JACOBIAN, LOCAL_STATE, local_update, state_fits
from monitor.incremental.warm import WarmStart
from monitor.ingest.api import create_campaign, ingest_file
from monitor.pipeline import recompute
from monitor.pipeline.params import ModelOptions
from monitor.store.arrays import latest_per_pair, load_arrays
from monitor.store.campaigns import CampaignSpec, get_campaign
from monitor.store.engine import transaction
from monitor.store.models import Item
from monitor.store.runs import latest_run, run_states, run_values

SETTINGS = Settings(bootstrap_samples=0, phi="off")
MODEL_TOL = 1e-3  # docs/operations.md


def _write(path: Path, rows: list[tuple[int, int, int]], first_id: int) -> None:
    text = "".join(f"w{w},i{i},{v},j{first_id + k}\n" for k, (w, i, v) in enumerate(rows))
    path.write_text("worker,item,value,judgment_id\n" + text, encoding="utf-8")


def _ratings(items: range, seed: int, n_workers: int = 40) -> list[tuple[int, int, int]]:
    """Five judgments per item, 1-5, 10% of the workers at random."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in items:
        truth = 1 + i * 2654435761 % 5
        for w in rng.choice(n_workers, 5, replace=False):
            v = truth + round(rng.normal(0, 0.7)) if w % 10 != 3 else rng.integers(1, 6)
            rows.append((int(w), i, int(np.clip(v, 1, 5))))
    return rows


def _ingest(engine: Engine, tmp_path: Path, rows: list, first_id: int, name: str) -> None:
    path = tmp_path / f"{name}-{first_id}.csv"
    _write(path, rows, first_id)
    ingest_file(engine, path, name)


def _model(engine: Engine, name: str) -> tuple[dict, dict, dict]:
    with transaction(engine) as s:
        run = latest_run(s, get_campaign(s, name).id)
        assert run is not None
        values = {(v.scope, v.subject, v.metric): v for v in run_values(s, run.id)}
        return run.parameters["model"], values, run_states(s, run.id)


def test_a_few_new_judgments_update_the_model_locally(engine: Engine, tmp_path: Path) -> None:
    create_campaign(engine, CampaignSpec("m", "rating", None, 1, 5))
    base = _ratings(range(2000), seed=1)
    _ingest(engine, tmp_path, base, 0, "m")
    recompute(engine, SETTINGS)
    first, _, states = _model(engine, "m")
    assert "update" not in first
    assert {LOCAL_STATE, LOCAL_JACOBIAN} <= states.keys()
    n = len(base)
    increments = [
        _ratings(range(2000, 2020), seed=2),  # new items
        [(w, i, 5) for w, i, _ in base[:40]],  # new judgments on known items
        [(40, i, 3) for i in range(0, 60, 3)],  # a new worker
    ]
    for rows in increments:
        _ingest(engine, tmp_path, rows, n, "m")
        n += len(rows)
        recompute(engine, SETTINGS)
        params, _, _ = _model(engine, "m")
        assert params["update"] == "local", params
        assert params["global_move"] <= 5e-5 * 4
    _, inc, _ = _model(engine, "m")
    recompute(engine, SETTINGS, full=True)
    params, full, _ = _model(engine, "m")
    assert "update" not in params
    assert inc.keys() == full.keys()
    for key, want in full.items():
        if not key[2].startswith("model_") or key[2] == "model_iterations":
            continue
        tol = MODEL_TOL + (SETTINGS.value_tolerance if key[0] == "item" else 0.0)
        for a, b in ((inc[key].value, want.value), (inc[key].low, want.low)):
            assert (a is None) == (b is None), key
            assert a is None or math.isclose(a, b, abs_tol=tol), (key, a, b)


def test_gold_and_many_touched_items_refit_globally(engine: Engine, tmp_path: Path) -> None:
    create_campaign(engine, CampaignSpec("g", "rating", None, 1, 5))
    create_campaign(engine, CampaignSpec("t", "rating", None, 1, 5))
    for name in ("g", "t"):
        _ingest(engine, tmp_path, _ratings(range(300), seed=3), 0, name)
    with transaction(engine) as s:
        gid = get_campaign(s, "g").id
        s.execute(update(Item).where(Item.campaign_id == gid, Item.external_id == "i0")
                  .values(gold="3"))  # fmt: skip
    recompute(engine, SETTINGS)
    _, _, states = _model(engine, "g")
    assert LOCAL_STATE not in states  # gold enters every step: no local update to prepare
    _ingest(engine, tmp_path, _ratings(range(300, 303), seed=4), 1500, "g")
    _ingest(engine, tmp_path, _ratings(range(300, 340), seed=4), 1500, "t")
    recompute(engine, SETTINGS)
    params, values, states = _model(engine, "g")
    assert "update" not in params
    # both refits start from the means the last run stored (its model_mean column)
    assert "model_init" not in states
    assert values[("campaign", "g", "model_iterations")].detail["warm_start"]
    params, values, states = _model(engine, "t")
    assert params["update"].startswith("global: more than 10%")
    assert values[("campaign", "t", "model_iterations")].detail["warm_start"]
    assert LOCAL_STATE in states  # taken afresh where the global fit ended
    for name in ("g", "t"):  # and end where a full run does
        _, inc, _ = _model(engine, name)
        recompute(engine, SETTINGS, full=True, campaign=name)
        _, full, _ = _model(engine, name)
        assert not full[("campaign", name, "model_iterations")].detail["warm_start"]
        for key, want in full.items():
            if key[2].startswith("model_") and key[2] != "model_iterations":
                tol = MODEL_TOL + (SETTINGS.value_tolerance if key[0] == "item" else 0.0)
                got = inc[key].value
                assert (got is None) == (want.value is None), key
                assert got is None or math.isclose(got, want.value, abs_tol=tol), key


def test_a_state_that_does_not_describe_the_campaign_is_not_used(
    engine: Engine, tmp_path: Path
) -> None:
    create_campaign(engine, CampaignSpec("s", "rating", None, 1, 5))
    _ingest(engine, tmp_path, _ratings(range(300), seed=5), 0, "s")
    recompute(engine, SETTINGS)
    _, _, states = _model(engine, "s")
    _ingest(engine, tmp_path, _ratings(range(300, 303), seed=6), 1500, "s")
    with transaction(engine) as s:
        info = get_campaign(s, "s")
        run = latest_run(s, info.id)
        assert run is not None
        arrays = load_arrays(s, info)
    keep = latest_per_pair(arrays.workers, arrays.items, arrays.order)
    judgments = (arrays.items[keep], arrays.workers[keep], arrays.values[keep])
    meta = {"model": "rating_model", "scale": [1.0, 5.0]}

    def attempt(kept: dict[str, State], n_judgments: int = run.n_judgments) -> dict:
        warm = WarmStart(watermark=run.watermark, n_judgments=n_judgments, states=kept)
        parameters: dict = {}
        options = ModelOptions.of(SETTINGS)
        fit = local_update(arrays, options, warm, meta, *judgments, (1.0, 5.0), parameters)
        return {"fit": fit, **parameters}

    assert attempt(states)["update"] == "local"
    other = {k: State({**v.meta, "items": "0" * 64}, v.array) for k, v in states.items()}
    assert attempt(other)["update"] == "global: the state does not match"
    scale = {k: State({**v.meta, "scale": [0.0, 5.0]}, v.array) for k, v in states.items()}
    assert attempt(scale)["update"] == "global: the state does not match"
    assert attempt({LOCAL_STATE: states[LOCAL_STATE]})["fit"] is None
    late = attempt(states, n_judgments=run.n_judgments - 1)
    assert late["update"] == "global: judgments committed below the last watermark"


def test_the_derivatives_kept_are_bounded() -> None:
    items = np.repeat(np.arange(1000), 5)
    assert state_fits(items, 1000, 200)  # 4 x 200^2 entries at most
    assert state_fits(items, 1000, 5000)  # 4 x 20 pairs per item
    assert not state_fits(np.repeat(np.arange(1000), 20), 1000, 5000)
