"""Small inline SVG charts, generated in Python (no script, no network).

Every piece of text is escaped here; the result is markup the template includes as is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from markupsafe import Markup

INK, MUTED, GRID = "#1f2937", "#6b7280", "#e5e7eb"
BLUE, RED, AMBER, GREEN = "#2563eb", "#dc2626", "#d97706", "#059669"
FONT = 'font-family="system-ui,-apple-system,Segoe UI,Roboto,sans-serif" font-size="11"'


def _f(x: float) -> str:
    return f"{x:.1f}"


def _text(x: float, y: float, s: str, anchor: str = "middle", fill: str = MUTED) -> str:
    return (
        f'<text x="{_f(x)}" y="{_f(y)}" text-anchor="{anchor}" fill="{fill}" {FONT}>'
        f"{escape(s)}</text>"
    )


def _svg(width: int, height: int, body: list[str], title: str) -> Markup:
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="100%" style="max-width:{width}px" role="img" aria-label="{escape(title)}">'
        f"<title>{escape(title)}</title>"
    )
    return Markup(head + "".join(body) + "</svg>")


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.ceil(lo / step) * step
    out, t = [], start
    while t <= hi + 1e-9 and len(out) < 20:
        out.append(round(t, 10))
        t += step
    return out


def histogram(
    values: Sequence[float],
    *,
    title: str,
    xlabel: str,
    threshold: float | None = None,
    threshold_label: str = "threshold",
    bins: int = 20,
    lo: float | None = None,
    hi: float | None = None,
) -> Markup:
    """Distribution of ``values`` with an optional vertical threshold line."""
    w, h, ml, mr, mt, mb = 640, 220, 44, 16, 24, 40
    vals = [v for v in values if v is not None and math.isfinite(v)]
    lo = min(vals + [0.0]) if lo is None else lo
    hi = max(vals + [1.0]) if hi is None else hi
    if hi <= lo:
        hi = lo + 1.0
    counts = [0] * bins
    for v in vals:
        counts[min(bins - 1, max(0, int((v - lo) / (hi - lo) * bins)))] += 1
    top = max(counts + [1])
    pw, ph = w - ml - mr, h - mt - mb

    def x(v: float) -> float:
        return ml + (v - lo) / (hi - lo) * pw

    body = []
    for t in _ticks(0, top, 4):
        y = mt + ph - t / top * ph
        body.append(f'<line x1="{ml}" x2="{w - mr}" y1="{_f(y)}" y2="{_f(y)}" stroke="{GRID}"/>')
        body.append(_text(ml - 6, y + 4, f"{t:g}", "end"))
    bw = pw / bins
    for i, c in enumerate(counts):
        if c:
            bh = c / top * ph
            left = lo + i * (hi - lo) / bins
            color = RED if threshold is not None and left + (hi - lo) / bins <= threshold else BLUE
            body.append(
                f'<rect x="{_f(ml + i * bw + 1)}" y="{_f(mt + ph - bh)}" width="{_f(bw - 2)}" '
                f'height="{_f(bh)}" fill="{color}" opacity="0.8"><title>{escape(f"{c} in [{left:.2f}, {left + (hi - lo) / bins:.2f})")}</title></rect>'
            )
    for t in _ticks(lo, hi, 5):
        body.append(_text(x(t), mt + ph + 16, f"{t:g}"))
    body.append(f'<line x1="{ml}" x2="{w - mr}" y1="{mt + ph}" y2="{mt + ph}" stroke="{MUTED}"/>')
    body.append(_text(ml + pw / 2, h - 6, xlabel))
    if threshold is not None and lo <= threshold <= hi:
        tx = x(threshold)
        body.append(
            f'<line x1="{_f(tx)}" x2="{_f(tx)}" y1="{mt - 6}" y2="{mt + ph}" stroke="{RED}" '
            f'stroke-width="2" stroke-dasharray="5 3"/>'
        )
        body.append(_text(tx + 4, mt + 4, f"{threshold_label} {threshold:.2f}", "start", RED))
    return _svg(w, h, body, title)


def bars(
    labels: Sequence[str],
    values: Sequence[float | None],
    *,
    title: str,
    threshold: float | None = None,
    lo: float = -1.0,
    hi: float = 1.0,
) -> Markup:
    """Horizontal bars (one per label) on [lo, hi], with an optional threshold line."""
    rows = [(lab, v) for lab, v in zip(labels, values, strict=True)]
    bh, ml, mr, mt = 16, 120, 50, 24
    w = 640
    h = mt + len(rows) * (bh + 4) + 30
    pw = w - ml - mr

    def x(v: float) -> float:
        return ml + (min(max(v, lo), hi) - lo) / (hi - lo) * pw

    body = []
    for t in _ticks(lo, hi, 4):
        body.append(
            f'<line x1="{_f(x(t))}" x2="{_f(x(t))}" y1="{mt - 4}" y2="{h - 26}" stroke="{GRID}"/>'
        )
        body.append(_text(x(t), h - 12, f"{t:g}"))
    zero = x(0.0 if lo < 0 < hi else lo)
    for i, (lab, v) in enumerate(rows):
        y = mt + i * (bh + 4)
        short = lab if len(lab) <= 18 else lab[:17] + "…"
        body.append(_text(ml - 6, y + bh - 4, short, "end", INK))
        if v is None or not math.isfinite(v):
            body.append(_text(ml + 4, y + bh - 4, "undefined", "start"))
            continue
        color = RED if threshold is not None and v < threshold else GREEN
        x0, x1 = sorted((zero, x(v)))
        body.append(
            f'<rect x="{_f(x0)}" y="{y}" width="{_f(max(x1 - x0, 1))}" height="{bh}" '
            f'fill="{color}" opacity="0.8"><title>{escape(f"{lab}: {v:.3f}")}</title></rect>'
        )
        body.append(_text(x1 + 4, y + bh - 4, f"{v:.2f}", "start"))
    if threshold is not None:
        tx = x(threshold)
        body.append(
            f'<line x1="{_f(tx)}" x2="{_f(tx)}" y1="{mt - 8}" y2="{h - 26}" stroke="{RED}" '
            f'stroke-width="2" stroke-dasharray="5 3"/>'
        )
        body.append(_text(tx + 4, mt - 10, f"threshold {threshold:.2f}", "start", RED))
    return _svg(w, h, body, title)


def trend(
    points: Sequence[tuple[str, float | None, float | None, float | None]],
    *,
    title: str,
    guides: Sequence[tuple[float, str]] = ((0.8, "reliable"), (0.667, "tentative")),
) -> Markup:
    """A measure over runs: (label, value, low, high) per run, with an interval band."""
    w, h, ml, mr, mt, mb = 640, 220, 44, 96, 16, 36
    pts = [(lab, v, lo, hi) for lab, v, lo, hi in points if v is not None]
    ys = [v for _, v, _, _ in pts] + [b for _, _, lo, hi in pts for b in (lo, hi) if b is not None]
    ys += [g for g, _ in guides]
    ymin, ymax = min(ys + [0.0]), max(ys + [1.0])
    pw, ph = w - ml - mr, h - mt - mb
    n = max(len(pts) - 1, 1)

    def x(i: int) -> float:
        return ml + i / n * pw if len(pts) > 1 else ml + pw / 2

    def y(v: float) -> float:
        return mt + ph - (v - ymin) / (ymax - ymin) * ph

    body = []
    for t in _ticks(ymin, ymax, 4):
        body.append(
            f'<line x1="{ml}" x2="{w - mr}" y1="{_f(y(t))}" y2="{_f(y(t))}" stroke="{GRID}"/>'
        )
        body.append(_text(ml - 6, y(t) + 4, f"{t:g}", "end"))
    for g, lab in guides:
        body.append(
            f'<line x1="{ml}" x2="{w - mr}" y1="{_f(y(g))}" y2="{_f(y(g))}" stroke="{AMBER}" '
            f'stroke-dasharray="4 3"/>'
        )
        body.append(_text(w - mr + 4, y(g) + 4, f"{lab} {g:g}", "start", AMBER))
    band = [
        (i, lo, hi) for i, (_, _, lo, hi) in enumerate(pts) if lo is not None and hi is not None
    ]
    if len(band) > 1:
        upper = " ".join(f"{_f(x(i))},{_f(y(hi))}" for i, _, hi in band)
        lower = " ".join(f"{_f(x(i))},{_f(y(lo))}" for i, lo, _ in reversed(band))
        body.append(f'<polygon points="{upper} {lower}" fill="{BLUE}" opacity="0.15"/>')
    if len(pts) > 1:
        line = " ".join(f"{_f(x(i))},{_f(y(v))}" for i, (_, v, _, _) in enumerate(pts))
        body.append(f'<polyline points="{line}" fill="none" stroke="{BLUE}" stroke-width="2"/>')
    step = max(1, len(pts) // 8)
    for i, (lab, v, lo, hi) in enumerate(pts):
        if lo is not None and hi is not None:
            body.append(
                f'<line x1="{_f(x(i))}" x2="{_f(x(i))}" y1="{_f(y(lo))}" y2="{_f(y(hi))}" '
                f'stroke="{BLUE}" opacity="0.5"/>'
            )
        body.append(
            f'<circle cx="{_f(x(i))}" cy="{_f(y(v))}" r="3.5" fill="{BLUE}">'
            f"<title>{escape(f'{lab}: {v:.3f}')}</title></circle>"
        )
        if i % step == 0 or i == len(pts) - 1:
            body.append(_text(x(i), h - 14, lab))
    return _svg(w, h, body, title)


__all__ = ["bars", "histogram", "trend"]
