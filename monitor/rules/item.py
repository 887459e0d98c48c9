"""Item and pair rules: ``ambiguous``, pure functions of a run's values and the thresholds.

- Labels: the posterior of the most likely label is below ``1/K + ambiguous_posterior x
  (1 - 1/K)``, or the plain vote does not settle the item (its top count is tied, or the model's
  label overrules the majority); multi-label sets, the same with K = 2 on the least certain
  option.
- Ratings: the model's chi-square test says the spread of the item's judgments (biases
  removed) exceeds what its workers' noise sd explains (``p < ambiguous_p``).
- Pairs (preference campaigns): the reliability model's test says neither order explains the
  split of the pair's strict answers (``q < ambiguous_p``), and the workers really divide on
  it: the 95% interval of the probability that an answer prefers its first item holds one half
  (a pair of 354 answers split 82/18 has a clear majority, however surprising its 18%).

The model's flags are withheld while it has not converged. Items need at least
``min_item_judgments`` judgments. An item whose answer is known (a gold value) is never
ambiguous, nor a pair of two such items (:func:`without_gold`): more judgments would not tell
anything new of it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

import numpy as np

from monitor.core.results import FlagRecord
from monitor.core.thresholds import Thresholds
from monitor.rules.values import RunValues, finite


def ambiguous_item(run: RunValues, t: Thresholds) -> list[FlagRecord]:
    """Items whose disagreement the model says is beyond its workers' noise."""
    converged, _ = run.model()
    chance = run.campaign("model_chance")
    if not converged or chance is None:
        return []
    detail = chance.detail or {}
    if detail.get("measure") == "noise_sd":
        return _spread(run, t)
    return _posterior(run, t, int(detail.get("classes") or 2))


def _posterior(run: RunValues, t: Thresholds, k: int) -> list[FlagRecord]:
    label = run.table("item", "model_label")
    if not len(label):
        return []
    p, n = label.values, label.n
    level = 1.0 / k + t.ambiguous_posterior * (1.0 - 1.0 / k)
    disputed = run.table("item", "majority_disputed").aligned(label.subjects) == 1.0
    with np.errstate(invalid="ignore"):
        uncertain = np.isfinite(p) & (p < level)
        hit = np.flatnonzero((n >= t.min_item_judgments) & (uncertain | disputed))
    flags = []
    for i, d in zip(hit.tolist(), label.details(hit.tolist()), strict=True):
        posterior: dict[str, Any] = (d or {}).get("posterior") or {}
        best = max(posterior, key=posterior.__getitem__) if posterior else None
        what = (
            "least certain option"
            if k == 2 and len(posterior) > 2
            else f"most likely label {best!r}"
        )
        if uncertain[i]:
            why = (
                f"posterior of the {what} is {p[i]:.2f} over {int(n[i])} judgments, below "
                f"{level:.2f} (1/{k} + {t.ambiguous_posterior:g} x (1 - 1/{k})): the "
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
                label.subjects[i],
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


def _spread(run: RunValues, t: Thresholds) -> list[FlagRecord]:
    """Ratings: the model's chi-square test of the item's bias-corrected judgments against its
    workers' noise (``model_spread_p``) below ``ambiguous_p``."""
    spread = run.table("item", "model_spread")
    if not len(spread):
        return []
    subjects, n = spread.subjects, spread.n
    p = run.table("item", "model_spread_p").aligned(subjects)
    expected = run.table("item", "model_expected_spread").aligned(subjects)
    with np.errstate(invalid="ignore"):
        judged = np.isfinite(p) & (n >= max(t.min_item_judgments, 2))
        hit = np.flatnonzero(judged & (p < t.ambiguous_p))
    return [
        FlagRecord(
            "item",
            subjects[i],
            "ambiguous",
            float(p[i]),
            t.ambiguous_p,
            {
                "message": f"the judgments spread {spread.values[i]:.3g} (sd, the workers' "
                f"biases removed) over {int(n[i])} judgments, where the workers' noise explains "
                f"{expected[i]:.3g}: beyond it (chi-square test p = {p[i]:.2g} < "
                f"{t.ambiguous_p:g})",
                "n": int(n[i]),
                "spread": float(spread.values[i]),
                "expected_spread": float(expected[i]) if np.isfinite(expected[i]) else None,
                "p_value": float(p[i]),
                "floor": t.ambiguous_p,
                "metric": "model_spread_p",
            },
        )
        for i in hit.tolist()
    ]


def ambiguous_pair(run: RunValues, t: Thresholds) -> list[FlagRecord]:
    """Pairs whose reliable annotators split beyond what their reliability explains: the
    reliability model's test that neither order explains the split gives a Benjamini-Hochberg
    q-value below ``ambiguous_p``."""
    converged, _ = run.model()
    if not converged:
        return []
    split = run.table("pair", "model_split_p")
    flags = []
    for i, subject in enumerate(split.subjects):
        v = split.record(i)
        detail = v.detail or {}
        q, n = finite(detail.get("q_value")), int(v.n or 0)
        if q is None or v.value is None or n < t.min_item_judgments or q >= t.ambiguous_p:
            continue
        interval = detail.get("first_interval")
        if interval is not None and not interval[0] <= 0.5 <= interval[1]:
            continue  # a clear majority: the workers do not divide on it
        flags.append(
            FlagRecord(
                "pair",
                subject,
                "ambiguous",
                q,
                t.ambiguous_p,
                {
                    "message": f"{detail.get('against')} of its {n} strict answers go against "
                    f"the order they support best, where the annotators' reliability expects "
                    f"{detail.get('expected_against', 0):.1f}: neither order explains the split "
                    f"(p = {v.value:.2g}, q = {q:.2g} over the campaign's pairs)"
                    + (
                        f"; the share preferring {detail.get('left')!r} is {interval[0]:.2f} to "
                        f"{interval[1]:.2f}: no clear majority"
                        if interval is not None
                        else ""
                    ),
                    "n": n,
                    "p_value": v.value,
                    "against": detail.get("against"),
                    "expected_against": detail.get("expected_against"),
                    "ties": detail.get("ties"),
                    "first_interval": interval,
                    "floor": t.ambiguous_p,
                    "metric": "model_split_p",
                },
            )
        )
    return flags


def without_gold(flags: Iterable[FlagRecord], gold: Collection[str]) -> list[FlagRecord]:
    """``flags`` less the ``ambiguous`` ones on an item of ``gold`` (the items with a gold
    value) or on a pair of two such items: their answer is known, none is to be sent back."""
    return [
        f
        for f in flags
        if not (
            f.rule == "ambiguous"
            and f.scope in ("item", "pair")
            and all(s in gold for s in f.subject.split("\t"))
        )
    ]
