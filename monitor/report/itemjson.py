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
    return _take(c.values, rows)


def _take(a: NDArray[np.float64], rows: NDArray[np.int64]) -> NDArray[np.float64]:
    """``a[rows]``, NaN where a row is -1 (``a`` may be empty)."""
    out = np.full(rows.size, np.nan)
    have = rows >= 0
    out[have] = a[rows[have]]
    return out


def _interval(table: ItemTable, metric: str, positions: NDArray[np.int64]) -> list[str]:
    out = ["null"] * positions.size
    if metric not in table.series:
        return out
    c, rows = _rows(table, metric, positions)
    if c.low is None or c.high is None:
        return out
    lo, hi = _take(c.low, rows), _take(c.high, rows)
    ok = np.flatnonzero(np.isfinite(lo) & np.isfinite(hi))
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


LABEL_KEYS = ("model_label", "posterior", "posteriors")
MEAN_KEYS = ("model_mean", "model_mean_interval", "sd", "spread", "expected_spread", "spread_p")
# An item's keys: the model's differ per item (see ``ItemTable._model``), one template each.
_BASE = "{" + ",".join(f"{KEY}{encode_basestring(k)}: %s" for k in KEYS)
TEMPLATES = (
    _BASE + "\n    }",
    _BASE + "".join(_key(k) + "%s" for k in LABEL_KEYS) + "\n    }",
    _BASE + "".join(_key(k) + "%s" for k in MEAN_KEYS) + "\n    }",
)


def _present(table: ItemTable, metric: str, positions: NDArray[np.int64]) -> NDArray[np.bool_]:
    if metric not in table.series:
        return np.zeros(positions.size, bool)
    return _rows(table, metric, positions)[1] >= 0


def _label_columns(table: ItemTable, positions: NDArray[np.int64]) -> list[list[str]]:
    """model_label, posterior, posteriors of the items that have a model label."""
    posteriors = _details(table, "model_label", "posterior", positions, "{}")
    posteriors = ["{}" if t == "null" else t for t in posteriors]  # `or {}`
    names = ["null"] * positions.size
    for k in np.flatnonzero(_present(table, "model_label", positions)).tolist():
        label = table.get("model_label", int(positions[k]))
        assert label is not None
        name = model_label((label.detail or {}).get("posterior") or {}, table.kind)
        names[k] = "null" if name is None else encode_basestring(name)
    return [names, _floats(_values(table, "model_label", positions)), posteriors]


def _mean_columns(table: ItemTable, positions: NDArray[np.int64]) -> list[list[str]]:
    """The keys of the rating model's answer (``MEAN_KEYS``)."""
    return [
        _floats(_values(table, "model_mean", positions)),
        _interval(table, "model_mean", positions),
        *(
            _floats(_values(table, m, positions))
            for m in ("model_sd", "model_spread", "model_expected_spread", "model_spread_p")
        ),
    ]


def _flags(table: ItemTable, positions: NDArray[np.int64]) -> list[str]:
    out = ["[]"] * positions.size
    for k, p in enumerate(positions.tolist()):
        if rules := table.flags.get(p):
            out[k] = f"[{INNER}{f',{INNER}'.join(map(encode_basestring, rules))}{KEY}]"
    return out


def _texts(table: ItemTable, ids: list[str]) -> tuple[list[str], list[str]]:
    if not table.texts:
        return ["null"] * len(ids), ["null"] * len(ids)
    none = (None, None)
    pairs = [table.texts.get(i, none) for i in ids]
    return (
        ["null" if t is None else encode_basestring(t) for t, _ in pairs],
        ["null" if g is None else encode_basestring(g) for _, g in pairs],
    )


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
    texts, golds = _texts(table, ids)
    columns = [
        list(map(encode_basestring, ids)),
        counts,
        _floats(_values(table, "uqs", positions)),
        _details(table, "uas", "scores", positions, "null"),
        _floats(_values(table, "phi_mu", positions)),
        _floats(_values(table, "score", positions)),
        _flags(table, positions),
        texts,
        golds,
        _details(table, "n_judgments", "answers", positions, "null"),
        _floats(_values(table, "percent_agreement", positions)),
        _interval(table, "phi_mu", positions),
        _interval(table, "score", positions),
        ["null"] * positions.size,  # a column's detail holds no count score
    ]
    mean = _present(table, "model_mean", positions)
    variant = np.where(mean, 2, np.where(_present(table, "model_label", positions), 1, 0))
    if (variant == variant[0]).all():  # the common case: one template for the whole chunk
        v = int(variant[0])
        extra = [[], _label_columns, _mean_columns][v]
        if v:
            columns += extra(table, positions)  # type: ignore[operator]
        return [TEMPLATES[v] % row for row in zip(*columns, strict=True)]
    with_label = _label_columns(table, positions) if (variant == 1).any() else []
    with_mean = _mean_columns(table, positions) if (variant == 2).any() else []
    out = []
    for k, (v, row) in enumerate(zip(variant.tolist(), zip(*columns, strict=True), strict=True)):
        more = () if v == 0 else tuple(c[k] for c in (with_label if v == 1 else with_mean))
        out.append(TEMPLATES[v] % (row + more))
    return out


__all__ = ["fast_texts", "model_label"]
