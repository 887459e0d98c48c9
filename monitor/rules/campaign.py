"""Campaign rules: warnings about a campaign as a whole, pure functions of a run's values and
the thresholds.

- ``kappa_paradox``: percent agreement at least ``paradox_agreement`` while alpha is below
  ``paradox_alpha`` (the answers concentrate on one value, so chance agreement is high).
- ``phi_alpha_disagree``: Phi and alpha differ by at least ``phi_alpha_gap``.
- ``model_not_converged``: the reliability model stopped at ``model_max_iter`` before
  converging; its ``low_quality`` and ``ambiguous`` flags are withheld (gold flags stay: they do
  not depend on it).
- ``model_fallback``: the rating model predicts held-out judgments no better than the plain
  mean (:mod:`monitor.metrics.ratings.model_check`): the label exports give the plain mean.
"""

from __future__ import annotations

from monitor.core.results import FlagRecord, Value
from monitor.core.thresholds import Thresholds
from monitor.rules.values import RunValues
from monitor.rules.worker import MODEL_NAMES


def kappa_paradox(run: RunValues, t: Thresholds) -> list[FlagRecord]:
    pa, alpha = run.number("percent_agreement"), run.number("krippendorff_alpha")
    if run.campaign_name is None or pa is None or alpha is None:
        return []
    if pa < t.paradox_agreement or alpha >= t.paradox_alpha:
        return []
    return [
        FlagRecord(
            "campaign",
            run.campaign_name,
            "kappa_paradox",
            alpha,
            t.paradox_alpha,
            {
                "message": f"percent agreement is high ({pa:.2f}) but alpha is low "
                f"({alpha:.2f}): the answers are concentrated on one value, so agreement by "
                "chance is high; look at Phi and at the answer distribution",
                "percent_agreement": pa,
                "krippendorff_alpha": alpha,
            },
        )
    ]


def phi_alpha_disagree(run: RunValues, t: Thresholds) -> list[FlagRecord]:
    phi = run.campaign("phi")
    phi_mean, alpha = run.number("phi"), run.number("krippendorff_alpha")
    if run.campaign_name is None or phi is None or phi_mean is None or alpha is None:
        return []
    if abs(phi_mean - alpha) < t.phi_alpha_gap:
        return []
    return [
        FlagRecord(
            "campaign",
            run.campaign_name,
            "phi_alpha_disagree",
            phi_mean - alpha,
            t.phi_alpha_gap,
            {
                "message": f"Phi ({phi_mean:.2f}{_hpd(phi)}) and alpha ({alpha:.2f}) disagree: "
                "alpha depends on how the answers are spread over the scale, Phi does not",
                "phi": phi_mean,
                "krippendorff_alpha": alpha,
            },
        )
    ]


def _hpd(v: Value) -> str:
    return f", HPD {v.low:.2f} to {v.high:.2f}" if v.low is not None and v.high is not None else ""


def model_not_converged(run: RunValues, t: Thresholds) -> list[FlagRecord]:
    """The model's low_quality and ambiguous flags are withheld: said in the run and report."""
    converged, detail = run.model()
    it = run.campaign("model_iterations")
    if run.campaign_name is None or it is None or not detail or converged:
        return []
    model = MODEL_NAMES.get(str(detail.get("model")), "reliability model")
    return [
        FlagRecord(
            "campaign",
            run.campaign_name,
            "model_not_converged",
            it.value,
            float(t.model_max_iter),
            {
                "message": f"the {model} did not converge in {int(it.value or 0)} iterations: "
                "its low_quality and ambiguous flags are withheld (raise model_max_iter, or look "
                "for workers or items that make the model unstable)",
                "model": detail.get("model"),
                "iterations": it.value,
            },
        )
    ]


def model_fallback(run: RunValues, t: Thresholds) -> list[FlagRecord]:
    """The rating model lost the held-out check: said in the run and the report."""
    v = run.campaign("model_fallback")
    if run.campaign_name is None or v is None or not v.value:
        return []
    detail = dict(v.detail or {})
    return [
        FlagRecord(
            "campaign",
            run.campaign_name,
            "model_fallback",
            v.value,
            0.0,
            {
                "message": str(detail.get("message") or FALLBACK_MESSAGE),
                "model_mse": detail.get("model_mse"),
                "plain_mse": detail.get("plain_mse"),
                "diff_se": detail.get("diff_se"),
            },
        )
    ]


FALLBACK_MESSAGE = (
    "the rating model predicts held-out judgments no better than the plain mean beyond its "
    "uncertainty: the label exports give the plain mean"
)
