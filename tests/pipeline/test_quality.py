"""Gold accuracy, the reliability model and their flags through the pipeline, on both backends:
values stored, spammers and constant answerers flagged and honest workers not, gold flags only
on enough evidence, a model that does not converge withholds its flags and says so, history
across campaigns of one platform."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from sqlalchemy import Engine, update

from monitor.core.settings import Settings
from monitor.pipeline import recompute
from monitor.store.campaigns import CampaignSpec, create_campaign, get_campaign
from monitor.store.engine import transaction
from monitor.store.history import worker_history
from monitor.store.models import Campaign, Item
from monitor.store.runs import latest_run, run_flags, run_values
from tests.pipeline.cases import store_case

SETTINGS = Settings(bootstrap_samples=0, phi="off")
CATS = ("a", "b", "c")


def label_case(
    n_items: int = 150, seed: int = 1, honest: int = 6, bad: bool = True
) -> tuple[dict[str, Any], list[str]]:
    """Honest workers (accuracy 0.85), a random answerer ``rnd`` and a constant ``const``."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, n_items)
    rows = []
    for w in range(honest):
        right = rng.random(n_items) < 0.85
        answer = np.where(right, truth, (truth + rng.integers(1, 3, n_items)) % 3)
        rows += [{"worker": f"h{w}", "item": f"i{i}", "value": CATS[a]} for i, a in
                 enumerate(answer)]  # fmt: skip
    if bad:
        rows += [{"worker": "rnd", "item": f"i{i}", "value": CATS[a]}
                 for i, a in enumerate(rng.integers(0, 3, n_items))]  # fmt: skip
        rows += [{"worker": "const", "item": f"i{i}", "value": "a"} for i in range(n_items)]
    case = {"kind": "label", "scale": {"categories": list(CATS)}, "judgments": rows}
    return case, [CATS[t] for t in truth]


def rating_case(n_items: int = 120, seed: int = 2) -> dict[str, Any]:
    """0..100 ratings: honest raters (noise sd 6), a random rater ``rnd``, a constant ``const``."""
    rng = np.random.default_rng(seed)
    truth = rng.uniform(10, 90, n_items)
    rows = []
    for w in range(6):
        x = np.clip(np.round(truth + rng.normal(0, 6, n_items)), 0, 100)
        rows += [{"worker": f"h{w}", "item": f"i{i}", "value": float(v)} for i, v in enumerate(x)]
    rows += [{"worker": "rnd", "item": f"i{i}", "value": float(v)}
             for i, v in enumerate(rng.integers(0, 101, n_items))]  # fmt: skip
    rows += [{"worker": "const", "item": f"i{i}", "value": 50.0} for i in range(n_items)]
    return {"kind": "rating", "scale": {"min": 0, "max": 100}, "judgments": rows}


def latest(engine: Engine, name: str = "golden") -> tuple[dict, list]:
    with transaction(engine) as s:
        run = latest_run(s, get_campaign(s, name).id)
        assert run is not None
        values = {(v.scope, v.subject, v.metric): v for v in run_values(s, run.id)}
        return values, run_flags(s, run.id)


def flagged(flags: list, rule: str, scope: str = "worker") -> set[str]:
    return {f.subject for f in flags if f.rule == rule and f.scope == scope}


