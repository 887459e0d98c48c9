"""The index's sparklines: a bounded measure on a fixed scale, so that noise is drawn flat."""

from __future__ import annotations

import re

from monitor.report import pictures
from monitor.report.index import BOUNDS, SERIES


def heights(svg: str) -> list[float]:
    """The y of each point of the line (larger is lower)."""
    [points] = re.findall(r'<polyline points="([^"]+)"', svg)
    return [float(p.split(",")[1]) for p in points.split()]


def test_affects_noise_is_flat() -> None:
    """affect's alpha moved from 0.32866 to 0.32863: drawn flat, on the scale 0 to 1."""
    svg = str(pictures.sparkline([0.32866, 0.32863], title="alpha", bounds=BOUNDS[SERIES[0]]))
    ys = heights(svg)
    assert max(ys) - min(ys) < 0.05
    assert "scale 0 to 1" in svg
    # fitted to the data, the same two values fill the height: a steep fall
    fitted = heights(str(pictures.sparkline([0.32866, 0.32863], title="alpha")))
    assert max(fitted) - min(fitted) > 20


def test_a_real_change_still_shows() -> None:
    ys = heights(str(pictures.sparkline([0.6, 0.33], title="alpha", bounds=(-1.0, 1.0))))
    assert ys[1] - ys[0] > 5  # lower on the page


def test_negative_values_use_the_lower_bound_and_mark_zero() -> None:
    svg = str(pictures.sparkline([-0.19, 0.1], title="phi", bounds=BOUNDS["phi"]))
    assert "scale -1 to 1" in svg
    assert "<line " in svg
    ys = heights(svg)
    assert 0 < ys[0] - ys[1] < 5  # 0.29 of a scale of 2 in 22 px


def test_every_series_is_bounded() -> None:
    assert set(SERIES) == set(BOUNDS)
    assert BOUNDS["percent_agreement"] == (0.0, 1.0)
