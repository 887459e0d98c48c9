"""The items of a report as arrays: the latest run's per-item columns aligned on one list of
items in natural order, the document's item rows built only for the items asked for, the items
a reader is shown picked with NumPy, and the JSON text of every item written column by column.

A campaign of a million judgments has hundreds of thousands of items: a Value and a dict per
item and measure would cost seconds and a gigabyte, and the HTML report shows a few hundred.
The rows' keys follow the catalog: every item measure it gives a key (with ``<key>_interval``
where it shows one), then the answers, scores, flags, text and gold, and the model's label.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.core import catalog
from monitor.core.catalog import Kind
from monitor.core.results import Column, FlagRecord, Value
from monitor.report.jsonsafe import clean, natural_order, num
from monitor.report.jsonsafe import value_interval as _interval
from monitor.report.jsonsafe import value_number as _v

ItemText = tuple[str, str | None, str | None]
"""(external id, text, gold) of an item."""

ROW_MEASURES = tuple(
    dict.fromkeys(
        (m.name, m.key, m.shows_interval)
        for m in catalog.measures("item")
        if m.key is not None and m.name != "n_judgments"
    )
)
"""The item measures of the rows by the catalog: (metric, key, with interval)."""
EVERY_KIND = ("uqs", "percent_agreement", "phi_mu", "score")
"""The measures every item row shows, whatever the campaign's kind (CONTRACT.md section 4);
the others only in the kinds that have them."""


def row_measures(kind: str) -> tuple[tuple[str, str, bool], ...]:
    """:data:`ROW_MEASURES` of a campaign of ``kind``."""
    return tuple(
        (m, key, interval)
        for m, key, interval in ROW_MEASURES
        if m in EVERY_KIND or kind in catalog.measure("item", m).kinds
    )


METRICS = ("n_judgments", "uas", "model_label", *(m for m, _, _ in ROW_MEASURES))
"""The item measures the document shows (those of the catalog's keys, and the answers, scores
and model label the rows show in a shape of their own)."""


def model_label(post: dict[str, Any], kind: str) -> Any:
    """The model's answer from an item's posterior: the most probable label, or for
    multi-label sets the options above 0.5 joined by ``|``."""
    if kind == Kind.MULTILABEL:
        return "|".join(sorted(k for k, p in post.items() if p > 0.5))
    return max(post, key=post.__getitem__) if post else None


@dataclass(frozen=True, eq=False)
class Series:
    """One item measure: ``row[p]`` is the row of the table's item ``p`` in ``column`` or
    ``records`` (-1: no value)."""

    row: NDArray[np.int64]
    column: Column | None = None
    records: list[Value] | None = None

    def get(self, p: int) -> Value | None:
        r = int(self.row[p])
        if r < 0:
            return None
        if self.records is not None:
            return self.records[r]
        c = self.column
        assert c is not None

        def f(a: NDArray | None) -> float | None:
            return None if a is None else num(a[r])

        detail = None
        if c.detail_key is not None and c.indptr is not None:
            assert c.indices is not None and c.data is not None
            lo, hi = int(c.indptr[r]), int(c.indptr[r + 1])
            data = c.data[lo:hi]  # rounded as Column.details rounds them
            numbers = data.astype(np.int64) if c.integral else np.round(data, 12)
            names = [c.names[i] for i in c.indices[lo:hi].tolist()]
            detail = {c.detail_key: dict(zip(names, numbers.tolist(), strict=True))}
        n = None if c.n is None else int(c.n[r])
        return Value("item", "", c.metric, f(c.values), f(c.low), f(c.high), n, detail)


@dataclass
class ItemPicks:
    """The items the HTML report shows, with how many there are of each kind."""

    listed: list[dict[str, Any]]
    n_items: int
    ambiguous: list[dict[str, Any]]
    n_ambiguous: int
    scored: list[dict[str, Any]] = field(default_factory=list)
    n_scored: int = 0
    ranks: list[tuple[int, int, bool]] = field(default_factory=list)
    """The best and worst rank each of ``scored`` could take (:func:`rank_ranges`), and
    whether its rank is uncertain (:func:`uncertain_ranks`)."""


def rank_ranges(
    score: NDArray[np.float64], low: NDArray[np.float64], high: NDArray[np.float64]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The ranks (1 = highest score) each item could take given the 95% intervals of the
    scores: at best 1 + the items whose interval lies wholly above its own, at worst 1 + the
    other items whose interval reaches its lower end (a tie could fall either way). An item
    without an interval counts as its score alone. Shapes (n,); the scores must be finite."""
    lo = np.where(np.isfinite(low), low, score)
    hi = np.where(np.isfinite(high), high, score)
    n = score.size
    above_all = n - np.searchsorted(np.sort(lo), hi, side="right")
    reaching = n - np.searchsorted(np.sort(hi), lo, side="left")  # the item itself included
    return (1 + above_all).astype(np.int64), reaching.astype(np.int64)


