"""What to do today: the workers to block, down-weight or look at, as each one's decision
says (:mod:`monitor.rules.decision`), with its one-line reason, and the items to send back for
more judgments.

:func:`advice` reads a worker's flags alone (the evidence pictures are fetched in its order
before the rest of the report is read). It follows what a flag says: ``low_quality`` and ``gold_accuracy`` flags that compare
the worker with chance (their evidence has a ``chance``: the reliability model's floor, or the
gold questions') say the answers are no better than a random or constant answerer's: they carry
no information, so the advice is to block. The other flags the automatic policy acts on
(disagreement with the others, speed, cycles, position bias, and a quality below the campaign's
median where there is no model) say the answers are worth less, not worthless: down-weight. A
flag the policy does not act on (``biased``: a rater who reads the scale shifted, which a model
corrects) asks for a look.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from monitor.core import catalog
from monitor.core.catalog import Kind
from monitor.report.shape import Todo as TodoEntry
from monitor.report.shape import WorkerAction
from monitor.report.tables import fmt, fmt_ci
from monitor.report.titles import rule_title

BLOCK_RULES = ("low_quality", "gold_accuracy")
"""Rules whose flags, when they compare with chance, say the answers carry no information."""
ACTIONS = ("block", "stop", "down_weight", "review")
ACTION_TITLES = {
    "block": "Block",
    "stop": "Stop (no more tasks)",
    "down_weight": "Down-weight",
    "review": "Look at",
}

Flag = Mapping[str, Any]
"""A flag as the JSON document has it (``rule``, ``value``, ``threshold``, ``evidence``)."""


def _blocks(flag: Flag) -> bool:
    return flag["rule"] in BLOCK_RULES and (flag.get("evidence") or {}).get("chance") is not None


def advice(flags: Iterable[Flag]) -> str:
    """``block``, ``down_weight`` or ``review`` for a worker flagged so."""
    flags = list(flags)
    if any(_blocks(f) for f in flags):
        return "block"
    if any(f["rule"] in catalog.POLICY_RULES for f in flags):
        return "down_weight"
    return "review"


def _rank(flag: Flag) -> tuple[int, int, str]:
    """Flags that say "no better than chance" first (the model's before gold's), then those
    the policy acts on, then the others."""
    rule = str(flag["rule"])
    if _blocks(flag):
        return (0, BLOCK_RULES.index(rule), rule)
    return (1 if rule in catalog.POLICY_RULES else 2, 0, rule)


def by_importance(flags: Iterable[Flag]) -> list[Flag]:
    """A worker's flags, the one that decides the advice first."""
    return sorted(flags, key=_rank)


def worker_order(flags: Mapping[str, Sequence[Flag]]) -> list[str]:
    """Flagged workers, the most pressing first: by advice, then by number of flags, then by
    id. Read from the flags alone, so the pictures can be fetched before the rest is read."""
    from monitor.report.jsonsafe import natural_key

    def key(w: str) -> tuple:
        return (ACTIONS.index(advice(flags[w])), -len(flags[w]), natural_key(w))

    return sorted((w for w in flags if flags[w]), key=key)


def _metric_title(metric: Any) -> str | None:
    if not isinstance(metric, str):
        return None
    for scope in ("worker", "item"):
        try:
            m = catalog.measure(scope, metric)
        except (KeyError, ValueError):
            continue
        return m.title or metric.replace("_", " ")
    return None


def flag_line(flag: Mapping[str, Any]) -> str:
    """One line for a flag: what the rule says, then its number against the threshold
    (``Noise sd 2.61 [2.18, 3.23] above 1.53``), or the flag's own short message."""
    ev = flag.get("evidence") or {}
    title = rule_title(str(flag["rule"]))
    value, threshold = flag.get("value"), flag.get("threshold")
    name = _metric_title(ev.get("metric"))
    if name is not None and value is not None:
        text = f"{name} {fmt(value)}"
        if ev.get("interval"):
            text += f" {fmt_ci(ev['interval'])}"
        if threshold is not None:
            text += f" {'below' if value < threshold else 'above'} {fmt(threshold)}"
        return f"{title}: {text}"
    message = str(ev.get("message") or "")
    if message and len(message) <= 90:
        return f"{title}: {message}"
    return title


