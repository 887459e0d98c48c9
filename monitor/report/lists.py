"""The report's lists as tables (:mod:`monitor.report.tables`): workers, items, ambiguous
items and pairs, ranked items, decisions. Each shows its first rows and says how many more the
JSON document holds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from monitor.core.catalog import DECISIONS, Kind
from monitor.report.tables import (
    Cell,
    Column,
    Table,
    extra_column,
    fmt,
    fmt_ci,
    measure_cell,
    measure_columns,
    number_cell,
    sort_key,
    when,
)
from monitor.report.today import item_reason

VISIBLE = 25
"""Rows a table shows before "show all"."""
STATUS_LABEL = {
    "ok": "ok",
    "flagged": "flagged",
    "down_weighted": "down-weighted",
    "blocked": "blocked",
}
ACTION_BADGE = {
    "block": "blocked",
    "down_weight": "down_weighted",
    "clear": "ok",
    "suggest": "flagged",
}


def _id(text: Any) -> Cell:
    return Cell(str(text))


def _flags(rules: Sequence[str]) -> Cell:
    return Cell(" ".join(rules), badges=[("rule", r) for r in rules])


ITEM_COLUMNS = (
    Column("item", "Item", kind="id"),
    Column("text", "Text", kind="text"),
    Column("n_judgments", "Judgments"),
)
"""The first columns of a table of items: the item, its text, its judgments."""


def _item_cells(r: Mapping[str, Any], sub: str = "") -> list[Cell]:
    """The cells of :data:`ITEM_COLUMNS` for the item row ``r`` (``sub`` under the text)."""
    return [
        _id(r["item"]),
        Cell(str(r.get("text") or ""), sub=sub),
        number_cell(r.get("n_judgments")),
    ]


def _bars(answers: Mapping[str, Any] | None, width: int = 110) -> Cell:
    counts = sorted(
        ((str(k), int(v)) for k, v in (answers or {}).items() if isinstance(v, int | float)),
        key=lambda kv: -kv[1],
    )
    total = sum(n for _, n in counts) or 1
    return Cell(
        ", ".join(f"{k} {n}" for k, n in counts),
        bars=[(k, n, max(2, round(width * n / total))) for k, n in counts],
    )


DECISION_LABEL = {
    "block": "block",
    "stop": "stop",
    "down_weight": "down-weight",
    "watch": "look at",
    "cannot_tell": "cannot tell",
    "ok": "ok",
}


def worker_table(
    kind: str, rows: Sequence[dict[str, Any]], total: int, anchors: Mapping[str, str]
) -> Table:
    """Every worker shown: status, judgments, each measure the rows hold (the catalog's
    order, quality estimates first), transitivity, history, flags."""
    measures = measure_columns("worker", kind, rows, skip=("n_judgments",))
    kappa = any((r.get("transitivity") or {}).get("kappa") is not None for r in rows)
    history = any(r.get("history_text") for r in rows)
    cols = [
        Column("worker", "Worker", kind="id"),
        Column(
            "status",
            "Status",
            kind="badges",
            tip="status, then the latest run's decision and why (most severe first)",
        ),
        Column("n_judgments", "Judgments", tip="judgments counted by the latest run"),
        *measures,
        *([Column("transitivity", "Transitivity κ", tip="intraobserver kappa")] if kappa else []),
        *([Column("history", "History (platform)", kind="text")] if history else []),
        Column("flags", "Flags", kind="badges"),
    ]
    out = []
    for r in rows:
        status = str(r["status"])
        decision = str(r.get("decision") or "cannot_tell")
        weight = r.get("decision_weight") if decision in ("stop", "down_weight") else None
        subs = [f"weight {fmt(r.get('weight'))}"] if status == "down_weighted" else []
        if decision != "ok":
            line = DECISION_LABEL.get(decision, decision)
            if r.get("decision_reason"):
                line += f": {r['decision_reason']}"
            subs.append(line + (f" (weight {fmt(weight)})" if weight is not None else ""))
        severity = DECISIONS.index(decision) if decision in DECISIONS else len(DECISIONS)
        badge = Cell(
            STATUS_LABEL.get(status, status),
            sort=f"{severity} {status}",
            badges=[(status, STATUS_LABEL.get(status, status))],
            sub="; ".join(subs),
        )
        cells = [
            Cell(str(r["worker"]), href=anchors.get(r["worker"], "")),
            badge,
            number_cell(r.get("n_judgments")),
            *(measure_cell(r, c) for c in measures),
        ]
        if kappa:
            k = (r.get("transitivity") or {}).get("kappa")
            cells.append(number_cell(k))
        if history:
            cells.append(Cell(str(r.get("history_text") or "")))
        cells.append(_flags(r.get("flags") or []))
        out.append(cells)
    return Table("workers-table", cols, out, total, VISIBLE, "worker", [r["worker"] for r in rows])


def item_table(kind: str, rows: Sequence[dict[str, Any]], total: int) -> Table:
    """The items of lowest quality: text, judgments, each measure the rows hold, the model's
    answer, flags."""
    measures = measure_columns("item", kind, rows, skip=("n_judgments",))
    model = any(r.get("model_label") is not None for r in rows)
    cols = [
        *ITEM_COLUMNS,
        *measures,
        *([Column("model_label", "Model's answer", kind="text")] if model else []),
        Column("flags", "Flags", kind="badges"),
    ]
    out = []
    for r in rows:
        cells = [*_item_cells(r), *(measure_cell(r, c) for c in measures)]
        if model:
            # beside an ambiguous item a posterior of 1.00 would read as certainty: the
            # ambiguous items' table says why the answer is in doubt
            sure = "ambiguous" not in (r.get("flags") or [])
            sub = f"p {fmt(r.get('posterior'))}" if sure else "in doubt: see why above"
            label = r.get("model_label")
            cells.append(Cell(str(label), sub=sub) if label is not None else Cell("—"))
        cells.append(_flags(r.get("flags") or []))
        out.append(cells)
    return Table("items-table", cols, out, total, VISIBLE, "item", [r["item"] for r in rows])


def ambiguous_table(
    kind: str,
    rows: Sequence[dict[str, Any]],
    total: int,
    flags: Mapping[str, Mapping[str, Any]],
) -> Table:
    """The ambiguous items: why (in words), the answers as they split."""
    cols = [
        *ITEM_COLUMNS,
        Column("why", "Why it is ambiguous", kind="text"),
        Column("answers", "Answers", kind="bars"),
    ]
    out = []
    for r in rows:
        gold = r.get("gold")
        out.append(
            [
                *_item_cells(r, sub=f"gold: {gold}" if gold is not None else ""),
                Cell(item_reason(r, flags.get(str(r["item"])), kind)),
                _bars(r.get("answers")),
            ]
        )
    return Table(
        "ambiguous-table", cols, out, total, VISIBLE, "item", [r["item"] for r in rows], "ambiguous"
    )


def pair_table(
    pairs: Sequence[dict[str, Any]], ambiguous: set[tuple[str, str]], table_id: str, limit: int
) -> Table:
    """Pairs, the ambiguous first, then by UQS (lowest first) and judgments (most first)."""

    def key(p: dict[str, Any]) -> tuple:
        flagged = (p["left"], p["right"]) in ambiguous
        return (not flagged, p["uqs"] is None, p["uqs"] or 0.0, -(p["n_judgments"] or 0))

    ordered = sorted(pairs, key=key)
    cols = [
        Column("left", "Left", kind="id"),
        Column("right", "Right", kind="id"),
        Column("n_judgments", "Judgments"),
        Column("uqs", "UQS", tip="CrowdTruth unit quality of the pair"),
        Column("answers", "Outcome scores", kind="bars"),
        Column("flags", "Flags", kind="badges"),
    ]
    out, subjects = [], []
    for p in ordered[:limit]:
        subjects.append(f"{p['left']}\t{p['right']}")
        flagged = (p["left"], p["right"]) in ambiguous
        scores = {k: v for k, v in (p.get("uas") or {}).items() if isinstance(v, int | float)}
        bars = Cell(
            ", ".join(f"{k} {fmt(v)}" for k, v in scores.items()),
            bars=[(k, round(100 * v), max(2, round(110 * v))) for k, v in scores.items()],
        )
        out.append(
            [
                _id(p["left"]),
                _id(p["right"]),
                number_cell(p.get("n_judgments")),
                number_cell(p.get("uqs")),
                bars,
                _flags(["ambiguous"] if flagged else []),
            ]
        )
    return Table(table_id, cols, out, len(ordered), VISIBLE, "pair", subjects)


def score_table(
    rows: Sequence[dict[str, Any]], ranks: Sequence[tuple[int, int, bool]], total: int, few: int
) -> Table:
    """Compared items ranked by score, with the ranks their interval allows; an uncertain rank
    (:func:`monitor.report.items.uncertain_ranks`) or fewer than ``few`` comparisons is
    marked."""
    measures = measure_columns("item", Kind.PAIRWISE, rows, skip=("n_judgments",))
    cols = [
        Column("rank", "Rank", tip="by score; below it the ranks the 95% interval allows"),
        Column("item", "Item", kind="id"),
        Column("text", "Text", kind="text"),
        *measures,
        *extra_column(rows, "count_score", "Count score", "items it was preferred to", 1),
        Column("n_judgments", "Comparisons"),
        Column("note", "Note", kind="badges"),
    ]
    out = []
    for k, r in enumerate(rows):
        best, worst, uncertain = ranks[k] if k < len(ranks) else (k + 1, k + 1, False)
        notes = []
        if uncertain:
            notes.append(("warn", f"rank uncertain: anywhere in {best}–{worst}"))
        n = r.get("n_judgments")
        if n is not None and n < few:
            notes.append(("warn", f"only {n} comparisons"))
        cells = [
            Cell(str(k + 1), str(k + 1), sub=f"{best}–{worst}" if worst > best else ""),
            _id(r["item"]),
            Cell(str(r.get("text") or "")),
            *(measure_cell(r, c) for c in measures),
        ]
        if any(c.key == "count_score" for c in cols):
            cells.append(number_cell(r.get("count_score"), 1))
        cells += [
            number_cell(n),
            Cell(" ".join(t for _, t in notes), badges=notes),
        ]
        out.append(cells)
    return Table("scores-table", cols, out, total, VISIBLE, "item", [r["item"] for r in rows])


def decision_table(decisions: Sequence[dict[str, Any]], total: int) -> Table:
    cols = [
        Column("at", "When", kind="text"),
        Column("worker", "Worker", kind="id"),
        Column("action", "Action", kind="badges"),
        Column("by", "By", kind="text"),
        Column("reason", "Reason", kind="text"),
    ]
    out = []
    for d in decisions:
        action = str(d["action"])
        run = d.get("run_number")
        by = str(d.get("actor") or "")
        if d.get("automatic"):
            by += f" (automatic{f', run #{run}' if run else ''})"
        weight = d.get("weight")
        out.append(
            [
                Cell(when(d.get("at")), str(d.get("at") or "")),
                _id(d["worker"]),
                Cell(
                    action,
                    badges=[(ACTION_BADGE.get(action, "rule"), action.replace("_", " "))],
                    sub=f"weight {fmt(weight)}" if weight is not None else "",
                ),
                Cell(by),
                Cell(str(d.get("reason") or "")),
            ]
        )
    return Table("decisions-table", cols, out, total, 10)


def history_table(history: Sequence[dict[str, Any]], percent: bool = True) -> Table:
    """Alpha and its interval per run, and percent agreement where the scale supports it
    (``percent``: ``monitor.report.scale.hidden_for_scale``)."""
    cols = [
        Column("run", "Run"),
        Column("at", "Finished", kind="text"),
        Column("alpha", "Alpha"),
        Column("ci", "95% CI", kind="text"),
    ]
    if percent:
        cols.append(Column("pa", "Percent agreement"))
    out = []
    for h in reversed(history):
        number = h["number"]
        alpha, pa = h.get("krippendorff_alpha"), h.get("percent_agreement")
        row = [
            Cell(f"#{number}", sort_key(number)),
            Cell(when(h.get("at")), str(h.get("at") or "")),
            number_cell(alpha, 3),
            Cell(fmt_ci(h.get("krippendorff_alpha_ci"), 3)),
        ]
        if percent:
            row.append(number_cell(pa, 3))
        out.append(row)
    return Table("history-table", cols, out, len(out), 10)


__all__ = [
    "VISIBLE",
    "ambiguous_table",
    "decision_table",
    "history_table",
    "item_table",
    "pair_table",
    "score_table",
    "worker_table",
]
