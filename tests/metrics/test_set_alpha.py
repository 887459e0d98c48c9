"""Krippendorff's alpha over sets (MASI, Jaccard): NLTK's values (tests/data/set_alpha.json,
written by tests/data/make_set_alpha.py), its bootstrap, and hypothesis properties."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.metrics.agreement.bootstrap import bootstrap_set_alpha
from monitor.metrics.agreement.krippendorff import ValueCounts, krippendorff_alpha
from monitor.metrics.agreement.sets import SetCounts, set_alpha, set_distance
from tests.hypothesis_profiles import examples

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "set_alpha.json"
SETTINGS = settings(max_examples=examples(60), deadline=None)


def counts_of(rows: list[dict], options: list[str]) -> SetCounts:
    """One row per judgment: item and the list of options chosen."""
    items = sorted({r["item"] for r in rows})
    item_code = {x: k for k, x in enumerate(items)}
    opt_code = {x: k for k, x in enumerate(options)}
    jud = [k for k, r in enumerate(rows) for _ in r["value"]]
    opt = [opt_code[o] for r in rows for o in r["value"]]
    return SetCounts.from_annotations(
        [item_code[r["item"]] for r in rows], jud, opt, n_options=len(options)
    )


def test_golden_case_from_nltk() -> None:
    case = json.loads(GOLDEN.read_text(encoding="utf-8"))
    sc = counts_of(case["judgments"], case["scale"]["options"])
    for distance in ("masi", "jaccard"):
        got = set_alpha(sc, distance).alpha
        assert got == pytest.approx(case["expected"][f"krippendorff_alpha_{distance}"], abs=1e-9)


def test_demo_campaign_against_nltk(tmp_path: Path) -> None:
    """The demo's multi-label campaign: alpha within 0.005 of NLTK's (it agrees to 1e-9)."""
    from nltk.metrics.agreement import AnnotationTask
    from nltk.metrics.distance import jaccard_distance, masi_distance

    from monitor.actions.demo import OPTIONS, generate

    multi = generate(tmp_path, seed=0)[2]
    with multi.judgments.open(newline="") as fh:
        rows = [
            {"item": r["item"], "worker": r["worker"], "value": sorted(r["value"].split("|"))}
            for r in csv.DictReader(fh)
        ]
    assert all(r["value"] != [""] for r in rows)  # NLTK cannot compare two empty sets
    sc = counts_of(rows, list(OPTIONS))
    data = [(r["worker"], r["item"], frozenset(r["value"])) for r in rows]
    for distance, fn in (("masi", masi_distance), ("jaccard", jaccard_distance)):
        ours = set_alpha(sc, distance).alpha
        theirs = AnnotationTask(data, distance=fn).alpha()
        assert ours is not None
        assert abs(ours - theirs) < 0.005
        assert ours == pytest.approx(theirs, abs=1e-9)


def test_distances_by_hand() -> None:
    # {1,2} vs {1,2,3,4}: subset, J = 1/2, MASI = 1 - 1/2 * 2/3 (NLTK's docstring: 0.667)
    inter, a, b = np.array([2, 1, 0, 2, 0]), np.array([2, 2, 1, 2, 0]), np.array([4, 2, 1, 2, 0])
    masi = set_distance(inter, a, b, "masi")
    assert masi == pytest.approx([2 / 3, 1 - 1 / 3 * 1 / 3, 1.0, 0.0, 0.0])
    assert set_distance(inter, a, b, "jaccard") == pytest.approx([0.5, 2 / 3, 1.0, 0.0, 0.0])


def test_undefined_cases_say_why() -> None:
    one = SetCounts.from_annotations([0, 1], [0, 1], [0, 1])
    assert set_alpha(one).alpha is None
    assert "two judgments" in (set_alpha(one).reason or "")
    same = SetCounts.from_annotations([0, 0, 1, 1], [0, 1, 2, 3], [2, 2, 2, 2])
    r = set_alpha(same, "jaccard")
    assert r.alpha is None
    assert "same set" in (r.reason or "")
    assert bootstrap_set_alpha(same, n_boot=20).interval is None
    with pytest.raises(ValueError, match="distance must be one of"):
        set_alpha(same, "dice")  # type: ignore[arg-type]


def test_bootstrap_interval_holds_the_estimate_and_is_seeded() -> None:
    case = json.loads(GOLDEN.read_text(encoding="utf-8"))
    sc = counts_of(case["judgments"], case["scale"]["options"])
    a = bootstrap_set_alpha(sc, "masi", n_boot=300, seed=3)
    b = bootstrap_set_alpha(sc, "masi", n_boot=300, seed=3)
    assert a == b
    assert a.interval is not None
    assert a.n_defined == 300
    assert a.interval.low < a.estimate < a.interval.high


@st.composite
def set_campaigns(draw, singletons: bool = False):
    """(judgment items, annotation judgment, annotation option, n_options)."""
    n_items = draw(st.integers(1, 10))
    n_workers = draw(st.integers(2, 5))
    n_options = draw(st.integers(1, 7))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    mask = rng.random((n_items, n_workers)) < draw(st.floats(0.3, 1.0))
    items = np.nonzero(mask)[0]
    if singletons:
        jud = np.arange(items.size)
        opt = rng.integers(0, n_options, size=items.size)
    else:
        chosen = rng.random((items.size, n_options)) < 0.4
        jud, opt = np.nonzero(chosen)
    return items, jud, opt, n_options


def _close(a: float | None, b: float | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and abs(a - b) < 1e-9)


@SETTINGS
@given(set_campaigns(), st.sampled_from(["masi", "jaccard"]))
def test_perfect_agreement_is_one(c, distance) -> None:
    """Every judgment of an item gives the item's set: alpha 1 wherever it is defined."""
    items, jud, opt, n_opt = c
    first: dict[int, int] = {}
    for k, i in enumerate(items.tolist()):
        first.setdefault(i, k)
    chosen = {k: sorted(opt[jud == k].tolist()) for k in range(items.size)}
    rows = [(k, o) for k, i in enumerate(items.tolist()) for o in chosen[first[i]]]
    j2 = np.array([r[0] for r in rows], dtype=np.int64)
    o2 = np.array([r[1] for r in rows], dtype=np.int64)
    r = set_alpha(SetCounts.from_annotations(items, j2, o2, n_options=n_opt), distance)
    assert r.alpha is None or abs(r.alpha - 1.0) < 1e-12


