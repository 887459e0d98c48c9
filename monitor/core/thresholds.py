"""The thresholds the rules read, and the options of the decisions and the policy: the
sections of the settings that decide what is flagged and what is done about it. Each setting
is declared here, once, with its default, what it accepts and what it does
(:func:`monitor.core.sections.setting`); :class:`monitor.core.settings.Settings` takes these fields
over, so a threshold is configured like any other setting and documented in
``docs/settings.md``."""

from __future__ import annotations

from dataclasses import dataclass

from monitor.core.sections import UNIT, Choices, Range, Section, at_least, setting

DOWN_WEIGHT = (0.5, UNIT, "The weight given by the down_weight policy.")
"""The ``down_weight`` setting, read by the decisions and the policy."""


@dataclass(frozen=True)
class Thresholds(Section):
    """What the rules compare with (defaults: those of :class:`monitor.core.settings.Settings`)."""

    min_judgments: int = setting(
        10,
        at_least(1),
        "A worker is judged (flagged) only with at least this many judgments.",
    )
    low_agreement_ratio: float = setting(
        0.7,
        UNIT,
        "Flag low_agreement when leave-one-out agreement < ratio x the campaign median.",
    )
    min_triplets: int = setting(
        5,
        at_least(1),
        "An annotator's transitivity is judged only with at least this many full triplets.",
    )
    low_transitivity_kappa: float = setting(
        0.5,
        Range(high=1),
        "Flag intransitive when the intraobserver kappa is below this.",
    )
    position_bias_p: float = setting(
        0.001,
        UNIT,
        "Flag position_bias (constant) when the exact test of the annotator's 'left' count "
        "(commonest answer) against the others' answers on the same questions gives a p-value "
        "below this, after Holm's correction over the workers tested (or the reliability "
        "model's position bias differs from none with a p-value below this).",
    )
    # One declaration a setting, in the form of core/settings.py's: each its own key, default,
    # range and text; what they share, the declaring and the checking, is sections.setting().
    position_bias_share: float = setting(
        0.75,
        Range(0.5, 1),
        "... and the share of 'left' among strict answers is beyond this (or 1 - it).",
    )
    constant_share: float = setting(
        0.95,
        Range(0.5, 1),
        "Flag constant when a worker's commonest answer (label, rating, side or tie) is at "
        "least this share of their answers (and the test says so); a position bias this "
        "strong is decided block too.",
    )
    model_max_iter: int = setting(
        500,
        at_least(1),
        "Most EM iterations of the reliability model (Dawid-Skene, rating model) per run "
        "(Dawid-Skene on a simulated ordinal campaign of 11,039 items by 825 workers: 293).",
    )
    quality_margin: float = setting(
        0.2,
        UNIT,
        "Worker floor: chance + margin x (1 - chance) accuracy (labels), or (1 - margin) x the "
        "noise sd of a random answerer (ratings); low_quality when the interval lies beyond it.",
    )
    skewed_prior: float = setting(
        0.7,
        UNIT,
        "Labels: when the commonest class's prior is above this, a worker's floor is built on "
        "their own chance (the accuracy of their answers shuffled across items), not the "
        "campaign's.",
    )
    max_bias: float = setting(
        0.15,
        UNIT,
        "Ratings: flag biased when the interval on a rater's bias lies beyond +- this share of "
        "the scale's width.",
    )
    gold_floor: float = setting(
        0.0,
        UNIT,
        "Flag gold_accuracy when the gold interval's upper end is below this (0: automatic, the "
        "gold chance level + quality_margin x (1 - chance)).",
    )
    min_gold_judgments: int = setting(
        5,
        at_least(1),
        "A worker's gold accuracy is judged (flagged) only with at least this many gold answers.",
    )
    ambiguous_posterior: float = setting(
        0.8,
        UNIT,
        "Labels: ambiguous when the posterior max < 1/K + this x (1 - 1/K) (K categories).",
    )
    ambiguous_p: float = setting(
        0.01,
        UNIT,
        "Ratings: ambiguous when a chi-square test says the item's spread exceeds what its "
        "workers' noise explains at this level; preference pairs: when the test that neither "
        "order explains the pair's split gives a (Benjamini-Hochberg) q-value below it.",
    )
    min_item_judgments: int = setting(
        3,
        at_least(1),
        "An item is judged (flagged) only with at least this many judgments.",
    )
    speeder_ratio: float = setting(
        0.25,
        UNIT,
        "Flag speeder when a worker's mean seconds per judgment < ratio x the campaign median.",
    )
    phi_alpha_gap: float = setting(
        0.4,
        Range(0, 2),
        "Warn when Phi and alpha differ by at least this.",
    )
    paradox_agreement: float = setting(
        0.8,
        UNIT,
        "Kappa paradox warning: percent agreement at least this ...",
    )
    paradox_alpha: float = setting(
        0.2,
        Range(-1, 1),
        "... while alpha is below this.",
    )


@dataclass(frozen=True)
class DecisionOptions(Section):
    """What turns a worker's numbers into a decision (:mod:`monitor.rules.decision`)."""

    down_weight_below: float = setting(
        0.75,
        UNIT,
        "Decide down_weight when the best end of a worker's quality interval lies below chance "
        "+ this x (the crowd's median worker - chance).",
    )
    down_weight: float = setting(*DOWN_WEIGHT)


@dataclass(frozen=True)
class PolicyOptions(Section):
    """What the automatic policy does with a worker flag."""

    policy: str = setting(
        "suggest",
        Choices(("suggest", "block", "down_weight", "advice")),
        "What a worker flag does at the end of a run: suggest, block or down_weight every "
        "flagged worker; advice applies each worker's decision (block, down_weight with its "
        "weight).",
    )
    down_weight: float = setting(*DOWN_WEIGHT)
