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


def num(x: float) -> str:
    return f"{x:.1f}"


def svg_text(x: float, y: float, s: str, anchor: str = "middle", fill: str = MUTED) -> str:
    return (
        f'<text x="{num(x)}" y="{num(y)}" text-anchor="{anchor}" fill="{fill}" {FONT}>'
        f"{escape(s)}</text>"
    )


def svg_document(
    width: int, height: int, body: list[str], title: str, *, fixed: bool = False
) -> Markup:
    """The SVG element: as wide as its box up to ``width`` px, or (``fixed``) ``width`` px
    wide, shrinking only when its box is narrower."""
    size = (
        f'width="{width}" height="{height}" style="max-width:100%;height:auto"'
        if fixed
        else f'width="100%" style="max-width:{width}px"'
    )
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'{size} role="img" aria-label="{escape(title)}">'
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
    out: list[float] = []
    t = start
    while t <= hi + 1e-9 and len(out) < 20:
        out.append(round(t, 10))
        t += step
    return out


def histogram(
    values: Sequence[float],
    *,
    title: str,
    xlabel: str,
    groups: Sequence[int] | None = None,
    legend: Sequence[tuple[str, str]] = (("", BLUE),),
    threshold: float | None = None,
    threshold_label: str = "threshold",
    bins: int = 20,
    lo: float | None = None,
    hi: float | None = None,
) -> Markup:
    """Distribution of ``values``, each bar stacked by ``groups`` (an index into ``legend``'s
    (label, colour) per value; all the first without), with an optional vertical threshold."""
    w, h, ml, mr, mt, mb = 640, 236, 44, 16, 40, 40
    keep = [
        (v, g)
        for v, g in zip(values, groups if groups is not None else [0] * len(values), strict=True)
        if v is not None and math.isfinite(v)
    ]
    vals = [v for v, _ in keep]
    lo = min([*vals, 0.0]) if lo is None else lo
    hi = max([*vals, 1.0]) if hi is None else hi
    if hi <= lo:
        hi = lo + 1.0
    counts = [[0] * len(legend) for _ in range(bins)]
    for v, g in keep:
        counts[min(bins - 1, max(0, int((v - lo) / (hi - lo) * bins)))][g] += 1
    top = max([sum(c) for c in counts] + [1])
    pw, ph = w - ml - mr, h - mt - mb

    def x(v: float) -> float:
        return ml + (v - lo) / (hi - lo) * pw

    body = []
    lx = float(ml)
    for label, colour in legend if len(legend) > 1 else ():
        body.append(f'<rect x="{num(lx)}" y="8" width="10" height="10" fill="{colour}"/>')
        body.append(svg_text(lx + 14, 17, label, "start", INK))
        lx += 24 + 6.2 * len(label)
    for t in _ticks(0, top, 4):
        y = mt + ph - t / top * ph
        body.append(f'<line x1="{ml}" x2="{w - mr}" y1="{num(y)}" y2="{num(y)}" stroke="{GRID}"/>')
        body.append(svg_text(ml - 6, y + 4, f"{t:g}", "end"))
    bw = pw / bins
    for i, parts in enumerate(counts):
        left = lo + i * (hi - lo) / bins
        base = float(mt + ph)
        for (label, colour), c in zip(legend, parts, strict=True):
            if not c:
                continue
            bh = c / top * ph
            base -= bh
            what = f"{c} {label} in [{left:.2f}, {left + (hi - lo) / bins:.2f})".replace("  ", " ")
            body.append(
                f'<rect x="{num(ml + i * bw + 1)}" y="{num(base)}" width="{num(bw - 2)}" '
                f'height="{num(bh)}" fill="{colour}" opacity="0.85"><title>{escape(what)}</title>'
                "</rect>"
            )
    for t in _ticks(lo, hi, 5):
        body.append(svg_text(x(t), mt + ph + 16, f"{t:g}"))
    body.append(f'<line x1="{ml}" x2="{w - mr}" y1="{mt + ph}" y2="{mt + ph}" stroke="{MUTED}"/>')
    body.append(svg_text(ml + pw / 2, h - 6, xlabel))
    if threshold is not None and lo <= threshold <= hi:
        tx = x(threshold)
        body.append(
            f'<line x1="{num(tx)}" x2="{num(tx)}" y1="{mt - 6}" y2="{mt + ph}" stroke="{INK}" '
            f'stroke-width="1.5" stroke-dasharray="5 3"/>'
        )
        anchor = "start" if tx < ml + pw * 0.7 else "end"
        body.append(
            svg_text(
                tx + (4 if anchor == "start" else -4),
                mt + 4,
                f"{threshold_label} {threshold:.2f}",
                anchor,
                INK,
            )
        )
    return svg_document(w, h, body, title)


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
            f'<line x1="{num(x(t))}" x2="{num(x(t))}" y1="{mt - 4}" y2="{h - 26}" stroke="{GRID}"/>'
        )
        body.append(svg_text(x(t), h - 12, f"{t:g}"))
    zero = x(0.0 if lo < 0 < hi else lo)
    for i, (lab, v) in enumerate(rows):
        y = mt + i * (bh + 4)
        short = lab if len(lab) <= 18 else lab[:17] + "…"
        body.append(svg_text(ml - 6, y + bh - 4, short, "end", INK))
        if v is None or not math.isfinite(v):
            body.append(svg_text(ml + 4, y + bh - 4, "undefined", "start"))
            continue
        color = RED if threshold is not None and v < threshold else GREEN
        x0, x1 = sorted((zero, x(v)))
        body.append(
            f'<rect x="{num(x0)}" y="{y}" width="{num(max(x1 - x0, 1))}" height="{bh}" '
            f'fill="{color}" opacity="0.8"><title>{escape(f"{lab}: {v:.3f}")}</title></rect>'
        )
        body.append(svg_text(x1 + 4, y + bh - 4, f"{v:.2f}", "start"))
    if threshold is not None:
        tx = x(threshold)
        body.append(
            f'<line x1="{num(tx)}" x2="{num(tx)}" y1="{mt - 8}" y2="{h - 26}" stroke="{RED}" '
            f'stroke-width="2" stroke-dasharray="5 3"/>'
        )
        body.append(svg_text(tx + 4, mt - 10, f"threshold {threshold:.2f}", "start", RED))
    return svg_document(w, h, body, title)


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
    ymin, ymax = min([*ys, 0.0]), max([*ys, 1.0])
    pw, ph = w - ml - mr, h - mt - mb
    n = max(len(pts) - 1, 1)

    def x(i: int) -> float:
        return ml + i / n * pw if len(pts) > 1 else ml + pw / 2

    def y(v: float) -> float:
        return mt + ph - (v - ymin) / (ymax - ymin) * ph

    body = []
    for t in _ticks(ymin, ymax, 4):
        body.append(
            f'<line x1="{ml}" x2="{w - mr}" y1="{num(y(t))}" y2="{num(y(t))}" stroke="{GRID}"/>'
        )
        body.append(svg_text(ml - 6, y(t) + 4, f"{t:g}", "end"))
    for g, lab in guides:
        body.append(
            f'<line x1="{ml}" x2="{w - mr}" y1="{num(y(g))}" y2="{num(y(g))}" stroke="{AMBER}" '
            f'stroke-dasharray="4 3"/>'
        )
        body.append(svg_text(w - mr + 4, y(g) + 4, f"{lab} {g:g}", "start", AMBER))
    band = [
        (i, lo, hi) for i, (_, _, lo, hi) in enumerate(pts) if lo is not None and hi is not None
    ]
    if len(band) > 1:
        upper = " ".join(f"{num(x(i))},{num(y(hi))}" for i, _, hi in band)
        lower = " ".join(f"{num(x(i))},{num(y(lo))}" for i, lo, _ in reversed(band))
        body.append(f'<polygon points="{upper} {lower}" fill="{BLUE}" opacity="0.15"/>')
    if len(pts) > 1:
        line = " ".join(f"{num(x(i))},{num(y(v))}" for i, (_, v, _, _) in enumerate(pts))
        body.append(f'<polyline points="{line}" fill="none" stroke="{BLUE}" stroke-width="2"/>')
    step = max(1, len(pts) // 8)
    for i, (lab, v, lo, hi) in enumerate(pts):
        if lo is not None and hi is not None:
            body.append(
                f'<line x1="{num(x(i))}" x2="{num(x(i))}" y1="{num(y(lo))}" y2="{num(y(hi))}" '
                f'stroke="{BLUE}" opacity="0.5"/>'
            )
        body.append(
            f'<circle cx="{num(x(i))}" cy="{num(y(v))}" r="3.5" fill="{BLUE}">'
            f"<title>{escape(f'{lab}: {v:.3f}')}</title></circle>"
        )
        if i % step == 0 or i == len(pts) - 1:
            body.append(svg_text(x(i), h - 14, lab))
    return svg_document(w, h, body, title)


__all__ = ["bars", "histogram", "trend"]
