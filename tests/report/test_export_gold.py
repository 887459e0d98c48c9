"""``verdict.export`` measured on gold: where a campaign has gold on at least
``export_gold_min_items`` judged items, the figure is the export's own on that gold (each gold
item answered by the model refitted with its gold withheld), with the crowd-only expectation
beside it; with less gold the crowd-only figure, saying why."""

from __future__ import annotations

import numpy as np
from sqlalchemy import Engine

from monitor.pipeline import recompute
from monitor.report.render import render_html
from tests.pipeline.cases import store_case
from tests.pipeline.test_quality import CATS, SETTINGS, rating_case, set_gold
from tests.report.test_html import parse
from tests.report.test_model_report import document


def shared_error_case(n_items: int = 300, seed: int = 5) -> tuple[dict, list[str]]:
    """Eight workers right 90% of the time on most items, but on a fifth of the items (hard
    ones) most of them give the same wrong answer: an error the workers share, which no
    expectation from the answers alone can see."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, n_items)
    hard = rng.random(n_items) < 0.2
    decoy = (truth + 1) % 3
    rows = []
    for w in range(8):
        right = rng.random(n_items) < np.where(hard, 0.15, 0.9)
        other = np.where(hard, decoy, (truth + rng.integers(1, 3, n_items)) % 3)
        answer = np.where(right, truth, other)
        rows += [{"worker": f"w{w}", "item": f"i{i}", "value": CATS[a]}
                 for i, a in enumerate(answer)]  # fmt: skip
    case = {"kind": "label", "scale": {"categories": list(CATS)}, "judgments": rows}
    return case, [CATS[t] for t in truth]


def test_labels_with_gold_are_measured_on_it_and_keep_the_crowd_figure(engine: Engine) -> None:
    case, truth = shared_error_case()
    store_case(engine, case)
    gold = {f"i{i}": truth[i] for i in range(0, 300, 3)}  # 100 gold items
    set_gold(engine, gold)
    recompute(engine, SETTINGS)
    export = document(engine, "golden")["verdict"]["export"]
    assert export["basis"] == "gold"
    assert export["measure"] == "accuracy"
    assert export["n"] == 100
    assert export["method"] == "model"
    crowd = export["crowd"]
    # the crowd cannot see the shared error: it expects more than the export is worth
    assert crowd["value"] > export["value"] + 0.1
    # the export's true accuracy on the items not given as gold lies in the gold interval
    from monitor.actions.labels import aggregate_labels
    from monitor.store.campaigns import get_campaign
    from monitor.store.engine import session_factory

    with session_factory(engine)() as s:
        rows = aggregate_labels(s, get_campaign(s, "golden"))
    rest = [r["value"] == truth[int(str(r["item"])[1:])] for r in rows if r["item"] not in gold]
    true = float(np.mean(rest))
    low, high = export["interval"]
    assert low <= true <= high
    assert abs(export["value"] - true) < 0.1
    assert export["text"].startswith("On 100 gold items, each answered with its own gold withheld")
    page = parse(render_html(document(engine, "golden")))
    [said] = [a for _, a in page.tags if a.get("id") == "verdict-export"]
    assert said.get("data-basis") == "gold"
    text = " ".join(" ".join(page.text).split())
    assert "measured on gold On 100 gold items" in text
    assert "each gold item answered by the model refitted without its gold" in text


def test_gold_on_fewer_items_than_the_setting_keeps_the_crowd_figure_and_says_why(
    engine: Engine,
) -> None:
    case, truth = shared_error_case()
    store_case(engine, case)
    set_gold(engine, {f"i{i}": truth[i] for i in range(10)})
    recompute(engine, SETTINGS)
    export = document(engine, "golden")["verdict"]["export"]
    assert export["basis"] == "crowd"
    assert "crowd" not in export
    assert "fewer than export_gold_min_items (30)" in export["basis_reason"]
    page = parse(render_html(document(engine, "golden")))
    [said] = [a for _, a in page.tags if a.get("id") == "verdict-export"]
    assert said.get("data-basis") == "crowd"
    text = " ".join(" ".join(page.text).split())
    assert "expected from the crowd" in text
    assert "not measured on gold: gold on 10 judged items, fewer than" in text


def test_without_gold_the_figure_is_the_crowds(engine: Engine) -> None:
    case, _ = shared_error_case()
    store_case(engine, case)
    recompute(engine, SETTINGS)
    export = document(engine, "golden")["verdict"]["export"]
    assert export["basis"] == "crowd"
    assert "basis_reason" not in export
    assert "crowd" not in export


def test_ratings_with_gold_are_measured_on_it(engine: Engine) -> None:
    case = rating_case(n_items=120, seed=4)
    store_case(engine, case)
    truth = {}
    for r in case["judgments"]:
        if r["worker"] == "h0":
            truth[r["item"]] = r["value"]
    set_gold(engine, {f"i{i}": str(truth[f"i{i}"]) for i in range(40)})
    recompute(engine, SETTINGS)
    export = document(engine, "golden")["verdict"]["export"]
    assert export["basis"] == "gold"
    assert export["measure"] == "mae"
    assert export["n"] == 40
    assert export["method"] in ("model", "mean")
    assert export["method_reason"]
    low, high = export["interval"]
    assert low <= export["value"] <= high
