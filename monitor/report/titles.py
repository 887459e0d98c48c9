"""What the report calls things: the titles and meanings of measures and rules, from the
catalog, and of the report's own warnings."""

from __future__ import annotations

from monitor.core import catalog

NOT_RULES = {
    "stale": "New judgments since the latest run",
    "no_run": "No metric run yet",
    "not_converged": "An iterative measure did not converge",
}
"""Titles of the report's warnings that are no rule of the catalog."""


def meaning(metric: str) -> tuple[str, str]:
    """(title, meaning) of a campaign measure, from the catalog."""
    m = catalog.measure("campaign", metric)
    return m.title, m.meaning


def rule_title(rule: str) -> str:
    """What a flag or warning says, in a few words."""
    return catalog.rule_title(rule) or NOT_RULES.get(rule) or rule.replace("_", " ")


__all__ = ["NOT_RULES", "meaning", "rule_title"]
