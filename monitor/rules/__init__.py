"""Pure rules: a run's values and the thresholds in, flags with their evidence out.

Every rule is declared in :mod:`monitor.catalog` (its scope, kinds, title, what it reads) and
checked here by one function of its scope's module (:mod:`monitor.rules.worker`,
:mod:`monitor.rules.item`, :mod:`monitor.rules.campaign`); :func:`evaluate` runs those that
apply to the campaign's kind. The policy (:mod:`monitor.rules.policy`) turns worker flags into
decisions; the pipeline records them. :mod:`monitor.rules.decision` gives each worker one
decision (block, down_weight, watch, cannot_tell or ok) from the run's values and flags.

In a campaign where everyone gave the same answer no worker rule is checked: perfect agreement
cannot tell a good worker from a bad one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from monitor import catalog
from monitor.results import Column, FlagRecord, Value
from monitor.rules import campaign, item, worker
from monitor.rules.decision import unanimous_campaign
from monitor.rules.thresholds import PolicyOptions, Thresholds
from monitor.rules.values import RunValues

Check = Callable[[RunValues, Thresholds], list[FlagRecord]]

CHECKS: dict[tuple[str, str], Check] = {
    ("worker", "low_quality"): worker.low_quality,
    ("worker", "gold_accuracy"): worker.gold_accuracy,
    ("worker", "biased"): worker.biased,
    ("worker", "low_agreement"): worker.low_agreement,
    ("worker", "speeder"): worker.speeder,
    ("worker", "intransitive"): worker.intransitive,
    ("worker", "position_bias"): worker.position_bias,
    ("worker", "constant"): worker.constant,
    ("item", "ambiguous"): item.ambiguous_item,
    ("pair", "ambiguous"): item.ambiguous_pair,
    ("campaign", "kappa_paradox"): campaign.kappa_paradox,
    ("campaign", "phi_alpha_disagree"): campaign.phi_alpha_disagree,
    ("campaign", "model_not_converged"): campaign.model_not_converged,
    ("campaign", "model_fallback"): campaign.model_fallback,
}
"""The function that checks each rule of the catalog, by scope and name."""


def evaluate(
    values: Sequence[Value],
    thresholds: Thresholds,
    *,
    kind: str,
    columns: Sequence[Column] = (),
) -> list[FlagRecord]:
    """All the flags of a run (its single values and its columns), sorted by scope, rule and
    subject."""
    run = RunValues(kind, values, columns)
    flags: list[FlagRecord] = []
    unanimous = unanimous_campaign(run)
    for rule in catalog.rules(kind=kind):
        if unanimous and rule.scope == "worker":
            continue  # everyone gave the same answer: nothing tells one worker from another
        flags += CHECKS[(rule.scope, rule.name)](run, thresholds)
    return sorted(flags, key=lambda f: (f.scope, f.rule, f.subject))


__all__ = ["CHECKS", "PolicyOptions", "RunValues", "Thresholds", "evaluate"]
