"""The campaign rules (warnings) at and around their thresholds."""

from __future__ import annotations

import pytest

from monitor.rules import campaign as rules
from tests.rules.build import CAMPAIGN, T, campaign, model, run


@pytest.mark.parametrize(("pa", "alpha", "flagged"), [
    (0.75, 0.249, True), (0.749, 0.249, False), (0.75, 0.25, False), (0.751, 0.251, False),
])  # fmt: skip
def test_kappa_paradox_at_its_thresholds(pa: float, alpha: float, flagged: bool) -> None:
    values = [campaign("percent_agreement", pa), campaign("krippendorff_alpha", alpha)]
    flags = rules.kappa_paradox(run("label", values), T)
    assert bool(flags) is flagged
    if flagged:
        [f] = flags
        assert (f.scope, f.subject, f.rule) == ("campaign", CAMPAIGN, "kappa_paradox")
        assert (f.value, f.threshold) == (alpha, 0.25)
        assert f.evidence["percent_agreement"] == pa


def test_kappa_paradox_needs_both_numbers() -> None:
    assert rules.kappa_paradox(run("label", campaign("percent_agreement", 0.9)), T) == []


@pytest.mark.parametrize(("phi", "alpha", "flagged"), [
    (0.75, 0.25, True), (0.25, 0.75, True), (0.75, 0.2501, False), (0.75, 0.2499, True),
])  # fmt: skip
def test_phi_alpha_disagree_at_the_gap(phi: float, alpha: float, flagged: bool) -> None:
    values = [campaign("phi", phi, phi - 0.125, phi + 0.125), campaign("krippendorff_alpha", alpha)]
    flags = rules.phi_alpha_disagree(run("rating", values), T)
    assert bool(flags) is flagged
    if flagged:
        [f] = flags
        assert f.value == phi - alpha
        assert f.threshold == 0.5
        assert "HPD" in f.evidence["message"]


def test_model_not_converged_says_so_with_its_iterations() -> None:
    [f] = rules.model_not_converged(run("label", model(0.5, converged=False, iterations=500)), T)
    assert (f.rule, f.value, f.threshold) == ("model_not_converged", 500, float(T.model_max_iter))
    assert f.evidence["model"] == "dawid_skene"
    assert rules.model_not_converged(run("label", model(0.5)), T) == []
    assert rules.model_not_converged(run("label", campaign("n_items", 3)), T) == []


@pytest.mark.parametrize(("value", "flagged"), [(1.0, True), (0.0, False), (None, False)])
def test_model_fallback_when_the_model_lost_the_check(value: float | None, flagged: bool) -> None:
    v = campaign("model_fallback", value, model_mse=1.25, plain_mse=1.0, diff_se=0.1)
    flags = rules.model_fallback(run("rating", v), T)
    assert bool(flags) is flagged
    if flagged:
        assert flags[0].evidence["model_mse"] == 1.25
        assert flags[0].evidence["message"] == rules.FALLBACK_MESSAGE
