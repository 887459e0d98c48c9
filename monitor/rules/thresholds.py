"""The thresholds the rules read: the section of the settings that decides what is flagged
(each documented in ``monitor.settings``, where it is configured)."""

from __future__ import annotations

from dataclasses import dataclass

from monitor.sections import Section


@dataclass(frozen=True)
class Thresholds(Section):
    """What the rules compare with (defaults: those of :class:`monitor.settings.Settings`)."""

    min_judgments: int = 10
    low_agreement_ratio: float = 0.7
    min_triplets: int = 5
    low_transitivity_kappa: float = 0.5
    position_bias_p: float = 0.001
    position_bias_share: float = 0.75
    constant_share: float = 0.95
    model_max_iter: int = 500
    quality_margin: float = 0.2
    skewed_prior: float = 0.7
    max_bias: float = 0.15
    gold_floor: float = 0.0
    min_gold_judgments: int = 5
    ambiguous_posterior: float = 0.8
    ambiguous_p: float = 0.01
    min_item_judgments: int = 3
    speeder_ratio: float = 0.25
    phi_alpha_gap: float = 0.4
    paradox_agreement: float = 0.8
    paradox_alpha: float = 0.2


@dataclass(frozen=True)
class DecisionOptions(Section):
    """What turns a worker's numbers into a decision (:mod:`monitor.rules.decision`)."""

    down_weight_below: float = 0.75
    down_weight: float = 0.5


@dataclass(frozen=True)
class PolicyOptions(Section):
    """What the automatic policy does with a worker flag."""

    policy: str = "suggest"
    down_weight: float = 0.5
