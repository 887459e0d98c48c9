"""Each flagged worker's answers against the model's, drawn beside their flags.

The answers are the only thing the HTML report reads beyond the run's values: the judgments of
the first :data:`MAX_PICTURES` flagged workers (in the order the page lists them). Without an
index on the judgments' workers that read scans the campaign's judgments, so it runs in a
thread of its own, on its own connection, while the rest of the report is read (the database
and the driver release the GIL); it reads up to the run's watermark, so it sees what the run
saw whatever arrives meanwhile.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
from markupsafe import Markup
from sqlalchemy import Engine

from monitor.core.catalog import Kind
from monitor.report import pictures
from monitor.report.items import ItemTable
from monitor.report.today import worker_order
from monitor.store.answers import Answers, worker_answers
from monitor.store.campaigns import get_campaign
from monitor.store.engine import session_factory
from monitor.store.runs import latest_run, run_flags

MAX_PICTURES = 20
"""Flagged workers drawn (the first in the page's order); the others have their numbers."""
WINDOW = 50_000
"""The pictures are drawn from the campaign's latest judgments, this many at most: exact
for most campaigns, and a read of bounded cost for the largest (their latest answers)."""
MAX_POINTS = 250
"""Points of a rater's scatter: evenly spaced among their answers beyond that."""
MAX_CATEGORIES = 8
"""Rows and columns of a confusion matrix; the rarer labels are pooled as "other"."""


@dataclass(frozen=True)
class Fetched:
    """The answers read for a run's first flagged workers."""

    run_id: int
    answers: Answers
    windowed: bool = False
    """The answers are those among the campaign's latest :data:`WINDOW` judgments only."""


def fetch(engine: Engine, campaign: str, limit: int = MAX_PICTURES) -> Fetched | None:
    """The answers of the first ``limit`` flagged workers of the campaign's latest run (None
    for a preference campaign, whose evidence is its cycles, or without a run)."""
    with session_factory(engine)() as session:
        c = get_campaign(session, campaign)
        run = latest_run(session, c.id)
        if c.kind == Kind.PAIRWISE or run is None:
            return None
        flags: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for f in run_flags(session, run.id, "worker"):
            flags[f.subject].append({"rule": f.rule, "evidence": f.evidence})
        workers = worker_order(flags)[:limit]
        answers = worker_answers(session, c, workers, run.watermark, WINDOW)
        return Fetched(run.id, answers, min(WINDOW, run.n_judgments) < run.n_judgments)


def fetch_in_background(engine: Engine, campaign: str) -> Callable[[], Fetched | None]:
    """Start :func:`fetch` in a thread; the function returned waits for its result. An
    in-memory SQLite database lives in one connection: read there, when asked."""
    if engine.dialect.name == "sqlite" and engine.url.database in (None, "", ":memory:"):
        return lambda: fetch(engine, campaign)
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="report-evidence")
    future = pool.submit(fetch, engine, campaign)
    pool.shutdown(wait=False)
    return future.result


def _positions(table: ItemTable, items: Sequence[str]) -> np.ndarray:
    wanted = set(items)
    index = {i: p for p, i in enumerate(table.ids) if i in wanted}
    return np.array([index.get(i, -1) for i in items], dtype=np.int64)


def _confusion(
    categories: Sequence[str], model: list[Any], theirs: list[Any], worker: str
) -> Markup:
    seen: dict[str, int] = defaultdict(int)
    for v in (*model, *theirs):
        if v is not None:
            seen[str(v)] += 1
    names = [c for c in categories if c in seen] + sorted(set(seen) - set(categories))
    if len(names) > MAX_CATEGORIES:
        kept = set(sorted(names, key=lambda c: -seen[c])[: MAX_CATEGORIES - 1])
        names = [c for c in names if c in kept] + ["other"]
    code = {c: k for k, c in enumerate(names)}
    other = code.get("other", len(names) - 1)
    counts = np.zeros((len(names), len(names)), dtype=np.int64)
    for m, t in zip(model, theirs, strict=True):
        if m is not None and t is not None:
            counts[code.get(str(m), other), code.get(str(t), other)] += 1
    return pictures.confusion(
        names, counts.tolist(), title=f"{worker}: their labels against the model's"
    )


