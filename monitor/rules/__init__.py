"""Pure rules: a run's values and the thresholds in, flags with their evidence out.

Every rule is declared in :mod:`monitor.core.catalog` (its scope, kinds, title, what it reads) and
checked here by the function of its name in its scope's module (:mod:`monitor.rules.worker`,
:mod:`monitor.rules.item`, :mod:`monitor.rules.campaign`); :func:`evaluate` runs those that
apply to the campaign's kind. The policy (:mod:`monitor.rules.policy`) turns worker flags into
decisions; the pipeline records them. :mod:`monitor.rules.decision` gives each worker one
decision (block, down_weight, watch, cannot_tell or ok) from the run's values and flags.

In a campaign where everyone gave the same answer no worker rule is checked: perfect agreement
cannot tell a good worker from a bad one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from monitor.core import catalog
from monitor.core.results import Column, FlagRecord, Value
from monitor.core.thresholds import PolicyOptions, Thresholds
from monitor.rules import campaign, item, worker
from monitor.rules.decision import unanimous_campaign
from monitor.rules.values import RunValues

Check = Callable[[RunValues, Thresholds], list[FlagRecord]]

MODULES = {"worker": worker, "item": item, "pair": item, "campaign": campaign}
"""The module of each scope's rules."""


def _check(scope: str, name: str) -> Check:
    """The function of the rule ``name``: the function of that name in its scope's module,
    else ``NAME_SCOPE`` (``ambiguous_item``, ``ambiguous_pair``: one rule name, two scopes)."""
    module = MODULES[scope]
    found = getattr(module, name, None) or getattr(module, f"{name}_{scope}", None)
    if not callable(found):
        raise LookupError(f"rule {scope}/{name}: no function {name} in {module.__name__}")
    return found


CHECKS: dict[tuple[str, str], Check] = {
    (r.scope.value, r.name): _check(r.scope.value, r.name) for r in catalog.RULES
}
"""The function that checks each rule of the catalog, by scope and name (found by its name:
a new rule is a catalog line and a function, no registration)."""


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
