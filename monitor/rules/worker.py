"""Worker rules: each a pure function of a run's values and the thresholds.

- ``low_quality``: with a reliability model (ratings, labels, multi-label sets), the interval on
  the worker's model accuracy lies entirely below the floor ``chance + quality_margin x (1 -
  chance)``, chance being what a random or constant answerer reaches (on skewed classes, the
  worker's own chance); for ratings, the interval on the noise sd lies entirely above
  ``(1 - quality_margin) x`` the noise sd the same answers would have if they did not depend on
  the items. Preferences: the interval on the probability of answering along the consensus
  order lies entirely below what the annotator reaches answering at random (0.5; with ties, with
  their own tie rate): the chance itself, no margin, as for a coin. Withheld while the model
  has not converged.
- ``biased`` (ratings): the interval on the rater's bias lies beyond ``+- max_bias`` x the
  scale's width.
- ``gold_accuracy``: with at least ``min_gold_judgments`` gold answers, the upper end of the gold
  interval is below ``gold_floor`` (automatic: the gold chance level + margin).
- ``low_agreement``, ``speeder``: below ``ratio`` x the median of the judged workers
  (``low_agreement`` counts the judgments on questions others answered too).
- ``intransitive`` (pairwise): the whole interval on the intraobserver kappa (Wilson on the
  effective number of triplets) lies below ``low_transitivity_kappa``, over at least
  ``min_triplets`` triplets.
- ``position_bias`` (pairwise): the annotator picks one side at least ``position_bias_share``
  of their strict answers and the exact test against the others' choices on the same pairs
  (``side_test``) gives a Holm-adjusted p below ``position_bias_p``; or the reliability model's
  position bias differs from none (p below ``position_bias_p``) and pulls two equal items to
  one side at least ``position_bias_share`` of the time.
- ``constant``: the worker's commonest answer is at least ``constant_share`` of their answers
  and the exact test against the others' answers on the same questions (``constant_answer``)
  gives a Holm-adjusted p below ``position_bias_p``.

The tests of answering habits are corrected for testing every worker with Holm's step-down
method (family-wise error, over the workers with at least ``min_judgments`` answers).

Every flag keeps its evidence: value, floor, interval, n, and a sentence saying why.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from monitor.core.catalog import Kind
from monitor.core.results import FlagRecord, Value
from monitor.core.thresholds import Thresholds
from monitor.metrics.common import accuracy_floor, noise_sd_floor
from monitor.rules.values import RunValues, Table, finite

Z95 = 1.959963984540054
MODEL_NAMES = {
    "dawid_skene": "Dawid-Skene model",
    "one_coin_dawid_skene": "one-coin Dawid-Skene model (one accuracy per worker)",
    "preference_model": "preference model (Crowd-BT with ties)",
    "rating_model": "rating model (bias + noise)",
    "multilabel_model": "multi-label model (Dawid-Skene per option)",
}


def _counts(run: RunValues, table: Table) -> list[int]:
    """Each subject's number of judgments (the worker's ``n_judgments`` value)."""
    n = run.table("worker", "n_judgments").aligned(table.subjects)
    return [int(x) if np.isfinite(x) else 0 for x in n.tolist()]


def _relative(
    run: RunValues, metric: str, rule: str, ratio: float, min_n: int, label: str, over: str
) -> list[FlagRecord]:
    """Workers whose ``metric`` is below ``ratio`` x the median of the judged workers: those
    with ``min_n`` judgments that the measure counts (its own ``n``; the worker's judgments
    where it has none). A worker alone on most of their items is judged on the few they share
    with others, not on all they made. ``over``: what the count is, in the message."""
    table = run.table("worker", metric)
    scores = [finite(x) for x in table.values.tolist()]
    counts = [int(k) if k > 0 else c for k, c in zip(table.n.tolist(), _counts(run, table),
                                                      strict=True)]  # fmt: skip
    judged = [s for s, n in zip(scores, counts, strict=True) if s is not None and n >= min_n]
    if len(judged) < 3:
        return []  # too few peers to say what is normal here
    median = float(np.median(judged))
    if median <= 0:
        return []
    threshold = ratio * median
    flags = []
    for i, (score, n) in enumerate(zip(scores, counts, strict=True)):
        if score is None or n < min_n or score >= threshold:
            continue
        v = table.record(i)
        flags.append(
            FlagRecord(
                "worker",
                table.subjects[i],
                rule,
                score,
                threshold,
                {
                    "message": f"{label} {score:.2f} is below {ratio:g} x the campaign median "
                    f"{median:.2f}, over {n} {over}",
                    "n": n,
                    "campaign_median": median,
                    "interval": [v.low, v.high] if v.low is not None else None,
                    "metric": metric,
                },
            )
        )
    return flags


def low_agreement(run: RunValues, t: Thresholds) -> list[FlagRecord]:
    return _relative(run, "agreement_loo", "low_agreement", t.low_agreement_ratio,
                     t.min_judgments, "agreement with the other workers",
                     "judgments on questions others answered too")  # fmt: skip


def speeder(run: RunValues, t: Thresholds) -> list[FlagRecord]:
    table = run.table("worker", "mean_duration_s")
    durations = [finite(x) for x in table.values.tolist()]
    counts = _counts(run, table)
    known = [d for d, n in zip(durations, counts, strict=True)
             if d is not None and n >= t.min_judgments]  # fmt: skip
    if len(known) < 3:
        return []
    median = float(np.median(known))
    threshold = t.speeder_ratio * median
    return [
        FlagRecord(
            "worker",
            s,
            "speeder",
            d,
            threshold,
            {
                "message": f"{d:.1f} s per judgment against a campaign median of {median:.1f} s",
                "n": n,
                "campaign_median": median,
            },
        )
        for s, d, n in zip(table.subjects, durations, counts, strict=True)
        if d is not None and n >= t.min_judgments and d < threshold
    ]


def _interval(v: Value) -> list[float] | None:
    return [v.low, v.high] if v.low is not None and v.high is not None else None


def _beyond(
    subject: str, rule: str, v: Value, threshold: float, message: str, metric: str, **more: Any
) -> FlagRecord:
    """A worker flag whose evidence is an interval that lies beyond ``threshold``."""
    evidence = {"message": message, "n": int(v.n or 0), "interval": _interval(v), **more}
    return FlagRecord("worker", subject, rule, v.value, threshold, {**evidence, "metric": metric})


def _model(run: RunValues) -> tuple[str, float, str] | None:
    """(the model's name, its chance level, the measure: accuracy or noise_sd) when the run
    has a converged reliability model; None otherwise (its flags are withheld)."""
    converged, detail = run.model()
    chance_v = run.campaign("model_chance")
    chance = run.number("model_chance")
    if not converged or chance is None or chance_v is None:
        return None
    name = MODEL_NAMES.get(str(detail.get("model")), "reliability model")
    return name, chance, str((chance_v.detail or {}).get("measure"))


def low_quality(run: RunValues, t: Thresholds) -> list[FlagRecord]:
    model = _model(run)
    if model is None:
        return []
    name, chance, measure = model
    if measure == "noise_sd":
        return _noisy_raters(run, chance, t, name)
    if run.kind == Kind.PAIRWISE:
        return _random_preferences(run, t, name)
    return _inaccurate(run, chance, t, name)


# the worker's own chance of each model measure: what their answers reach shuffled across items
_OWN_CHANCE = {"model_accuracy": "model_worker_chance", "model_noise_sd": "model_chance_sd"}


def _judged(
    run: RunValues, metric: str, end: Literal["low", "high"], t: Thresholds
) -> Iterator[tuple[str, Value, int, float, float | None]]:
    """(subject, value, n, the interval's ``end``, the worker's own chance or None) of each
    worker with a value of ``metric`` and that end of its interval, over at least
    ``min_judgments`` judgments."""
    table = run.table("worker", metric)
    own = run.table("worker", _OWN_CHANCE[metric]).aligned(table.subjects)
    for i, subject in enumerate(table.subjects):
        v = table.record(i)
        n, bound = int(v.n or 0), getattr(v, end)
        if v.value is None or bound is None or n < t.min_judgments:
            continue
        yield subject, v, n, bound, finite(own[i])


def _random_preferences(run: RunValues, t: Thresholds, model: str) -> list[FlagRecord]:
    """Annotators whose interval on answering along the true order of their pairs (estimated
    against the others' consensus and its own chance of being right) lies below what they would
    reach answering at random (``model_worker_chance``)."""
    flags = []
    for subject, v, n, high, floor in _judged(run, "model_accuracy", "high", t):
        if floor is None or high >= floor:
            continue
        message = (
            f"answers along the true order an estimated {v.value:.2f} of the time (95% interval "
            f"{v.low:.2f} to {v.high:.2f}, {model}) over {n} judgments: below {floor:.2f}, "
            "what the same annotator reaches answering at random"
        )
        flags.append(_beyond(subject, "low_quality", v, floor, message, "model_accuracy",
                             chance=floor, floor=floor))  # fmt: skip
    return flags


def _inaccurate(
    run: RunValues, campaign_chance: float, t: Thresholds, model: str
) -> list[FlagRecord]:
    """Labellers whose accuracy interval lies below the floor. On skewed classes (the commonest
    class's prior above ``skewed_prior``) the floor is built on the worker's own chance, the
    accuracy of their answers shuffled across items: an honest worker with sensitivity 0.8 and
    specificity 0.86 on 0.9/0.1 classes (accuracy 0.85) is below the campaign's chance 0.9 but
    well above their own."""
    skewed = campaign_chance > t.skewed_prior
    flags = []
    for subject, v, n, high, own_chance in _judged(run, "model_accuracy", "high", t):
        own = own_chance if skewed else None
        chance = own if own is not None else campaign_chance
        floor = accuracy_floor(chance, t.quality_margin)
        if high >= floor:
            continue
        message = (
            f"{model} accuracy {v.value:.2f} (95% interval {v.low:.2f} to {v.high:.2f}) over "
            f"{n} judgments lies below the floor {floor:.2f}: chance {chance:.2f}, what a random "
            f"or constant answerer reaches{' with these answers' if own is not None else ''}, + "
            f"{t.quality_margin:g} x (1 - chance)"
        )
        flags.append(_beyond(subject, "low_quality", v, floor, message, "model_accuracy",
                             chance=chance, floor=floor))  # fmt: skip
    return flags


def _noisy_raters(run: RunValues, chance_sd: float, t: Thresholds, model: str) -> list[FlagRecord]:
    """Raters whose noise-sd interval lies above their own floor: ``(1 - margin)`` x the noise
    sd their answers would have if shuffled across their items (``model_chance_sd``), which a
    constant or random answerer reaches and an informative one does not."""
    flags = []
    for subject, v, n, low, own in _judged(run, "model_noise_sd", "low", t):
        chance = own if own is not None else chance_sd
        floor = noise_sd_floor(chance, t.quality_margin)
        if low <= floor:
            continue
        message = (
            f"{model} noise sd {v.value:.3g} (95% interval {v.low:.3g} to {v.high:.3g}) over "
            f"{n} judgments lies above {floor:.3g}: {1 - t.quality_margin:g} x {chance:.3g}, "
            "the noise sd these answers would have if they did not depend on the items (a "
            "random or constant answerer)"
        )
        flags.append(_beyond(subject, "low_quality", v, floor, message, "model_noise_sd",
                             chance=chance, floor=floor))  # fmt: skip
    return flags


def biased(run: RunValues, t: Thresholds) -> list[FlagRecord]:
    """Raters whose bias interval lies beyond +- ``max_bias`` x the scale's width. The model
    corrects a bias in its means; the flag says the rater reads the scale differently."""
    model = _model(run)
    width = run.number("model_scale_width")
    if model is None or model[2] != "noise_sd" or not width:
        return []
    limit = t.max_bias * width
    table = run.table("worker", "model_bias")
    flags = []
    for i, subject in enumerate(table.subjects):
        v = table.record(i)
        n = int(v.n or 0)
        if v.value is None or v.low is None or v.high is None:
            continue
        if n < t.min_judgments or not (v.low > limit or v.high < -limit):
            continue
        side = "above" if v.value > 0 else "below"
        message = (
            f"rates {abs(v.value):.3g} {side} the other raters on average (95% interval "
            f"{v.low:.3g} to {v.high:.3g}) over {n} judgments: beyond {t.max_bias:g} x the "
            f"scale's width ({limit:.3g}); the model's means correct it"
        )
        threshold = limit if v.value > 0 else -limit
        flags.append(_beyond(subject, "biased", v, threshold, message, "model_bias", floor=limit))
    return flags


def gold_accuracy(run: RunValues, t: Thresholds) -> list[FlagRecord]:
    chance = run.number("gold_chance")
    if t.gold_floor > 0:
        floor, how = t.gold_floor, "the gold_floor setting"
    elif chance is not None:
        floor = accuracy_floor(chance, t.quality_margin)
        how = f"chance on these gold items {chance:.2f} + {t.quality_margin:g} x (1 - chance)"
    else:
        return []
    table = run.table("worker", "gold_accuracy")
    flags = []
    for i, subject in enumerate(table.subjects):
        v = table.record(i)
        n = int(v.n or 0)
        if v.value is None or v.high is None or n < t.min_gold_judgments or v.high >= floor:
            continue
        message = (
            f"accuracy on gold {v.value:.2f} (95% interval {v.low:.2f} to {v.high:.2f}) over "
            f"{n} gold answers lies below {floor:.2f} ({how})"
        )
        flags.append(_beyond(subject, "gold_accuracy", v, floor, message, "gold_accuracy",
                             chance=chance, floor=floor))  # fmt: skip
    return flags


def intransitive(run: RunValues, t: Thresholds) -> list[FlagRecord]:
    table = run.table("worker", "transitivity_kappa")
    flags = []
    for i, subject in enumerate(table.subjects):
        kappa = table.record(i)
        triplets, k, high = kappa.n, finite(kappa.value), finite(kappa.high)
        if k is None or high is None or (triplets or 0) < t.min_triplets:
            continue
        if high >= t.low_transitivity_kappa:
            continue
        detail = kappa.detail or {}
        flags.append(
            FlagRecord(
                "worker",
                subject,
                "intransitive",
                k,
                t.low_transitivity_kappa,
                {
                    "message": f"intraobserver kappa {k:.2f} (95% interval {kappa.low:.2f} to "
                    f"{high:.2f}): {detail.get('transitive')} of {triplets} fully judged "
                    "triplets are transitive; the whole interval lies below "
                    f"{t.low_transitivity_kappa:g}",
                    "n": triplets,
                    "interval": _interval(kappa),
                    "effective_triplets": detail.get("effective_triplets"),
                    "p_a": detail.get("p_a"),
                    "p_e": detail.get("p_e"),
                    "cycles": (detail.get("cycles") or [])[:10],
                },
            )
        )
    return flags


def holm(p: Sequence[float]) -> NDArray[np.float64]:
    """Holm's (1979) step-down adjusted p-values, in the order of ``p``: the family-wise error
    over every worker tested stays below the level a flag compares them with."""
    x = np.asarray(p, dtype=np.float64)
    m = x.size
    if not m:
        return x.copy()
    order = np.argsort(x, kind="stable")
    stepped = np.maximum.accumulate(x[order] * (m - np.arange(m)))
    out = np.empty(m)
    out[order] = np.minimum(stepped, 1.0)
    return out


def _tested(run: RunValues, metric: str, t: Thresholds) -> tuple[Table, list[int], NDArray]:
    """The workers of ``metric`` with at least ``min_judgments`` answers tested and their
    Holm-adjusted p-values."""
    table = run.table("worker", metric)
    rows, ps = [], []
    for i in range(len(table)):
        p = finite((table.detail(i) or {}).get("p_value"))
        if p is not None and int(table.n[i]) >= t.min_judgments and finite(table.values[i]):
            rows.append(i)
            ps.append(p)
    return table, rows, holm(ps)


def constant(run: RunValues, t: Thresholds) -> list[FlagRecord]:
    """Workers whose commonest answer is at least ``constant_share`` of their answers, far more
    often than the others' answers on the same questions give it (Holm-adjusted exact p below
    ``position_bias_p``): their answers do not depend on the question."""
    table, rows, adjusted = _tested(run, "constant_answer", t)
    flags = []
    m = len(rows)
    for i, q in zip(rows, adjusted.tolist(), strict=True):
        share, d = float(table.values[i]), table.detail(i) or {}
        if share < t.constant_share or q >= t.position_bias_p:
            continue
        n = int(table.n[i])
        expected = finite(d.get("expected"))
        others = f" (the others' answers give {expected / n:.0%})" if expected is not None else ""
        message = (
            f"answers {d.get('answer')!r} to {share:.0%} of {n} questions{others}: p = "
            f"{q:.2g} after Holm's correction over {m} workers"
        )
        flags.append(
            FlagRecord("worker", table.subjects[i], "constant", share, t.constant_share,
                       {"message": message, "n": n, "answer": d.get("answer"),
                        "count": d.get("count"), "expected": expected,
                        "p_value": d.get("p_value"), "p_adjusted": q, "tested": m,
                        "correction": "holm", "metric": "constant_answer"})
        )  # fmt: skip
    return flags


def position_bias(run: RunValues, t: Thresholds) -> list[FlagRecord]:
    """Annotators who pick one side at least ``position_bias_share`` of their strict answers
    where the other annotators' choices on the same pairs say otherwise (the exact test of
    ``side_test``, Holm-adjusted over the annotators tested, below ``position_bias_p``); or
    whose reliability model's position bias says so. The model's parameter is shrunk toward the
    crowd: it adds evidence, it never withholds a flag the test raises."""
    table, rows, adjusted = _tested(run, "side_test", t)
    model = _model_position(run, t)
    flags = []
    m = len(rows)
    seen = set()
    for i, q in zip(rows, adjusted.tolist(), strict=True):
        share, d = float(table.values[i]), table.detail(i) or {}
        top = max(share, 1 - share)
        subject = table.subjects[i]
        if top < t.position_bias_share or q >= t.position_bias_p:
            continue
        seen.add(subject)
        side = "left" if share >= 0.5 else "right"
        n = int(table.n[i])
        message = (
            f"picks the {side} item in {top:.0%} of {n} strict answers (the others' choices "
            f"on the same pairs give {(d.get('expected_left') or 0) / n:.0%} left): p = {q:.2g} "
            f"after Holm's correction over {m} annotators"
        )
        ev: dict[str, Any] = {"message": message, "n": n, "side": side, "share": top,
                              "left_share": share, "p_value": d.get("p_value"),
                              "p_adjusted": q, "tested": m, "correction": "holm",
                              "metric": "side_test"}  # fmt: skip
        if subject in model:
            ev["model"] = model[subject].evidence
        flags.append(FlagRecord("worker", subject, "position_bias", top,
                                t.position_bias_share, ev))  # fmt: skip
    flags += [f for s, f in model.items() if s not in seen]
    return sorted(flags, key=lambda f: f.subject)


def _model_position(run: RunValues, t: Thresholds) -> dict[str, FlagRecord]:
    """The position bias flags of the reliability model's parameter, by annotator."""
    if _model(run) is None:
        return {}
    table = run.table("worker", "model_position_bias")
    share_limit = float(np.log(t.position_bias_share / (1 - t.position_bias_share)))
    flags = {}
    for i, subject in enumerate(table.subjects):
        v = table.record(i)
        b, low, high = finite(v.value), finite(v.low), finite(v.high)
        n = int(v.n or 0)
        if b is None or low is None or high is None or n < t.min_judgments or high <= low:
            continue
        se = (high - low) / (2 * Z95)
        p = float(2 * stats.norm.sf(abs(b) / se))
        if p >= t.position_bias_p or abs(b) < share_limit:
            continue
        side = "left" if b > 0 else "right"
        share = float(1 / (1 + np.exp(-abs(b))))
        message = (
            f"picks the {side} of two equal items {share:.0%} of the time (position bias "
            f"{b:.2f} log-odds, 95% interval {low:.2f} to {high:.2f}, p = {p:.2g}) over {n} "
            "strict answers"
        )
        flags[subject] = _beyond(subject, "position_bias", v, t.position_bias_share, message,
                                 "model_position_bias", p_value=p, share=share, side=side)  # fmt: skip
    return flags
