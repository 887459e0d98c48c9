"""One decision per worker, from a run's values and flags (pure): what a platform can take as
it is.

The decisions, most severe first:

- ``block``: the answers carry no information. The worker's quality interval lies at or below
  chance, what their own answers reach shuffled across the items (accuracy: the upper end at or
  below ``model_worker_chance``, the campaign's ``model_chance`` where there is none; noise sd:
  the lower end at or above ``model_chance_sd``), or their gold
  interval at or below the gold questions' chance, or they answer the same whatever the
  question (a ``constant`` flag, or a ``position_bias`` flag at ``constant_share`` or more).
  Never for a worker whose quality is at or above the crowd's median.
- ``stop``: give the worker no more tasks in this campaign. Their answers are right less often
  than the campaign's ``stop_line`` (an answer worth ``stop_share`` of the typical worker's
  information, at least ``stop_margin`` below them), shown by the anytime-valid test of
  :mod:`monitor.metrics.stopping` over their judgments as they arrived (``stop_after``): a
  worker at or above the line is stopped with probability at most ``stop_alpha`` over the whole
  campaign. Their answers keep the down-weight's weight. Only where the model's interval of
  the worker lies below the crowd's median too; never for a worker at or above it. Ratings:
  their root mean square error (bias and noise) lies above the line's, and the model's interval
  of it above the crowd's median.
- ``down_weight``: the answers are worth less than most workers', not nothing. The best end of
  the quality interval lies below ``chance + down_weight_below x (median - chance)`` (the
  median of the workers with at least ``min_judgments`` answers; for noise sd the same on its
  scale), or a ``low_quality``, ``gold_accuracy`` or ``position_bias`` flag says so. The weight
  is the reliability model's (``model_weight``) where it lies in (0, 1), else the ``down_weight``
  setting.
- ``watch``: another flag (disagreement, speed, cycles, a shifted scale) asks for a look.
- ``cannot_tell``: too few answers (below ``min_judgments``), nothing in the run measures the
  worker's quality, their interval spans both chance and the crowd's median, or everyone in the
  campaign gave the same answer.
- ``ok``: none of the above.

Each decision has a one-line ``reason`` fit to show the worker ("answers at chance on 40 gold
questions") and its ``evidence`` for the record.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from monitor.core.catalog import DECISIONS, Kind
from monitor.core.results import FlagRecord, Value
from monitor.core.thresholds import DecisionOptions, Thresholds
from monitor.rules.stop import Stop, run_stops, stop_reason
from monitor.rules.values import RunValues, finite, pct

SEVERITY = {d: k for k, d in enumerate(DECISIONS)}
WATCH_REASONS = {
    "low_agreement": "disagrees with the other workers more than most",
    "speeder": "answers faster than the questions can be read",
    "intransitive": "preferences contradict each other",
    "biased": "rates consistently higher or lower than the other workers",
}


@dataclass(frozen=True)
class WorkerDecision:
    """What to do with one worker, why in a line, and the numbers behind it."""

    worker: str
    decision: str
    reason: str
    weight: float | None = None
    evidence: dict[str, Any] = field(default_factory=dict)

    @property
    def applied_weight(self) -> float:
        """The weight the decision gives: 0 blocked, its weight down-weighted or stopped, else
        1."""
        if self.decision == "block":
            return 0.0
        if self.decision in ("stop", "down_weight") and self.weight is not None:
            return self.weight
        return 1.0

    def value(self) -> Value:
        """The decision as the run stores it (worker measure ``decision``)."""
        return Value(
            "worker",
            self.worker,
            "decision",
            self.applied_weight,
            n=self.evidence.get("n"),
            detail={
                "decision": self.decision,
                "reason": self.reason,
                "weight": self.weight,
                "evidence": self.evidence,
            },
        )


def unanimous_campaign(run: RunValues) -> bool:
    """Everyone gave the same answer (``distinct_answers`` is 1)."""
    return run.number("distinct_answers") == 1


@dataclass(frozen=True)
class _Quality:
    """A worker's quality on one scale, oriented so that larger is better."""

    value: float
    best: float  # the interval's end on the good side
    worst: float  # ... on the bad side
    chance: float
    noise: bool  # a noise sd (smaller is better): the numbers above are negated