def test_labels_store_the_model_and_flag_the_bad_workers(engine: Engine) -> None:
    case, _ = label_case()
    store_case(engine, case)
    [outcome] = recompute(engine, SETTINGS)
    assert outcome.status == "ok"
    values, flags = latest(engine)
    it = values[("campaign", "golden", "model_iterations")]
    assert it.detail["model"] == "dawid_skene"
    assert it.detail["converged"] is True
    chance = values[("campaign", "golden", "model_chance")]
    assert 0.3 <= chance.value <= 0.5
    assert chance.detail["measure"] == "accuracy"
    acc = values[("worker", "h0", "model_accuracy")]
    assert acc.n == 150
    assert acc.low < acc.value < acc.high
    assert acc.value > 0.7
    assert values[("worker", "h0", "model_weight")].value > 0.5
    assert values[("worker", "const", "model_weight")].value < 0.2
    label = values[("item", "i0", "model_label")]
    assert label.n == 8
    assert 0 < label.value <= 1
    assert set(label.detail["posterior"]) <= set(CATS)
    assert max(label.detail["posterior"].values()) == pytest.approx(label.value)
    # CrowdTruth stays beside the model
    assert ("worker", "h0", "wqs") in values
    assert flagged(flags, "low_quality") == {"rnd", "const"}
    [f] = [f for f in flags if f.rule == "low_quality" and f.subject == "rnd"]
    ev = f.evidence
    assert ev["n"] == 150
    assert ev["interval"][1] < ev["floor"] == f.threshold
    assert ev["chance"] == pytest.approx(chance.value)
    assert "accuracy" in ev["message"]
    assert "floor" in ev["message"]


def test_honest_workers_alone_are_not_flagged(engine: Engine) -> None:
    case, _ = label_case(bad=False, seed=5)
    store_case(engine, case)
    recompute(engine, SETTINGS)
    _, flags = latest(engine)
    assert not [f for f in flags if f.rule in ("low_quality", "gold_accuracy")]


def test_ratings_store_the_model_and_flag_the_bad_raters(engine: Engine) -> None:
    store_case(engine, rating_case())
    [outcome] = recompute(engine, SETTINGS)
    assert outcome.status == "ok"
    values, flags = latest(engine)
    assert values[("campaign", "golden", "model_iterations")].detail["model"] == "rating_model"
    sd = values[("worker", "h1", "model_noise_sd")]
    assert sd.low < sd.value < sd.high
    assert 3 < sd.value < 10
    assert sd.n == 120
    assert ("worker", "h1", "model_bias") in values
    mean = values[("item", "i3", "model_mean")]
    assert mean.low < mean.value < mean.high
    assert mean.n == 8
    assert ("item", "i3", "model_spread") in values
    assert ("item", "i3", "model_sd") in values
    assert flagged(flags, "low_quality") == {"rnd", "const"}
    assert not flagged(flags, "biased") & {f"h{w}" for w in range(6)}


def set_gold(engine: Engine, gold: dict[str, str]) -> None:
    with transaction(engine) as s:
        for item, g in gold.items():
            s.execute(update(Item).where(Item.external_id == item).values(gold=g))


def test_gold_flags_need_evidence(engine: Engine) -> None:
    """A worker with 3 wrong gold answers is not condemned; one with 30 is."""
    case, truth = label_case(n_items=60, bad=False, seed=3)
    wrong = {t: CATS[(CATS.index(t) + 1) % 3] for t in CATS}
    for w, n in (("few", 3), ("many", 30)):
        case["judgments"] += [
            {"worker": w, "item": f"i{i}", "value": wrong[truth[i]]} for i in range(n)
        ]
        case["judgments"] += [  # honest elsewhere: the model alone would not flag them
            {"worker": w, "item": f"i{i}", "value": truth[i]} for i in range(40, 60)
        ]
    store_case(engine, case)
    set_gold(engine, {f"i{i}": truth[i] for i in range(40)})
    recompute(engine, SETTINGS)
    values, flags = latest(engine)
    few, many = (
        values[("worker", "few", "gold_accuracy")],
        values[("worker", "many", "gold_accuracy")],
    )
    assert (few.n, few.value, many.n, many.value) == (3, 0.0, 30, 0.0)
    assert few.high > many.high
    assert values[("worker", "h0", "gold_accuracy")].n == 40
    assert values[("campaign", "golden", "gold_chance")].n == 40
    assert flagged(flags, "gold_accuracy") == {"many"}
    [f] = [f for f in flags if f.rule == "gold_accuracy"]
    assert f.evidence["n"] == 30
    assert "gold" in f.evidence["message"]


