"""Transitivity in incremental runs: a process that kept the last run's triangles brings them up
to date with the judgments that arrived, and gives what counting every triangle again gives."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from sqlalchemy import Engine

from monitor.core.settings import Settings
from monitor.incremental.cache import RunCache
from monitor.pipeline import recompute
from monitor.store.campaigns import get_campaign
from monitor.store.engine import make_engine, transaction
from monitor.store.migrate import upgrade
from monitor.store.runs import latest_run, run_values
from tests.golden import GOLDEN, load
from tests.pipeline.cases import store_case

SETTINGS = Settings(bootstrap_samples=0, cache_dir="")
TRANSITIVITY = ("transitivity_kappa", "tie_rate", "position_bias")


def _reference(tmp_path: Path) -> Engine:
    """A second database that receives the same judgments and counts afresh every time."""
    engine = make_engine(f"sqlite:///{tmp_path / 'reference.db'}")
    upgrade(engine)
    return engine


def _latest(engine: Engine) -> tuple[str, dict]:
    with transaction(engine) as s:
        run = latest_run(s, get_campaign(s, "golden").id)
        assert run is not None
        values = {
            (v.scope, v.subject, v.metric): (v.value, v.n, v.detail)
            for v in run_values(s, run.id)
            if v.metric in TRANSITIVITY
        }
        return run.parameters["transitivity"]["triangles"], values


@pytest.mark.parametrize("name", ["pairwise_medium", "pairwise_small_weak"])
def test_kept_triangles_brought_up_to_date_count_as_afresh(
    engine: Engine, tmp_path: Path, name: str
) -> None:
    case = load(GOLDEN / "cases" / f"{name}.json")
    n = len(case["judgments"])
    cuts = [int(n * f) for f in (0.5, 0.7, 0.85, 1.0)]
    scheduler = RunCache.from_settings(SETTINGS)
    store_case(engine, case, upto=cuts[0])
    recompute(engine, SETTINGS, cache=scheduler)
    assert _latest(engine)[0] == "counted"
    reference = _reference(tmp_path)
    store_case(reference, case, upto=cuts[0])
    for lo, hi in itertools.pairwise(cuts):
        store_case(engine, case, upto=hi, start=lo)
        [o] = recompute(engine, SETTINGS, cache=scheduler)
        assert o.status == "ok"
        how, incremental = _latest(engine)
        assert how == "updated"
        store_case(reference, case, upto=hi, start=lo)
        recompute(reference, SETTINGS, full=True, cache=RunCache.plain())
        how, full = _latest(reference)
        assert how == "counted"
        assert any(k[2] == "transitivity_kappa" and v[0] is not None for k, v in full.items())
        assert incremental == full


def test_a_new_process_or_a_full_run_counts_afresh(engine: Engine) -> None:
    case = load(GOLDEN / "cases" / "pairwise_medium.json")
    n = len(case["judgments"])
    store_case(engine, case, upto=n // 2)
    scheduler = RunCache.from_settings(SETTINGS)
    recompute(engine, SETTINGS, cache=scheduler)
    store_case(engine, case, upto=n * 3 // 4, start=n // 2)
    recompute(engine, SETTINGS)  # another process
    assert _latest(engine)[0] == "counted"
    store_case(engine, case, start=n * 3 // 4)
    recompute(engine, SETTINGS, cache=scheduler)  # its last run is not the latest any more
    assert _latest(engine)[0] == "counted"
    recompute(engine, SETTINGS, cache=scheduler, full=True)
    assert _latest(engine)[0] == "counted"