def rank_notes(
    score: NDArray[np.float64], low: NDArray[np.float64], high: NDArray[np.float64]
) -> list[tuple[int, int, bool]]:
    """(best rank, worst rank, uncertain) of each item, ``score`` in descending order."""
    best, worst = rank_ranges(score, low, high)
    uncertain = uncertain_ranks(low, high, best, worst)
    return list(zip(best.tolist(), worst.tolist(), uncertain.tolist(), strict=True))


def uncertain_ranks(
    low: NDArray[np.float64],
    high: NDArray[np.float64],
    best: NDArray[np.int64],
    worst: NDArray[np.int64],
) -> NDArray[np.bool_]:
    """Ranks a reader should not trust: an interval more than twice as wide as the ranking's
    median interval (the item rests on too few or too contradictory comparisons), or ranks
    allowed over more than half of the ranking. Items' intervals overlap anyway; these
    overlap far more than the others."""
    width = high - low
    finite = np.isfinite(width)
    typical = float(np.median(width[finite])) if finite.any() else np.inf
    return (finite & (width > 2 * typical)) | (worst - best + 1 > best.size / 2)


def _identity(order: NDArray[np.int64]) -> bool:
    return bool((order == np.arange(order.size)).all())


class ItemTable:
    """Every item of a campaign (its items and every subject of the run's item values), in
    natural order, with the run's item measures as :class:`Series`."""

    def __init__(
        self,
        kind: str,
        item_ids: Iterable[str],
        columns: Iterable[Column] = (),
        records: Iterable[Value] = (),
        flags: Iterable[FlagRecord] = (),
        texts: Iterable[ItemText] = (),
    ) -> None:
        self.kind = kind
        first = list(item_ids)
        index: dict[str, int] = {}
        for s in first:
            index.setdefault(s, len(index))
        # The columns of a run mostly share their subjects, often the items' own order.
        seen = [(first, np.arange(len(first)))] if len(index) == len(first) else []

        def place(subjects: list[str]) -> NDArray[np.int64]:
            for known, pos in seen:
                if known == subjects:
                    return pos
            pos = np.fromiter(
                (index.setdefault(s, len(index)) for s in subjects), np.int64, len(subjects)
            )
            seen[:] = [(subjects, pos), *seen[:3]]
            return pos

        placed: list[tuple[str, NDArray[np.int64], Column | None, list[Value] | None]] = []
        by_metric: dict[str, list[Value]] = {}
        for v in records:
            by_metric.setdefault(v.metric, []).append(v)
        for metric, records_of in by_metric.items():
            pos = place([v.subject for v in records_of])
            if metric in METRICS:
                placed.append((metric, pos, None, records_of))
        for c in columns:
            pos = place(c.subjects)
            if c.metric in METRICS:
                placed.append((c.metric, pos, replace(c, subjects=[]), None))
        seen.clear()
        ids = list(index)
        order = natural_order(ids)
        rank = np.empty(len(ids), np.int64)
        rank[order] = np.arange(len(ids))
        rules: dict[int, set[str]] = {}
        for f in flags:
            if f.scope == "item" and (i := index.get(f.subject)) is not None:
                rules.setdefault(int(rank[i]), set()).add(f.rule)
        self.flags: dict[int, list[str]] = {p: sorted(r) for p, r in rules.items()}
        index.clear()
        self.ids: list[str] = ids if _identity(order) else [ids[i] for i in order.tolist()]
        self.series: dict[str, list[Series]] = {}
        for metric, pos, column, values in placed:
            row = np.full(len(self.ids), -1, np.int64)
            row[rank[pos]] = np.arange(pos.size)
            self.series.setdefault(metric, []).append(Series(row, column, values))
        self.texts: dict[str, tuple[str | None, str | None]] = {}
        self.add_texts(texts)

    def __len__(self) -> int:
        return len(self.ids)

    def add_texts(self, texts: Iterable[ItemText]) -> None:
        """Keep the text and gold of these items (those without either need no entry)."""
        self.texts.update((e, (t, g)) for e, t, g in texts if t is not None or g is not None)

    # --- one item at a time ---------------------------------------------------------------

    def get(self, metric: str, p: int) -> Value | None:
        """The value of ``metric`` of item ``p`` (the latest stored wins, as in the store)."""
        for s in reversed(self.series.get(metric, ())):
            v = s.get(p)
            if v is not None:
                return v
        return None

    def rows(self, positions: Iterable[int]) -> list[dict[str, Any]]:
        """The document's rows of the items at ``positions`` (JSON-safe as built)."""
        return [self._row(p) for p in positions]

    def _row(self, p: int) -> dict[str, Any]:
        i = self.ids[p]
        get = self.get
        nj, score = get("n_judgments", p), get("score", p)
        n = _v(nj)
        n = int(n) if n is not None else None
        if n is None and score is not None and score.n is not None:
            n = int(score.n)
        row: dict[str, Any] = {"item": str(i), "n_judgments": n}
        for metric, key, interval in row_measures(self.kind):
            v = get(metric, p)
            row[key] = _v(v)
            if interval:
                row[f"{key}_interval"] = _interval(v)
        uas = get("uas", p)
        text, gold = self.texts.get(i, (None, None))
        row.update(
            uas=clean((uas.detail or {}).get("scores")) if uas is not None else None,
            answers=clean((nj.detail or {}).get("answers")) if nj is not None else None,
            flags=list(self.flags.get(p, ())),
            text=clean(text),
            gold=clean(gold),
            count_score=num((score.detail or {}).get("count_score")) if score else None,
        )
        label = get("model_label", p)
        if label is not None:
            post = (label.detail or {}).get("posterior") or {}
            row.update(model_label=model_label(post, self.kind), posterior=_v(label),
                       posteriors=clean(post))  # fmt: skip
        return row

    def reason_rows(self, positions: Iterable[int]) -> list[dict[str, Any]]:
        """What the to-do list's reasons read of the items at ``positions`` (``item``,
        ``answers``, ``model_label``, ``posteriors``), without building their whole rows."""
        out = []
        for p in positions:
            nj, label = self.get("n_judgments", p), self.get("model_label", p)
            row: dict[str, Any] = {
                "item": str(self.ids[p]),
                "answers": clean((nj.detail or {}).get("answers")) if nj is not None else None,
            }
            if label is not None:
                post = (label.detail or {}).get("posterior") or {}
                row.update(model_label=model_label(post, self.kind), posteriors=clean(post))
            out.append(row)
        return out

    # --- all items at once ----------------------------------------------------------------

    def floats(self, metric: str) -> NDArray[np.float64]:
        """``metric``'s value of every item, NaN where there is none or it is undefined."""
        out = np.full(len(self.ids), np.nan)
        for s in self.series.get(metric, ()):
            have = np.flatnonzero(s.row >= 0)
            if s.column is not None:
                out[have] = s.column.values[s.row[have]]
            else:
                assert s.records is not None
                out[have] = [
                    np.nan if (x := num(s.records[r].value)) is None else x
                    for r in s.row[have].tolist()
                ]
        out[~np.isfinite(out)] = np.nan
        return out

    def model_answers(self, positions: NDArray[np.int64]) -> list[Any]:
        """The model's answer on the items at ``positions``: the posterior mean of a rating,
        the most probable label, the set of options above 0.5 (a tuple); None without one.
        From the arrays where the model's column is one column."""
        if self.kind == Kind.RATING:
            means = self.floats("model_mean")[positions]
            return [None if np.isnan(m) else m for m in means.tolist()]
        series = self.series.get("model_label", [])
        if len(series) != 1 or series[0].column is None:
            return [self._model_answer(p) for p in positions.tolist()]
        c, rows = series[0].column, series[0].row[positions]
        out: list[Any] = [None] * positions.size
        if c.indptr is None or c.indices is None or c.data is None:
            return out
        have = np.flatnonzero(rows >= 0)
        r = rows[have]
        starts, lengths = c.indptr[r], c.indptr[r + 1] - c.indptr[r]
        seg = np.repeat(np.arange(r.size), lengths)
        entry = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(seg.size)
        p, names = c.data[entry], c.indices[entry]
        if self.kind == Kind.MULTILABEL:
            sets: list[list[str]] = [[] for _ in range(r.size)]
            for s, i in zip(seg[p > 0.5].tolist(), names[p > 0.5].tolist(), strict=True):
                sets[s].append(c.names[i])
            for k, s in zip(have.tolist(), sets, strict=True):
                out[k] = tuple(sorted(s))
            return out
        # the most probable label: the first entry of each row once sorted by descending p
        order = np.lexsort((-p, seg))
        first = order[np.r_[True, seg[order][1:] != seg[order][:-1]]] if seg.size else order
        for s, i in zip(seg[first].tolist(), names[first].tolist(), strict=True):
            out[int(have[s])] = c.names[i]
        return out

    def _model_answer(self, p: int) -> Any:
        v = self.get("model_label", p)
        if v is None:
            return None
        post = (v.detail or {}).get("posterior") or {}
        if self.kind == Kind.MULTILABEL:
            return tuple(sorted(k for k, q in post.items() if q > 0.5))
        return model_label(post, self.kind)

    def bounds(self, metric: str) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``metric``'s interval of every item (low, high), NaN where there is none."""
        low, high = np.full(len(self.ids), np.nan), np.full(len(self.ids), np.nan)
        for s in self.series.get(metric, ()):
            have = np.flatnonzero(s.row >= 0)
            if s.column is not None:
                for out, a in ((low, s.column.low), (high, s.column.high)):
                    if a is not None:
                        out[have] = a[s.row[have]]
                continue
            assert s.records is not None
            for p in have.tolist():
                v = s.records[int(s.row[p])]
                low[p] = np.nan if (x := num(v.low)) is None else x
                high[p] = np.nan if (x := num(v.high)) is None else x
        return low, high

    def annotation_names(self) -> set[str]:
        """The annotations that appear in the items' UAS."""
        names: set[str] = set()
        for s in self.series.get("uas", ()):
            c = s.column
            if c is not None:
                if c.detail_key == "scores" and c.indices is not None:
                    names.update(str(c.names[i]) for i in np.unique(c.indices).tolist())
                continue
            for p in np.flatnonzero(s.row >= 0).tolist():
                v = self.get("uas", p)
                if v is not None:
                    names.update(str(k) for k in ((v.detail or {}).get("scores") or {}))
        return names

    def picks(
        self,
        max_items: int,
        max_ambiguous: int,
        fetch_texts: Callable[[Collection[str]], Iterable[ItemText]] | None = None,
    ) -> ItemPicks:
        """What the HTML report shows: the items of lowest UQS (undefined last), the ambiguous
        ones (lowest UQS first) and, for pairwise campaigns, the highest scores; ties in
        natural order. ``fetch_texts`` reads the texts of the picked items."""
        uqs = self.floats("uqs")
        listed = np.argsort(np.where(np.isnan(uqs), np.inf, uqs), kind="stable")[:max_items]
        flagged = np.array(
            sorted(p for p, rules in self.flags.items() if "ambiguous" in rules), np.int64
        )
        key = np.where(np.isnan(uqs[flagged]), 2.0, uqs[flagged])
        ambiguous = flagged[np.argsort(key, kind="stable")]
        scored = np.empty(0, np.int64)
        ranks: list[tuple[int, int, bool]] = []
        if self.kind == Kind.PAIRWISE:
            score = self.floats("score")
            have = np.flatnonzero(~np.isnan(score))
            scored = have[np.argsort(-score[have], kind="stable")]
            low, high = self.bounds("score")
            ranks = rank_notes(score[scored], low[scored], high[scored])[:max_items]
        shown = [listed, ambiguous[:max_ambiguous], scored[:max_items]]
        if fetch_texts is not None:
            wanted = {self.ids[p] for part in shown for p in part.tolist()}
            self.add_texts(fetch_texts(wanted))
        return ItemPicks(
            self.rows(shown[0].tolist()),
            len(self.ids),
            self.rows(shown[1].tolist()),
            int(ambiguous.size),
            self.rows(shown[2].tolist()),
            int(scored.size),
            ranks,
        )

    @property
    def columnar(self) -> bool:
        """Every measure is one column (the JSON text can be written from the arrays)."""
        return all(len(ss) == 1 and ss[0].column is not None for ss in self.series.values())


__all__ = [
    "METRICS",
    "ROW_MEASURES",
    "ItemPicks",
    "ItemTable",
    "ItemText",
    "Series",
    "model_label",
    "rank_notes",
    "rank_ranges",
    "uncertain_ranks",
]
