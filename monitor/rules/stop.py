"""A worker's stop, as the rules read it (pure): the run's stop test (``stop_after``, the
line of ``stop_line``; :mod:`monitor.pipeline.live`), its one-line reason, and whether a stop
the live path reached between runs stands against the last run's model (:func:`live_stop`).
The decision that takes it: :mod:`monitor.rules.decision`."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from monitor.rules.values import RunValues, finite, pct


@dataclass(frozen=True)
class Stop:
    """A worker's stop test that reached its evidence: after ``after`` judgments scored, right
    less often than ``line`` (the typical worker: ``typical``), wrongly with probability at
    most ``alpha``. Ratings (``measure`` ``mse``): ``line`` and ``typical`` are mean squared
    errors, and the worker misses by more than the line. An annotator stopped for picking a
    side whatever the items (``side``): their share of the left item up to the stop, and the
    margin beyond the other annotators' share that the test allows."""

    after: int
    evidence: float
    line: float
    typical: float
    alpha: float
    measure: str = "accuracy"
    side: tuple[float, float] | None = None


def stop_reason(stop: Stop, questions: str = "questions") -> str:
    """The one line a ``stop`` decision gives."""
    if stop.side is not None:
        share, margin = stop.side
        side, top = ("left", share) if share >= 0.5 else ("right", 1.0 - share)
        return (
            f"picks the {side} item in {pct(top)} of their first {stop.after} strict answers, "
            f"whatever the items: more than {margin * 100:.0f} points above the other "
            f"annotators' share (an annotator within {margin * 100:.0f} points is stopped so at "
            f"most {stop.alpha:.0%} of the time)"
        )
    if stop.measure == "mse":  # the root mean square errors, in the scale's units
        line, typical = math.sqrt(stop.line), math.sqrt(stop.typical)
        return (
            f"ratings off by more than {line:.3g} on average (root mean square), where most "
            f"raters are off by {typical:.3g}: shown after {stop.after} ratings (a rater within "
            f"{line:.3g} is stopped so at most {stop.alpha:.0%} of the time)"
        )
    return (
        f"right less than {pct(stop.line)} of the time, where most workers are right "
        f"{pct(stop.typical)}: shown after {stop.after} {questions} (a worker at or above "
        f"{pct(stop.line)} is stopped so at most {stop.alpha:.0%} of the time)"
    )


def live_stop(
    decided: Mapping[str, Any] | None, stop: Stop, down_weight: float
) -> dict[str, Any] | None:
    """The decision of a worker whose live test reached its evidence since the latest run
    (``decided``: their decision there, as the run stores it), or None where the run's stands:
    a block, a stop, or a worker whom the run's reliability model puts at or above the crowd's
    median or whose interval reaches it (the rule of :func:`decide_workers`, with the latest
    run's model: for ratings their root mean square error, ``evidence["error"]``, smaller is
    better). A worker the run has not seen is stopped on the test alone."""
    decided = decided or {}
    if decided.get("decision") in ("block", "stop"):
        return None
    evidence = dict(decided.get("evidence") or {})
    error = evidence.get("error")
    if isinstance(error, Mapping):  # a rater: the smaller the error, the better
        if _reaches(error, lambda x, typical: x <= typical, 0):
            return None
    elif stop.measure != "mse" and _reaches(evidence, lambda x, typical: x >= typical, -1):
        return None
    evidence["stop"] = {"after": stop.after, "evidence": stop.evidence, "line": stop.line,
                        "typical": stop.typical, "alpha": stop.alpha, "live": True}  # fmt: skip
    weight = finite(evidence.get("model_weight"))
    weight = weight if weight is not None and 0 < weight < 1 else down_weight
    return {"decision": "stop", "reason": stop_reason(stop), "weight": weight,
            "evidence": evidence}  # fmt: skip


def _reaches(measured: Mapping[str, Any], better: Callable[[float, float], bool], end: int) -> bool:
    """Whether the ``value`` of ``measured`` or the ``end`` of its ``interval`` is at or above
    its ``typical`` (``better``: the comparison that says so)."""
    value, typical = finite(measured.get("value")), finite(measured.get("typical"))
    if value is None or typical is None:
        return False
    interval = measured.get("interval") or []
    best = finite(interval[end]) if interval else value
    return better(value, typical) or (best is not None and better(best, typical))


def run_stops(run: RunValues) -> dict[str, Stop]:
    """The workers the run's stop test stopped (``stop_after``), with what the reason needs."""
    line = run.campaign("stop_line")
    if line is None:
        return {}
    detail = line.detail or {}
    value = finite(line.value)  # None: no line, only the side can stop (preferences)
    after = run.table("worker", "stop_after")
    evidence = run.table("worker", "stop_evidence").aligned(after.subjects)
    side = run.table("worker", "stop_side").aligned(after.subjects)
    margin = float(detail.get("side_margin", float("nan")))
    out = {}
    for i, w in enumerate(after.subjects):
        k = finite(after.values[i])
        share = finite(side[i])
        if k is not None and k > 0 and (value is not None or share is not None):
            out[w] = Stop(int(k), finite(evidence[i]) or float("nan"),
                          float("nan") if value is None else value,
                          float(detail.get("typical", float("nan"))),
                          float(detail.get("alpha", float("nan"))),
                          str(detail.get("measure", "accuracy")),
                          None if share is None else (share, margin))  # fmt: skip
    return out


__all__ = ["Stop", "live_stop", "run_stops", "stop_reason"]
