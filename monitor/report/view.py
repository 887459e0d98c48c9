"""The HTML view model: the JSON document arranged for a reader who has a minute.

First what to do today (workers to block, down-weight or look at, each with the one-line
reason; items to send back for judgment), then the evidence (each flagged worker's flags and a
picture of their answers against the model's), then the campaign's agreement, and the lists,
each cut to its first rows with the full list in the JSON document.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from markupsafe import Markup

from monitor.core import catalog
from monitor.core.catalog import Kind
from monitor.report import charts, evidence, lists, scale
from monitor.report.agreement import agreement_rows, alpha_trend, design_line, model_line
from monitor.report.items import ItemPicks, rank_notes
from monitor.report.jsonsafe import natural_key
from monitor.report.runsettings import run_param, settings_changed
from monitor.report.tables import fmt
from monitor.report.titles import rule_title
from monitor.report.today import (
    ACTION_TITLES,
    DECISION_ACTION,
    by_importance,
    concern_order,
    flag_line,
    item_reason,
    worker_todo,
)

MAX_WORKERS = 100
"""Rows of the workers table beyond those to act on or look at (decided ``block``,
``down_weight`` or ``watch``: all shown, the most severe first): the workers decided
``cannot_tell``, then ``ok``, the worst model score first, fill it up to this many (a campaign of
single answers has thousands no one can judge; the page says how many more the JSON document
has)."""
DECISION_TITLES = {
    "block": "Block",
    "stop": "Stop",
    "down_weight": "Down-weight",
    "watch": "Look at",
    "cannot_tell": "Cannot tell",
    "ok": "",
}
MAX_ITEMS = 200
"""Items of lowest quality read for the items table (and the top scores of a ranking)."""
MAX_AMBIGUOUS = 50
MAX_CARDS = 30
"""Flagged workers with their evidence; the to-do list names every one."""
MAX_TODO_ITEMS = 10
MAX_BARS = 40
MAX_CYCLES = 3
MAX_PAIRS = 50
MAX_DECISIONS = 100


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


def history_text(history: Sequence[Mapping[str, Any]]) -> str:
    """``0.82 (2 campaigns)``: the worker's model (or gold) accuracy elsewhere on the platform,
    weighted by judgments; or the noise sd for raters."""
    acc: list[tuple[float, float]] = []
    sd: list[tuple[float, float]] = []
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
    ci = [i.get("score_interval") or [np.nan, np.nan] for i in scored]
    ranks = rank_notes(
        np.array([i["score"] for i in scored], dtype=float),
        np.array([c[0] for c in ci], dtype=float),
        np.array([c[1] for c in ci], dtype=float),
    )
    return ItemPicks(
        listed[:MAX_ITEMS],
        len(items),
        ambiguous[:MAX_AMBIGUOUS],
        len(ambiguous),
        scored[:MAX_ITEMS],
        len(scored),
        ranks[:MAX_ITEMS],
    )


def _flags_of(doc: Mapping[str, Any], scope: str) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for f in doc["flags"]:
        if f["scope"] == scope:
            out[f["subject"]].append(f)
    return out


def _flag_detail(f: Mapping[str, Any]) -> dict[str, Any]:
    ev = f["evidence"] or {}
    return {
        "rule": f["rule"],
        "title": rule_title(f["rule"]),
        "message": ev.get("message"),
        "value": f["value"],
        "threshold": f["threshold"],
        "interval": ev.get("interval"),
        "n": ev.get("n"),
        "campaign_median": ev.get("campaign_median"),
        "line": flag_line(f),
    }


QUALITY_GROUPS = (
    ("not flagged", charts.BLUE),
    ("flagged low quality", charts.RED),
    ("other flags", charts.AMBER),
)


def _quality_chart(doc: Mapping[str, Any], workers: list[dict[str, Any]]) -> Markup | None:
    """The workers' distribution on the measure their ``low_quality`` flags read (the
    reliability model's accuracy or noise sd; CrowdTruth's WQS where there is no model), each
    bar split by the flags actually raised."""
    low = [f for f in doc["flags"] if f["scope"] == "worker" and f["rule"] == "low_quality"]
    metric = next(((f["evidence"] or {}).get("metric") for f in low if f["evidence"]), None)
    if metric is None:
        measure = (doc.get("model") or {}).get("measure")
        metric = {"accuracy": "model_accuracy", "noise_sd": "model_noise_sd"}.get(
            str(measure), "wqs"
        )
    try:
        m = catalog.measure("worker", metric)
    except KeyError:
        return None
    key = m.key or metric
    shown = [w for w in workers if w.get(key) is not None]
    if not shown:
        return None
    groups = [1 if "low_quality" in w["flags"] else 2 if w["flags"] else 0 for w in shown]
    values: list[float] = [w[key] for w in shown]
    thresholds = {round(f["threshold"], 9) for f in low if f["threshold"] is not None}
    floor = (doc.get("model") or {}).get("floor")
    line = thresholds.pop() if len(thresholds) == 1 else None
    if line is None and not low and floor is not None and metric == "model_accuracy":
        line = floor
    hi = max(1.0, max(values)) if metric != "model_noise_sd" else max(values) * 1.05
    return charts.histogram(
        values,
        groups=groups,
        legend=QUALITY_GROUPS,
        title=f"Workers by {m.title or metric}",
        xlabel=m.title or metric,
        threshold=line,
        threshold_label="floor" if metric.startswith("model_") else "threshold",
        lo=0.0,
        hi=hi,
    )


def _kappa_bars(doc: Mapping[str, Any], workers: list[dict[str, Any]]) -> Markup | None:
    ranked = sorted(
        (w for w in workers if w["transitivity"] and w["transitivity"]["kappa"] is not None),
        key=lambda w: w["transitivity"]["kappa"],
    )[:MAX_BARS]
    if not ranked:
        return None
    return charts.bars(
        [w["worker"] for w in ranked],
        [w["transitivity"]["kappa"] for w in ranked],
        title="Transitivity kappa per annotator (lowest first)",
        threshold=run_param(doc, "low_transitivity_kappa"),
    )


def _cards(
    doc: Mapping[str, Any],
    order: list[str],
    flags: Mapping[str, list[dict[str, Any]]],
    anchors: Mapping[str, str],
    pictures: Mapping[str, Markup],
) -> list[dict[str, Any]]:
    rows = {w["worker"]: w for w in doc["workers"]}
    held = [w for w in doc["workers"] if w["status"] in ("blocked", "down_weighted")]
    shown = order + [w["worker"] for w in held if w["worker"] not in order]
    out = []
    for w in shown[:MAX_CARDS]:
        row = rows.get(w)
        if row is None:
            continue
        details = [_flag_detail(f) for f in by_importance(flags.get(w, []))]
        out.append(
            {
                **row,
                "anchor": anchors.get(w, ""),
                "advice": DECISION_TITLES.get(str(row.get("decision")), ""),
                "details": details,
                "picture": pictures.get(w),
            }
        )
    return out


def build_view(
    doc: Mapping[str, Any],
    items: ItemPicks | None = None,
    pictures: Mapping[str, Markup] | None = None,
    json_href: str | None = None,
) -> dict[str, Any]:
    """The template's context from the JSON document; ``items``: what it shows of the items
    (by default picked from the document's rows); ``pictures``: each worker's evidence
    picture; ``json_href``: where the JSON document lies beside the page, if it does."""
    kind = doc["campaign"]["kind"]
    pairwise = kind == Kind.PAIRWISE
    workers = doc["workers"]
    for w in workers:
        w["history_text"] = history_text(w.get("history") or [])
    worker_flags = _flags_of(doc, "worker")
    by_concern = concern_order(workers)
    order = [
        str(w["worker"])
        for w in by_concern
        if w.get("decision") in DECISION_ACTION or worker_flags.get(w["worker"])
    ]
    anchors = {w: f"w-{k + 1}" for k, w in enumerate(order)}
    act = [w for w in by_concern if w.get("decision") in DECISION_ACTION]
    rest = [w for w in by_concern if w.get("decision") not in DECISION_ACTION]
    shown = act + rest[: max(0, MAX_WORKERS - len(act))]
    picks = items if items is not None else picks_from_rows(doc["items"])
    drawn = dict(pictures or {})
    if pairwise:  # their cycles, from the document alone
        drawn.update(evidence.cycle_pictures(doc, order[:MAX_CARDS]))
    todo = worker_todo(by_concern, worker_flags, anchors)
    item_flags = {s: fs[0] for s, fs in _flags_of(doc, "item").items()}
    pair_flags = _flags_of(doc, "pair")
    ambiguous_pairs = {
        (s.partition("\t")[0], s.partition("\t")[2]) for s in pair_flags if "\t" in s
    }
    if pairwise:
        send_back = _pairs_to_send_back(pair_flags, doc.get("pairs", []))
        n_send_back = len(pair_flags)
    else:
        send_back = [
            {
                "subject": str(r["item"]),
                "reason": item_reason(r, item_flags.get(r["item"]), kind),
                "split": answer_split(r.get("answers")),
            }
            for r in picks.ambiguous[:MAX_TODO_ITEMS]
        ]
        n_send_back = picks.n_ambiguous
    view: dict[str, Any] = {
        "doc": doc,
        "c": doc["campaign"],
        "model": doc.get("model"),
        "verdict": doc["verdict"],
        "model_line": design_line(doc) if pairwise else model_line(doc, picks.n_ambiguous),
        "warnings": [{**w, "title": rule_title(w["rule"])} for w in doc["warnings"]],
        "agreement_rows": agreement_rows(doc),
        "todo": [(ACTION_TITLES[a], a, todo[a]) for a in todo if todo[a]],
        "live": doc.get("live"),
        "handled": {
            s: sum(1 for w in workers if w["status"] == s) for s in ("blocked", "down_weighted")
        },
        "send_back": send_back[:MAX_TODO_ITEMS],
        "n_send_back": n_send_back,
        "cards": _cards(doc, order, worker_flags, anchors, drawn),
        "n_flagged": len(order),
        "n_held": sum(1 for w in workers if w["status"] in ("blocked", "down_weighted")),
        "charts": {
            k: v
            for k, v in (
                ("quality", _quality_chart(doc, workers)),
                ("trend", alpha_trend(doc)),
                ("kappa", _kappa_bars(doc, workers) if pairwise else None),
            )
            if v is not None
        },
        "workers_table": lists.worker_table(kind, shown, len(workers), anchors),
        "history_table": lists.history_table(
            doc["history"], percent=scale.hidden_for_scale(doc) is None
        ),
        "decisions_table": lists.decision_table(
            doc["decisions"][:MAX_DECISIONS], len(doc["decisions"])
        ),
        "annotations": doc["annotations"],
        "pairwise": pairwise,
        "json_href": json_href,
        "settings_changed": settings_changed(doc),
    }
    if pairwise:
        view["pairs_table"] = lists.pair_table(
            doc.get("pairs", []), ambiguous_pairs, "pairs-table", MAX_PAIRS
        )
        view["scores_table"] = lists.score_table(
            picks.scored, picks.ranks, picks.n_scored, int(run_param(doc, "min_item_judgments"))
        )
        view["uncertain_top"] = sum(1 for _, _, uncertain in picks.ranks[:10] if uncertain)
        view["audit"] = _audit(workers)
    else:
        view["ambiguous_table"] = lists.ambiguous_table(
            kind, picks.ambiguous, picks.n_ambiguous, item_flags
        )
        view["items_table"] = lists.item_table(kind, picks.listed, picks.n_items)
    return view


def answer_split(answers: Mapping[str, Any] | None, most: int = 5) -> str:
    """How the judgments of an item split, the most given answer first (``a ×7, b ×5``; at most
    ``most`` answers, then ``…``)."""
    counts = sorted(
        ((str(k), int(v)) for k, v in (answers or {}).items() if isinstance(v, int | float)),
        key=lambda kv: (-kv[1], natural_key(kv[0])),
    )
    text = ", ".join(f"{k} ×{v}" for k, v in counts[:most])
    return text + (", …" if len(counts) > most else "")


def _pairs_to_send_back(
    pair_flags: Mapping[str, list[dict[str, Any]]], rows: Sequence[Mapping[str, Any]] = ()
) -> list[dict[str, str]]:
    """The ambiguous pairs, the least agreed first, with how the workers split (the pair's
    row: ``left 7, right 5, tie 2``)."""
    wins = {f"{r['left']}\t{r['right']}": r for r in rows}
    out = []
    for s, fs in sorted(pair_flags.items(), key=lambda kv: kv[1][0]["value"] or 0.0):
        left, _, right = s.partition("\t")
        ev = fs[0]["evidence"] or {}
        answers = ev.get("answers") or {}
        split = ", ".join(f"{k} {v}" for k, v in sorted(answers.items(), key=lambda kv: -kv[1]))
        reason = f"the workers split: {split}" if split else flag_line(fs[0])
        if not split and ev.get("against") is not None and ev.get("expected_against") is not None:
            reason = (
                f"{ev['against']} of {ev.get('n')} answers go against the order they support "
                f"best, where the annotators' reliability expects {ev['expected_against']:.1f}"
            )
        row = wins.get(s)
        shown = (
            f"left {row.get('left_wins', 0)}, right {row.get('right_wins', 0)}, "
            f"tie {row.get('ties', 0)}"
            if row is not None and "left_wins" in row
            else ""
        )
        out.append({"subject": f"{left} vs {right}", "reason": reason, "split": shown})
        if len(out) == MAX_TODO_ITEMS:
            break
    return out


def _audit(workers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    audit = sorted(
        (w for w in workers if w["transitivity"]),
        key=lambda w: (
            w["transitivity"]["kappa"] is None,
            w["transitivity"]["kappa"] if w["transitivity"]["kappa"] is not None else 0.0,
        ),
    )
    return [
        {
            **w,
            "cycle_views": [cycle_view(c) for c in w.get("cycles", [])[:MAX_CYCLES]],
            "cycles_more": max(0, len(w.get("cycles", [])) - MAX_CYCLES),
        }
        for w in audit[:MAX_WORKERS]
    ]


__all__ = [
    "build_view",
    "cycle_view",
    "fmt",
    "history_text",
    "picks_from_rows",
    "rule_title",
]