@dataclass
class Todo:
    """One line of the to-do list."""

    subject: str
    action: WorkerAction
    reason: str
    also: list[str]
    anchor: str
    rules: list[str]


DECISION_ACTION: dict[str, WorkerAction] = {
    "block": "block",
    "stop": "stop",
    "down_weight": "down_weight",
    "watch": "review",
}
"""The to-do list's group of each decision that asks for something."""


def _score(row: Mapping[str, Any]) -> float:
    """The worker's model score, the worst first: accuracy ascending, noise sd descending."""
    if row.get("model_noise_sd") is not None:
        return -float(row["model_noise_sd"])
    for key in ("model_accuracy", "gold_accuracy"):
        if row.get(key) is not None:
            return float(row[key])
    return float("inf")


def concern_order(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The workers' rows by decision, the most severe first (block, down_weight, watch,
    cannot_tell, ok), then by model score from the worst, then by id."""
    from monitor.report.jsonsafe import natural_key

    def key(r: Mapping[str, Any]) -> tuple:
        d = str(r.get("decision"))
        severity = catalog.DECISIONS.index(d) if d in catalog.DECISIONS else len(catalog.DECISIONS)
        return (severity, _score(r), natural_key(str(r["worker"])))

    return sorted(rows, key=key)


def worker_todo(
    rows: Sequence[Mapping[str, Any]],
    flags: Mapping[str, Sequence[Flag]],
    anchors: Mapping[str, str],
) -> dict[str, list[Todo]]:
    """The workers still to act on, by their decision (``block``, ``down_weight``; ``watch``
    under ``review``), in the order of ``rows``; the reason is the decision's. A worker already
    in the state the decision asks for is not listed again."""
    out: dict[str, list[Todo]] = {a: [] for a in ACTIONS}
    for row in rows:
        w, decision, status = str(row["worker"]), row.get("decision"), row.get("status")
        action = DECISION_ACTION.get(str(decision))
        if action is None or status == "blocked":
            continue
        if decision == "down_weight" and status == "down_weighted":
            continue
        wflags = by_importance(flags.get(w, []))
        also = [rule_title(str(f["rule"])).lower() for f in wflags]
        rules = sorted({str(f["rule"]) for f in wflags})
        reason = str(row.get("decision_reason") or "")
        if decision == "down_weight" and row.get("decision_weight") is not None:
            reason += f" (weight {fmt(row['decision_weight'])})"
        out[action].append(Todo(w, action, reason, also, anchors.get(w, ""), rules))
    return out


def _top(counts: Mapping[str, Any] | None) -> list[tuple[str, float]]:
    pairs = [(str(k), float(v)) for k, v in (counts or {}).items() if isinstance(v, int | float)]
    return sorted(pairs, key=lambda kv: -kv[1])


def item_reason(row: Mapping[str, Any], flag: Mapping[str, Any] | None, kind: str = "") -> str:
    """Why an item is ambiguous, in words a reader checks against the answers: the plain vote
    against the reliable workers' answer (labels), the option the model cannot settle
    (multi-label), the spread against the noise (ratings), the split of outcomes (pairs)."""
    ev = (flag or {}).get("evidence") or {}
    answers = _top(row.get("answers") or ev.get("answers"))
    posterior = ev.get("posterior") or row.get("posteriors") or {}
    if ev.get("majority_disputed"):
        model = row.get("model_label") or (
            max(posterior, key=lambda k: posterior[k]) if posterior else ""
        )
        tied = [k for k, v in answers if answers and v == answers[0][1]]
        vote = (
            f"the plain vote is tied between {' and '.join(repr(t) for t in tied)}"
            if len(tied) > 1
            else f"the plain vote says {tied[0]!r}"
            if tied
            else "the plain vote disagrees"
        )
        return f"{vote}; the reliable workers say {model!r}"
    if ev.get("metric") == "model_label" and posterior and kind == Kind.MULTILABEL:
        option, p = min(posterior.items(), key=lambda kv: max(kv[1], 1 - kv[1]))
        return (
            f"the model cannot tell whether {option!r} applies (probability {p:.2f}): "
            "the reliable workers split on it"
        )
    if ev.get("metric") == "model_label" and posterior:
        top = sorted(posterior.items(), key=lambda kv: -kv[1])
        second = f", then {top[1][0]!r} {top[1][1]:.2f}" if len(top) > 1 else ""
        return (
            f"the reliable workers lean to {top[0][0]!r} with probability {top[0][1]:.2f} "
            f"only{second}"
        )
    if ev.get("spread") is not None and ev.get("expected_spread") is not None:
        return (
            f"the ratings spread {fmt(ev['spread'])} where the workers' noise explains "
            f"{fmt(ev['expected_spread'])} (p = {ev.get('p_value', 0):.2g})"
        )
    if answers:
        split = ", ".join(f"{k} {int(v)}" for k, v in answers)
        return f"the workers split: {split}"
    return str(ev.get("message") or "the reliable workers disagree")


def _natural(s: str) -> tuple:
    from monitor.report.jsonsafe import natural_key

    return natural_key(s)


def _by_value(flags: Iterable[Flag]) -> list[Flag]:
    """Ambiguous flags, the least settled first (the flag's value: a posterior, a p- or
    q-value), then by subject."""
    return sorted(
        (f for f in flags if f["rule"] == "ambiguous"),
        key=lambda f: (f["value"] if f["value"] is not None else 2.0, _natural(f["subject"])),
    )


def document_todo(
    doc: Mapping[str, Any], item_rows: Iterable[Mapping[str, Any]] | None = None
) -> list[TodoEntry]:
    """The JSON document's ``todo``: what the page's "what to do today" lists. The workers to
    act on by their decision (``block``, ``down_weight``, then ``review`` for ``watch``), each
    with its ``worker``, ``reason`` and ``rules``; then the items (``item``) or pairs (``pair``:
    [left, right]) to ``send_back``, the least settled first, each with its ``reason`` and how
    its judgments split (``answers``; a pair's ``left_wins``, ``right_wins``, ``ties``).
    ``item_rows``: the document rows of (at least) the flagged items, when ``doc`` lists none."""
    kind = doc["campaign"]["kind"]
    worker_flags: dict[str, list[Flag]] = {}
    for f in doc["flags"]:
        if f["scope"] == "worker":
            worker_flags.setdefault(str(f["subject"]), []).append(f)
    todo = worker_todo(concern_order(list(doc["workers"])), worker_flags, {})
    out: list[TodoEntry] = [
        {"action": t.action, "worker": t.subject, "reason": t.reason, "rules": t.rules}
        for a in ACTIONS
        for t in todo[a]
    ]
    if kind == Kind.PAIRWISE:
        pairs = {f"{p['left']}\t{p['right']}": p for p in doc.get("pairs") or []}
        for f in _by_value(f for f in doc["flags"] if f["scope"] == "pair"):
            left, _, right = str(f["subject"]).partition("\t")
            row = pairs.get(str(f["subject"])) or {}
            out.append(
                {
                    "action": "send_back",
                    "pair": [left, right],
                    "reason": str((f.get("evidence") or {}).get("message") or flag_line(f)),
                    "left_wins": row.get("left_wins"),
                    "right_wins": row.get("right_wins"),
                    "ties": row.get("ties"),
                }
            )
        return out
    rows = doc.get("items") or [] if item_rows is None else item_rows
    items = {str(i["item"]): i for i in rows}
    for f in _by_value(f for f in doc["flags"] if f["scope"] == "item"):
        row = items.get(str(f["subject"])) or {}
        out.append(
            {
                "action": "send_back",
                "item": str(f["subject"]),
                "reason": item_reason(row, f, kind),
                "answers": row.get("answers") or (f.get("evidence") or {}).get("answers"),
            }
        )
    return out


__all__ = [
    "ACTIONS",
    "ACTION_TITLES",
    "BLOCK_RULES",
    "Todo",
    "advice",
    "by_importance",
    "concern_order",
    "document_todo",
    "flag_line",
    "item_reason",
    "worker_order",
    "worker_todo",
]
