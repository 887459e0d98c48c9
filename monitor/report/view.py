"""The HTML view model: the JSON document arranged for a reader (flagged first, evidence,
charts, truncated lists with counts)."""

from __future__ import annotations

import statistics
from typing import Any

from monitor import catalog
from monitor.report import charts
from monitor.report.items import ItemPicks
from monitor.settings import Settings

MAX_WORKERS = 300
MAX_ITEMS = 200
MAX_AMBIGUOUS = 50
MAX_BARS = 40
MAX_CYCLES = 5
MAX_PAIRS = 50
MAX_DECISIONS = 100

NOT_RULES = {
    "stale": "New judgments since the latest run",
    "no_run": "No metric run yet",
    "not_converged": "An iterative measure did not converge",
}
"""Titles of the report's warnings that are no rule of the catalog."""


def meaning(metric: str) -> tuple[str, str]:
    """(title, meaning) of a campaign measure, from the catalog."""
    m = catalog.measure("campaign", metric)
    return m.title, m.meaning


def rule_title(rule: str) -> str:
    """What a flag or warning says, in a few words."""
    return catalog.rule_title(rule) or NOT_RULES.get(rule) or rule.replace("_", " ")


SYMBOL = {"left": ">", "right": "<", "tie": "="}


def _judgment(j: Any) -> str:
    if isinstance(j, dict):
        left, right = j.get("left", "?"), j.get("right", "?")
        pref = j.get("preference", j.get("outcome"))
        if pref in SYMBOL:
            return f"{left} {SYMBOL[pref]} {right}"
        return ", ".join(f"{k}={v}" for k, v in j.items())
    if isinstance(j, int):
        return f"#{j}"
    return str(j)


def cycle_view(c: Any) -> dict[str, Any]:
    """A stored cycle as its three items, the relations that contradict each other and the
    judgments (ids or descriptions) that form it."""
    if isinstance(c, dict):
        items = c.get("items") or c.get("triplet") or []
        judgments = c.get("judgments") or []
        return {
            "triplet": " · ".join(str(i) for i in items) if isinstance(items, list) else str(items),
            "text": str(c["text"]) if c.get("text") else None,
            "judgments": [_judgment(j) for j in judgments] if isinstance(judgments, list) else [],
        }
    if isinstance(c, list | tuple):
        return {"triplet": " · ".join(str(i) for i in c), "text": None, "judgments": []}
    return {"triplet": str(c), "text": None, "judgments": []}


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _param(doc: dict[str, Any], key: str) -> float:
    params = (doc.get("run") or {}).get("parameters") or {}
    value = params.get(
        key,
        params.get("settings", {}).get(key) if isinstance(params.get("settings"), dict) else None,
    )
    try:
        return float(value) if value is not None else float(getattr(Settings(), key))
    except (TypeError, ValueError):
        return float(getattr(Settings(), key))


def _flag_rows(doc: dict[str, Any], scope: str) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for f in doc["flags"]:
        if f["scope"] != scope:
            continue
        ev = f["evidence"] or {}
        out.setdefault(f["subject"], []).append(
            {
                "rule": f["rule"],
                "title": rule_title(f["rule"]),
                "message": ev.get("message"),
                "value": f["value"],
                "threshold": f["threshold"],
                "interval": ev.get("interval"),
                "n": ev.get("n"),
                "campaign_median": ev.get("campaign_median"),
                "metric": ev.get("metric"),
            }
        )
    return out