def _model_quality(run: RunValues) -> dict[str, _Quality]:
    """Each worker's reliability-model quality (accuracy, or negated noise sd) with its chance
    level, where the model converged."""
    converged, _ = run.model()
    chance_v = run.campaign("model_chance")
    chance = run.number("model_chance")
    if not converged or chance is None or chance_v is None:
        return {}
    noise = (chance_v.detail or {}).get("measure") == "noise_sd"
    metric = "model_noise_sd" if noise else "model_accuracy"
    table = run.table("worker", metric)
    own_metric = "model_chance_sd" if noise else "model_worker_chance"
    own = run.table("worker", own_metric).aligned(table.subjects)
    # "no information" is what the worker's own answers reach shuffled across the items: a
    # worker who gives the rarer classes more often than they occur is below the commonest
    # class's share and still informative (the campaign's chance where the run has no own one)
    out = {}
    for i, w in enumerate(table.subjects):
        v, lo, hi = finite(table.values[i]), finite(table.low[i]), finite(table.high[i])
        if v is None:
            continue
        c = finite(own[i])
        c = chance if c is None else c
        lo = v if lo is None else lo
        hi = v if hi is None else hi
        if noise:
            out[w] = _Quality(-v, -lo, -hi, -c, True)
        else:
            out[w] = _Quality(v, hi, lo, c, False)
    return out


def _gold_quality(run: RunValues, t: Thresholds) -> dict[str, tuple[_Quality, int]]:
    chance = run.number("gold_chance")
    if chance is None:
        return {}
    table = run.table("worker", "gold_accuracy")
    out = {}
    for i, w in enumerate(table.subjects):
        v, n = finite(table.values[i]), int(table.n[i])
        if v is None or n < t.min_gold_judgments:
            continue
        lo, hi = finite(table.low[i]), finite(table.high[i])
        out[w] = (_Quality(v, v if hi is None else hi, v if lo is None else lo, chance, False), n)
    return out


def _error_quality(run: RunValues) -> dict[str, _Quality]:
    """Each rater's root mean square error ``sqrt(b^2 + s^2)`` (the rating model's bias and noise
    sd, negated: larger is better), with the interval their two intervals give, where the model
    converged: what the stop test measures (a large constant bias counts)."""
    converged, _ = run.model()
    if not converged:
        return {}
    noise = run.table("worker", "model_noise_sd")
    bias = run.table("worker", "model_bias")
    b, b_lo, b_hi = (bias.aligned(noise.subjects, k) for k in ("values", "low", "high"))
    out = {}
    for i, w in enumerate(noise.subjects):
        s, bi = finite(noise.values[i]), finite(b[i])
        if s is None or bi is None:
            continue
        s_lo, s_hi = finite(noise.low[i]) or s, finite(noise.high[i]) or s
        lo_b, hi_b = finite(b_lo[i]), finite(b_hi[i])
        lo_b, hi_b = (bi if lo_b is None else lo_b), (bi if hi_b is None else hi_b)
        near = 0.0 if lo_b <= 0.0 <= hi_b else min(abs(lo_b), abs(hi_b))
        far = max(abs(lo_b), abs(hi_b))
        rmse = math.hypot(bi, s)
        out[w] = _Quality(-rmse, -math.hypot(near, s_lo), -math.hypot(far, s_hi), math.nan, True)
    return out


def _median(values: Iterable[float]) -> float | None:
    xs = list(values)
    return float(np.median(xs)) if len(xs) >= 3 else None