def test_gold_mae_for_ratings(engine: Engine) -> None:
    store_case(engine, rating_case(n_items=40))
    set_gold(engine, {"i0": "50", "i1": "20"})
    recompute(engine, SETTINGS)
    values, _ = latest(engine)
    assert values[("worker", "const", "gold_mae")].value == pytest.approx(15.0)
    assert values[("worker", "const", "gold_accuracy")].value == pytest.approx(0.85)


def test_export_keeps_a_model_that_stopped_before_converging(engine: Engine) -> None:
    """A model stopped at model_max_iter still gives the export's answers (EM climbs from the
    majority vote), and the method says it did not converge."""
    import csv
    import io

    from monitor.actions.export import export

    case, truth = label_case(n_items=90, seed=9)
    store_case(engine, case)
    recompute(engine, SETTINGS.replace(model_max_iter=1))
    values, _ = latest(engine)
    assert values[("campaign", "golden", "model_iterations")].detail["converged"] is False
    with transaction(engine) as s:
        rows = list(csv.DictReader(io.StringIO(export(s, "labels", "golden", "csv"))))
    assert {r["method"] for r in rows} == {"model (not converged)"}
    assert len(rows) == 90
    right = sum(r["value"] == truth[int(r["item"][1:])] for r in rows)
    assert right / len(rows) > 0.95


def test_a_model_that_does_not_converge_withholds_its_flags(engine: Engine) -> None:
    case, _ = label_case()
    store_case(engine, case)
    [outcome] = recompute(engine, SETTINGS.replace(model_max_iter=1))
    assert outcome.flag_counts.get("model_not_converged") == 1
    assert "model_not_converged" in outcome.line()
    values, flags = latest(engine)
    assert values[("campaign", "golden", "model_iterations")].detail["converged"] is False
    assert not flagged(flags, "low_quality")
    assert not flagged(flags, "ambiguous", "item")
    [warn] = [f for f in flags if f.rule == "model_not_converged"]
    assert warn.scope == "campaign"
    assert "withheld" in warn.evidence["message"]


def test_multilabel_model_is_stored(engine: Engine) -> None:
    rng = np.random.default_rng(4)
    rows = []
    truth = [set(rng.choice(list("ABCD"), size=rng.integers(1, 3), replace=False)) for _ in
             range(40)]  # fmt: skip
    for w in range(5):
        for i, t in enumerate(truth):
            rows.append({"worker": f"w{w}", "item": f"i{i}", "value": sorted(t)})
    case = {"kind": "multilabel", "scale": {"options": list("ABCD")}, "judgments": rows}
    store_case(engine, case)
    recompute(engine, SETTINGS)
    values, _ = latest(engine)
    assert values[("campaign", "golden", "model_iterations")].detail["model"] == "multilabel_model"
    assert values[("worker", "w0", "model_accuracy")].value > 0.8
    post = values[("item", "i0", "model_label")].detail["posterior"]
    assert {k for k, p in post.items() if p > 0.5} == truth[0]


