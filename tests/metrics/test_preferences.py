"""Preferences: parsing, canonical pairs, position bias."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest

from monitor.metrics.preferences.judgments import (
    CANONICAL_LABELS,
    canonical_pairs,
    parse_outcomes,
    position_bias,
)


def test_parse_outcomes() -> None:
    assert parse_outcomes(["left", " TIE ", "right"]).tolist() == [1, 0, -1]
    assert parse_outcomes([]).dtype == np.int8
    with pytest.raises(ValueError, match="'both'"):
        parse_outcomes(["left", "both"])


def test_canonical_pairs() -> None:
    # worker 0 judges (3, 1) twice (latest: right preferred = 1 > 3), worker 1 judges (1, 3) tie
    cp = canonical_pairs([0, 0, 1, 1], [3, 3, 1, 2], [1, 1, 3, 1], [1, -1, 0, 1])
    assert cp.pairs.tolist() == [[1, 2], [1, 3]]
    got = sorted(
        zip(cp.workers.tolist(), cp.pair.tolist(), cp.label.tolist(), cp.rows.tolist(), strict=True)
    )
    assert got == [(0, 1, 2, 1), (1, 0, 0, 3), (1, 1, 1, 2)]
    assert [CANONICAL_LABELS[x] for _, _, x, _ in got] == [">", "<", "="]
    every = canonical_pairs(
        [0, 0, 1, 1], [3, 3, 1, 2], [1, 1, 3, 1], [1, -1, 0, 1], latest_only=False
    )
    assert len(every.rows) == 4


def test_position_bias_and_tie_rate() -> None:
    w = np.r_[np.zeros(20, int), np.ones(5, int), np.full(3, 3)]
    o = np.r_[np.ones(16), -np.ones(2), np.zeros(2), [1, -1, 0, 0, 1], np.zeros(3)].astype(np.int8)
    recs = {r.worker: r for r in position_bias(w, o)}
    assert set(recs) == {0, 1, 3}
    r0 = recs[0]
    assert (r0.n_judgments, r0.n_ties, r0.n_strict, r0.n_left) == (20, 2, 18, 16)
    assert r0.tie_rate == pytest.approx(0.1)
    assert r0.left_share == pytest.approx(16 / 18)
    assert r0.p_value == pytest.approx(binomtest(16, 18).pvalue)
    assert recs[3].left_share is None
    assert recs[3].p_value is None
    assert recs[3].undefined
