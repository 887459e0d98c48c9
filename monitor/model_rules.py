"""Flags from the reliability model and gold: statistics, not ratios (pure rules).

- ``low_quality`` (worker): the interval on the model's accuracy lies entirely below the floor
  ``chance + quality_margin x (1 - chance)``, chance being what a random or constant answerer
  reaches on this campaign (labels, multi-label sets); for ratings, the interval on the worker's
  noise sd lies entirely above ``(1 - quality_margin) x`` the noise sd the same answers would
  have if they did not depend on the items (a random or constant answerer reaches it).
- ``biased`` (worker, ratings): the interval on the rater's bias lies beyond ``+- max_bias`` x
  the scale's width.
- ``gold_accuracy`` (worker): with at least ``min_gold_judgments`` gold answers, the upper end
  of the gold interval is below ``gold_floor`` (automatic: the gold chance level + margin).
- ``ambiguous`` (item): labels, the posterior of the most likely label is below
  ``1/K + ambiguous_posterior x (1 - 1/K)``, or the plain vote does not settle the item (its
  top count is tied, or the model's label overrules the majority); multi-label sets, the same with K = 2 on the least
  certain option; ratings, the model's chi-square test says the spread of the item's judgments
  (biases removed) exceeds what its workers' noise sd explains (``p < ambiguous_p``).
- ``model_not_converged`` (campaign): the model stopped at ``model_max_iter`` before
  converging; its ``low_quality`` and ``ambiguous`` flags are withheld (gold flags stay: they do
  not depend on it).

Every flag keeps its evidence: value, floor, interval, n, and a sentence saying why.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.results import Column, FlagRecord, Value
from monitor.settings import Settings

Index = dict[tuple[str, str], dict[str, Value]]
MODEL_NAMES = {
    "dawid_skene": "Dawid-Skene model",
    "rating_model": "rating model (bias + noise)",
    "multilabel_model": "multi-label model (Dawid-Skene per option)",
}


def _campaign(by: Index) -> tuple[str, dict[str, Value]] | None:
    return next(((s, m) for (sc, s), m in by.items() if sc == "campaign"), None)


def _num(v: Value | None) -> float | None:
    return None if v is None or v.value is None or not np.isfinite(v.value) else float(v.value)


def model_state(by: Index) -> tuple[bool, dict[str, Any]]:
    """(converged, detail of ``model_iterations``); (False, {}) without a model."""
    camp = _campaign(by)
    it = camp[1].get("model_iterations") if camp else None
    if it is None or it.value is None:
        return False, {}
    detail = dict(it.detail or {})
    return bool(detail.get("converged")), detail


def accuracy_floor(chance: float, margin: float) -> float:
    """``chance + margin x (1 - chance)``."""
    return chance + margin * (1.0 - chance)


def worker_rules(by: Index, settings: Settings) -> list[FlagRecord]:
    """``low_quality`` from the model (when it converged) and ``gold_accuracy``."""
    camp = _campaign(by)
    if camp is None:
        return []
    m = camp[1]
    workers = sorted((s, v) for (sc, s), v in by.items() if sc == "worker")
    flags: list[FlagRecord] = []
    converged, detail = model_state(by)
    chance_v = m.get("model_chance")
    chance = _num(chance_v)
    if converged and chance is not None and chance_v is not None:
        model = MODEL_NAMES.get(str(detail.get("model")), "reliability model")
        if (chance_v.detail or {}).get("measure") == "noise_sd":
            flags += _noisy_raters(workers, chance, settings, model)
            width = _num(m.get("model_scale_width"))
            if width:
                flags += _biased(workers, width, settings)
        else:
            flags += _inaccurate(workers, chance, settings, model)
    gold_chance = _num(m.get("gold_chance"))
    if gold_chance is not None or settings.gold_floor > 0:
        flags += _gold(workers, gold_chance, settings)
    return flags


def _interval(v: Value) -> list[float] | None:
    return [v.low, v.high] if v.low is not None and v.high is not None else None


def _inaccurate(
    workers: list[tuple[str, dict[str, Value]]], campaign_chance: float, settings: Settings,
    model: str,
) -> list[FlagRecord]:  # fmt: skip
    """Labellers whose accuracy interval lies below the floor. On skewed classes (the commonest
    class's prior above ``skewed_prior``) the floor is built on the worker's own chance, the
    accuracy of their answers shuffled across items: an honest worker with sensitivity 0.8 and
    specificity 0.86 on 0.9/0.1 classes (accuracy 0.85) is below the campaign's chance 0.9 but
    well above their own."""
    skewed = campaign_chance > settings.skewed_prior
    flags = []
    for subject, m in workers:
        v = m.get("model_accuracy")
        n = int(v.n or 0) if v is not None else 0
        if v is None or v.value is None or v.high is None or n < settings.min_judgments:
            continue
        own = _num(m.get("model_worker_chance")) if skewed else None
        chance = own if own is not None else campaign_chance
        floor = accuracy_floor(chance, settings.quality_margin)
        if v.high >= floor:
            continue
        flags.append(
            FlagRecord(
                "worker",
                subject,
                "low_quality",
                v.value,
                floor,
                {
                    "message": f"{model} accuracy {v.value:.2f} (95% interval {v.low:.2f} to "
                    f"{v.high:.2f}) over {n} judgments lies below the floor {floor:.2f}: "
                    f"chance {chance:.2f}, what a random or constant answerer reaches"
                    f"{' with these answers' if own is not None else ''}, + "
                    f"{settings.quality_margin:g} x (1 - chance)",
                    "n": n,
                    "interval": _interval(v),
                    "chance": chance,
                    "floor": floor,
                    "metric": "model_accuracy",
                },
            )
        )
    return flags


def _noisy_raters(
    workers: list[tuple[str, dict[str, Value]]], chance_sd: float, settings: Settings, model: str
) -> list[FlagRecord]:
    """Raters whose noise-sd interval lies above their own floor: ``(1 - margin)`` x the noise
    sd their answers would have if shuffled across their items (``model_chance_sd``), which a
    constant or random answerer reaches and an informative one does not."""
    flags = []
    for subject, m in workers:
        v = m.get("model_noise_sd")
        n = int(v.n or 0) if v is not None else 0
        if v is None or v.value is None or v.low is None or n < settings.min_judgments:
            continue
        own = _num(m.get("model_chance_sd"))
        chance = own if own is not None else chance_sd
        floor = (1.0 - settings.quality_margin) * chance
        if v.low <= floor:
            continue
        flags.append(
            FlagRecord(
                "worker",
                subject,
                "low_quality",
                v.value,
                floor,
                {
                    "message": f"{model} noise sd {v.value:.3g} (95% interval {v.low:.3g} to "
                    f"{v.high:.3g}) over {n} judgments lies above {floor:.3g}: "
                    f"{1 - settings.quality_margin:g} x {chance:.3g}, the noise sd these answers "
                    "would have if they did not depend on the items (a random or constant "
                    "answerer)",
                    "n": n,
                    "interval": _interval(v),
                    "chance": chance,
                    "floor": floor,
                    "metric": "model_noise_sd",
                },
            )
        )
    return flags


def _biased(
    workers: list[tuple[str, dict[str, Value]]], width: float, settings: Settings
) -> list[FlagRecord]:
    """Raters whose bias interval lies beyond +- ``max_bias`` x the scale's width. The model
    corrects a bias in its means; the flag says the rater reads the scale differently."""
    limit = settings.max_bias * width
    flags = []
    for subject, m in workers:
        v = m.get("model_bias")
        n = int(v.n or 0) if v is not None else 0
        if v is None or v.value is None or v.low is None or v.high is None:
            continue
        if n < settings.min_judgments or not (v.low > limit or v.high < -limit):
            continue
        side = "above" if v.value > 0 else "below"
        flags.append(
            FlagRecord(
                "worker",
                subject,
                "biased",
                v.value,
                limit if v.value > 0 else -limit,
                {
                    "message": f"rates {abs(v.value):.3g} {side} the other raters on average "
                    f"(95% interval {v.low:.3g} to {v.high:.3g}) over {n} judgments: beyond "
                    f"{settings.max_bias:g} x the scale's width ({limit:.3g}); the model's means "
                    "correct it",
                    "n": n,
                    "interval": _interval(v),
                    "floor": limit,
                    "metric": "model_bias",
                },
            )
        )
    return flags


def _gold(
    workers: list[tuple[str, dict[str, Value]]], chance: float | None, settings: Settings
) -> list[FlagRecord]:
    if settings.gold_floor > 0:
        floor, how = settings.gold_floor, "the gold_floor setting"
    else:
        assert chance is not None
        floor = accuracy_floor(chance, settings.quality_margin)
        how = (
            f"chance on these gold items {chance:.2f} + {settings.quality_margin:g} x (1 - chance)"
        )
    flags = []
    for subject, m in workers:
        v = m.get("gold_accuracy")
        n = int(v.n or 0) if v is not None else 0
        if v is None or v.value is None or v.high is None or n < settings.min_gold_judgments:
            continue
        if v.high >= floor:
            continue
        flags.append(
            FlagRecord(
                "worker",
                subject,
                "gold_accuracy",
                v.value,
                floor,
                {
                    "message": f"accuracy on gold {v.value:.2f} (95% interval {v.low:.2f} to "
                    f"{v.high:.2f}) over {n} gold answers lies below {floor:.2f} ({how})",
                    "n": n,
                    "interval": _interval(v),
                    "chance": chance,
                    "floor": floor,
                    "metric": "gold_accuracy",
                },
            )
        )
    return flags


def _item_table(
    by: Index, columns: Sequence[Column], metric: str
) -> tuple[list[str], NDArray[np.float64], NDArray[np.int64], Column | None]:
    """An item measure as arrays, whether stored as a column or as single values."""
    for c in columns:
        if c.scope == "item" and c.metric == metric:
            n = c.n if c.n is not None else np.zeros(len(c), dtype=np.int64)
            return c.subjects, c.values, n, c
    found = [(s, m[metric]) for (sc, s), m in sorted(by.items()) if sc == "item" and metric in m]
    subjects = [s for s, _ in found]
    values = np.array([np.nan if v.value is None else v.value for _, v in found], dtype=float)
    n = np.array([v.n or 0 for _, v in found], dtype=np.int64)
    col = Column("item", metric, subjects, values, n=n)
    return subjects, values, n, None if not found else col


def ambiguous_items(by: Index, columns: Sequence[Column], settings: Settings) -> list[FlagRecord]:
    """Items whose disagreement the model says is beyond its workers' noise."""
    converged, _ = model_state(by)
    camp = _campaign(by)
    if not converged or camp is None:
        return []
    chance_v = camp[1].get("model_chance")
    if chance_v is None:
        return []
    if (chance_v.detail or {}).get("measure") == "noise_sd":
        return _spread(by, columns, settings)
    return _posterior(by, columns, settings, int((chance_v.detail or {}).get("classes") or 2))


def _posterior(
    by: Index, columns: Sequence[Column], settings: Settings, k: int
) -> list[FlagRecord]:
    subjects, p, n, col = _item_table(by, columns, "model_label")
    if col is None:
        return []
    level = 1.0 / k + settings.ambiguous_posterior * (1.0 - 1.0 / k)
    disputed = _disputed(by, columns, subjects)
    with np.errstate(invalid="ignore"):
        uncertain = np.isfinite(p) & (p < level)
        hit = np.flatnonzero((n >= settings.min_item_judgments) & (uncertain | disputed))
    details = col.take(hit).details() if col.indptr is not None else [None] * hit.size
    by_item = {s: m.get("model_label") for (sc, s), m in by.items() if sc == "item"}
    flags = []
    for i, d in zip(hit.tolist(), details, strict=True):
        if d is None and by_item.get(subjects[i]) is not None:
            d = by_item[subjects[i]].detail  # type: ignore[union-attr]
        posterior = (d or {}).get("posterior") or {}
        best = max(posterior, key=posterior.get) if posterior else None  # type: ignore[arg-type]
        what = (
            "least certain option"
            if k == 2 and len(posterior) > 2
            else f"most likely label {best!r}"
        )
        if uncertain[i]:
            why = (
                f"posterior of the {what} is {p[i]:.2f} over {int(n[i])} judgments, below "
                f"{level:.2f} (1/{k} + {settings.ambiguous_posterior:g} x (1 - 1/{k})): the "
                "reliable workers disagree on it"
            )
        else:
            why = (
                f"the plain vote of its {int(n[i])} judgments is tied or picks another label "
                f"than the reliable workers' {best!r} (posterior {p[i]:.2f}): the majority "
                "label is not to be trusted here"
            )
        flags.append(
            FlagRecord(
                "item",
                subjects[i],
                "ambiguous",
                float(p[i]),
                level,
                {
                    "message": why,
                    "majority_disputed": bool(disputed[i]),
                    "n": int(n[i]),
                    "posterior": posterior,
                    "floor": level,
                    "metric": "model_label",
                },
            )
        )
    return flags


def _disputed(by: Index, columns: Sequence[Column], subjects: Sequence[str]) -> NDArray[np.bool_]:
    """``majority_disputed`` aligned with ``subjects`` (False where not stored)."""
    names, flag, _, _ = _item_table(by, columns, "majority_disputed")
    if not len(names):
        return np.zeros(len(subjects), dtype=bool)
    if list(names) == list(subjects):
        return flag == 1.0
    where = dict(zip(names, (flag == 1.0).tolist(), strict=True))
    return np.array([where.get(s, False) for s in subjects], dtype=bool)


def _spread(by: Index, columns: Sequence[Column], settings: Settings) -> list[FlagRecord]:
    """Ratings: the model's chi-square test of the item's bias-corrected judgments against its
    workers' noise (``model_spread_p``) below ``ambiguous_p``."""
    subjects, spread, n, col = _item_table(by, columns, "model_spread")
    if col is None or not len(subjects):
        return []
    p = _aligned(by, columns, "model_spread_p", subjects)
    expected = _aligned(by, columns, "model_expected_spread", subjects)
    with np.errstate(invalid="ignore"):
        judged = np.isfinite(p) & (n >= max(settings.min_item_judgments, 2))
        hit = np.flatnonzero(judged & (p < settings.ambiguous_p))
    return [
        FlagRecord(
            "item",
            subjects[i],
            "ambiguous",
            float(p[i]),
            settings.ambiguous_p,
            {
                "message": f"the judgments spread {spread[i]:.3g} (sd, the workers' biases "
                f"removed) over {int(n[i])} judgments, where the workers' noise explains "
                f"{expected[i]:.3g}: beyond it (chi-square test p = {p[i]:.2g} < "
                f"{settings.ambiguous_p:g})",
                "n": int(n[i]),
                "spread": float(spread[i]),
                "expected_spread": _or_none(expected[i]),
                "p_value": float(p[i]),
                "floor": settings.ambiguous_p,
                "metric": "model_spread_p",
            },
        )
        for i in hit.tolist()
    ]


def _or_none(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def _aligned(
    by: Index, columns: Sequence[Column], metric: str, subjects: list[str]
) -> NDArray[np.float64]:
    """An item measure in the order of ``subjects`` (NaN where missing)."""
    have, values, _, _ = _item_table(by, columns, metric)
    if have == subjects:
        return values
    where = {s: j for j, s in enumerate(have)}
    return np.array([values[where[s]] if s in where else np.nan for s in subjects])


def campaign_warnings(by: Index, settings: Settings) -> list[FlagRecord]:
    """``model_not_converged``: the model's flags are withheld, said in the run and report."""
    camp = _campaign(by)
    converged, detail = model_state(by)
    if camp is None or not detail or converged:
        return []
    it = camp[1]["model_iterations"]
    model = MODEL_NAMES.get(str(detail.get("model")), "reliability model")
    return [
        FlagRecord(
            "campaign",
            camp[0],
            "model_not_converged",
            it.value,
            float(settings.model_max_iter),
            {
                "message": f"the {model} did not converge in {int(it.value or 0)} iterations: "
                "its low_quality and ambiguous flags are withheld (raise model_max_iter, or look "
                "for workers or items that make the model unstable)",
                "model": detail.get("model"),
                "iterations": it.value,
            },
        )
    ]
