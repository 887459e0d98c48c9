"""The JSON document (CONTRACT.md section 4), built from the latest run in the store.

The contract's keys are never renamed; extra keys carry what the HTML report shows besides
(``verdict``, ``warnings``, ``run``, ``flags``, ``decisions``, ``history``, ``model``; per worker
the reliability model, gold and history on the platform, per item the model's answer). Undefined numbers
are ``None`` (JSON null), never NaN and never 0; ids are strings.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, cast

from sqlalchemy.orm import Session

from monitor.core import catalog
from monitor.core.catalog import Kind
from monitor.report.data import CampaignData, load
from monitor.report.jsonsafe import clean, natural_key, num
from monitor.report.jsonsafe import value_interval as _interval
from monitor.report.jsonsafe import value_number as _v
from monitor.report.shape import (
    Agreement,
    Annotation,
    CampaignState,
    DecisionFields,
    Document,
    ExportQuality,
    Flag,
    HistoryRow,
    Level,
    Model,
    ModelCheck,
    PairRow,
    Phi,
    Reliability,
    Scope,
    State,
    Transitivity,
    WarningRow,
    WorkerRow,
)
from monitor.report.today import document_todo
from monitor.store.campaigns import CampaignInfo
from monitor.store.runs import FlagRecord, Value

P_E = {False: 13 / 27, True: 6 / 8}
RELIABLE, TENTATIVE = 0.8, 0.667


def _count(value: Value | None) -> int | None:
    v = _v(value)
    return int(v) if v is not None else None


def _flag_dict(f: FlagRecord) -> Flag:
    return {
        "scope": cast(Scope, f.scope),
        "subject": f.subject,
        "rule": f.rule,
        "value": num(f.value),
        "threshold": num(f.threshold),
        "evidence": clean(f.evidence),
    }


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
    level: Level = (
        "reliable" if alpha >= RELIABLE else "tentative" if alpha >= TENTATIVE else "unreliable"
    )
    text = {
        "reliable": "The data is reliable: alpha is at least 0.8.",
        "tentative": "Tentative: alpha is between 0.667 and 0.8; draw only tentative conclusions.",
        "unreliable": "Unreliable: alpha is below 0.667; single answers should not be trusted "
        "as is (the exports weigh them by the workers' reliability).",
    }[level]
    if ci is not None:
        lo_level = (
            "reliable" if ci[0] >= RELIABLE else "tentative" if ci[0] >= TENTATIVE else "unreliable"
        )
        hi_level = (
            "reliable" if ci[1] >= RELIABLE else "tentative" if ci[1] >= TENTATIVE else "unreliable"
        )
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


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def export_verdict(
    kind: str, value: Value | None, *, fallback: bool = False
) -> ExportQuality | None:
    """What ``monitor export labels`` gives and how good it is expected to be, from the run's
    ``export_quality`` (None where the run stored none): the measure, its value and 95%
    interval, the items it counts, and a sentence that says it first ("The exported labels are
    expected to match what an unlimited crowd of these workers would answer on 93% [91%, 95%]
    of 800 items ..."). The yardstick is the crowd's own, not an outside truth: errors the
    workers share (on hard items, or a truth the crowd cannot see) are invisible to it, so on
    real campaigns it is an upper bound on accuracy (``bench/calibration.py``)."""
    if value is None:
        return None
    d = value.detail or {}
    measure = d.get("measure") or ("mae" if kind == Kind.RATING else "accuracy")
    v, ci = _v(value), _interval(value)
    exports = EXPORTS.get(kind, EXPORTS["label"])
    if fallback and kind == Kind.RATING:
        exports = "the plain mean per item (the rating model lost its held-out check)"
    if v is None:
        text = f"The expected quality of the export is undefined: {d.get('reason') or 'no item'}."
    elif measure == "pair_accuracy":
        text = (f"The exported ranking is expected to order {_pct(v)}"
                + (f" [{_pct(ci[0])}, {_pct(ci[1])}]" if ci else "")
                + f" of the pairs of its {value.n or 0:,} items as an unlimited crowd of these "
                "workers would (an upper bound: errors the workers share are invisible to "
                "it).")  # fmt: skip
    elif measure == "mae":
        text = (f"The exported values are expected to be off by {v:.3g}"
                + (f" [{ci[0]:.3g}, {ci[1]:.3g}]" if ci else "")
                + " on average from what an unlimited crowd of these workers would give (mean "
                f"absolute error over {value.n or 0:,} items; a bias the whole crowd shares is "
                "not in it).")  # fmt: skip
        if fallback:
            text += " That is the model's expectation; the export gives the plain mean."
    else:
        what = "sets" if kind == Kind.MULTILABEL else "labels"
        text = (f"The exported {what} are expected to match what an unlimited crowd of these "
                f"workers would answer on {_pct(v)}"
                + (f" [{_pct(ci[0])}, {_pct(ci[1])}]" if ci else "")
                + f" of {value.n or 0:,} items (an upper bound on their accuracy: errors the "
                "workers share are invisible to it).")  # fmt: skip
    out = {"measure": measure, "value": v, "interval": ci, "n": value.n, "exports": exports,
           "text": text}  # fmt: skip
    return cast(ExportQuality, out)


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
    """The export's expectation in a few words, as the bound it is ("right on at most 93% of
    its items", "off by at least 4.7 on average")."""
    value = float(export["value"])  # type: ignore[arg-type]
    if export.get("measure") == "mae":
        return f"off by at least {value:.3g} on average"
    share = "pairs of items" if export.get("measure") == "pair_accuracy" else "items"
    return f"right on at most {_pct(value)} of its {share}"


def _scale_width(c: CampaignInfo) -> float | None:
    """A rating scale's width (None for other kinds or an open scale)."""
    if c.kind != Kind.RATING or c.scale_min is None or c.scale_max is None:
        return None
    return float(c.scale_max) - float(c.scale_min)


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
            "state_text": f"Unreliable: the export is expected to be {_export_words(export)}"
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
            f"workers by their reliability, is expected to be {_export_words(export)} (an upper "
            "bound: check a sample against answers you know)"
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


def _agreement(data: CampaignData) -> Agreement:
    cv = data.campaign_value
    alpha = cv("krippendorff_alpha")
    phi_value = cv("phi")
    phi: Phi | None = None
    if data.campaign.kind == Kind.RATING and phi_value is not None:
        detail = phi_value.detail or {}
        phi = {
            "map": num(detail.get("map")),
            "mean": _v(phi_value),
            "hpd": _interval(phi_value),
            "method": detail.get("method"),
        }
    out: dict[str, Any] = {
        "percent_agreement": _v(cv("percent_agreement")),
        "krippendorff_alpha": _v(alpha),
        "krippendorff_alpha_ci": _interval(alpha),
        "fleiss_kappa": _v(cv("fleiss_kappa")),
        "cohen_kappa": _v(cv("cohen_kappa")),
        "scott_pi": _v(cv("scott_pi")),
        "phi": phi,
        "level": (alpha.detail or {}).get("level", data.campaign.level)
        if alpha
        else data.campaign.level,
        "fleiss_kappa_ci": _interval(cv("fleiss_kappa")),
        "cohen_kappa_ci": _interval(cv("cohen_kappa")),
        "scott_pi_ci": _interval(cv("scott_pi")),
    }
    if data.campaign.kind == Kind.PAIRWISE:
        out["transitivity_kappa"] = _v(cv("transitivity_kappa"))
    # Every campaign-level number of the run (alpha at each level, pooled agreement, ...),
    # with its interval and detail, for those who want more than the headline.
    out["measures"] = {
        metric: {"value": _v(v), "interval": _interval(v), "n": v.n, **(v.detail or {})}
        for (scope, metric), by in sorted(data.values.items())
        if scope == "campaign" and (v := by.get(data.campaign.name)) is not None
    }
    return cast(Agreement, out)  # the pairwise campaigns' key in its place


def _transitivity(data: CampaignData, worker: str) -> Transitivity | None:
    if data.campaign.kind != Kind.PAIRWISE:
        return None
    v = data.get("worker", "transitivity_kappa", worker)
    d = (v.detail or {}) if v is not None else {}
    triplets = d.get("triplets", v.n if v is not None else 0)
    return {
        "kappa": _v(v),
        "p_a": num(d.get("p_a")),
        "p_e": num(d.get("p_e")) if d.get("p_e") is not None else P_E[data.campaign.strict],
        "triplets": int(triplets or 0),
        "transitive": int(d.get("transitive") or 0),
    }


WORKER_KEYS = tuple(
    (m.name, m.key, m.shows_interval) for m in catalog.measures("worker") if m.key is not None
)
"""The worker measures of the document's rows, by the catalog: (metric, key, with interval)."""


def _workers(data: CampaignData) -> list[WorkerRow]:
    states = {w.external_id: w for w in data.workers}
    flags = data.flags_of("worker")
    subjects = set(states) | data.subjects("worker")
    pairwise = data.campaign.kind == Kind.PAIRWISE
    out: list[WorkerRow] = []
    for w in sorted(subjects, key=natural_key):
        state = states.get(w)
        rules = sorted({f.rule for f in flags.get(w, [])})
        status = state.status if state is not None else "ok"
        if status == "ok" and rules:
            status = "flagged"
        row: dict[str, Any] = {"worker": str(w)}
        for metric, key, interval in WORKER_KEYS:
            v = data.get("worker", metric, w)
            row[key] = _v(v)
            if interval:
                row[f"{key}_interval"] = _interval(v)
        n = _count(data.get("worker", "n_judgments", w))
        if n is None and state is not None and data.run is None:
            n = state.n_judgments
        pos = data.get("worker", "position_bias", w)
        gold = data.get("worker", "gold_accuracy", w)
        row.update(_decision(data, w, n))
        row.update(
            n_judgments=n,
            transitivity=_transitivity(data, w),
            flags=rules,
            status=status,
            weight=state.weight if state is not None else 1.0,
            position_bias_p=num((pos.detail or {}).get("p_value")) if pos else None,
            gold_n=gold.n if gold is not None else None,
            **_worker_history(data, w, flags.get(w, [])),
        )
        if pairwise:
            tk = data.get("worker", "transitivity_kappa", w)
            row["cycles"] = clean((tk.detail or {}).get("cycles") or []) if tk else []
        out.append(cast(WorkerRow, row))  # its measure keys are the catalog's
    return out


def _decision(data: CampaignData, w: str, n: int | None) -> DecisionFields:
    """The run's decision for the worker (:mod:`monitor.rules.decision`): ``decision``,
    ``decision_reason`` (one line fit to show the worker), ``decision_weight`` and
    ``decision_evidence``. Without a run, or for a worker the run did not see, ``cannot_tell``."""
    v = data.get("worker", "decision", w)
    d = (v.detail or {}) if v is not None else {}
    if not d.get("decision"):
        why = "no metric run yet" if data.run is None else "the latest run made no decision"
        return {"decision": "cannot_tell", "decision_reason": why, "decision_weight": None,
                "decision_evidence": None}  # fmt: skip
    return {
        "decision": d["decision"],
        "decision_reason": d.get("reason") or "",
        "decision_weight": num(d.get("weight")),
        "decision_evidence": clean(d.get("evidence")),
    }


def _worker_history(data: CampaignData, w: str, flags: list[FlagRecord]) -> dict[str, Any]:
    """A worker's reliability-model and gold numbers in the platform's other campaigns, and,
    for each flag, why in words."""
    history = [
        {
            "campaign": e.campaign,
            "kind": e.kind,
            "run": e.run_id,
            **{m: _measure(e.measures.get(m)) for m in catalog.HISTORY if m != "n_judgments"},
            "n_judgments": _measure(e.measures.get("n_judgments"), value_only=True),
        }
        for e in data.worker_history.get(w, [])
    ]
    return {
        "history": history,
        "evidence": [
            {"rule": f.rule, "message": str(f.evidence.get("message") or f.rule)}
            for f in sorted(flags, key=lambda f: f.rule)
        ],
    }


def _measure(m: Any, value_only: bool = False) -> Any:
    if m is None:
        return None
    if value_only:
        return num(m.value)
    lo, hi = num(m.low), num(m.high)
    return {"value": num(m.value), "interval": [lo, hi] if lo is not None and hi is not None
            else None, "n": m.n}  # fmt: skip


def _model(data: CampaignData) -> Model | None:
    """The campaign's reliability model: which, whether it converged, its chance level."""
    it = data.campaign_value("model_iterations")
    if it is None:
        return None
    detail = it.detail or {}
    chance = data.campaign_value("model_chance")
    gold = data.campaign_value("gold_chance")
    fallback = data.campaign_value("model_fallback")
    return {
        "name": detail.get("model"),
        "converged": detail.get("converged"),
        "iterations": _count(it),
        "chance": _v(chance),
        "measure": (chance.detail or {}).get("measure") if chance is not None else None,
        "floor": num((chance.detail or {}).get("floor")) if chance is not None else None,
        "gold_chance": _v(gold),
        "gold_items": gold.n if gold is not None else None,
        "fallback": bool(fallback.value) if fallback is not None and fallback.value else False,
        "check": _check(fallback),
    }


def _check(fallback: Any) -> ModelCheck | None:
    """The held-out check behind ``fallback`` (ratings): each aggregate's mean squared error on
    the held-out judgments, the standard error of their difference, how many were held out."""
    detail = (fallback.detail or {}) if fallback is not None else {}
    if detail.get("model_mse") is None:
        return None
    return {"model_mse": num(detail["model_mse"]), "plain_mse": num(detail.get("plain_mse")),
            "diff_se": num(detail.get("diff_se")), "n": detail.get("n"),
            "folds": detail.get("folds")}  # fmt: skip


def _annotations(data: CampaignData) -> list[Annotation]:
    aqs = data.metric("annotation", "aqs")
    if not data.campaign.open and aqs:
        return [{"annotation": str(a), "aqs": _v(aqs[a])} for a in sorted(aqs, key=natural_key)]
    names = data.subjects("annotation")
    if not names:
        names = data.items.annotation_names()
    if data.campaign.open:
        return [{"annotation": a} for a in sorted(names, key=natural_key)]
    return [{"annotation": a, "aqs": None} for a in sorted(names, key=natural_key)]


def _pairs(data: CampaignData) -> list[PairRow]:
    """Each pair's row: its items, judgments, UQS and UAS, its split (``left_wins``,
    ``right_wins``, ``ties``: the answers as given, each pair in its stored order) and the
    rules that flagged it in the latest run."""
    flags: dict[str, list[str]] = defaultdict(list)
    for f in data.flags:
        if f.scope == "pair" and f.rule not in flags[f.subject]:
            flags[f.subject].append(f.rule)
    out: list[PairRow] = []
    for p in sorted(data.subjects("pair"), key=natural_key):
        nj = data.get("pair", "n_judgments", p)
        answers = ((nj.detail if nj is not None else None) or {}).get("answers") or {}
        uas = data.get("pair", "uas", p)
        detail = next(
            (v.detail for v in (nj, uas, data.get("pair", "uqs", p)) if v and v.detail), {}
        )
        left, _, right = p.partition("\t")
        out.append(
            {
                "left": str(detail.get("left", left)),
                "right": str(detail.get("right", right)),
                "n_judgments": _count(nj),
                "uqs": _v(data.get("pair", "uqs", p)),
                "uas": clean((uas.detail or {}).get("scores")) if uas is not None else None,
                "left_wins": int(answers.get("left", 0)),
                "right_wins": int(answers.get("right", 0)),
                "ties": int(answers.get("tie", 0)),
                "flags": sorted(flags.get(p, [])),
            }
        )
    return out


def _warnings(data: CampaignData) -> list[WarningRow]:
    out: list[WarningRow] = []
    if data.run is None:
        out.append(
            {
                "rule": "no_run",
                "message": "No metric run yet: run 'monitor recompute' to compute the measures.",
            }
        )
    elif data.max_id > data.run.watermark:
        out.append(
            {
                "rule": "stale",
                "message": "Judgments arrived after the latest run; they are not counted here "
                "(run 'monitor recompute').",
            }
        )
    for m in catalog.measures("campaign", converges=True):
        metric, what = m.name, m.title
        v = data.campaign_value(metric)
        if v is not None and (v.detail or {}).get("converged") is False:
            out.append(
                {
                    "rule": "not_converged",
                    "message": f"{what} stopped after {_count(v)} iterations without "
                    "converging: its numbers are those of the last iteration and may move "
                    "from run to run.",
                    "value": num(v.value),
                    "evidence": clean({"metric": metric, **(v.detail or {})}),
                }
            )
    for f in data.flags:
        if f.scope == "campaign":
            out.append(
                {
                    "rule": f.rule,
                    "message": str(f.evidence.get("message") or f.rule.replace("_", " ")),
                    "value": num(f.value),
                    "threshold": num(f.threshold),
                    "evidence": clean(f.evidence),
                }
            )
    return out


def _history(data: CampaignData) -> list[HistoryRow]:
    rows: dict[int, dict[str, Any]] = {}
    for metric, series in data.history.items():
        for run, v in series:
            row = rows.setdefault(
                run.id,
                {
                    "run": run.id,
                    "number": run.number,
                    "at": (run.finished_at or run.started_at).isoformat(),
                },
            )
            row[metric] = _v(v)
            row[f"{metric}_ci"] = _interval(v)
    return [cast(HistoryRow, rows[k]) for k in sorted(rows)]  # and its measures by name


def document_from(data: CampaignData, *, items: bool = True) -> Document:
    """The document of already loaded campaign data. Without ``items`` its ``items`` list is
    left empty: the JSON writer streams it from ``data.items``, the HTML view picks from it."""
    c = data.campaign
    cv = data.campaign_value
    counts = data.counts if data.run is None else None
    agreement = _agreement(data)
    doc: dict[str, Any] = {
        "campaign": {
            "name": c.name,
            "kind": c.kind,
            "level": c.level,
            "n_workers": _count(cv("n_workers")) if counts is None else counts.n_workers,
            "n_items": _count(cv("n_items")) if counts is None else counts.n_items,
            "n_judgments": _count(cv("n_judgments")) if counts is None else counts.n_judgments,
            "open": c.open,
            "strict": c.strict,
            "scale_min": c.scale_min,
            "scale_max": c.scale_max,
            "categories": list(c.categories) if c.categories is not None else None,
            "platform": c.platform,
        },
        "model": _model(data),
        "agreement": agreement,
        "workers": _workers(data),
        "items": [],
        "annotations": _annotations(data),
        "verdict": verdict(
            agreement["krippendorff_alpha"],
            agreement["krippendorff_alpha_ci"],
            (agreement["measures"].get("krippendorff_alpha") or {}).get("reason"),
        ),
        "warnings": _warnings(data),
        "flags": [],
        "run": None,
        "history": _history(data),
        "decisions": [
            {
                "worker": d.worker,
                "action": d.action,
                "weight": num(d.weight),
                "reason": d.reason,
                "automatic": d.automatic,
                "actor": d.actor,
                "run_id": d.run_id,
                "run_number": d.run_number,
                "evidence": clean(d.evidence),
                "at": d.created_at.isoformat(),
            }
            for d in data.decisions
        ],
    }
    fallback = cv("model_fallback")
    doc["verdict"]["export"] = export_verdict(
        c.kind, cv("export_quality"), fallback=bool(fallback is not None and fallback.value)
    )
    doc["verdict"].update(
        state(doc["verdict"]["level"], doc["workers"], has_run=data.run is not None,
              kind=c.kind, name=c.name,
              gold=any(w.get("gold_n") for w in doc["workers"]),
              export=doc["verdict"]["export"], width=_scale_width(c))
    )  # fmt: skip
    if c.kind == Kind.PAIRWISE:
        doc["pairs"] = _pairs(data)
    if data.run is not None:
        r = data.run
        doc["run"] = {
            "id": r.id,
            "number": r.number,
            "finished_at": r.finished_at.isoformat() if r.finished_at else None,
            "watermark": r.watermark,
            "full": r.full,
            "n_judgments": r.n_judgments,
            "n_new": r.n_new,
            "seconds": num(r.seconds),
            "code_version": r.code_version,
            "parameters": clean(r.parameters),
            "stale": data.max_id > r.watermark,
        }
    # Items and flags are built JSON-safe: cleaning them again would cost most of the build.
    doc = clean(doc)
    if items:
        doc["items"] = data.items.rows(range(len(data.items)))
    doc["flags"] = [_flag_dict(f) for f in data.flags]
    flagged = [p for p, rules in data.items.flags.items() if "ambiguous" in rules]
    doc["todo"] = document_todo(doc, doc["items"] if items else data.items.reason_rows(flagged))
    return cast(Document, doc)


def build_document(session: Session, campaign_name: str, *, items: bool = True) -> Document:
    """The JSON document of a campaign (CONTRACT.md section 4) from its latest run (without
    ``items``, its ``items`` list left empty)."""
    return document_from(load(session, campaign_name, texts=items), items=items)


__all__ = ["build_document", "clean", "document_from", "export_verdict", "natural_key", "verdict"]
