"""Alpha over sets in multi-label runs, on both backends: NLTK's golden value through the
store, the Jaccard setting, the verdict it gives, and the demo's campaign against NLTK."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from sqlalchemy import Engine

from monitor.core.settings import Settings
from monitor.metrics.agreement.sets import set_alpha
from monitor.pipeline import recompute
from monitor.store.campaigns import get_campaign
from monitor.store.engine import transaction
from monitor.store.runs import latest_run, run_values
from tests.pipeline.cases import store_case

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "set_alpha.json"
SETTINGS = Settings(bootstrap_samples=100, phi="off")


def alpha_of(engine: Engine, name: str = "golden") -> dict:
    with transaction(engine) as s:
        run = latest_run(s, get_campaign(s, name).id)
        assert run is not None
        [v] = [v for v in run_values(s, run.id) if v.metric == "krippendorff_alpha"]
        return {"value": v.value, "low": v.low, "high": v.high, "n": v.n, "detail": v.detail}


@pytest.mark.parametrize("distance", ["masi", "jaccard"])
def test_golden_set_alpha_through_the_store(engine: Engine, distance: str) -> None:
    case = json.loads(GOLDEN.read_text(encoding="utf-8"))
    store_case(engine, case)
    recompute(engine, SETTINGS.replace(set_distance=distance))
    got = alpha_of(engine)
    assert got["value"] == pytest.approx(
        case["expected"][f"krippendorff_alpha_{distance}"], abs=1e-9
    )
    assert got["low"] < got["value"] < got["high"]
    assert got["detail"]["level"] == distance
    assert got["n"] == sum(1 for _ in case["judgments"]) - 4  # the 4 items judged once


def test_the_multilabel_verdict_reads_set_alpha(engine: Engine) -> None:
    from monitor.report.document import build_document
    from monitor.report.view import build_view

    store_case(engine, json.loads(GOLDEN.read_text(encoding="utf-8")))
    recompute(engine, SETTINGS)
    with transaction(engine) as s:
        doc = build_document(s, "golden")
    assert doc["verdict"]["level"] == "unreliable"
    assert doc["verdict"]["alpha"] is not None
    assert doc["agreement"]["level"] == "masi"
    assert doc["agreement"]["krippendorff_alpha_ci"]
    [alpha] = build_view(doc)["agreement_rows"]  # the coefficients of identical answers: out
    assert "MASI distance" in alpha["meaning"]
    assert "not shown" in alpha["meaning"]
    assert alpha["n"] == f"{alpha_of(engine)['n']:,} pairable values"


def test_demo_multilabel_campaign_within_0005_of_nltk(engine: Engine, tmp_path: Path) -> None:
    from nltk.metrics.agreement import AnnotationTask
    from nltk.metrics.distance import masi_distance

    from monitor.actions.demo import generate
    from monitor.ingest.api import create_campaign, ingest_file

    multi = generate(tmp_path, seed=0)[2]
    create_campaign(engine, multi.spec)
    ingest_file(engine, multi.judgments, multi.name)
    recompute(engine, SETTINGS, campaign=multi.name)
    with multi.judgments.open(newline="") as fh:
        data = [
            (r["worker"], r["item"], frozenset(r["value"].split("|"))) for r in csv.DictReader(fh)
        ]
    theirs = AnnotationTask(data, distance=masi_distance).alpha()
    ours = alpha_of(engine, multi.name)["value"]
    assert abs(ours - theirs) < 0.005


def test_an_incremental_run_gives_the_full_runs_alpha(engine: Engine) -> None:
    case = json.loads(GOLDEN.read_text(encoding="utf-8"))
    half = len(case["judgments"]) // 2
    store_case(engine, case, upto=half)
    recompute(engine, SETTINGS)
    first = alpha_of(engine)["value"]
    store_case(engine, case, start=half)
    [inc] = recompute(engine, SETTINGS)
    assert inc.status == "ok"
    assert inc.n_new == len(case["judgments"]) - half
    incremental = alpha_of(engine)
    assert incremental["value"] != first
    assert incremental["value"] == pytest.approx(
        case["expected"]["krippendorff_alpha_masi"], abs=1e-9
    )
    recompute(engine, SETTINGS, full=True)
    assert alpha_of(engine) == incremental


def test_a_worker_judging_an_item_again_counts_once(engine: Engine) -> None:
    """The latest judgment of each worker and item counts, as for the other alphas."""
    from tests.metrics.test_set_alpha import counts_of

    case = json.loads(GOLDEN.read_text(encoding="utf-8"))
    rows = case["judgments"]
    k = next(k for k, r in enumerate(rows) if r["item"] == "i01")  # judged by several workers
    again = {**rows[k], "value": ["f"] if rows[k]["value"] != ["f"] else ["a"]}
    store_case(engine, {**case, "judgments": [*rows, again]})
    recompute(engine, SETTINGS)
    latest = [*rows[:k], again, *rows[k + 1 :]]
    expected = set_alpha(counts_of(latest, case["scale"]["options"])).alpha
    assert expected != pytest.approx(case["expected"]["krippendorff_alpha_masi"], abs=1e-6)
    assert alpha_of(engine)["value"] == pytest.approx(expected, abs=1e-12)