def _options(
    names: Sequence[str], model: list[Any], theirs: list[tuple[str, ...]], worker: str
) -> Markup:
    seen = {o for s in (*model, *theirs) if s for o in s}
    options = [o for o in names if o in seen] + sorted(seen - set(names))
    options = options[:MAX_CATEGORIES]
    counts = []
    for o in options:
        parts = [0, 0, 0, 0]
        for m, t in zip(model, theirs, strict=True):
            if m is None:
                continue
            has_m, has_t = o in m, o in t
            parts[0 if has_m and has_t else 1 if has_m else 2 if has_t else 3] += 1
        counts.append(parts)
    return pictures.options(options, counts, title=f"{worker}: their options against the model's")


def _scatter(model: list[Any], theirs: np.ndarray, lo: float, hi: float, worker: str) -> Markup:
    xs = np.array([np.nan if m is None else m for m in model], dtype=float)
    keep = np.flatnonzero(np.isfinite(xs) & np.isfinite(theirs))
    if keep.size > MAX_POINTS:
        keep = keep[np.linspace(0, keep.size - 1, MAX_POINTS).round().astype(int)]
    return pictures.scatter(
        xs[keep].tolist(), theirs[keep].tolist(), lo=lo, hi=hi,
        title=f"{worker}: their ratings against the consensus",
    )  # fmt: skip


def answer_pictures(
    doc: Mapping[str, Any], table: ItemTable, fetched: Fetched | None
) -> dict[str, Markup]:
    """A picture per worker with answers in ``fetched``: a confusion matrix (labels), a
    scatter against the consensus (ratings), a bar per option (multi-label sets)."""
    if (
        fetched is None
        or not len(fetched.answers)
        or (doc.get("run") or {}).get("id") != (fetched.run_id)
    ):
        return {}
    a = fetched.answers
    c = doc["campaign"]
    model = table.model_answers(_positions(table, a.item))
    by_worker: dict[str, list[int]] = defaultdict(list)
    for k, w in enumerate(a.worker):
        by_worker[w].append(k)
    out: dict[str, Markup] = {}
    for w, ks in by_worker.items():
        m = [model[k] for k in ks]
        if all(x is None for x in m):
            continue
        if c["kind"] == Kind.LABEL:
            out[w] = _confusion(c.get("categories") or [], m, [a.label[k] for k in ks], w)
        elif c["kind"] == Kind.MULTILABEL:
            theirs = [a.annotations[k] for k in ks]
            out[w] = _options(c.get("categories") or [], m, theirs, w)
        elif c["kind"] == Kind.RATING:
            lo, hi = c.get("scale_min"), c.get("scale_max")
            values = a.value[ks]
            lo = float(np.nanmin(values)) if lo is None else lo
            hi = float(np.nanmax(values)) if hi is None else hi
            out[w] = _scatter(m, values, lo, hi, w)
    return out


def cycle_pictures(
    doc: Mapping[str, Any], workers: Sequence[str], per_worker: int = 2
) -> dict[str, Markup]:
    """The first cycles of each of ``workers`` as triangles (preference campaigns)."""
    rows = {w["worker"]: w for w in doc["workers"]}
    out: dict[str, Markup] = {}
    for w in workers:
        triplets = []
        for cy in (rows.get(w) or {}).get("cycles") or []:
            items, rel = cy.get("items"), cy.get("relations")
            if isinstance(items, list) and isinstance(rel, list) and len(items) == len(rel) == 3:
                triplets.append((items, rel, str(cy.get("text") or "")))
            if len(triplets) == per_worker:
                break
        if triplets:
            out[w] = pictures.cycles(triplets, title=f"{w}: cycles in their preferences")
    return out


__all__ = [
    "MAX_PICTURES",
    "Fetched",
    "answer_pictures",
    "cycle_pictures",
    "fetch",
    "fetch_in_background",
]