def decide_workers(
    run: RunValues,
    flags: Iterable[FlagRecord],
    t: Thresholds,
    options: DecisionOptions | None = None,
) -> list[WorkerDecision]:
    """One decision for every worker of the run, by worker id (``options``: by default those
    of the default settings)."""
    options = options or DecisionOptions()
    counts = run.table("worker", "n_judgments")
    n_of = {
        w: int(x) if np.isfinite(x) else 0
        for w, x in zip(counts.subjects, counts.values, strict=True)
    }
    by_worker: dict[str, list[FlagRecord]] = defaultdict(list)
    for f in flags:
        if f.scope == "worker":
            by_worker[f.subject].append(f)
    model = _model_quality(run)
    gold = _gold_quality(run, t)
    judged = [q.value for w, q in model.items() if n_of.get(w, 0) >= t.min_judgments]
    typical = _median(judged)
    gold_typical = _median(q.value for q, _ in gold.values())
    weights = run.table("worker", "model_weight")
    weight_of = {w: finite(x) for w, x in zip(weights.subjects, weights.values, strict=True)}
    unanimous = unanimous_campaign(run)
    stops = run_stops(run)
    errors = _error_quality(run) if run.kind == Kind.RATING else {}
    error_typical = _median(q.value for w, q in errors.items() if n_of.get(w, 0) >= t.min_judgments)
    out = []
    for w in sorted(set(n_of) | set(by_worker)):
        e = errors.get(w)
        out.append(
            _decide(
                w, n_of.get(w, 0), by_worker.get(w, []), model.get(w), typical,
                gold.get(w), gold_typical, weight_of.get(w), unanimous, t, options,
                run.kind == Kind.PAIRWISE, stops.get(w),
                None if e is None or error_typical is None else (e, error_typical),
            )
        )  # fmt: skip
    return out