@SETTINGS
@given(set_campaigns(), st.sampled_from(["masi", "jaccard"]), st.integers(0, 2**32 - 1))
def test_relabelling_options_changes_nothing(c, distance, seed) -> None:
    items, jud, opt, n_opt = c
    perm = np.random.default_rng(seed).permutation(n_opt)
    a = set_alpha(SetCounts.from_annotations(items, jud, opt, n_options=n_opt), distance)
    b = set_alpha(SetCounts.from_annotations(items, jud, perm[opt], n_options=n_opt), distance)
    assert _close(a.alpha, b.alpha)


@SETTINGS
@given(set_campaigns(singletons=True))
def test_singletons_give_nominal_alpha(c) -> None:
    items, jud, opt, n_opt = c
    sc = SetCounts.from_annotations(items, jud, opt, n_options=n_opt)
    nominal = krippendorff_alpha(ValueCounts.from_judgments(items, opt, n_values=n_opt)).alpha
    masi, jaccard = set_alpha(sc, "masi").alpha, set_alpha(sc, "jaccard").alpha
    assert _close(masi, jaccard)
    assert _close(masi, nominal)


@settings(max_examples=examples(30), deadline=None)
@given(set_campaigns(), st.sampled_from(["masi", "jaccard"]), st.integers(0, 2**16))
def test_a_bootstrap_replicate_is_the_alpha_of_the_resampled_items(c, distance, seed) -> None:
    """One replicate (n_boot=1) equals alpha over the items it drew, each as often as drawn."""
    items, jud, opt, n_opt = c
    sc = SetCounts.from_annotations(items, jud, opt, n_options=n_opt)
    ci = bootstrap_set_alpha(sc, distance, n_boot=1, seed=seed)
    if ci.estimate is None:
        return
    pairable = np.flatnonzero(sc.n >= 2)
    drawn = pairable[np.random.default_rng(seed).integers(0, pairable.size, size=pairable.size)]
    direct = set_alpha(sc.take(drawn), distance).alpha
    if direct is None:
        assert ci.interval is None
    else:
        assert ci.interval is not None
        assert abs(ci.interval.low - direct) < 1e-9
        assert abs(ci.interval.high - direct) < 1e-9