def _agreement_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    a = doc["agreement"]
    rows = []
    for key, ci_key in (
        ("krippendorff_alpha", "krippendorff_alpha_ci"),
        ("percent_agreement", None),
        ("fleiss_kappa", "fleiss_kappa_ci"),
        ("cohen_kappa", "cohen_kappa_ci"),
        ("scott_pi", "scott_pi_ci"),
        ("transitivity_kappa", None),
    ):
        if key not in a:
            continue
        if key in ("cohen_kappa", "scott_pi") and a[key] is None:
            continue  # only defined for two-worker campaigns
        name, what = meaning(key)
        rows.append(
            {
                "name": name,
                "value": a[key],
                "ci": a.get(ci_key) if ci_key else None,
                "meaning": what,
            }
        )
    if a.get("phi"):
        name, what = meaning("phi")
        phi = a["phi"]
        extra = f" MAP {phi['map']:.3f}, method {phi['method']}." if phi["map"] is not None else ""
        rows.append({"name": name, "value": phi["mean"], "ci": phi["hpd"], "meaning": what + extra})
    return rows


def _charts(
    doc: dict[str, Any], workers: list[dict[str, Any]], wqs_threshold: float | None
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    wqs = [w["wqs"] for w in workers if w["wqs"] is not None]
    if wqs:
        out["wqs"] = charts.histogram(
            wqs,
            title="Distribution of worker quality (WQS)",
            xlabel="worker quality score (WQS); red: below the low-quality threshold",
            threshold=wqs_threshold,
            threshold_label="low quality <",
            lo=0.0,
            hi=1.0,
        )
    hist = [h for h in doc["history"] if h.get("krippendorff_alpha") is not None]
    if hist:
        out["trend"] = charts.trend(
            [
                (
                    f"#{h['number']}",
                    h["krippendorff_alpha"],
                    *(h.get("krippendorff_alpha_ci") or (None, None)),
                )
                for h in hist
            ],
            title="Krippendorff's alpha over runs",
        )
    if doc["campaign"]["kind"] == "pairwise":
        ranked = sorted(
            (w for w in workers if w["transitivity"] and w["transitivity"]["kappa"] is not None),
            key=lambda w: w["transitivity"]["kappa"],
        )[:MAX_BARS]
        if ranked:
            out["kappa"] = charts.bars(
                [w["worker"] for w in ranked],
                [w["transitivity"]["kappa"] for w in ranked],
                title="Transitivity kappa per annotator (lowest first)",
                threshold=_param(doc, "low_transitivity_kappa"),
            )
    return out


def history_text(history: list[dict[str, Any]]) -> str:
    """``0.82 (2 campaigns)``: the worker's model (or gold) accuracy elsewhere on the platform,
    weighted by judgments; or the noise sd for raters."""
    acc, sd = [], []
    for h in history:
        n = h.get("n_judgments") or 1
        for key, into in (("model_accuracy", acc), ("model_noise_sd", sd)):
            m = h.get(key)
            if m and m.get("value") is not None:
                into.append((m["value"], n))
    pick, label = (acc, "accuracy") if acc else (sd, "noise sd")
    if not pick:
        return f"{len(history)} campaign{'s' if len(history) != 1 else ''}" if history else ""
    mean = sum(v * n for v, n in pick) / sum(n for _, n in pick)
    k = len(history)
    return f"{label} {mean:.2f} in {k} other campaign{'s' if k != 1 else ''}"


def picks_from_rows(items: list[dict[str, Any]]) -> ItemPicks:
    """What the report shows of a document's item rows (see ``ItemTable.picks``)."""
    ambiguous = sorted(
        (i for i in items if "ambiguous" in i["flags"]),
        key=lambda i: i["uqs"] if i["uqs"] is not None else 2.0,
    )
    listed = sorted(items, key=lambda i: (i["uqs"] is None, i["uqs"] or 0.0))
    scored = sorted(
        (i for i in items if i["score"] is not None), key=lambda i: -(i["score"] or 0.0)
    )
    return ItemPicks(
        listed[:MAX_ITEMS],
        len(items),
        ambiguous[:MAX_AMBIGUOUS],
        len(ambiguous),
        scored[:MAX_ITEMS],
        len(scored),
    )


def build_view(doc: dict[str, Any], items: ItemPicks | None = None) -> dict[str, Any]:
    """The template's context from the JSON document; ``items``: what it shows of the items
    (by default picked from the document's rows)."""
    worker_flags = _flag_rows(doc, "worker")
    item_flags = _flag_rows(doc, "item")
    workers = doc["workers"]
    by_quality = sorted(
        workers,
        key=lambda w: (
            not (w["flags"] or w["status"] in ("blocked", "down_weighted")),
            w["wqs"] if w["wqs"] is not None else 2.0,
        ),
    )
    flagged = [
        {**w, "details": worker_flags.get(w["worker"], [])}
        for w in by_quality
        if w["flags"] or w["status"] in ("blocked", "down_weighted")
    ]
    median_wqs = _median([w["wqs"] for w in workers if w["wqs"] is not None])
    thresholds = [
        d["threshold"]
        for rows in worker_flags.values()
        for d in rows
        if d["rule"] == "low_quality" and d["threshold"] is not None and d["metric"] == "wqs"
    ]
    wqs_threshold = (
        thresholds[0]
        if thresholds
        else (_param(doc, "low_wqs_ratio") * median_wqs if median_wqs is not None else None)
    )
    picks = items if items is not None else picks_from_rows(doc["items"])
    for i in picks.ambiguous:
        i_answers = i["answers"] or {}
        total = sum(v for v in i_answers.values() if isinstance(v, int | float)) or 1
        i["distribution"] = sorted(
            ((str(k), v, v / total) for k, v in i_answers.items()), key=lambda t: -t[1]
        )
        i["details"] = item_flags.get(i["item"], [])
    pairwise = doc["campaign"]["kind"] == "pairwise"
    for w in workers:
        w["history_text"] = history_text(w.get("history") or [])
    view: dict[str, Any] = {
        "doc": doc,
        "c": doc["campaign"],
        "model": doc.get("model"),
        "verdict": doc["verdict"],
        "warnings": [{**w, "title": rule_title(w["rule"])} for w in doc["warnings"]],
        "agreement_rows": _agreement_rows(doc),
        "flagged": flagged[:MAX_WORKERS],
        "flagged_more": max(0, len(flagged) - MAX_WORKERS),
        "workers": by_quality[:MAX_WORKERS],
        "workers_more": max(0, len(workers) - MAX_WORKERS),
        "median_wqs": median_wqs,
        "wqs_threshold": wqs_threshold,
        "ambiguous": picks.ambiguous,
        "ambiguous_more": max(0, picks.n_ambiguous - MAX_AMBIGUOUS),
        "n_ambiguous": picks.n_ambiguous,
        "items": picks.listed,
        "items_more": max(0, picks.n_items - MAX_ITEMS),
        "items_total": picks.n_items,
        "annotations": doc["annotations"],
        "decisions": doc["decisions"][:MAX_DECISIONS],
        "decisions_more": max(0, len(doc["decisions"]) - MAX_DECISIONS),
        "charts": _charts(doc, workers, wqs_threshold),
        "pairwise": pairwise,
        "history": doc["history"],
    }
    if pairwise:
        audit = sorted(
            (w for w in workers if w["transitivity"]),
            key=lambda w: (
                w["transitivity"]["kappa"] is None,
                w["transitivity"]["kappa"] if w["transitivity"]["kappa"] is not None else 0.0,
            ),
        )
        view["audit"] = [
            {
                **w,
                "cycle_views": [cycle_view(c) for c in w.get("cycles", [])[:MAX_CYCLES]],
                "cycles_more": max(0, len(w.get("cycles", [])) - MAX_CYCLES),
            }
            for w in audit[:MAX_WORKERS]
        ]
        view["scores"] = picks.scored
        view["scores_more"] = max(0, picks.n_scored - MAX_ITEMS)
        pairs = sorted(doc.get("pairs", []), key=lambda p: (p["uqs"] is None, p["uqs"] or 0.0))
        view["pairs"] = pairs[:MAX_PAIRS]
        view["pairs_more"] = max(0, len(pairs) - MAX_PAIRS)
        view["n_pairs"] = len(pairs)
    return view


__all__ = ["build_view", "cycle_view", "meaning", "picks_from_rows", "rule_title"]