def test_history_across_campaigns_of_one_platform(engine: Engine) -> None:
    case, _ = label_case(n_items=60, seed=7)
    with transaction(engine) as s:
        for name, platform in (("first", "mturk"), ("second", "mturk"), ("other", "prolific")):
            create_campaign(s, CampaignSpec(name, "label", categories=CATS, platform=platform))
    for name in ("first", "other"):
        store_case(engine, case, name=name)
    recompute(engine, SETTINGS)
    store_case(engine, case, name="second", upto=len(case["judgments"]) // 3)
    recompute(engine, SETTINGS, campaign="second")
    with transaction(engine) as s:
        info = get_campaign(s, "second")
        history = worker_history(s, info, ["h0", "rnd", "nobody"])
        assert info.platform == "mturk"
        run = latest_run(s, info.id)
    assert set(history) == {"h0", "rnd"}
    [entry] = history["h0"]
    assert entry.campaign == "first"
    assert entry.kind == "label"
    assert entry.chance is not None
    assert entry.measures["model_accuracy"].value > 0.7
    assert history["rnd"][0].measures["model_accuracy"].value < 0.5
    assert run is not None
    assert run.parameters["model"]["history_priors"] > 0
    with transaction(engine) as s:  # a campaign of unknown platform has no history
        s.execute(update(Campaign).where(Campaign.name == "second").values(platform="none"))
    with transaction(engine) as s:
        assert worker_history(s, get_campaign(s, "second"), ["h0"]) == {}


def test_export_labels_and_weights_use_the_model(engine: Engine) -> None:
    import csv
    import io
    import json

    from monitor.actions.export import export
    from monitor.store.workers import append_decision

    case, truth = label_case(n_items=90, seed=9)
    store_case(engine, case)
    recompute(engine, SETTINGS)
    values, _ = latest(engine)
    with transaction(engine) as s:
        rows = list(csv.DictReader(io.StringIO(export(s, "labels", "golden", "csv"))))
    assert {r["method"] for r in rows} == {"model"}
    assert len(rows) == 90
    for r in rows:  # no one blocked: the stored posterior label and its posterior
        stored = values[("item", r["item"], "model_label")]
        post = stored.detail["posterior"]
        assert r["value"] == max(post, key=post.get)
        assert float(r["confidence"]) == pytest.approx(stored.value, abs=1e-6)
    right = sum(r["value"] == truth[int(r["item"][1:])] for r in rows)
    assert right / len(rows) > 0.95
    with transaction(engine) as s:
        weights = json.loads(export(s, "weights", "golden", "json"))["weights"]
    by = {w["worker"]: w for w in weights}
    assert by["h0"]["model_weight"] > 0.5
    assert by["const"]["model_weight"] < 0.2
    assert by["h0"]["effective_weight"] == pytest.approx(by["h0"]["model_weight"])
    with transaction(engine) as s:  # blocked workers leave the model's answers
        cid = get_campaign(s, "golden").id
        for w in ("h0", "h1", "h2", "h3"):
            append_decision(s, cid, w, "block", reason="test", actor="t")
        doc = json.loads(export(s, "labels", "golden", "json"))
    after = {r["item"]: r for r in doc["labels"]}
    assert {r["method"] for r in after.values()} == {"model"}
    changed = sum(after[r["item"]]["confidence"] != pytest.approx(float(r["confidence"]))
                  for r in rows)  # fmt: skip
    assert changed > 45


def test_export_ratings_use_the_posterior_mean(engine: Engine) -> None:
    import json

    from monitor.actions.export import export

    store_case(engine, rating_case(n_items=30))
    recompute(engine, SETTINGS)
    values, _ = latest(engine)
    with transaction(engine) as s:
        labels = json.loads(export(s, "labels", "golden", "json"))["labels"]
    for r in labels:
        mean = values[("item", r["item"], "model_mean")].value
        assert r["method"] == "model"
        assert r["value"] == pytest.approx(mean, abs=1e-3)
        assert r["confidence"] == pytest.approx(
            values[("item", r["item"], "model_sd")].value, abs=1e-3
        )


def test_platform_from_create_or_the_first_platform_ingest(engine: Engine, db_url: str) -> None:
    from pathlib import Path

    from monitor.cli import main
    from monitor.ingest.api import ingest_file

    data = Path(__file__).resolve().parents[1] / "data" / "platforms"
    mapping = {"value": "relevance", "item": "doc_id"}
    assert main(["campaign", "create", "r", "--kind", "rating", "--min", "1", "--max", "5",
                 "--db", db_url]) == 0  # fmt: skip
    assert main(["campaign", "create", "p", "--kind", "rating", "--min", "1", "--max", "5",
                 "--platform", "prolific", "--db", db_url]) == 0  # fmt: skip
    with transaction(engine) as s:
        assert get_campaign(s, "r").platform == "none"
    summary = ingest_file(engine, data / "mturk_batch.csv", "r", mapping=mapping)
    assert any("platform set to mturk" in n for n in summary.notes)
    ingest_file(engine, data / "mturk_batch.csv", "p", mapping=mapping)
    with transaction(engine) as s:  # the first platform ingest decides; a given one stays
        assert get_campaign(s, "r").platform == "mturk"
        assert get_campaign(s, "p").platform == "prolific"


def test_skewed_classes_judge_workers_on_their_own_chance(engine: Engine) -> None:
    """0.9 / 0.1 classes: honest workers (accuracy about 0.85, below the campaign's chance 0.9)
    are not flagged; a constant answerer is."""
    rng = np.random.default_rng(12)
    n = 2000  # a constant answerer sits at its own chance: it takes many judgments to show
    truth = (rng.random(n) < 0.1).astype(int)  # 1 = the rare class
    rows = []
    for w in range(6):
        flip = np.where(truth == 1, rng.random(n) > 0.8, rng.random(n) > 0.86)
        answer = np.where(flip, 1 - truth, truth)
        rows += [{"worker": f"h{w}", "item": f"i{i}", "value": "ab"[a]} for i, a in
                 enumerate(answer)]  # fmt: skip
    rows += [{"worker": "const", "item": f"i{i}", "value": "a"} for i in range(n)]
    store_case(engine, {"kind": "label", "scale": {"categories": ["a", "b"]}, "judgments": rows})
    recompute(engine, SETTINGS)
    values, flags = latest(engine)
    assert values[("campaign", "golden", "model_chance")].value > 0.8
    assert flagged(flags, "low_quality") == {"const"}


def test_a_rating_model_no_better_than_the_mean_falls_back_in_the_export(engine: Engine) -> None:
    """Every rater judged one item: the model has nothing to learn (its means are the plain
    means), so it is no better; the run says so and the export gives the plain mean."""
    import json

    from monitor.actions.export import export
    from monitor.actions.labels import FALLBACK_METHOD

    rng = np.random.default_rng(0)
    truth = rng.uniform(20, 80, 60)
    items = np.repeat(np.arange(60), 6)
    workers = np.arange(items.size)
    x = np.clip(truth[items] + rng.normal(0, 15, items.size), 0, 100).round()
    rows = [{"worker": f"w{w}", "item": f"i{i}", "value": float(v)}
            for i, w, v in zip(items, workers, x, strict=True)]  # fmt: skip
    store_case(engine, {"kind": "rating", "scale": {"min": 0, "max": 100}, "judgments": rows})
    recompute(engine, SETTINGS)
    values, flags = latest(engine)
    fb = values[("campaign", "golden", "model_fallback")]
    assert fb.value == 1.0
    assert fb.detail["model_mse"] >= fb.detail["plain_mse"] * (1 - 1e-6)
    [flag] = [f for f in flags if f.rule == "model_fallback"]
    assert "no better than the plain mean" in flag.evidence["message"]
    with transaction(engine) as s:
        labels = json.loads(export(s, "labels", "golden", "json"))["labels"]
    plain = np.bincount(items, weights=x, minlength=60) / 6
    assert {r["method"] for r in labels} == {FALLBACK_METHOD}
    assert len(labels) == 60
    for r in labels:
        assert r["value"] == pytest.approx(plain[int(r["item"][1:])])


def test_a_rating_model_better_than_the_mean_keeps_it(engine: Engine) -> None:
    store_case(engine, rating_case(n_items=60))
    recompute(engine, SETTINGS)
    values, flags = latest(engine)
    fb = values[("campaign", "golden", "model_fallback")]
    assert fb.value == 0.0
    assert fb.detail["model_mse"] < fb.detail["plain_mse"]
    assert fb.detail["diff_se"] > 0
    assert "standard error of the difference" in fb.detail["message"]
    assert not [f for f in flags if f.rule == "model_fallback"]
