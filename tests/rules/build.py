"""Small hand-built runs for the rules' unit tests: a run's values as the pipeline stores
them, a handful at a time."""

from __future__ import annotations

import dataclasses
from typing import Any

from monitor.core.results import Value
from monitor.rules import RunValues, Thresholds

CAMPAIGN = "c"

T = Thresholds(
    min_judgments=10,
    low_agreement_ratio=0.75,
    min_triplets=5,
    low_transitivity_kappa=0.5,
    position_bias_p=0.001,
    position_bias_share=0.75,
    constant_share=0.875,
    quality_margin=0.25,
    skewed_prior=0.75,
    max_bias=0.125,
    gold_floor=0.0,
    min_gold_judgments=5,
    ambiguous_posterior=0.75,
    ambiguous_p=0.01,
    min_item_judgments=3,
    speeder_ratio=0.25,
    phi_alpha_gap=0.5,
    paradox_agreement=0.75,
    paradox_alpha=0.25,
)
"""Thresholds whose sums are exact in binary (a value "at" a floor is that floor)."""


def thresholds(**changed: Any) -> Thresholds:  # noqa: ANN401
    return dataclasses.replace(T, **changed)


def worker(
    metric: str,
    subject: str,
    value: float | None,
    low: float | None = None,
    high: float | None = None,
    n: int | None = None,
    **detail: Any,  # noqa: ANN401
) -> Value:
    return Value("worker", subject, metric, value, low, high, n, detail or None)


def item(
    scope: str, metric: str, subject: str, value: float | None, n: int | None = None, **detail: Any
) -> Value:  # noqa: ANN401
    return Value(scope, subject, metric, value, None, None, n, detail or None)


def campaign(
    metric: str,
    value: float | None,
    low: float | None = None,
    high: float | None = None,
    **detail: Any,
) -> Value:  # noqa: ANN401
    return Value("campaign", CAMPAIGN, metric, value, low, high, None, detail or None)


def model(
    chance: float,
    *,
    measure: str = "accuracy",
    name: str = "dawid_skene",
    converged: bool = True,
    classes: int = 2,
    iterations: int = 40,
) -> list[Value]:
    """A reliability model's campaign values: its iterations (converged or not) and chance."""
    return [
        campaign("model_iterations", iterations, model=name, converged=converged),
        campaign("model_chance", chance, measure=measure, classes=classes),
    ]


def counts(n: dict[str, int]) -> list[Value]:
    """Each worker's ``n_judgments``."""
    return [worker("n_judgments", w, k, n=k) for w, k in n.items()]


def run(kind: str, *values: Value | list[Value]) -> RunValues:
    flat: list[Value] = []
    for v in values:
        flat += v if isinstance(v, list) else [v]
    return RunValues(kind, flat)
