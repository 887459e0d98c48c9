"""CrowdTruth 2.0: golden cases, CrowdTruth-core examples and behaviour on toy campaigns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

from monitor.metrics.common import encode
from monitor.metrics.crowdtruth.scores import (
    CrowdTruthResult,
    CrowdTruthScores,
    crowdtruth,
    label_counts,
    multilabel_counts,
    pairwise_outcomes,
)
from tests.golden import load, params

SCALARS = ("uqs", "wqs", "wwa", "wua", "aqs")


def campaign(case: dict[str, Any]) -> dict[str, Any]:
    """Integer-coded arrays of a golden case (labels and multi-labels as annotations)."""
    judgments = case["judgments"]
    scale = case["scale"]
    workers, worker_names = encode([j["worker"] for j in judgments])
    units, unit_names = encode([j["item"] for j in judgments])
    if case["kind"] == "label":
        names = list(scale["categories"])
        closed = True
        position = {c: i for i, c in enumerate(names)}
        counts = label_counts([position[j["value"]] for j in judgments], len(names))
    else:
        closed = bool(scale.get("closed", True))
        names = (
            list(scale["options"]) if closed else sorted({v for j in judgments for v in j["value"]})
        )
        position = {c: i for i, c in enumerate(names)}
        rows = [k for k, j in enumerate(judgments) for _ in j["value"]]
        codes = [position[v] for j in judgments for v in j["value"]]
        counts = multilabel_counts(rows, codes, len(judgments), len(names))
    return {
        "workers": workers,
        "units": units,
        "counts": counts,
        "closed": closed,
        "names": {
            "w": [str(n) for n in worker_names],
            "u": [str(n) for n in unit_names],
            "a": [str(n) for n in names],
        },
    }


def _score(r: CrowdTruthResult, key: str) -> Any:
    """The golden cases' ``uqs``, ..., and ``uqs_initial``, ...: the first iteration's."""
    name, initial, _ = key.partition("_initial")
    return getattr(r.initial if initial else r, name)


def check_against(path: Path) -> None:
    case = load(path)
    expected = case["expected"]["crowdtruth"]
    tol = case.get("tolerance", 1e-6)
    c = campaign(case)
    r = crowdtruth(c["workers"], c["units"], c["counts"], closed=c["closed"])
    assert r.converged
    assert r.iterations == expected["iterations"]
    for key in [k for k in expected if k.split("_")[0] in SCALARS]:
        got = _score(r, key)
        if key.startswith("aqs") and not c["closed"]:
            assert got is None
            continue
        index = {n: i for i, n in enumerate(c["names"][key[0] if key[0] != "a" else "a"])}
        for name, value in expected[key].items():
            assert got[index[str(name)]] == pytest.approx(value, abs=tol), (key, name)
    units = {n: i for i, n in enumerate(c["names"]["u"])}
    anns = {n: i for i, n in enumerate(c["names"]["a"])}
    for key in ("uas", "uas_initial"):
        dense = _score(r, key).toarray()
        for unit, row in expected[key].items():
            for ann, value in row.items():
                # open tasks: annotations nobody gave are outside our index, and zero
                got = dense[units[str(unit)], anns[str(ann)]] if str(ann) in anns else 0.0
                assert got == pytest.approx(value, abs=tol), (key, unit, ann)


@pytest.mark.parametrize("path", params("*.json", key="crowdtruth"))
def test_golden_cases(path: Path) -> None:
    check_against(path)


@pytest.mark.parametrize("path", params("ctex_*.json", folder="crowdtruth-examples/cases"))
def test_crowdtruth_core_examples(path: Path) -> None:
    check_against(path)


@pytest.mark.parametrize("path", params("ct_*.json"))
def test_warm_start_from_own_result_converges_at_once(path: Path) -> None:
    c = campaign(load(path))
    cold = crowdtruth(c["workers"], c["units"], c["counts"], closed=c["closed"])
    warm = crowdtruth(
        c["workers"], c["units"], c["counts"], closed=c["closed"], warm_start=cold.scores
    )
    assert warm.converged
    assert warm.iterations <= 2 < cold.iterations
    np.testing.assert_allclose(warm.wqs, cold.wqs, atol=5e-3)
    # the first-iteration values are always those of a cold start
    np.testing.assert_array_equal(warm.initial.wqs, cold.initial.wqs)
    np.testing.assert_array_equal(warm.initial.uqs, cold.initial.uqs)
    # without the first-iteration values: the same scores, one sweep fewer, NaN initial values
    lean = crowdtruth(
        c["workers"],
        c["units"],
        c["counts"],
        closed=c["closed"],
        warm_start=cold.scores,
        initial=False,
    )
    for name in ("uqs", "wqs", "wwa", "wua"):
        np.testing.assert_array_equal(getattr(lean, name), getattr(warm, name))
    assert np.isnan(lean.initial.wqs).all()
    assert np.isnan(lean.initial.uqs).all()
    assert lean.initial.uas.nnz == 0
    assert lean.iterations == warm.iterations


@pytest.mark.parametrize("path", params("ct_*.json"))
def test_warm_start_after_new_judgments(path: Path) -> None:
    c = campaign(load(path))
    n = c["workers"].shape[0]
    old = np.arange(n) < n - n // 10
    before = crowdtruth(c["workers"][old], c["units"][old], c["counts"][old], closed=c["closed"])
    cold = crowdtruth(c["workers"], c["units"], c["counts"], closed=c["closed"])
    warm = crowdtruth(
        c["workers"], c["units"], c["counts"], closed=c["closed"], warm_start=before.scores
    )
    assert warm.converged
    assert warm.iterations <= cold.iterations
    np.testing.assert_allclose(warm.uqs, cold.uqs, atol=1e-2)
    np.testing.assert_allclose(warm.wqs, cold.wqs, atol=1e-2)


# ----------------------------------------------------------------------------- toy campaigns


def toy(rows: list[tuple[int, int, list[int]]], n_ann: int, **kw: Any):
    """rows: (worker, unit, annotation codes)."""
    workers = np.array([r[0] for r in rows])
    units = np.array([r[1] for r in rows])
    jr = [k for k, r in enumerate(rows) for _ in r[2]]
    ac = [a for r in rows for a in r[2]]
    return crowdtruth(workers, units, multilabel_counts(jr, ac, len(rows), n_ann), **kw)


@pytest.mark.parametrize("closed", [True, False])
def test_all_agree_scores_one(closed: bool) -> None:
    rows = [(w, u, [u % 3]) for u in range(4) for w in range(5)]
    r = toy(rows, 4, closed=closed)
    for key in ("uqs", "wqs", "wwa", "wua"):
        np.testing.assert_allclose(getattr(r, key), 1.0)
    dense = r.uas.toarray()
    np.testing.assert_allclose(dense[np.arange(4), np.arange(4) % 3], 1.0)
    if closed:
        np.testing.assert_allclose(r.aqs[:3], 1.0)
        assert r.aqs[3] == pytest.approx(1e-8)  # nobody picks it: the package's floor
    assert r.converged


@pytest.mark.parametrize("closed", [True, False])
def test_all_disagree_scores_zero(closed: bool) -> None:
    rows = [(w, u, [w]) for u in range(3) for w in range(4)]
    r = toy(rows, 4, closed=closed)
    np.testing.assert_allclose(r.uqs, 0.0, atol=1e-12)
    np.testing.assert_allclose(r.wwa, 0.0, atol=1e-12)
    np.testing.assert_allclose(r.wqs, 0.0, atol=1e-12)
    np.testing.assert_allclose(r.initial.uqs, 0.0, atol=1e-12)


def test_one_outlier_has_lower_wqs() -> None:
    rows = [(w, u, [0 if w < 4 else 1]) for u in range(5) for w in range(5)]
    r = toy(rows, 3)
    assert np.all(r.wqs[4] < r.wqs[:4])
    assert r.wqs[4] < 0.2
    assert np.all(r.wqs[:4] > 0.5)
    # the outlier lowers the units' first-iteration quality, then loses its weight
    assert np.all(r.initial.uqs < 0.7)
    assert np.all(r.uqs > r.initial.uqs)


def test_relabelling_permutes_scores() -> None:
    rng = np.random.default_rng(3)
    n, n_w, n_u, n_a = 120, 7, 15, 4
    w, u = rng.integers(0, n_w, n), rng.integers(0, n_u, n)
    dense = (rng.random((n, n_a)) < 0.4).astype(float)
    dense[dense.sum(axis=1) == 0, 0] = 1.0
    counts = sp.csr_array(dense)
    base = crowdtruth(w, u, counts, n_workers=n_w, n_units=n_u)
    pw, pu, pa = rng.permutation(n_w), rng.permutation(n_u), rng.permutation(n_a)
    moved_counts = sp.csr_array(dense[:, np.argsort(pa)])
    order = rng.permutation(n)
    r = crowdtruth(pw[w][order], pu[u][order], moved_counts[order], n_workers=n_w, n_units=n_u)
    np.testing.assert_allclose(r.wqs[pw], base.wqs, atol=1e-12, equal_nan=True)
    np.testing.assert_allclose(r.uqs[pu], base.uqs, atol=1e-12, equal_nan=True)
    np.testing.assert_allclose(r.aqs[pa], base.aqs, atol=1e-12)
    np.testing.assert_allclose(r.uas.toarray()[np.ix_(pu, pa)], base.uas.toarray(), atol=1e-12)
    assert r.iterations == base.iterations


def test_duplicate_judgments_merge_into_counts() -> None:
    base_rows = [(0, 0, [0]), (1, 0, [0, 1]), (2, 0, [1]), (0, 1, [2]), (1, 1, [2]), (2, 1, [0])]
    split = [*base_rows, (2, 1, [2])]  # a second judgment by worker 2 on unit 1
    merged = [*base_rows[:-1], (2, 1, [0, 2])]
    a, b = toy(split, 3), toy(merged, 3)
    for key in ("uqs", "wqs", "wwa", "wua", "aqs"):
        np.testing.assert_allclose(getattr(a, key), getattr(b, key), atol=1e-12)
    np.testing.assert_allclose(a.uas.toarray(), b.uas.toarray(), atol=1e-12)


def test_repeated_annotation_counts_twice() -> None:
    once = [(0, 0, [0, 1]), (1, 0, [0]), (2, 0, [1]), (0, 1, [1]), (1, 1, [1])]
    twice = [(0, 0, [0, 0, 1]), *once[1:]]
    counts = multilabel_counts([0, 0, 0], [0, 0, 1], 1, 2)
    assert counts.toarray().tolist() == [[2.0, 1.0]]
    a, b = toy(once, 2), toy(twice, 2)
    assert a.initial.wua[0] != pytest.approx(b.initial.wua[0])
    assert b.uas.toarray()[0, 0] > a.uas.toarray()[0, 0]
    # the paper's binary vectors ignore the repetition
    pa, pb = toy(once, 2, variant="paper"), toy(twice, 2, variant="paper")
    np.testing.assert_allclose(pa.wqs, pb.wqs, atol=1e-12)


def test_single_judgment_units_and_their_workers_are_dropped() -> None:
    rows = [(w, u, [(w + u) % 2]) for u in range(3) for w in range(3)]
    base = toy(rows, 2, n_units=5, n_workers=5)
    extra = toy([*rows, (0, 3, [1]), (4, 4, [0]), (1, 4, [])], 2, n_units=5, n_workers=5)
    assert base.unit_kept.tolist() == [True, True, True, False, False]
    assert extra.unit_kept.tolist() == base.unit_kept.tolist()
    assert extra.worker_kept.tolist() == [True, True, True, False, False]
    assert np.isnan(extra.uqs[3:]).all()
    assert np.isnan(extra.wqs[3:]).all()
    assert extra.judgment_kept.tolist() == [True] * 9 + [False] * 3
    np.testing.assert_allclose(extra.wqs, base.wqs, atol=1e-14, equal_nan=True)
    np.testing.assert_allclose(extra.uqs, base.uqs, atol=1e-14, equal_nan=True)
    assert extra.uas.toarray()[3:].sum() == 0


def test_unit_with_one_worker_twice_is_dropped() -> None:
    rows = [(0, 0, [0]), (1, 0, [0]), (0, 1, [0]), (0, 1, [1])]
    r = toy(rows, 2)
    assert r.unit_kept.tolist() == [True, False]


def test_no_kept_unit_gives_undefined_scores() -> None:
    r = toy([(0, 0, [0]), (1, 1, [1])], 2)
    assert r.iterations == 0
    assert not r.unit_kept.any()
    assert np.isnan(r.uqs).all()
    assert np.isnan(r.wqs).all()
    assert np.isnan(r.aqs).all()


def test_open_and_closed_agree_on_the_first_iteration() -> None:
    rows = [(w, u, [(w * u) % 3, (w + u) % 4]) for u in range(6) for w in range(4)]
    closed, opened = toy(rows, 4, closed=True), toy(rows, 4, closed=False)
    for key in ("uqs", "wqs", "wwa", "wua"):
        np.testing.assert_allclose(
            getattr(closed.initial, key), getattr(opened.initial, key), atol=1e-14
        )
    assert opened.aqs is None
    assert opened.initial.aqs is None


def test_max_iter_stops_without_convergence() -> None:
    rows = [(w, u, [0 if w < 3 else (u % 2)]) for u in range(6) for w in range(5)]
    full = toy(rows, 2)
    assert full.iterations > 2
    r = toy(rows, 2, max_iter=1)
    assert r.iterations == 1
    assert not r.converged
    assert r.max_change >= 1e-3
    np.testing.assert_array_equal(r.wqs, full.initial.wqs)


def test_paper_variant_matches_package_on_first_iteration_for_binary_data() -> None:
    rows = [(w, u, [(w * u) % 3]) for u in range(6) for w in range(4)]
    a, b = toy(rows, 3), toy(rows, 3, variant="paper")
    np.testing.assert_allclose(a.initial.wqs, b.initial.wqs, atol=1e-14)
    assert b.variant == "paper"


def test_warm_start_with_new_codes_and_nan() -> None:
    rows = [(w, u, [0 if w < 3 else 1]) for u in range(4) for w in range(4)]
    cold = toy(rows, 2)
    short = CrowdTruthScores(uqs=cold.uqs[:2], wqs=np.array([np.nan, *cold.wqs[1:3]]), aqs=None)
    r = toy(rows, 2, warm_start=short)
    np.testing.assert_allclose(r.wqs, cold.wqs, atol=5e-3)


# ----------------------------------------------------------------------------- helpers


def test_label_counts_one_hot() -> None:
    m = label_counts([2, 0, 2], 4)
    assert m.shape == (3, 4)
    assert m.toarray().tolist() == [[0, 0, 1, 0], [1, 0, 0, 0], [0, 0, 1, 0]]


def test_pairwise_outcomes_orders_pairs() -> None:
    units, pairs, counts = pairwise_outcomes([3, 1, 1, 3], [1, 3, 2, 1], [0, 1, 2, 2])
    assert pairs.tolist() == [[1, 2], [1, 3]]
    assert units.tolist() == [1, 1, 0, 1]
    # (3 over 1) shown as (3, 1) is "right" on the ordered pair (1, 3), like (1, 3, right)
    assert counts.toarray().argmax(axis=1).tolist() == [1, 1, 2, 2]


# ----------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"workers": [0, 1, 2]}, "equal length"),
        ({"workers": [0, -1]}, "non-negative"),
        ({"workers": [0.5, 1.0]}, "integer codes"),
        ({"annotations": np.array([[1.0, -1.0], [1.0, 0.0]])}, "non-negative counts"),
        ({"annotations": np.ones((3, 2))}, "one row per judgment"),
        ({"n_workers": 1}, "n_workers is 1"),
        ({"max_iter": 0}, "max_iter"),
        ({"tol": float("nan")}, "tol"),
        ({"variant": "other"}, "variant"),
        ({"warm_start": CrowdTruthScores(np.ones(5), np.ones(2), None)}, "warm_start.uqs"),
        ({"warm_start": CrowdTruthScores(np.ones(1), np.ones(2), np.zeros(2))}, "positive"),
    ],
)
def test_validation(kwargs: dict[str, Any], message: str) -> None:
    args: dict[str, Any] = {
        "workers": [0, 1],
        "units": [0, 0],
        "annotations": np.eye(2),
    }
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        crowdtruth(args.pop("workers"), args.pop("units"), args.pop("annotations"), **args)


@pytest.mark.parametrize("block", [1, 7, 1 << 20])
def test_layout_sums_are_bincounts_bit_for_bit(block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The layout's summing operators add a block of entries at a time (no 64-bit copy of
    every key) and give np.bincount's sums exactly, whatever the block: the scores do not
    depend on how the sums are cut."""
    from monitor.metrics.crowdtruth import layout

    monkeypatch.setattr(layout, "SUM_BLOCK", block)
    rng = np.random.default_rng(7)
    n = 2_000
    workers, units = rng.integers(0, 30, n), rng.integers(0, 200, n)
    counts = label_counts(rng.integers(0, 4, n), 4)
    L, *_ = layout.build_layout(workers, units, counts, 30, 200, True, binary=False)
    for op, keys in ((L.pair_sum, L.ep), (L.cell_sum, L.ec), (L.unit_sum, L.pu),
                     (L.worker_sum, L.pw)):  # fmt: skip
        v = rng.normal(size=keys.shape[0]) * 10.0 ** rng.integers(-8, 8, keys.shape[0])
        want = np.bincount(keys, weights=v, minlength=op.n)
        got = op @ v
        assert got.dtype == np.float64
        assert np.array_equal(got, want)