def _decide(
    w: str,
    n: int,
    wflags: list[FlagRecord],
    q: _Quality | None,
    typical: float | None,
    gold: tuple[_Quality, int] | None,
    gold_typical: float | None,
    model_weight: float | None,
    unanimous: bool,
    t: Thresholds,
    options: DecisionOptions,
    pairwise: bool,
    stop: Stop | None = None,
    error: tuple[_Quality, float] | None = None,
) -> WorkerDecision:
    rules = {f.rule: f for f in wflags}
    evidence: dict[str, Any] = {"n": n, "rules": sorted(rules)}
    if q is not None:
        sign = -1.0 if q.noise else 1.0
        evidence.update(
            measure="model_noise_sd" if q.noise else "model_accuracy",
            value=sign * q.value,
            interval=sorted([sign * q.worst, sign * q.best]),
            chance=sign * q.chance,
            typical=None if typical is None else sign * typical,
        )
    if gold is not None:
        g, gn = gold
        evidence["gold"] = {"value": g.value, "interval": [g.worst, g.best], "n": gn,
                            "chance": g.chance, "typical": gold_typical}  # fmt: skip
    if model_weight is not None:
        evidence["model_weight"] = model_weight
    if stop is not None:
        evidence["stop"] = {"after": stop.after, "evidence": stop.evidence,
                            "line": finite(stop.line), "typical": finite(stop.typical),
                            "alpha": stop.alpha}  # fmt: skip
        if stop.side is not None:
            evidence["stop"]["side"] = {"left_share": stop.side[0], "margin": stop.side[1]}
    if error is not None:  # a rater's root mean square error: what their stop test measures
        e, e_typical = error
        evidence["error"] = {"measure": "rmse", "value": -e.value, "interval": [-e.best, -e.worst],
                             "typical": -e_typical}  # fmt: skip

    def made(decision: str, reason: str, weight: float | None = None) -> WorkerDecision:
        return WorkerDecision(w, decision, reason, weight, evidence)

    if unanimous:
        return made("cannot_tell", "everyone gave the same answers: nothing tells workers apart")
    middle = q is not None and typical is not None and q.value >= typical
    questions = "comparisons" if pairwise else "questions"
    weight = (
        model_weight if model_weight is not None and 0 < model_weight < 1 else options.down_weight
    )
    # block: the answers carry no information
    block: str | None = None
    if "constant" in rules:
        ev = rules["constant"].evidence
        block = (
            f"gave the same answer ({ev.get('answer')}) to {pct(rules['constant'].value or 1)} "
            f"of {ev.get('n', n)} {questions}"
        )
    elif "position_bias" in rules and (rules["position_bias"].value or 0) >= t.constant_share:
        ev = rules["position_bias"].evidence
        block = (
            f"picked the {ev.get('side', 'same')} option in "
            f"{pct(rules['position_bias'].value or 1)} of {ev.get('n', n)} comparisons"
        )
    elif q is not None and q.best <= q.chance:
        block = (
            f"ratings unrelated to the items over {n} ratings"
            if q.noise
            else f"answers no better than chance over {n} {questions}"
        )
    elif gold is not None and gold[0].best <= gold[0].chance:
        block = f"answers at chance on {gold[1]} gold questions"
    if block is not None and not middle and n >= t.min_judgments:
        return made("block", block)

    # stop: not worth their pay, shown as the judgments arrived (valid at any count: the test
    # holds its error rate however few judgments it has seen)
    # ... and where the reliability model's own interval of the worker lies below the crowd's
    # median too: the test's guarantee assumes the others' posterior calibrated, and two
    # readings of the answers must agree before a worker loses their work
    sq, s_typical = (q, typical) if error is None else error  # ratings: the error the test reads
    s_middle = sq is not None and s_typical is not None and sq.value >= s_typical
    below = sq is not None and s_typical is not None and sq.best < s_typical
    if stop is not None and not s_middle and (below or sq is None):
        return made("stop", stop_reason(stop, questions), weight)
    if n < t.min_judgments:
        return made("cannot_tell", f"too few answers to judge ({n})")

    # down_weight: worth less than most workers' answers
    if "position_bias" in rules:
        f = rules["position_bias"]
        return made(
            "down_weight",
            f"picked the {f.evidence.get('side', 'same')} option in {pct(f.value or 0)} of "
            f"{f.evidence.get('n', n)} comparisons",
            weight,
        )
    if q is not None and typical is not None and typical > q.chance:
        line = q.chance + options.down_weight_below * (typical - q.chance)
        if q.best < line and not middle:
            if q.noise:
                ratio = q.value / typical if typical else float("nan")
                return made(
                    "down_weight",
                    f"ratings {ratio:.1f} times as noisy as most workers' over {n} ratings",
                    weight,
                )
            return made(
                "down_weight",
                f"right about {pct(q.value)} of the time over {n} {questions}, where most "
                f"workers are right {pct(typical)}",
                weight,
            )
    if gold is not None and gold_typical is not None and gold_typical > gold[0].chance:
        g, gn = gold
        if g.best < g.chance + options.down_weight_below * (gold_typical - g.chance):
            return made(
                "down_weight",
                f"right on {pct(g.value)} of {gn} gold questions, where most workers are right "
                f"{pct(gold_typical)}",
                weight,
            )
    if block is not None:  # no information, yet at the crowd's middle: look
        return made("watch", block)
    for rule in ("low_quality", "gold_accuracy"):
        if rule in rules and not middle:
            return made("down_weight", _quality_reason(rules[rule], n, questions), weight)
    for rule, text in WATCH_REASONS.items():
        if rule in rules:
            return made("watch", text)
    if rules:
        return made("watch", "flagged: " + ", ".join(sorted(rules)).replace("_", " "))

    # cannot_tell: nothing here says how good the worker is
    if q is None and gold is None:
        return made("cannot_tell", "nothing here measures the quality of the answers")
    if q is not None and typical is not None and q.worst <= q.chance and q.best >= typical:
        return made("cannot_tell", f"too little evidence to judge over {n} {questions}")
    return made("ok", "")


def _quality_reason(f: FlagRecord, n: int, questions: str) -> str:
    value = f.value if f.value is not None else float("nan")
    if f.rule == "gold_accuracy":
        return f"right on {pct(value)} of {f.evidence.get('n', n)} gold questions"
    if f.evidence.get("metric") == "model_noise_sd":
        return f"ratings noisier than most workers' over {n} ratings"
    return f"right about {pct(value)} of the time over {n} {questions}"


def decisions_by_worker(values: Iterable[Value]) -> dict[str, Mapping[str, Any]]:
    """The stored ``decision`` values of a run as ``{worker: detail}``."""
    return {
        v.subject: (v.detail or {})
        for v in values
        if v.scope == "worker" and v.metric == "decision" and v.detail
    }


__all__ = [
    "DECISIONS",
    "SEVERITY",
    "WorkerDecision",
    "decide_workers",
    "decisions_by_worker",
    "unanimous_campaign",
]
