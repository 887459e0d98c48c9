"""The campaign's verdict: what alpha says of the data, what the export is expected to be worth
and the campaign's state, the deliverable first (``verdict`` of the JSON document)."""

from __future__ import annotations

from typing import Any, cast

from monitor.core.catalog import Kind
from monitor.report.jsonsafe import value_interval as _interval
from monitor.report.jsonsafe import value_number as _v
from monitor.report.shape import (
    CampaignState,
    ExportQuality,
    Level,
    Reliability,
    State,
    WorkerRow,
)
from monitor.report.tables import pct
from monitor.store.runs import Value

RELIABLE, TENTATIVE = 0.8, 0.667


def _level(alpha: float) -> Level:
    """Krippendorff's level of an alpha (or of an end of its interval)."""
    return "reliable" if alpha >= RELIABLE else "tentative" if alpha >= TENTATIVE else "unreliable"


def verdict(alpha: float | None, ci: list[float] | None, reason: str | None = None) -> Reliability:
    """Is the data reliable? Krippendorff's conventions: >= 0.8 reliable, >= 0.667 tentative.
    Undetermined where alpha is undefined, with the run's ``reason`` when it gave one (alpha
    is not defined for multi-label sets: that is no lack of data)."""
    if alpha is None:
        text = (
            f"Krippendorff's alpha is {reason.rstrip('.')}."
            if reason
            else "Not enough data to judge reliability (Krippendorff's alpha is undefined)."
        )
        return {"level": "undetermined", "alpha": None, "ci": None, "text": text, "reason": reason}
    level = _level(alpha)
    text = {
        "reliable": "The data is reliable: alpha is at least 0.8.",
        "tentative": "Tentative: alpha is between 0.667 and 0.8; draw only tentative conclusions.",
        "unreliable": "Unreliable: alpha is below 0.667; single answers should not be trusted "
        "as is (the exports weigh them by the workers' reliability).",
    }[level]
    if ci is not None:
        lo_level, hi_level = _level(ci[0]), _level(ci[1])
        if lo_level != hi_level:
            text += f" The 95% interval spans {lo_level} to {hi_level}."
    return {"level": level, "alpha": alpha, "ci": ci, "text": text}


EXPORTS = {
    "label": "the reliability model's label per item",
    "multilabel": "the reliability model's set of options per item",
    "pairwise": "the ranking of the items by the reliability model's scores",
    "rating": "the reliability model's value per item",
}
"""What ``monitor export labels`` gives, by kind (:func:`monitor.actions.export.aggregate_labels`)."""


def export_verdict(
    kind: str,
    value: Value | None,
    *,
    fallback: bool = False,
    gold: Value | None = None,
    fallback_reason: str | None = None,
) -> ExportQuality | None:
    """What ``monitor export labels`` gives and how good it is, from the run's
    ``export_quality`` (None where the run stored none) and, where the campaign has enough
    gold, its ``export_gold``: the measure, its value and 95% interval, the items it counts,
    the ``basis`` of the figure and a sentence that says it first.

    On the crowd's basis ("The exported labels are expected to match what an unlimited crowd of
    these workers would answer on 93% [91%, 95%] of 800 items ...") the yardstick is the
    crowd's own, not an outside truth: errors the workers share (on hard items, or a truth the
    crowd cannot see) are invisible to it, so on real campaigns it is an upper bound on accuracy
    (``bench/calibration.py``). On gold ("On 80 gold items, each answered with its own gold
    withheld, the exported labels are right on 84% [74%, 90%] ...") it is measured, and the
    crowd-only figure stays beside it (``crowd``). ``fallback``: a rating campaign's export
    gives the plain mean (``method`` ``mean``, ``fallback_reason`` the held-out check's words)."""
    if value is None:
        return None
    d = value.detail or {}
    measure = d.get("measure") or ("mae" if kind == Kind.RATING else "accuracy")
    v, ci = _v(value), _interval(value)
    exports = EXPORTS.get(kind, EXPORTS["label"])
    mean = fallback and kind == Kind.RATING
    if mean:
        exports = "the plain mean per item (the rating model lost its held-out check)"
    text = _crowd_text(kind, measure, v, ci, value.n, d.get("reason"))
    if mean and v is not None and measure == "mae":
        text += " That is the model's expectation; the export gives the plain mean."
    out: dict[str, Any] = {"measure": measure, "value": v, "interval": ci, "n": value.n,
                           "exports": exports, "text": text, "basis": "crowd",
                           "method": "mean" if mean else "model"}  # fmt: skip
    if mean:
        out["method_reason"] = fallback_reason or "the rating model lost its held-out check"
    elif kind == Kind.RATING:
        out["method_reason"] = (
            "the rating model predicts held-out judgments better than the plain mean beyond its "
            "uncertainty"
        )
    g = _v(gold) if gold is not None else None
    if gold is not None and g is None:
        out["basis_reason"] = str((gold.detail or {}).get("reason") or "no gold to measure on")
        out["text"] += f" Not measured on gold: {out['basis_reason']}."
    elif gold is not None and g is not None:
        gci = _interval(gold)
        out["crowd"] = {"value": v, "interval": ci, "n": value.n}
        out.update(
            value=g,
            interval=gci,
            n=gold.n,
            basis="gold",
            text=_gold_text(kind, measure, g, gci, gold.n, v),
        )
    return cast(ExportQuality, out)


