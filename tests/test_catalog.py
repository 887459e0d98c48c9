"""The catalog: every rule checked by one function, every threshold a setting, every measure a
run stores declared for its kind, and the documentation generated from it."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from monitor.core import catalog
from monitor.core.settings import General, Settings
from monitor.core.thresholds import DecisionOptions
from monitor.rules import CHECKS, PolicyOptions, Thresholds

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _between(text: str, name: str) -> str:
    start, end = f"<!-- catalog:{name} -->\n", f"<!-- /catalog:{name} -->"
    assert start in text, f"docs/store-values.md lost its {name} markers"
    assert end in text, f"docs/store-values.md lost its {name} markers"
    return text.split(start, 1)[1].split(end, 1)[0]


def test_store_values_doc_is_the_catalog() -> None:
    text = (DOCS / "store-values.md").read_text(encoding="utf-8")
    assert _between(text, "measures") == catalog.measures_table()
    assert _between(text, "rules") == catalog.rules_table()


def test_every_rule_has_exactly_one_check() -> None:
    assert set(CHECKS) == {(r.scope.value, r.name) for r in catalog.RULES}


@pytest.mark.parametrize("section", [Thresholds, PolicyOptions])
def test_sections_are_settings_with_the_same_defaults(section: type) -> None:
    defaults = Settings()
    for f in fields(section):
        assert hasattr(defaults, f.name), f"{section.__name__}.{f.name} is no setting"
        assert getattr(defaults, f.name) == f.default, f.name


@pytest.mark.parametrize("section", [Thresholds, DecisionOptions, PolicyOptions])
def test_the_rules_settings_are_declared_once_in_their_section(section: type) -> None:
    """A threshold is declared in its section alone (default, what it accepts, what it does),
    and the settings take that declaration over: none of :class:`General`'s fields."""
    declared = {f.name: f for f in fields(Settings)}
    general = {f.name for f in fields(General)}
    for f in fields(section):
        assert f.metadata.get("accepts") is not None, f"{section.__name__}.{f.name}"
        assert f.name not in general, f"{f.name} declared twice"
        assert declared[f.name].metadata == f.metadata, f.name
        assert declared[f.name].default == f.default, f.name


def test_a_rule_is_found_by_its_name() -> None:
    for (scope, name), check in CHECKS.items():
        assert check.__name__ in (name, f"{name}_{scope}")


def test_rules_read_thresholds_and_measures_that_exist() -> None:
    thresholds = {f.name for f in fields(Thresholds)}
    read = set()
    for r in catalog.RULES:
        assert set(r.thresholds) <= thresholds, r.name
        read |= set(r.thresholds)
        for metric in r.reads:
            scopes = {m.scope for m in catalog.MEASURES if m.name == metric}
            assert scopes & {r.scope, catalog.Scope.CAMPAIGN, catalog.Scope.WORKER}, metric
    assert read == thresholds, "a threshold no rule reads"
    assert {r.name for r in catalog.RULES if r.acts} <= {
        r.name for r in catalog.RULES if r.scope == "worker"
    }


def test_derived_lists() -> None:
    assert "wqs" in catalog.WARM
    assert "model_mean" in catalog.WARM
    assert "majority_disputed" not in catalog.APPROXIMATE
    assert "uqs" in catalog.APPROXIMATE
    assert "biased" not in catalog.POLICY_RULES
    assert "low_quality" in catalog.POLICY_RULES
    assert catalog.measure("worker", "weight").key == "quality_weight"
    with pytest.raises(KeyError):
        catalog.measure("worker", "no_such_measure")
    assert catalog.rule_title("no_such_rule") is None
