"""The JSON text of item rows written from the columns' arrays: the same text as
``json.dumps(rows, indent=2)`` nested as the value of a top-level key (checked against it in
``tests/report/test_items.py``), at a fraction of the encoder's cost per number."""

from __future__ import annotations

from json.encoder import encode_basestring  # type: ignore[attr-defined]
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from monitor.results import Column

if TYPE_CHECKING:
    from monitor.report.items import ItemTable

KEY = "\n      "  # an item's keys
INNER = "\n        "  # the members of a list or object that is an item's value
KEYS = (
    "item",
    "n_judgments",
    "uqs",
    "uas",
    "phi_mu",
    "score",
    "flags",
    "text",
    "gold",
    "answers",
    "percent_agreement",
    "phi_mu_interval",
    "score_interval",
    "count_score",
)
# One item: every key but the model's, whose keys differ per item (they come as one piece).
TEMPLATE = "{" + ",".join(f"{KEY}{encode_basestring(k)}: %s" for k in KEYS) + "%s\n    }"


def _key(name: str) -> str:
    return f",{KEY}{encode_basestring(name)}: "


def _floats(x: NDArray[np.float64]) -> list[str]:
    """JSON numbers, ``null`` where not finite."""
    out = list(map(float.__repr__, x.tolist()))
    for k in np.flatnonzero(~np.isfinite(x)).tolist():
        out[k] = "null"
    return out


def _rows(table: ItemTable, metric: str, positions: NDArray[np.int64]) -> tuple[Column, NDArray]:
    [s] = table.series[metric]
    assert s.column is not None
    return s.column, s.row[positions]


def _values(table: ItemTable, metric: str, positions: NDArray[np.int64]) -> NDArray[np.float64]:
    """The values at ``positions``, NaN where none."""
    if metric not in table.series:
        return np.full(positions.size, np.nan)
    c, rows = _rows(table, metric, positions)
    return np.where(rows >= 0, c.values[rows], np.nan)


def _interval(table: ItemTable, metric: str, positions: NDArray[np.int64]) -> list[str]:
    out = ["null"] * positions.size
    if metric not in table.series:
        return out
    c, rows = _rows(table, metric, positions)
    if c.low is None or c.high is None:
        return out
    lo, hi = c.low[rows], c.high[rows]
    ok = np.flatnonzero((rows >= 0) & np.isfinite(lo) & np.isfinite(hi))
    for k, a, b in zip(ok.tolist(), lo[ok].tolist(), hi[ok].tolist(), strict=True):
        out[k] = f"[{INNER}{a!r},{INNER}{b!r}{KEY}]"
    return out


def _details(
    table: ItemTable, metric: str, key: str, positions: NDArray[np.int64], missing: str
) -> list[str]:
    """The objects ``detail[key]`` of a column's rows; ``missing`` where there is no value,
    ``null`` where the value has no such detail."""
    if metric not in table.series:
        return [missing] * positions.size
    c, rows = _rows(table, metric, positions)
    out = [missing if r < 0 else "null" for r in rows.tolist()]
    if c.detail_key != key or c.indptr is None:
        return out
    assert c.indices is not None and c.data is not None
    have = np.flatnonzero(rows >= 0)
    starts, ends = c.indptr[rows[have]], c.indptr[rows[have] + 1]
    lengths = ends - starts
    bounds = np.r_[0, np.cumsum(lengths)]
    entries = np.repeat(starts - bounds[:-1], lengths) + np.arange(bounds[-1])
    data = c.data[entries]
    if c.integral:
        numbers = list(map(int.__repr__, data.astype(np.int64).tolist()))
    else:
        numbers = _floats(np.round(data, 12))
    names = [f"{INNER}{encode_basestring(str(n))}: " for n in c.names]
    parts = [names[i] + x for i, x in zip(c.indices[entries].tolist(), numbers, strict=True)]
    b = bounds.tolist()
    for k, lo, hi in zip(have.tolist(), b[:-1], b[1:], strict=True):
        out[k] = "{" + ",".join(parts[lo:hi]) + KEY + "}" if hi > lo else "{}"
    return out


