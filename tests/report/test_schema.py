"""``docs/report.schema.json``: generated from the document's TypedDicts, never stale, and
the shape of what ``monitor analyze --json``, ``monitor report --format json`` and
``monitor workers --json`` print for every kind of campaign."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import random
from pathlib import Path

import pytest

from monitor.cli import main
from monitor.report.schema import json_schema, schema_text
from tests.documents import SCHEMA, check_document, check_rows

KIND_OPTIONS = {
    "rating": ["--min", "1", "--max", "5"],
    "label": ["--categories", "a,b,c"],
    "multilabel": ["--options", "a,b,c"],
    "pairwise": [],
}


def _judgments(kind: str, path: Path, seed: int = 7) -> Path:
    """Eight workers, a dozen items (or pairs of six items), most answers along a truth, one
    worker answering at random."""
    rng = random.Random(seed)
    rows: list[dict[str, str]] = []
    for w in range(8):
        for i in range(12):
            noisy = w == 7 or rng.random() < 0.15
            if kind == "pairwise":
                left, right = f"i{i % 6}", f"i{(i + 1 + i // 6) % 6}"
                if left == right:
                    continue
                truth = "left" if left < right else "right"
                pref = rng.choice(["left", "right", "tie"]) if noisy else truth
                rows.append({"worker": f"w{w}", "left": left, "right": right, "preference": pref})
                continue
            if kind == "rating":
                value = str(rng.randint(1, 5) if noisy else 1 + i % 5)
            elif kind == "label":
                value = rng.choice("abc") if noisy else "abc"[i % 3]
            else:
                value = "|".join(
                    sorted({rng.choice("abc"), "abc"[i % 3]}) if noisy else "abc"[i % 3]
                )
            rows.append({"worker": f"w{w}", "item": f"i{i}", "value": value})
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def _out(*argv: str) -> str:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        status = main(list(argv))
    assert status == 0
    return buffer.getvalue()


def test_the_committed_schema_is_the_generated_one() -> None:
    assert SCHEMA.read_text(encoding="utf-8") == schema_text(), (
        "docs/report.schema.json is stale: python -m monitor.report.schema docs/report.schema.json"
    )


def test_the_schema_holds_the_contract_keys() -> None:
    schema = json_schema()
    defs = schema["$defs"]
    assert {"campaign", "agreement", "workers", "items", "annotations", "flags"} <= set(
        schema["required"]
    )
    assert {"name", "kind", "level", "n_workers", "n_items", "n_judgments"} <= set(
        defs["CampaignInfo"]["required"]
    )
    assert {"worker", "n_judgments", "wqs", "wwa", "wua", "transitivity", "flags", "status",
            "model_accuracy", "model_accuracy_interval", "model_noise_sd"} <= set(
        defs["WorkerRow"]["required"]
    )  # fmt: skip
    assert {"item", "n_judgments", "uqs", "uas", "phi_mu", "score", "flags"} <= set(
        defs["ItemRow"]["required"]
    )
    assert defs["Transitivity"]["required"] == ["kappa", "p_a", "p_e", "triplets", "transitive"]
    assert defs["WorkerRow"]["properties"]["status"] == {
        "enum": ["ok", "flagged", "down_weighted", "blocked"]
    }
    assert set(defs["PairRow"]["required"]) >= {"left", "right", "n_judgments", "uqs", "uas"}


def test_a_document_out_of_shape_fails_the_check(tmp_path: Path) -> None:
    path = _judgments("label", tmp_path / "labels.csv")
    doc = json.loads(_out("analyze", str(path), "--kind", "label", "--json"))
    check_document(doc)
    bad = json.loads(json.dumps(doc))
    bad["workers"][0]["status"] = "fine"
    with pytest.raises(AssertionError, match="workers/0/status"):
        check_document(bad)
    bad = json.loads(json.dumps(doc))
    del bad["campaign"]["n_items"]
    with pytest.raises(AssertionError, match="n_items"):
        check_document(bad)
    bad = json.loads(json.dumps(doc))
    bad["items"][0]["surprise"] = 1
    with pytest.raises(AssertionError, match="surprise"):
        check_document(bad)


@pytest.mark.parametrize("kind", sorted(KIND_OPTIONS))
def test_analyze_prints_a_document_of_the_schema(kind: str, tmp_path: Path) -> None:
    path = _judgments(kind, tmp_path / f"{kind}.csv")
    doc = json.loads(
        _out("analyze", str(path), "--kind", kind, *KIND_OPTIONS[kind], "--bootstrap", "20",
             "--json")
    )  # fmt: skip
    check_document(doc)
    assert doc["campaign"]["kind"] == kind
    assert len(doc["workers"]) == 8
    assert ("pairs" in doc) == (kind == "pairwise")


@pytest.mark.parametrize("kind", sorted(KIND_OPTIONS))
def test_report_and_workers_print_the_schema_shape(
    kind: str, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MONITOR_DATABASE_URL", db_url)
    path = _judgments(kind, tmp_path / f"{kind}.csv")
    _out("campaign", "create", "c", "--kind", kind, *KIND_OPTIONS[kind])
    _out("ingest", str(path), "--campaign", "c")
    monkeypatch.setenv("MONITOR_BOOTSTRAP_SAMPLES", "20")
    _out("recompute", "--campaign", "c")
    out = tmp_path / "c.json"
    _out("report", "--campaign", "c", "--format", "json", "--out", str(out))
    doc = json.loads(out.read_text(encoding="utf-8"))
    check_document(doc)
    assert len(doc["items"]) == (6 if kind == "pairwise" else 12)
    rows = [json.loads(line) for line in _out("workers", "--campaign", "c",
                                              "--json").splitlines()]  # fmt: skip
    check_rows(rows, "WorkerRow")
    assert [r["worker"] for r in rows] == [w["worker"] for w in doc["workers"]]
