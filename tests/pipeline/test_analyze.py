"""``monitor analyze`` reproduces the shared golden cases through the command line."""

from __future__ import annotations

import contextlib
import io
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from monitor.cli import main
from tests.golden import GOLDEN, load, params

ABSOLUTE_KEYS = ("percent_agreement", "fleiss_kappa", "cohen_kappa", "scott_pi")


def _write_jsonl(case: dict[str, Any], path: Path) -> None:
    with path.open("w", encoding="utf-8") as f:
        for k, j in enumerate(case["judgments"]):
            row = {key: val for key, val in j.items() if key != "t"}
            if "t" in j:  # time order of preferences: latest wins
                row["created_at"] = _stamp(j["t"])
            row.setdefault("judgment_id", f"j{k}")
            f.write(json.dumps(row) + "\n")


def _stamp(t: int) -> str:
    return (
        f"2026-01-{1 + t // 86400:02d}T{t % 86400 // 3600:02d}:{t % 3600 // 60:02d}:{t % 60:02d}Z"
    )


def _options(case: dict[str, Any]) -> list[str]:
    scale, kind = case["scale"], case["kind"]
    if kind == "rating":
        return ["--min", str(scale["min"]), "--max", str(scale["max"])]
    if kind == "label":
        return ["--categories", ",".join(str(c) for c in scale["categories"])]
    if kind == "multilabel":
        return (
            ["--options", ",".join(scale["options"])] if scale.get("closed", True) else ["--open"]
        )
    return [] if scale["ties_allowed"] else ["--strict"]


def analyze(case: dict[str, Any], tmp_path: Path, *extra: str) -> dict[str, Any]:
    """``monitor analyze FILE --json`` in-process (the same entry point as the console script)."""
    path = tmp_path / "case.jsonl"
    _write_jsonl(case, path)
    argv = [
        "analyze",
        str(path),
        "--kind",
        case["kind"],
        *_options(case),
        "--json",
        "--bootstrap",
        "20",
        *(extra or ("--phi", "map")),
    ]
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        status = main(argv)
    assert status == 0
    return json.loads(buffer.getvalue())


def test_console_script_prints_the_document(tmp_path: Path) -> None:
    case = load(GOLDEN / "cases" / "seed_cohen_50.json")
    path = tmp_path / "case.jsonl"
    _write_jsonl(case, path)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "monitor",
            "analyze",
            str(path),
            "--kind",
            "label",
            "--json",
            "--bootstrap",
            "0",
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert math.isclose(
        doc["agreement"]["cohen_kappa"], case["expected"]["cohen_kappa"], abs_tol=1e-9
    )
    assert set(doc) >= {"campaign", "agreement", "workers", "items", "annotations"}


def close(got: float | None, want: float | None, tol: float) -> bool:
    if want is None or got is None:
        return got is None and want is None
    return math.isclose(got, want, rel_tol=0, abs_tol=tol)


CASES = [p for p in params("*.json") if load(p.values[0])["kind"] in ("rating", "label")]


@pytest.mark.slow
@pytest.mark.parametrize("path", CASES)
def test_agreement_cases(path: Path, tmp_path: Path) -> None:
    case = load(path)
    doc = analyze(case, tmp_path)
    exp, tol, agr = case["expected"], case["tolerance"], doc["agreement"]
    measures = agr["measures"]
    assert doc["campaign"]["n_judgments"] == len(case["judgments"])
    for key in ABSOLUTE_KEYS:
        if key in exp:
            assert close(agr[key], exp[key], tol), key
    assert close(measures["percent_agreement"]["pooled"], exp["percent_agreement_pooled"], tol)
    for level in ("nominal", "ordinal", "interval", "ratio"):
        key = f"krippendorff_alpha_{level}"
        if key in exp:
            assert close(measures[key]["value"], exp[key], tol), key
    if "fleiss_kappa" not in exp:
        assert agr["fleiss_kappa"] is None
    per_item = {i["item"]: i for i in doc["items"]}
    for item, pa in exp["percent_agreement_per_item"].items():
        assert close(per_item[item]["percent_agreement"], pa, tol), item
    _crowdtruth(doc, exp.get("crowdtruth"))