def model_label(post: dict[str, Any], kind: str) -> Any:
    """The model's answer from an item's posterior: the most probable label, or for
    multi-label sets the options above 0.5 joined by ``|``."""
    if kind == "multilabel":
        return "|".join(sorted(k for k, p in post.items() if p > 0.5))
    return max(post, key=post.get) if post else None  # type: ignore[arg-type]


def _model(table: ItemTable, positions: NDArray[np.int64]) -> list[str]:
    """The model's keys of each item (see ``ItemTable._model``), as one piece."""
    out = [""] * positions.size
    if "model_label" in table.series:
        c, rows = _rows(table, "model_label", positions)
        posteriors = _details(table, "model_label", "posterior", positions, "{}")
        posteriors = ["{}" if t == "null" else t for t in posteriors]  # `or {}`
        value = _floats(_values(table, "model_label", positions))
        for k in np.flatnonzero(rows >= 0).tolist():
            label = table.get("model_label", int(positions[k]))
            assert label is not None
            name = model_label((label.detail or {}).get("posterior") or {}, table.kind)
            out[k] = (
                f"{_key('model_label')}{'null' if name is None else encode_basestring(name)}"
                f"{_key('posterior')}{value[k]}{_key('posteriors')}{posteriors[k]}"
            )
    if "model_mean" in table.series:
        _, rows = _rows(table, "model_mean", positions)
        parts = [
            _floats(_values(table, "model_mean", positions)),
            _interval(table, "model_mean", positions),
            *(
                _floats(_values(table, m, positions))
                for m in ("model_sd", "model_spread", "model_expected_spread", "model_spread_p")
            ),
        ]
        keys = ("model_mean", "model_mean_interval", "sd", "spread", "expected_spread",
                "spread_p")  # fmt: skip
        prefixes = [_key(k) for k in keys]
        for k in np.flatnonzero(rows >= 0).tolist():
            out[k] = "".join(p + part[k] for p, part in zip(prefixes, parts, strict=True))
    return out


def fast_texts(table: ItemTable, positions: NDArray[np.int64]) -> list[str]:
    """The JSON text of each item at ``positions`` (a table whose measures are columns)."""
    ids = [table.ids[p] for p in positions.tolist()]
    nj = _values(table, "n_judgments", positions)
    counts = ["null"] * positions.size
    for k, x in zip(np.flatnonzero(np.isfinite(nj)).tolist(), nj[np.isfinite(nj)].tolist(),
                    strict=True):  # fmt: skip
        counts[k] = str(int(x))
    if "score" in table.series:
        c, rows = _rows(table, "score", positions)
        if c.n is not None:
            for k in np.flatnonzero(~np.isfinite(nj) & (rows >= 0)).tolist():
                counts[k] = str(int(c.n[rows[k]]))
    flags, texts, golds = [], [], []
    for p, i in zip(positions.tolist(), ids, strict=True):
        rules = table.flags.get(p)
        flags.append(
            f"[{INNER}{f',{INNER}'.join(map(encode_basestring, rules))}{KEY}]" if rules else "[]"
        )
        text, gold = table.texts.get(i, (None, None))
        texts.append("null" if text is None else encode_basestring(text))
        golds.append("null" if gold is None else encode_basestring(gold))
    columns = [
        list(map(encode_basestring, ids)),
        counts,
        _floats(_values(table, "uqs", positions)),
        _details(table, "uas", "scores", positions, "null"),
        _floats(_values(table, "phi_mu", positions)),
        _floats(_values(table, "score", positions)),
        flags,
        texts,
        golds,
        _details(table, "n_judgments", "answers", positions, "null"),
        _floats(_values(table, "percent_agreement", positions)),
        _interval(table, "phi_mu", positions),
        _interval(table, "score", positions),
        ["null"] * positions.size,  # a column's detail holds no count score
        _model(table, positions),
    ]
    return [TEMPLATE % row for row in zip(*columns, strict=True)]


__all__ = ["fast_texts", "model_label"]
