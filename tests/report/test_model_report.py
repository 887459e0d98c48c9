"""The reliability model in the JSON document, the HTML report and ``monitor workers``: model and
gold accuracy with intervals, history on the platform, flag evidence in words, the model's
answer for ambiguous items, and a warning when the model did not converge."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import Engine

from monitor.cli import main
from monitor.pipeline import recompute
from monitor.report.document import build_document
from monitor.report.render import report_text
from monitor.store.campaigns import CampaignSpec, create_campaign
from monitor.store.engine import session_factory, transaction
from tests.pipeline.cases import store_case
from tests.pipeline.test_quality import CATS, SETTINGS, label_case, rating_case, set_gold
from tests.report.pages import tables
from tests.report.test_html import parse


def two_campaigns(engine: Engine) -> None:
    """``before`` and ``now`` on one platform, the same workers; gold in ``now``."""
    case, truth = label_case(n_items=120, seed=11)
    with transaction(engine) as s:
        for name in ("before", "now"):
            create_campaign(s, CampaignSpec(name, "label", categories=CATS, platform="toloka"))
    store_case(engine, case, name="before")
    recompute(engine, SETTINGS, campaign="before")
    store_case(engine, case, name="now")
    set_gold(engine, {f"i{i}": truth[i] for i in range(10)})
    recompute(engine, SETTINGS, campaign="now")


def document(engine: Engine, name: str) -> dict:
    with session_factory(engine)() as s:
        return build_document(s, name)


def test_document_has_the_model_gold_and_history(engine: Engine) -> None:
    two_campaigns(engine)
    doc = document(engine, "now")
    assert doc["campaign"]["platform"] == "toloka"
    assert doc["model"]["name"] == "dawid_skene"
    assert doc["model"]["converged"] is True
    by = {w["worker"]: w for w in doc["workers"]}
    h0, rnd = by["h0"], by["rnd"]
    lo, hi = h0["model_accuracy_interval"]
    assert lo < h0["model_accuracy"] < hi
    assert h0["gold_n"] == 10
    assert h0["gold_accuracy"] > 0.5
    assert h0["wqs"] is not None  # CrowdTruth beside the model
    [hist] = h0["history"]
    assert hist["campaign"] == "before"
    assert hist["model_accuracy"]["value"] > 0.7
    assert "low_quality" in rnd["flags"]
    [ev] = [e for e in rnd["evidence"] if e["rule"] == "low_quality"]
    assert "accuracy" in ev["message"]
    assert "floor" in ev["message"]
    item = next(i for i in doc["items"] if i["item"] == "i0")
    assert item["model_label"] in CATS
    assert 0 < item["posterior"] <= 1
    assert item["posteriors"][item["model_label"]] == pytest.approx(item["posterior"])


def test_html_worker_table_shows_model_gold_history(engine: Engine) -> None:
    two_campaigns(engine)
    with session_factory(engine)() as s:
        from monitor.report.render import render_html

        html = render_html(build_document(s, "now"))
    page = parse(html)
    workers = tables(html)["workers-table"]
    # the catalog's titles, the quality estimates (with an interval) first
    assert workers.headers[3:5] == ["Model accuracy", "Gold accuracy"]
    assert "History (platform)" in workers.headers
    doc = document(engine, "now")
    by = {w["worker"]: w for w in doc["workers"]}
    for row, attrs in zip(workers.rows, workers.attrs, strict=True):
        w = by[attrs["data-subject"]]
        lo, hi = w["model_accuracy_interval"]
        assert row[3] == f"{w['model_accuracy']:.2f} [{lo:.2f}, {hi:.2f}]"
    text = " ".join(" ".join(page.text).split())
    assert "accuracy 0.8" in text
    assert "in 1 other campaign" in text  # history of an honest worker
    card = " ".join(" ".join(page.cards["rnd"]).split())
    assert "low_quality" in card
    assert "what a random or constant answerer reaches" in card
    assert len(workers.rows) == len(doc["workers"])


def test_report_warns_when_the_model_did_not_converge(engine: Engine) -> None:
    case, _ = label_case(n_items=60)
    store_case(engine, case)
    recompute(engine, SETTINGS.replace(model_max_iter=1))
    doc = document(engine, "golden")
    assert doc["model"]["converged"] is False
    [warn] = [w for w in doc["warnings"] if w["rule"] == "model_not_converged"]
    assert "withheld" in warn["message"]
    page = parse(report_text(engine, "golden"))
    text = " ".join(" ".join(page.text).split())
    assert "The reliability model did not converge: its flags are withheld" in text


def test_ambiguous_ratings_show_spread_against_noise(engine: Engine) -> None:
    case = rating_case(n_items=60)
    case["judgments"] += [  # one item the honest raters split on: half 5, half 95
        {"worker": f"h{w}", "item": "split", "value": 5.0 if w % 2 else 95.0} for w in range(6)
    ]
    store_case(engine, case)
    recompute(engine, SETTINGS)
    doc = document(engine, "golden")
    split = next(i for i in doc["items"] if i["item"] == "split")
    assert "ambiguous" in split["flags"]
    assert split["spread"] > split["expected_spread"]
    assert split["spread_p"] < 0.01
    assert split["model_mean_interval"][0] < split["model_mean"] < split["model_mean_interval"][1]
    check = doc["model"]["check"]  # the held-out check behind the exports' choice
    assert doc["model"]["fallback"] == (check["model_mse"] >= check["plain_mse"] * (1 - 1e-6))
    assert check["diff_se"] > 0
    assert check["n"] > 0
    assert check["folds"] == 5
    html = report_text(engine, "golden")
    assert f"mean squared error {check['model_mse']:.4g} against {check['plain_mse']:.4g}" in html
    ambiguous = tables(html)["ambiguous-table"]
    row = ambiguous.rows[[a["data-subject"] for a in ambiguous.attrs].index("split")]
    why = row[ambiguous.headers.index("Why it is ambiguous")]
    assert why.startswith(
        f"the ratings spread {split['spread']:.2f} where the workers' noise explains "
        f"{split['expected_spread']:.2f}"
    )


def test_cli_workers_lists_model_gold_and_history(db_url: str, engine: Engine, capsys) -> None:  # noqa: ANN001
    two_campaigns(engine)
    assert main(["workers", "--campaign", "now", "--db", db_url]) == 0
    out = capsys.readouterr().out
    header, *rows = out.splitlines()
    assert header.split()[:12] == [
        "worker", "status", "decision", "weight", "judgments", "model", "accuracy", "gold", "wqs",
        "history", "flags", "reason",
    ]  # fmt: skip
    h0 = next(r for r in rows if r.startswith("h0 "))
    assert "(10)" in h0
    assert "other campaign" in h0
    assert main(["workers", "--campaign", "now", "--db", db_url, "--json"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert {"model_accuracy", "gold_accuracy", "history", "decision", "decision_reason"} <= set(
        lines[0]
    )


def test_the_model_line_says_when_the_exports_fall_back_to_the_mean() -> None:
    from monitor.report.agreement import model_line

    doc = {"model": {"name": "rating_model", "measure": "noise_sd", "converged": True,
                     "fallback": True},
           "workers": [{"model_noise_sd": 3.0}], "campaign": {"n_items": 10}}  # fmt: skip
    line = model_line(doc, 1)
    assert line is not None
    assert "no better than the plain mean" in line
    doc["model"]["fallback"] = False
    assert "plain mean" not in (model_line(doc, 1) or "")
    # with the check's figures the line says which aggregate the exports give, and why
    doc["model"]["check"] = {"model_mse": 480.9, "plain_mse": 497.2, "diff_se": 6.09, "n": 1000,
                             "folds": 5}  # fmt: skip
    line = model_line(doc, 1) or ""
    assert (
        "better than the plain mean (mean squared error 480.9 against 497.2, give or take 6.1)"
        in line
    )
    assert line.endswith("so the exports give them.")
    doc["model"].update(fallback=True, check={**doc["model"]["check"], "model_mse": 500.0})
    line = model_line(doc, 1) or ""
    assert "no better than the plain mean (mean squared error 500 against 497.2" in line