def _crowdtruth(doc: dict[str, Any], ct: dict[str, Any] | None) -> None:
    if not ct:
        return
    workers = {w["worker"]: w for w in doc["workers"]}
    for key in ("wqs", "wwa", "wua"):
        for worker, x in ct[key].items():
            assert close(workers[worker][key], x, 1e-6), (worker, key)
    items = {i["item"]: i for i in doc["items"]}
    for unit, x in ct["uqs"].items():
        assert close(items[unit]["uqs"], x, 1e-6), unit
    for unit, scores in ct["uas"].items():
        for ann, x in scores.items():
            assert close(items[unit]["uas"].get(str(ann), 0.0), x, 1e-6), (unit, ann)
    if "aqs" in ct:
        aqs = {a["annotation"]: a["aqs"] for a in doc["annotations"]}
        for ann, x in ct["aqs"].items():
            assert close(aqs[str(ann)], x, 1e-6), ann


@pytest.mark.slow
@pytest.mark.parametrize(
    "path", params("ct_*.json") + params("ctex_*.json", folder="crowdtruth-examples/cases")
)
def test_crowdtruth_cases(path: Path, tmp_path: Path) -> None:
    case = load(path)
    doc = analyze(case, tmp_path)
    _crowdtruth(doc, case["expected"]["crowdtruth"])
    if not case["scale"].get("closed", True):
        assert all("aqs" not in a for a in doc["annotations"]) or doc["annotations"] == []


@pytest.mark.slow
@pytest.mark.parametrize("path", params("*transitivity*.json") + params("pairwise_*.json"))
def test_pairwise_cases(path: Path, tmp_path: Path) -> None:
    case = load(path)
    doc = analyze(case, tmp_path)
    strict = not case["scale"]["ties_allowed"]
    workers = {w["worker"]: w for w in doc["workers"]}
    for worker, rec in case["expected"]["transitivity"].items():
        t = workers[worker]["transitivity"]
        want = rec["kappa_strict"] if strict else rec["kappa_weak"]
        assert close(t["kappa"], want, case["tolerance"]), worker
        assert t["triplets"] == rec["n_triplets"]
        assert t["transitive"] == rec["n_transitive"]
        assert close(t["p_a"], rec["p_a"], case["tolerance"])
        assert math.isclose(t["p_e"], 6 / 8 if strict else 13 / 27)


def _phi_case(path: Path) -> dict[str, Any]:
    d = load(path)
    judgments = [
        {"worker": f"w{j}", "item": f"i{i}", "value": x}
        for i, row in enumerate(d["matrix"])
        for j, x in enumerate(row)
        if x is not None
    ]
    scale = {"min": d["scale"]["min"], "max": d["scale"]["max"]}
    return {"kind": "rating", "scale": scale, "judgments": judgments, "reference": d["reference"]}


@pytest.mark.slow
@pytest.mark.parametrize("path", params("*.json", folder="phi"))
def test_phi_cases(path: Path, tmp_path: Path) -> None:
    """The authors' mapping and the flat prior on Phi against the reference quadrature."""
    case = _phi_case(path)
    doc = analyze(case, tmp_path, "--phi", "full", "--phi-mapping", "authors", "--phi-prior", "phi")
    ref = case["reference"]["quadrature"]["phi"]
    phi = doc["agreement"]["phi"]
    assert phi["method"] == "exact"
    assert close(phi["mean"], ref["phi_mean"], 0.005)
    width = ref["phi_hpd95"][1] - ref["phi_hpd95"][0]
    # the reference's own HPD comes from a 600-point grid: its ends carry up to ~3% of the width
    for got, want in zip(phi["hpd"], ref["phi_hpd95"], strict=True):
        assert close(got, want, max(0.005, 0.03 * width))