def _crowd_text(
    kind: str,
    measure: str,
    v: float | None,
    ci: list[float] | None,
    n: int | None,
    reason: str | None,
) -> str:
    """The crowd-only expectation in a sentence (:func:`export_verdict`)."""
    if v is None:
        return f"The expected quality of the export is undefined: {reason or 'no item'}."
    if measure == "pair_accuracy":
        return (f"The exported ranking is expected to order {pct(v)}"
                + (f" [{pct(ci[0])}, {pct(ci[1])}]" if ci else "")
                + f" of the pairs of its {n or 0:,} items as an unlimited crowd of these "
                "workers would (an upper bound: errors the workers share are invisible to "
                "it).")  # fmt: skip
    if measure == "mae":
        return (f"The exported values are expected to be off by {v:.3g}"
                + (f" [{ci[0]:.3g}, {ci[1]:.3g}]" if ci else "")
                + " on average from what an unlimited crowd of these workers would give (mean "
                f"absolute error over {n or 0:,} items; a bias the whole crowd shares is "
                "not in it).")  # fmt: skip
    what = "sets" if kind == Kind.MULTILABEL else "labels"
    return (f"The exported {what} are expected to match what an unlimited crowd of these "
            f"workers would answer on {pct(v)}"
            + (f" [{pct(ci[0])}, {pct(ci[1])}]" if ci else "")
            + f" of {n or 0:,} items (an upper bound on their accuracy: errors the "
            "workers share are invisible to it).")  # fmt: skip


def _gold_text(
    kind: str, measure: str, g: float, ci: list[float] | None, n: int | None, crowd: float | None
) -> str:
    """The figure measured on gold in a sentence, the crowd-only one after it."""
    on = f"On {n or 0:,} gold items, each answered with its own gold withheld, "
    if measure == "mae":
        text = (on + f"the exported values are off by {g:.3g}"
                + (f" [{ci[0]:.3g}, {ci[1]:.3g}]" if ci else "") + " on average.")  # fmt: skip
        crowd_words = "" if crowd is None else f"expected {crowd:.3g} against the crowd"
    else:
        what = "sets" if kind == Kind.MULTILABEL else "labels"
        text = (on + f"the exported {what} are right on {pct(g)}"
                + (f" [{pct(ci[0])}, {pct(ci[1])}]" if ci else "") + ".")  # fmt: skip
        crowd_words = "" if crowd is None else f"{pct(crowd)}, an upper bound"
    if crowd_words:
        text += f" (The crowd-only expectation: {crowd_words}.)"
    return text


EXPORT_USABLE = 0.8
"""An export expected to be right on less than this share of its items (labels, sets) or of its
items' pairs (a ranking) is poor: the campaign is ``unreliable`` whatever the crowd's agreement.
The expectation is an upper bound (errors the workers share are not in it), so an export under
the bar is poor for sure, and one over it usable with care, never more on its own."""
EXPORT_USABLE_ERROR = 0.1
"""Ratings: an export expected to be off by more than this share of the scale's width is poor."""


def export_usable(export: ExportQuality | None, width: float | None) -> bool | None:
    """Whether the export's expected quality clears the bar (:data:`EXPORT_USABLE`,
    :data:`EXPORT_USABLE_ERROR` of the scale's ``width`` for ratings); None where the run
    expects nothing (or a rating scale has no width).

    >>> export_usable({"measure": "accuracy", "value": 0.93}, None)
    True
    >>> export_usable({"measure": "mae", "value": 14.0}, 100.0)
    False
    """
    if export is None or export.get("value") is None:
        return None
    value = float(export["value"])  # type: ignore[arg-type]
    if export.get("measure") == "mae":
        return None if not width else value <= EXPORT_USABLE_ERROR * width
    return value >= EXPORT_USABLE


def _export_words(export: ExportQuality) -> str:
    """The export's figure in a few words, as the bound it is ("expected to be right on at most
    93% of its items", "expected to be off by at least 4.7 on average") or as measured on gold
    ("right on 84% of its gold items")."""
    value = float(export["value"])  # type: ignore[arg-type]
    measured = export.get("basis") == "gold"
    if export.get("measure") == "mae":
        if measured:
            return f"off by {value:.3g} on average on gold"
        return f"expected to be off by at least {value:.3g} on average"
    share = "pairs of items" if export.get("measure") == "pair_accuracy" else "items"
    if measured:
        return f"right on {pct(value)} of its gold {share}"
    return f"expected to be right on at most {pct(value)} of its {share}"


