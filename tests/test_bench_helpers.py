"""The signal-quality bench's figures on hand-worked cases (bench/realdata.py)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import realdata as rd  # noqa: E402


def test_auc_counts_pairs_and_halves_ties() -> None:
    # pairs (bad, good): (1,2) below, (1,3) below, (3,2) above, (3,3) tie -> (2 + 0.5) / 4
    assert rd.auc([1.0, 3.0], [2.0, 3.0]) == 0.625
    assert rd.auc([0.0], [1.0, 2.0]) == 1.0
    assert rd.auc([5.0], [1.0, 2.0]) == 0.0
    assert math.isnan(rd.auc([], [1.0]))


def test_score_auc_gives_undefined_scores_the_median() -> None:
    scores = {"a": 1.0, "b": 2.0, "c": 3.0, "d": None}
    r = rd.score_auc(scores, bad={"a", "d"}, evaluated={"a", "b", "c", "d"})
    # d gets 2.0: bad {1, 2} vs good {2, 3}: pairs below 1 + 1 + 0.5 + 1 = 3.5 of 4
    assert r == {"auc": 0.875, "missing": 1}


def test_bad_workers_keep_ties_together() -> None:
    quality = {"a": 0.5, "b": 0.5, "c": 0.9, "d": 0.8, "e": 0.7, "f": 0.95}
    bad, cut = rd.bad_workers(quality, set(quality))
    assert (bad, cut) == ({"a", "b"}, 0.5)  # ceil(0.2 * 6) = 2
    quality["b"] = 0.6
    assert rd.bad_workers(quality, set(quality)) == ({"a", "b"}, 0.6)


def test_crowd_wrong_counts_a_tie_as_wrong() -> None:
    ds = rd.DataSet(
        "t",
        Path("."),
        "label",
        [],
        [
            ("w1", "x", "1"),
            ("w2", "x", "0"),
            ("w1", "y", "1"),
            ("w2", "y", "1"),
            ("w1", "z", "0"),
            ("w2", "z", "0"),
            ("w3", "z", "1"),
        ],
        {"x": "1", "y": "1", "z": "1"},
        ["x", "y", "z"],
    )
    wrong, _ = rd.crowd_wrong(ds, rd.by_item(ds))
    assert wrong == {"x", "z"}
    assert rd.answer_error(ds, {"x": "1", "y": "0"}, {"x", "y", "z"}) == 1 / 3


def test_pr() -> None:
    r = rd.pr({"a", "b", "q"}, {"a", "c"}, universe={"a", "b", "c"})
    assert (r["tp"], r["flagged"], r["actual"], r["precision"], r["recall"]) == (1, 2, 2, 0.5, 0.5)


def test_thresholds_and_counts_are_not_worker_scores() -> None:
    assert rd.is_score("wqs")
    assert rd.is_score("model_noise_sd")
    assert rd.is_score("gold_accuracy")
    for name in ("n_judgments", "model_chance_sd", "model_floor_sd", "model_worker_chance"):
        assert not rd.is_score(name)


def test_scored_shift_is_the_posterior_gap_between_scored_and_all_answers(tmp_path: Path) -> None:
    import calibration

    (tmp_path / "truth.csv").write_text("item,truth\na,1\nb,\n", encoding="utf-8")
    (tmp_path / "judgments.csv").write_text(
        "worker,item,value\nw,a,1\nw,b,1\nw,c,0\nv,c,0\n", encoding="utf-8"
    )
    posterior = {"a": {"1": 0.6, "0": 0.4}, "b": {"1": 0.9}, "c": {"0": 1.0}}
    shift = calibration.scored_shift(tmp_path, posterior)
    # w: 0.6 on the one scored answer, (0.6 + 0.9 + 1.0) / 3 on all; v answered no scored item
    assert shift == {"w": pytest.approx(0.6 - 2.5 / 3)}
    model = {"w": (0.8, 0.7, 0.9)}
    moved = calibration.figures(model, {"w": 0.5}, {"w": 40}, 30, shift)
    assert moved["mean_model"] == pytest.approx(0.8 + 0.6 - 2.5 / 3)
    assert calibration.figures(model, {"w": 0.5}, {"w": 40}, 30)["mean_model"] == 0.8
