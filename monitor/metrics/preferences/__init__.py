"""Pairwise preferences: input conventions and canonical pairs, position bias, transitivity
(intraobserver agreement), the reliability model of item scores and annotators (Crowd-BT), the
statistics behind the preference flags, and the planning of the next pairs to ask."""

from monitor.metrics.preferences.flags import ambiguous_pairs, chance_floor, kappa_interval
from monitor.metrics.preferences.intraobserver import implied_pairs, transitivity
from monitor.metrics.preferences.judgments import (
    canonical_pairs,
    parse_outcomes,
    position_bias,
    validate,
)
from monitor.metrics.preferences.model import preference_model
from monitor.metrics.preferences.planning import plan_pairs
from monitor.metrics.preferences.triangles import triangle_state

__all__ = [
    "ambiguous_pairs",
    "canonical_pairs",
    "chance_floor",
    "implied_pairs",
    "kappa_interval",
    "parse_outcomes",
    "plan_pairs",
    "position_bias",
    "preference_model",
    "transitivity",
    "triangle_state",
    "validate",
]