STATES = ("reliable", "usable_with_care", "unreliable", "cannot_tell")
CANNOT_TELL_SHARE = 0.5
"""A campaign whose workers decided ``cannot_tell`` gave at least this share of its judgments
cannot say who is good."""


def state(
    level: str,
    workers: list[WorkerRow],
    *,
    has_run: bool,
    kind: str,
    name: str,
    gold: bool = False,
    export: ExportQuality | None = None,
    width: float | None = None,
) -> CampaignState:
    """The campaign's state (``verdict.state``), the deliverable first: ``cannot_tell``
    without a run, where the workers decided ``cannot_tell`` gave at least half of the
    judgments, or where the design cannot say who is good (no unit judged twice, so alpha is
    undefined, and no gold: a consensus of single answers certifies nobody; multi-label sets,
    whose alpha is undefined by nature, excepted). Else ``unreliable`` when the export is poor
    (:func:`export_usable`, ``width`` the rating scale's); ``reliable`` when alpha is and no
    worker is decided ``block`` or ``down_weight``; ``usable_with_care`` when alpha is
    tentative or undetermined, some worker is to be acted on, or alpha is low but the export,
    which weighs the workers by their reliability, clears its bar; ``unreliable`` when alpha is
    low and no expectation of the export says otherwise. With ``state_text`` and, for
    ``cannot_tell``, ``to_tell``: what would tell."""
    if kind == Kind.PAIRWISE:
        tell = [
            f"plan pairs judged again and gold pairs: monitor pairs plan --campaign {name} "
            "--budget N --out FILE --retest 0.1 --gold 0.1",
            f"or ingest gold orders: monitor ingest --items gold.csv --campaign {name}",
        ]
    else:
        tell = [
            f"add gold items (a gold answer for some items): monitor ingest --items gold.csv "
            f"--campaign {name}, then monitor recompute",
            "or more judgments per worker and per item",
        ]
    if not has_run:
        return {"state": "cannot_tell", "state_text": "No metric run yet: nothing says who is "
                "good.", "to_tell": [f"monitor recompute --campaign {name}"]}  # fmt: skip
    total = sum(w.get("n_judgments") or 0 for w in workers)
    unknown = sum(w.get("n_judgments") or 0 for w in workers if w["decision"] == "cannot_tell")
    if total == 0 or unknown >= CANNOT_TELL_SHARE * total:
        return {
            "state": "cannot_tell",
            "state_text": f"Cannot tell who is good: the workers judged so gave {unknown:,} of "
            f"the {total:,} judgments (too few answers each, or nothing to compare them with).",
            "to_tell": tell,
        }
    if level == "undetermined" and kind != Kind.MULTILABEL and not gold:
        return {
            "state": "cannot_tell",
            "state_text": "Cannot tell who is good: no "
            + ("pair" if kind == Kind.PAIRWISE else "item")
            + " was judged twice and there is no gold, so nothing checks the consensus the "
            "workers are measured against.",
            "to_tell": tell,
        }
    acted = sum(1 for w in workers if w["decision"] in ("block", "down_weight"))
    usable = export_usable(export, width)
    workers_text = f"{acted} worker{'s' if acted != 1 else ''} to block or down-weight"
    if usable is False and export is not None:
        return {
            "state": "unreliable",
            "state_text": f"Unreliable: the export is {_export_words(export)}"
            + (f" ({workers_text} first)" if acted else "")
            + "; more judgments per item, or better workers, are needed.",
        }
    out: State
    if level == "reliable" and not acted:
        out = "reliable"
    elif level in ("reliable", "tentative", "undetermined") or usable:
        out = "usable_with_care"
    else:
        out = "unreliable"
    if out == "usable_with_care" and level == "unreliable" and export is not None:
        text = (
            "Usable with care: single answers agree little, but the export, which weighs the "
            f"workers by their reliability, is {_export_words(export)}"
            + (
                " (measured on gold it did not learn from)"
                if export.get("basis") == "gold"
                else " (an upper bound: check a sample against answers you know)"
            )
            + (f"; {workers_text}" if acted else "")
            + "."
        )
    else:
        text = {
            "reliable": "Reliable: agreement is high and no worker needs acting on.",
            "usable_with_care": "Usable with care: "
            + ", and ".join(
                ([workers_text] if acted else [])
                + ([] if level == "reliable" else ["agreement is only tentative or undetermined"])
            )
            + ".",
            "unreliable": "Unreliable: agreement is low; the answers should not be trusted as is.",
        }[out]
    return {"state": out, "state_text": text}


__all__ = [
    "CANNOT_TELL_SHARE",
    "EXPORTS",
    "EXPORT_USABLE",
    "EXPORT_USABLE_ERROR",
    "RELIABLE",
    "STATES",
    "TENTATIVE",
    "export_usable",
    "export_verdict",
    "state",
    "verdict",
]
