"""At 200k judgments with several increments, an incremental run reads as a full run within
the documented tolerances (docs/operations.md): CrowdTruth scores within 0.01 (both stop at
a change below ``crowdtruth_tol``, from different starts; the increments update it locally
until its drift budget is spent), co-determination within 1e-5, the reliability model within
1e-3 (updated locally too), everything else equal (1e-9); item values
(stored as deltas on the run before) within ``value_tolerance`` more; item flags equal but for
items whose score sits within that tolerance of the threshold."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import Engine

from monitor.core.settings import Settings
from monitor.incremental.cache import RunCache
from monitor.ingest.api import create_campaign, ingest_file
from monitor.pipeline import recompute
from monitor.store.campaigns import CampaignSpec, get_campaign
from monitor.store.engine import transaction
from monitor.store.runs import latest_run, run_flags, run_values

CROWDTRUTH = {"wqs", "wwa", "wua", "uqs", "aqs", "crowdtruth_iterations"}
CT_TOL = 0.01
CODETERMINATION = {"weight", "score"}  # warm-started too, to a much finer tolerance
CD_TOL = 1e-5
MODEL_TOL = 1e-3  # the rating model stops at a step below 1e-6 of the scale, from either start


def _write(path: Path, lo: int, hi: int, n_workers: int = 200) -> None:
    """Ratings 1-5, five per item, 10% of the workers answering at random."""
    rng = np.random.default_rng(lo)
    k = np.arange(lo, hi)
    item = k // 5
    worker = (item * 7 + (k % 5) * 13) % n_workers
    truth = (item * 2654435761 % 5) + 1
    value = np.clip(truth + np.rint(rng.normal(0, 0.7, k.size)).astype(int), 1, 5)
    spam = worker % 10 == 3
    value = np.where(spam, rng.integers(1, 6, k.size), value)
    rows = [
        f"w{w},i{i},{v},j{j}\n"
        for w, i, v, j in zip(
            worker.tolist(), item.tolist(), value.tolist(), k.tolist(), strict=True
        )
    ]
    path.write_text("worker,item,value,judgment_id\n" + "".join(rows), encoding="utf-8")


def _latest(engine: Engine) -> tuple[dict, dict]:
    with transaction(engine) as s:
        run = latest_run(s, get_campaign(s, "scale").id)
        assert run is not None
        values = {(v.scope, v.subject, v.metric): v for v in run_values(s, run.id)}
        flags = {(f.scope, f.subject, f.rule): f for f in run_flags(s, run.id)}
    return values, flags


@pytest.mark.slow
def test_incremental_runs_match_a_full_run_at_200k(engine: Engine, tmp_path: Path) -> None:
    settings = Settings(bootstrap_samples=0, phi="map", cache_dir=str(tmp_path / "cache"))
    cache = RunCache.from_settings(settings)  # one process, as a scheduler
    create_campaign(engine, CampaignSpec("scale", "rating", None, 1, 5))
    n = 200_000
    cuts = [int(n * f) for f in (0.94, 0.96, 0.98, 1.0)]
    paths: list[tuple] = []
    for k, (lo, hi) in enumerate(zip([0, *cuts[:-1]], cuts, strict=True)):
        path = tmp_path / f"part{k}.csv"
        _write(path, lo, hi)
        ingest_file(engine, path, "scale")
        if k == 2:  # a cold process: the arrays from the snapshot file
            cache = RunCache.from_settings(settings)
        [o] = recompute(engine, settings, cache=cache)
        assert o.status == "ok"
        assert o.n_judgments == hi
        if k:
            with transaction(engine) as s:
                run = latest_run(s, get_campaign(s, "scale").id)
                assert run is not None
                paths.append((run.parameters["crowdtruth"]["local_units"],
                              run.parameters["model"].get("update")))  # fmt: skip
    # the increments took the local updates (CrowdTruth's drift budget sends one run over
    # every item), so the comparison below is of what they give
    assert any(ct is not None for ct, _ in paths), paths
    assert any(ct is None for ct, _ in paths), paths
    assert any(str(m).startswith("local") for _, m in paths), paths
    inc_values, inc_flags = _latest(engine)
    recompute(engine, settings, full=True)
    full_values, full_flags = _latest(engine)
    assert inc_values.keys() == full_values.keys()
    for key, want in full_values.items():
        got = inc_values[key]
        if key[2] in ("crowdtruth_iterations", "model_iterations"):
            continue
        tol = (
            CT_TOL
            if key[2] in CROWDTRUTH
            else CD_TOL
            if key[2] in CODETERMINATION
            else MODEL_TOL
            if key[2].startswith("model_")
            or key[2] in ("decision", "export_quality", "stop_line")  # of the model
            else 1e-9
        )
        if key[0] == "item":
            tol += settings.value_tolerance
        for a, b in ((got.value, want.value), (got.low, want.low), (got.high, want.high)):
            assert (a is None) == (b is None), key
            if a is not None:
                assert math.isclose(a, b, rel_tol=0, abs_tol=tol), (key, a, b)
    differ = inc_flags.keys() ^ full_flags.keys()
    for key in differ:  # an item's spread test (rules.item) within the model's tolerance of it
        p = full_values[(key[0], key[1], "model_spread_p")].value
        assert key[2] == "ambiguous", key
        assert abs(p - settings.ambiguous_p) <= MODEL_TOL + settings.value_tolerance, key
    for key in inc_flags.keys() & full_flags.keys():
        a, b = inc_flags[key].value, full_flags[key].value
        assert (a is None and b is None) or math.isclose(a, b, abs_tol=CT_TOL), key
