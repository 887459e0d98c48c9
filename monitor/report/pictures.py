"""Small inline SVG pictures of one worker's evidence, and the index's sparklines.

- :func:`confusion`: a labeller's answers against the model's (rows: the model's answer,
  columns: theirs), each cell shaded by its share of the row; the diagonal is agreement.
- :func:`scatter`: a rater's ratings against the consensus (the model's item means), with the
  line where they would agree.
- :func:`options`: per option of a multi-label task, how often the worker agreed with the model
  that it applies, missed it, added it, or agreed that it does not.
- :func:`cycles`: a preference annotator's cycles, each as a triangle of the three items with an
  arrow from the preferred item to the other (a dashed line for a tie): around a cycle the
  arrows chase each other.
- :func:`sparkline`: a measure over runs, in a line's height.

Every piece of text is escaped here; the result is markup the template includes as is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from markupsafe import Markup

from monitor.report.charts import (
    AMBER,
    BLUE,
    FONT,
    GREEN,
    GRID,
    INK,
    MUTED,
    RED,
    num,
    svg_document,
    svg_text,
)

GREY = "#9ca3af"


def _short(s: str, n: int = 12) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def confusion(categories: Sequence[str], counts: Sequence[Sequence[int]], *, title: str) -> Markup:
    """``counts[i][j]``: the items where the model answered ``categories[i]`` and the worker
    ``categories[j]``; under it, the share where they agree."""
    k = len(categories)
    longest = min(max((len(c) for c in categories), default=1), 10)
    cell, ml = 32, 30 + 6.5 * min(max((len(c) for c in categories), default=1), 12)
    mt = 26 + 4.6 * longest
    w, h = ml + k * cell + 4.6 * longest + 6, mt + k * cell + 24
    body = [
        svg_text(ml + k * cell / 2, 12, "their answer", fill=MUTED),
        f'<text x="12" y="{num(mt + k * cell / 2)}" text-anchor="middle" fill="{MUTED}" {FONT} '
        f'transform="rotate(-90 12 {num(mt + k * cell / 2)})">the model\'s</text>',
    ]
    for j, c in enumerate(categories):
        x = ml + j * cell + cell / 2
        body.append(
            f'<text x="{num(x)}" y="{num(mt - 6)}" text-anchor="start" fill="{INK}" {FONT} '
            f'transform="rotate(-45 {num(x)} {num(mt - 6)})">{escape(_short(c, 10))}</text>'
        )
    agree = total_all = 0
    for i, r in enumerate(categories):
        y = mt + i * cell
        body.append(svg_text(ml - 6, y + cell / 2 + 4, _short(r), "end", INK))
        total = sum(counts[i]) or 1
        total_all += sum(counts[i])
        agree += int(counts[i][i])
        for j in range(k):
            n = int(counts[i][j])
            share = n / total
            colour = GREEN if i == j else RED
            body.append(
                f'<rect x="{num(ml + j * cell)}" y="{num(y)}" width="{cell - 2}" height="{cell - 2}" '
                f'fill="{colour if n else "#f9fafb"}" fill-opacity="{0.12 + 0.78 * share:.2f}" '
                f'stroke="{GRID}"><title>{escape(f"the model {r}, they {categories[j]}: {n}")}'
                "</title></rect>"
            )
            if n:
                ink = "#fff" if share > 0.55 else INK
                body.append(
                    svg_text(ml + j * cell + cell / 2 - 1, y + cell / 2 + 3, str(n), fill=ink)
                )
    if total_all:
        caption = f"agree on {agree:,} of {total_all:,} ({100 * agree / total_all:.0f}%)"
        body.append(svg_text(4, h - 6, caption, "start", INK))
        w = max(w, 12 + 6.2 * len(caption))  # the caption fits inside the picture
    return svg_document(round(w), round(h), body, title, fixed=True)


def scatter(
    xs: Sequence[float], ys: Sequence[float], *, lo: float, hi: float, title: str
) -> Markup:
    """Points (consensus, rating) on ``[lo, hi]`` both ways, and the diagonal."""
    w, h, ml, mb, mt, mr = 230, 208, 38, 50, 8, 8
    pw, ph = w - ml - mr, h - mt - mb
    span = (hi - lo) or 1.0

    def x(v: float) -> float:
        return ml + (v - lo) / span * pw

    def y(v: float) -> float:
        return mt + ph - (v - lo) / span * ph

    body = [
        f'<rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" fill="#fff" stroke="{GRID}"/>',
        f'<line x1="{num(x(lo))}" y1="{num(y(lo))}" x2="{num(x(hi))}" y2="{num(y(hi))}" '
        f'stroke="{GREEN}" stroke-dasharray="4 3"/>',
    ]
    for t in (lo, (lo + hi) / 2, hi):
        body.append(svg_text(x(t), h - mb + 14, f"{t:g}"))
        body.append(svg_text(ml - 4, y(t) + 4, f"{t:g}", "end"))
    body.append(svg_text(ml + pw / 2, h - mb + 28, "consensus (model)"))
    pairs = [(a, b) for a, b in zip(xs, ys, strict=True) if math.isfinite(a) and math.isfinite(b)]
    if pairs:
        shift = sum(b - a for a, b in pairs) / len(pairs)
        off = sum(abs(b - a) for a, b in pairs) / len(pairs)
        body.append(svg_text(4, h - 4, f"off by {off:.2f} on average, shift {shift:+.2f}", "start"))
    body.append(
        svg_text(10, mt + ph / 2, "their rating").replace(
            "<text ", f'<text transform="rotate(-90 10 {num(mt + ph / 2)})" ', 1
        )
    )
    for a, b in pairs:
        body.append(
            f'<circle cx="{num(x(a))}" cy="{num(y(b))}" r="2.6" fill="{BLUE}" fill-opacity="0.35"/>'
        )
    return svg_document(w, h, body, title, fixed=True)


OPTION_PARTS = (
    ("agreed it applies", GREEN),
    ("missed it", AMBER),
    ("added it", RED),
    ("agreed it does not", GREY),
)


def options(names: Sequence[str], counts: Sequence[Sequence[int]], *, title: str) -> Markup:
    """Per option, the counts of :data:`OPTION_PARTS` as one stacked bar."""
    bw, ml, rh, mt = 180, 80, 18, 26
    w, h = ml + bw + 10, mt + len(names) * rh + 6
    body = []
    lx = 4
    for label, colour in OPTION_PARTS:
        body.append(f'<rect x="{lx}" y="4" width="9" height="9" fill="{colour}"/>')
        body.append(svg_text(lx + 12, 12, label, "start"))
        lx += 14 + 6 * len(label)
    for i, (name, parts) in enumerate(zip(names, counts, strict=True)):
        y = mt + i * rh
        body.append(svg_text(ml - 6, y + 12, _short(name), "end", INK))
        total = sum(parts) or 1
        x0 = float(ml)
        for (label, colour), n in zip(OPTION_PARTS, parts, strict=True):
            if not n:
                continue
            width = bw * n / total
            body.append(
                f'<rect x="{num(x0)}" y="{y}" width="{num(width)}" height="{rh - 4}" '
                f'fill="{colour}"><title>{escape(f"{name}: {label} {n}")}</title></rect>'
            )
            x0 += width
    w = max(w, lx)
    return svg_document(round(w), h, body, title, fixed=True)


def _arrow(x1: float, y1: float, x2: float, y2: float, colour: str, tie: bool) -> str:
    """A line from (x1, y1) to (x2, y2), shortened at both ends, with a head at the end."""
    dx, dy = x2 - x1, y2 - y1
    d = math.hypot(dx, dy) or 1.0
    ux, uy = dx / d, dy / d
    a = (x1 + ux * 14, y1 + uy * 14)
    b = (x2 - ux * 14, y2 - uy * 14)
    dash = ' stroke-dasharray="3 3"' if tie else ""
    line = (
        f'<line x1="{num(a[0])}" y1="{num(a[1])}" x2="{num(b[0])}" y2="{num(b[1])}" '
        f'stroke="{colour}" stroke-width="1.6"{dash}/>'
    )
    if tie:
        return line
    px, py = -uy, ux
    head = [
        (b[0], b[1]),
        (b[0] - ux * 8 + px * 4, b[1] - uy * 8 + py * 4),
        (b[0] - ux * 8 - px * 4, b[1] - uy * 8 - py * 4),
    ]
    pts = " ".join(f"{num(p)},{num(q)}" for p, q in head)
    return line + f'<polygon points="{pts}" fill="{colour}"/>'


def cycles(triplets: Sequence[tuple[Sequence[str], Sequence[int], str]], *, title: str) -> Markup:
    """Each cycle as (its three items, the relations of (x, y), (y, z), (x, z): +1 the first
    preferred, 0 tie, -1 the second, and its text)."""
    cw, h = 200, 124
    body = []
    for k, (items, rel, text) in enumerate(triplets):
        ox = k * cw
        corners = [(ox + 100, 24), (ox + 34, 92), (ox + 166, 92)]
        body.append(f"<g><title>{escape(text)}</title>")
        for (i, j), r in zip(((0, 1), (1, 2), (0, 2)), rel, strict=True):
            (x1, y1), (x2, y2) = corners[i], corners[j]
            if r < 0:
                (x1, y1), (x2, y2) = (x2, y2), (x1, y1)
            body.append(_arrow(x1, y1, x2, y2, RED if r else MUTED, r == 0))
        labels = ((0, -10, "middle"), (-28, 20, "start"), (28, 20, "end"))
        for (cx, cy), item, (dx, dy, anchor) in zip(corners, items, labels, strict=True):
            body.append(f'<circle cx="{cx}" cy="{cy}" r="5" fill="{INK}"/>')
            body.append(svg_text(cx + dx, cy + dy, _short(str(item), 14), anchor, INK))
        body.append("</g>")
    return svg_document(max(1, len(triplets)) * cw, h, body, title, fixed=True)


def sparkline(
    values: Sequence[float | None],
    *,
    title: str,
    lo: float | None = None,
    bounds: tuple[float, float] | None = None,
) -> Markup:
    """A small line of ``values`` (None: a gap), the last point marked.

    With ``bounds`` (a bounded measure: alpha, kappa and Phi in [-1, 1], shares in [0, 1]) the
    scale is fixed, not fitted to the data: from 0 to the upper bound while every value is at
    least 0 (else from the lower bound), with a faint line at 0, so that a change of 0.00003
    is drawn flat and only a change a reader should see shows as one; the title names the
    scale. Without, the scale spans the values (from ``lo`` when given)."""
    w, h, pad = 120, 28, 3
    pts = [(i, v) for i, v in enumerate(values) if v is not None and math.isfinite(v)]
    if not pts:
        return svg_document(w, h, [svg_text(w / 2, h / 2 + 4, "no data")], title)
    ys = [v for _, v in pts]
    if bounds is not None:
        bottom = 0.0 if min(ys) >= 0 and bounds[0] < 0 else bounds[0]
        bottom, top = min(bottom, *ys), max(bounds[1], *ys)
        title = f"{title} (scale {bottom:g} to {top:g})"
    else:
        bottom = min(ys) if lo is None else min(lo, *ys)
        top = max(ys)
    span = (top - bottom) or 1.0
    n = max(len(values) - 1, 1)

    def x(i: int) -> float:
        return pad + i / n * (w - 2 * pad) if len(values) > 1 else w / 2

    def y(v: float) -> float:
        return h - pad - (v - bottom) / span * (h - 2 * pad)

    body = []
    if bounds is not None and bottom < 0 < top:
        body.append(
            f'<line x1="{pad}" x2="{w - pad}" y1="{num(y(0.0))}" y2="{num(y(0.0))}" '
            f'stroke="{MUTED}" stroke-width="0.5"/>'
        )
    if len(pts) > 1:
        line = " ".join(f"{num(x(i))},{num(y(v))}" for i, v in pts)
        body.append(f'<polyline points="{line}" fill="none" stroke="{BLUE}" stroke-width="1.5"/>')
    i, v = pts[-1]
    body.append(f'<circle cx="{num(x(i))}" cy="{num(y(v))}" r="2.5" fill="{BLUE}"/>')
    return svg_document(w, h, body, title)


__all__ = ["confusion", "cycles", "options", "scatter", "sparkline"]
