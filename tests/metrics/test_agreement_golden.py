"""Agreement measures against the shared golden cases (values are read, never copied)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from monitor.metrics.agreement.kappa import (
    align_pair,
    cohen_kappa,
    fleiss_kappa,
    pairwise_agreement,
    percent_agreement,
    scott_pi,
)
from monitor.metrics.agreement.krippendorff import LEVELS, ValueCounts, krippendorff_alpha
from monitor.metrics.common import encode
from tests.golden import load, params


class Coded:
    """A golden case as integer-coded arrays; codes are positions on the campaign's scale."""

    def __init__(self, path: Path) -> None:
        case = load(path)
        self.case = case
        self.expected: dict[str, Any] = case["expected"]
        self.tol: float = case["tolerance"]
        js = case["judgments"]
        self.items, self.item_names = encode([j["item"] for j in js])
        self.workers, self.worker_names = encode([j["worker"] for j in js])
        scale = case["scale"]
        values = [j["value"] for j in js]
        if case["kind"] == "label":
            position = {c: k for k, c in enumerate(scale["categories"])}
            self.codes = np.array([position[v] for v in values], dtype=np.int64)
            self.domain = np.arange(len(scale["categories"]), dtype=np.float64)
        else:
            x = np.asarray(values, dtype=np.float64)
            if np.all(x == np.round(x)):
                self.domain = np.arange(scale["min"], scale["max"] + 1, dtype=np.float64)
            else:
                self.domain = np.unique(np.concatenate([x, [scale["min"], scale["max"]]]))
            self.codes = np.searchsorted(self.domain, x).astype(np.int64)
        self.vc = ValueCounts.from_judgments(self.items, self.codes, value_domain=self.domain)

    def worker(self, name: str) -> int:
        return int(np.flatnonzero(self.worker_names == name)[0])


def close(actual: float | None, expected: float | None, tol: float) -> None:
    if expected is None:
        assert actual is None
    else:
        assert actual is not None
        assert abs(actual - expected) <= tol, (actual, expected)


@pytest.mark.parametrize("path", params("*.json", key="percent_agreement"))
def test_percent_agreement(path: Path) -> None:
    g = Coded(path)
    e = g.expected
    r = percent_agreement(g.vc)
    close(r.mean, e["percent_agreement"], g.tol)
    close(r.pooled, e["percent_agreement_pooled"], g.tol)
    assert r.n_items_pairable == e["n_items_pairable"]
    assert r.n_pairs == e["n_pairs"]
    per_item = {str(name): r.per_item[k] for k, name in enumerate(g.item_names) if r.pairable[k]}
    assert set(per_item) == set(e["percent_agreement_per_item"])
    for name, value in e["percent_agreement_per_item"].items():
        close(float(per_item[name]), value, g.tol)


@pytest.mark.parametrize("path", params("*.json", key="krippendorff_alpha_nominal"))
def test_krippendorff_alpha(path: Path) -> None:
    g = Coded(path)
    e = g.expected
    for level in LEVELS:
        key = f"krippendorff_alpha_{level}"
        if key in e:
            close(krippendorff_alpha(g.vc, level).alpha, e[key], g.tol)
    nominal = krippendorff_alpha(g.vc, "nominal")
    close(nominal.observed_disagreement, e["krippendorff_D_o_nominal"], g.tol)
    close(nominal.expected_disagreement, e["krippendorff_D_e_nominal"], g.tol)
    close(nominal.observed_agreement, e["krippendorff_observed_agreement_nominal"], g.tol)


@pytest.mark.parametrize("path", params("*.json", key="percent_agreement"))
def test_fleiss_kappa(path: Path) -> None:
    g = Coded(path)
    e = g.expected
    r = fleiss_kappa(g.vc)
    if "fleiss_kappa" not in e:
        assert r.kappa is None
        assert r.reason
        assert "same number" in r.reason
        return
    close(r.kappa, e["fleiss_kappa"], g.tol)
    close(r.p_bar, e["fleiss_P_bar"], g.tol)
    close(r.p_e, e["fleiss_P_e"], g.tol)
    assert r.raters_per_item == e["fleiss_raters_per_item"]
    assert len(e["fleiss_categories"]) == g.vc.n_values


@pytest.mark.parametrize("path", params("*.json", key="cohen_kappa"))
def test_two_rater_campaign(path: Path) -> None:
    g = Coded(path)
    e = g.expected
    assert g.worker_names.size == 2
    common, a, b = align_pair(g.items, g.workers, g.codes, 0, 1)
    v = g.vc.n_values
    assert common.size == e["two_rater_items"]
    for key, weights in (("cohen_kappa", None), ("cohen_kappa_linear", "linear"),
                         ("cohen_kappa_quadratic", "quadratic")):  # fmt: skip
        if key in e:
            close(cohen_kappa(a, b, v, weights).kappa, e[key], g.tol)
    close(scott_pi(a, b, v).kappa, e["scott_pi"], g.tol)
    if "cohen_p_o" in e:
        r = cohen_kappa(a, b, v)
        close(r.p_o, e["cohen_p_o"], g.tol)
        close(r.p_e, e["cohen_p_e"], g.tol)


@pytest.mark.parametrize("path", params("*.json", key="pairs"))
def test_worker_pairs(path: Path) -> None:
    g = Coded(path)
    pw = pairwise_agreement(g.items, g.workers, g.codes, value_domain=g.domain, min_overlap=1)
    for expected in g.expected["pairs"]:
        got = pw.pair(*(g.worker(name) for name in expected["workers"]))
        assert got is not None
        for key, value in expected.items():
            if key == "workers":
                continue
            if key == "n_items":
                assert got["n_items"] == value
            else:
                close(got[key], value, g.tol)


@pytest.mark.parametrize("path", params("*.json", key="pairs"))
def test_worker_pairs_agree_with_two_rater_functions(path: Path) -> None:
    g = Coded(path)
    pw = pairwise_agreement(g.items, g.workers, g.codes, value_domain=g.domain, min_overlap=1)
    for p in range(min(pw.n_pairs, 5)):
        a, b = int(pw.worker_a[p]), int(pw.worker_b[p])
        _, ca, cb = align_pair(g.items, g.workers, g.codes, a, b)
        got = pw.pair(a, b)
        assert got is not None
        close(
            got["cohen_kappa_quadratic"],
            cohen_kappa(ca, cb, g.vc.n_values, "quadratic").kappa,
            1e-9,
        )
        close(got["scott_pi"], scott_pi(ca, cb, g.vc.n_values).kappa, 1e-9)
        sub = ValueCounts.from_judgments(
            np.r_[np.arange(ca.size), np.arange(cb.size)], np.r_[ca, cb], value_domain=g.domain
        )
        for level in LEVELS:
            close(got[f"krippendorff_alpha_{level}"], krippendorff_alpha(sub, level).alpha, 1e-9)


def test_paper_values_round_as_published() -> None:
    """The published (rounded) values of the seed cases, as the papers print them."""
    for path in params("seed_*.json", key="krippendorff_alpha_nominal"):
        g = Coded(path.values[0])
        for key, value in g.case.get("paper_reported", {}).items():
            if key.startswith("krippendorff_alpha_") and isinstance(value, float):
                level = key.removeprefix("krippendorff_alpha_")
                got = krippendorff_alpha(g.vc, level).alpha
                assert got is not None
                assert abs(got - value) <= 0.0051 or "MISMATCH" in g.case.get("notes", "")
