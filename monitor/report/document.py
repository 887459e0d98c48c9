"""The JSON document (CONTRACT.md section 4), built from the latest run in the store.

The contract's keys are never renamed; extra keys carry what the HTML report shows besides
(``verdict``, ``warnings``, ``run``, ``flags``, ``decisions``, ``history``, ``model``; per worker
the reliability model, gold and history on the platform, per item the model's answer). Undefined numbers
are ``None`` (JSON null), never NaN and never 0; ids are strings. This module assembles it:
the verdict is :mod:`monitor.report.verdict`'s, the worker rows :mod:`monitor.report.workerrows`',
the item rows :mod:`monitor.report.items`'.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, cast

from sqlalchemy.orm import Session

from monitor.core import catalog
from monitor.core.catalog import Kind
from monitor.report.data import CampaignData, load
from monitor.report.jsonsafe import clean, natural_key, num, value_count
from monitor.report.jsonsafe import value_interval as _interval
from monitor.report.jsonsafe import value_number as _v
from monitor.report.shape import (
    Agreement,
    Annotation,
    Document,
    Flag,
    HistoryRow,
    Model,
    ModelCheck,
    PairRow,
    Phi,
    Scope,
    WarningRow,
)
from monitor.report.today import document_todo
from monitor.report.verdict import export_verdict, state, verdict
from monitor.report.workerrows import worker_rows
from monitor.store.campaigns import CampaignInfo
from monitor.store.runs import FlagRecord


def _flag_dict(f: FlagRecord) -> Flag:
    return {
        "scope": cast(Scope, f.scope),
        "subject": f.subject,
        "rule": f.rule,
        "value": num(f.value),
        "threshold": num(f.threshold),
        "evidence": clean(f.evidence),
    }


def _scale_width(c: CampaignInfo) -> float | None:
    """A rating scale's width (None for other kinds or an open scale)."""
    if c.kind != Kind.RATING or c.scale_min is None or c.scale_max is None:
        return None
    return float(c.scale_max) - float(c.scale_min)


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
        "iterations": value_count(it),
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
                "n_judgments": value_count(nj),
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
                    "message": f"{what} stopped after {value_count(v)} iterations without "
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
            "n_workers": value_count(cv("n_workers")) if counts is None else counts.n_workers,
            "n_items": value_count(cv("n_items")) if counts is None else counts.n_items,
            "n_judgments": value_count(cv("n_judgments")) if counts is None else counts.n_judgments,
            "open": c.open,
            "strict": c.strict,
            "scale_min": c.scale_min,
            "scale_max": c.scale_max,
            "categories": list(c.categories) if c.categories is not None else None,
            "platform": c.platform,
        },
        "model": _model(data),
        "agreement": agreement,
        "workers": worker_rows(data),
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
        c.kind, cv("export_quality"), fallback=bool(fallback is not None and fallback.value),
        gold=cv("export_gold"),
        fallback_reason=str((fallback.detail or {}).get("message") or "") or None
        if fallback is not None else None,
    )  # fmt: skip
    doc["verdict"].update(
        state(doc["verdict"]["level"], doc["workers"], has_run=data.run is not None,
              kind=c.kind, name=c.name,
              gold=any(w.get("gold_n") for w in doc["workers"]),
              export=doc["verdict"]["export"], width=_scale_width(c))
    )  # fmt: skip
    savings, recollect = cv("stop_savings"), cv("stop_recollect")
    if savings is not None:
        doc["live"] = {
            "stopped": int(savings.n or 0),
            "saved": num(savings.value),
            "remaining": (savings.detail or {}).get("remaining"),
            "reopened_items": None if recollect is None else int(recollect.value or 0),
            "reopened_judgments": None if recollect is None else recollect.n,
        }
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


def build_worker_rows(session: Session, campaign_name: str) -> list[dict[str, Any]]:
    """The document's ``workers`` rows alone, read without the items' and pairs' values (a
    large campaign's most): what ``monitor workers`` shows, as :func:`build_document` has it."""
    return cast(list[dict[str, Any]], clean(worker_rows(load(session, campaign_name,
                                                               texts=False, items=False))))  # fmt: skip


__all__ = ["build_document", "build_worker_rows", "clean", "document_from", "natural_key"]
