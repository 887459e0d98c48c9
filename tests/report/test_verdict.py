"""The verdict's levels and the export's percentages, against the plain expressions they were
written as before they became one function each (the same text on random numbers)."""

from __future__ import annotations

import numpy as np

from monitor.core.results import Value
from monitor.report.jsonsafe import value_count
from monitor.report.verdict import RELIABLE, TENTATIVE, export_verdict, verdict


def _old_level(x: float) -> str:
    return "reliable" if x >= RELIABLE else "tentative" if x >= TENTATIVE else "unreliable"


def _old_pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def test_verdict_levels_are_those_of_the_plain_expression() -> None:
    rng = np.random.default_rng(7)
    edges = [RELIABLE, TENTATIVE, np.nextafter(RELIABLE, 0), np.nextafter(TENTATIVE, 0)]
    alphas = [*edges, *rng.uniform(-0.2, 1.0, 200).tolist()]
    for alpha in alphas:
        lo, hi = sorted(rng.uniform(-0.2, 1.0, 2).tolist())
        out = verdict(float(alpha), [lo, hi])
        assert out["level"] == _old_level(alpha)
        spans = _old_level(lo) != _old_level(hi)
        assert (
            out["text"].endswith(f" The 95% interval spans {_old_level(lo)} to {_old_level(hi)}.")
            == spans
        )


def test_export_percentages_are_those_of_the_plain_expression() -> None:
    rng = np.random.default_rng(8)
    for v, lo, hi in rng.uniform(0.0, 1.0, (100, 3)).tolist():
        value = Value("campaign", "c", "export_quality", v, min(lo, hi), max(lo, hi), 40)
        ci = f"[{_old_pct(min(lo, hi))}, {_old_pct(max(lo, hi))}]"
        text = export_verdict("label", value)["text"]  # type: ignore[index]
        assert f"on {_old_pct(v)} {ci} of 40 items" in text
        value = Value("campaign", "c", "export_quality", v, None, None, 40,
                      {"measure": "pair_accuracy"})  # fmt: skip
        text = export_verdict("pairwise", value)["text"]  # type: ignore[index]
        assert f"order {_old_pct(v)} of the pairs" in text


def test_a_count_is_the_int_of_its_number() -> None:
    for x in (None, float("nan"), float("inf"), 0.0, 3.0, 12.9, -2.5):
        value = Value("worker", "w", "n_judgments", x)
        v = None if x is None or not np.isfinite(x) else x
        assert value_count(value) == (int(v) if v is not None else None)
    assert value_count(None) is None
