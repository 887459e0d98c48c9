"""The Python API (``monitor.analyze``, ``monitor.Campaign``) gives what the commands give."""

from __future__ import annotations

import contextlib
import csv
import importlib.util
import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import monitor
from monitor.cli import main
from monitor.core.errors import InputError, UsageError

OPTIONS = ["--kind", "rating", "--min", "1", "--max", "5", "--bootstrap", "20", "--phi", "map"]
KWARGS: dict[str, Any] = {
    "kind": "rating",
    "scale_min": 1,
    "scale_max": 5,
    "bootstrap": 20,
    "phi": "map",
}
VOLATILE = {"finished_at", "seconds", "at"}
"""The keys that differ between two runs of the same data: clock times."""


def _ratings(n_workers: int = 8, n_items: int = 25, per_item: int = 4) -> list[dict[str, Any]]:
    """Ratings 1..5 by workers of varied noise, one worker constant."""
    rng = np.random.default_rng(7)
    truth = rng.integers(1, 6, n_items)
    rows = []
    for i in range(n_items):
        for w in rng.choice(n_workers, per_item, replace=False):
            noisy = truth[i] + rng.normal(0, 0.3 + w * 0.3)
            value = 3 if w == n_workers - 1 else int(min(5, max(1, round(noisy))))
            rows.append({"worker": f"w{w}", "item": f"i{i}", "value": value})
    return rows


def _write_csv(rows: list[dict[str, Any]], path: Path) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def _cli_document(path: Path, *options: str) -> dict[str, Any]:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        status = main(["analyze", str(path), *options, "--json"])
    assert status == 0
    return json.loads(buffer.getvalue())


def _differences(got: Any, want: Any, where: str = "") -> list[str]:  # noqa: ANN401
    """Where two documents differ: numbers beyond 1e-9, any other value, a key."""
    if isinstance(want, dict) and isinstance(got, dict):
        if set(got) != set(want):
            return [f"{where}: keys {sorted(set(got) ^ set(want))}"]
        return [
            d
            for k in want
            if k not in VOLATILE
            for d in _differences(got[k], want[k], f"{where}.{k}")
        ]
    if isinstance(want, list) and isinstance(got, list):
        if len(got) != len(want):
            return [f"{where}: {len(got)} entries, not {len(want)}"]
        return [
            d
            for k, (g, w) in enumerate(zip(got, want, strict=True))
            for d in _differences(g, w, f"{where}[{k}]")
        ]
    numbers = (int, float)
    if isinstance(want, numbers) and isinstance(got, numbers) and not isinstance(want, bool):
        if math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9) or (
            math.isnan(got) and math.isnan(want)
        ):
            return []
        return [f"{where}: {got!r} != {want!r}"]
    return [] if got == want else [f"{where}: {got!r} != {want!r}"]


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The judgments as a CSV file named ``ratings.csv`` and its ``monitor analyze --json``."""
    path = _write_csv(_ratings(), tmp_path_factory.mktemp("api") / "ratings.csv")
    return path, _cli_document(path, *OPTIONS)


def test_the_expected_document_has_something_to_compare(
    expected: tuple[Path, dict[str, Any]],
) -> None:
    doc = expected[1]
    assert doc["agreement"]["krippendorff_alpha"] is not None
    assert len(doc["workers"]) == 8
    assert {w["decision"] for w in doc["workers"]} - {"cannot_tell"}


def test_path_gives_the_commands_document(expected: tuple[Path, dict[str, Any]]) -> None:
    path, doc = expected
    result = monitor.analyze(path, **KWARGS)
    assert _differences(result.document, doc) == []
    assert result.agreement["krippendorff_alpha"]["value"] == pytest.approx(
        doc["agreement"]["krippendorff_alpha"], abs=1e-9
    )


def test_records_give_the_commands_numbers(expected: tuple[Path, dict[str, Any]]) -> None:
    result = monitor.analyze(_ratings(), name="ratings", **KWARGS)
    assert _differences(result.document, expected[1]) == []


def test_arrays_give_the_commands_numbers(expected: tuple[Path, dict[str, Any]]) -> None:
    rows = _ratings()
    arrays = tuple(np.array([r[k] for r in rows]) for k in ("worker", "item", "value"))
    result = monitor.analyze(arrays, name="ratings", **KWARGS)
    assert _differences(result.document, expected[1]) == []
    columns = {k: np.array([r[k] for r in rows]) for k in ("worker", "item", "value")}
    by_name = monitor.analyze(columns, name="ratings", **KWARGS)
    assert _differences(by_name.document, expected[1]) == []


@pytest.mark.skipif(
    importlib.util.find_spec("pandas") is None, reason="pandas is not installed (monitor[pandas])"
)
def test_pandas_dataframe_gives_the_commands_numbers(
    expected: tuple[Path, dict[str, Any]],
) -> None:
    import pandas as pd

    path, doc = expected
    result = monitor.analyze(pd.read_csv(path), name="ratings", **KWARGS)
    assert _differences(result.document, doc) == []
    workers = result.workers.to_pandas()
    assert list(workers["worker"]) == [w["worker"] for w in doc["workers"]]
    assert list(workers["decision"]) == [w["decision"] for w in doc["workers"]]
    assert list(workers["decision_reason"]) == [w["decision_reason"] for w in doc["workers"]]
    alpha = result.agreement.to_pandas().set_index("measure").loc["krippendorff_alpha", "value"]
    assert alpha == pytest.approx(doc["agreement"]["krippendorff_alpha"], abs=1e-9)
    assert len(result.verdict.to_pandas()) == 1


@pytest.mark.skipif(
    importlib.util.find_spec("pandas") is None, reason="pandas is not installed (monitor[pandas])"
)
def test_times_durations_and_gaps_of_a_dataframe_are_the_files(tmp_path: Path) -> None:
    """Missing durations (NaN), times with and without a zone, a column monitor does not read;
    and times as NumPy datetime64 (nanoseconds) read as the same instants."""
    import pandas as pd

    good = Path(__file__).parent / "data" / "good" / "ratings.csv"
    options = ["--kind", "rating", "--min", "1", "--max", "5", "--bootstrap", "0"]
    scale: dict[str, Any] = {"kind": "rating", "scale_min": 1, "scale_max": 5, "bootstrap": 0}
    want = _cli_document(good, *options)
    got = monitor.analyze(pd.read_csv(good), name="ratings", **scale)
    assert _differences(got.document, want) == []
    assert got.workers["w1"]["mean_duration_s"] == 12.5
    rows = [
        {"worker": f"w{k % 3}", "item": f"i{k // 3}", "value": 1 + k % 5, "duration_s": 2.0 + k}
        for k in range(12)
    ]
    stamps = [f"2025-11-03T09:{k:02d}:00" for k in range(12)]
    timed = [{**r, "created_at": t} for r, t in zip(rows, stamps, strict=True)]
    want = _cli_document(_write_csv(timed, tmp_path / "timed.csv"), *options)
    columns = {k: np.array([r[k] for r in rows]) for k in rows[0]}
    columns["created_at"] = np.array(stamps, dtype="datetime64[ns]")
    got = monitor.analyze(columns, name="timed", **scale)
    assert _differences(got.document, want) == []


@pytest.mark.skipif(importlib.util.find_spec("polars") is None, reason="polars is not installed")
def test_polars_dataframe_gives_the_commands_numbers(
    expected: tuple[Path, dict[str, Any]],
) -> None:
    import polars as pl

    path, doc = expected
    result = monitor.analyze(pl.read_csv(path), name="ratings", **KWARGS)
    assert _differences(result.document, doc) == []


def test_tables_as_records(expected: tuple[Path, dict[str, Any]]) -> None:
    doc = expected[1]
    result = monitor.analyze(_ratings(), name="ratings", **KWARGS)
    assert result.workers.to_records() == doc["workers"]
    assert result.items.to_records() == doc["items"]
    assert result.flags.to_records() == doc["flags"]
    assert result.pairs.to_records() == []
    assert result.verdict.to_records() == [doc["verdict"]]
    assert result.verdict["state"] == doc["verdict"]["state"]
    assert result.workers["w0"]["decision"] == doc["workers"][0]["decision"]
    records = result.workers.to_records()
    records[0]["decision"] = "changed"
    assert result.workers[0]["decision"] == doc["workers"][0]["decision"]
    measures = {r["measure"]: r["value"] for r in result.agreement.to_records()}
    assert measures["percent_agreement"] == doc["agreement"]["percent_agreement"]


def test_labels_as_records_match_the_command(tmp_path: Path) -> None:
    rows = [
        {"worker": f"w{w}", "item": f"i{i}", "value": "yes" if (i + w) % 3 else "no"}
        for i in range(12)
        for w in range(4)
    ]
    path = _write_csv(rows, tmp_path / "labels.csv")
    want = _cli_document(path, "--kind", "label", "--bootstrap", "20")
    got = monitor.analyze(rows, kind="label", name="labels", bootstrap=20)
    assert _differences(got.document, want) == []


def test_pairwise_arrays_are_worker_left_right_preference(tmp_path: Path) -> None:
    rows = [
        {"worker": f"w{w}", "left": a, "right": b, "preference": "left" if w % 2 else "right"}
        for w in range(3)
        for a, b in (("a", "b"), ("b", "c"), ("a", "c"))
    ]
    path = _write_csv(rows, tmp_path / "pairs.csv")
    want = _cli_document(path, "--kind", "pairwise", "--bootstrap", "0")
    arrays = tuple(
        np.array([r[k] for r in rows]) for k in ("worker", "left", "right", "preference")
    )
    got = monitor.analyze(arrays, kind="pairwise", name="pairs", bootstrap=0)
    assert _differences(got.document, want) == []


def _cli_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    return capsys.readouterr().err


def test_unknown_kind_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown kind 'scores'") as info:
        monitor.analyze(_ratings(), kind="scores")
    assert info.value.hint == "rating, label, multilabel or pairwise"


def test_a_missing_column_is_the_commands_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [{"worker": r["worker"], "value": r["value"]} for r in _ratings()]
    path = _write_csv(rows, tmp_path / "ratings.csv")
    cli = _cli_error(["analyze", str(path), *OPTIONS], capsys)
    with pytest.raises(InputError) as from_path:
        monitor.analyze(path, **KWARGS)
    assert cli.splitlines()[0] == str(from_path.value)
    with pytest.raises(InputError, match="column 'item': missing") as from_records:
        monitor.analyze(rows, **KWARGS)
    assert str(from_records.value).startswith("records:1: ")
    with pytest.raises(InputError) as nothing_left:
        monitor.analyze(rows, **KWARGS)
    assert "monitor-data-" not in str(nothing_left.value)


def test_an_option_of_another_kind_is_the_commands_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write_csv(_ratings(), tmp_path / "ratings.csv")
    cli = _cli_error(["analyze", str(path), "--kind", "label", "--min", "1"], capsys)
    with pytest.raises(UsageError) as info:
        monitor.analyze(path, kind="label", scale_min=1)
    assert cli.splitlines()[0] == f"monitor: error: {info.value}"


def test_what_cannot_be_analyzed_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="cannot analyze a int"):
        monitor.analyze(3, kind="rating")
    with pytest.raises(UsageError, match="arrays for a rating campaign are 3"):
        monitor.analyze((np.array(["w"]), np.array(["i"])), kind="rating")
    with pytest.raises(UsageError, match="the arrays differ in length"):
        monitor.analyze((["w", "v"], ["i"], [1]), kind="rating", scale_min=1, scale_max=5)
    with pytest.raises(UsageError, match="are for a file"):
        monitor.analyze(_ratings(), format="csv", **KWARGS)


def test_import_monitor_loads_no_heavy_module() -> None:
    import subprocess
    import sys

    code = (
        "import sys, monitor; print(sorted(m for m in ('monitor.api', 'sqlalchemy', 'numpy', "
        "'pandas') if m in sys.modules)); monitor.analyze; print('monitor.api' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == ["[]", "True"]


def test_campaign_round_trip(db_url: str, tmp_path: Path) -> None:
    path = _write_csv(_ratings(), tmp_path / "ratings.csv")
    with monitor.Campaign(db_url, "ratings") as campaign:
        campaign.create("rating", scale_min=1, scale_max=5)
        summary = campaign.ingest(path)
        assert summary.n_new == len(_ratings())
        outcome = campaign.recompute(full=True)
        assert outcome.status == "ok"
        doc = campaign.report(format="json")
        assert doc["campaign"]["n_judgments"] == len(_ratings())
        assert campaign.decisions() == [
            {
                "worker": w["worker"],
                "decision": w["decision"],
                "decision_reason": w["decision_reason"],
                "decision_weight": w["decision_weight"],
                "flags": w["flags"],
            }
            for w in doc["workers"]
        ]
        html = campaign.report(tmp_path / "report.html")
        assert html == tmp_path / "report.html"
        assert "<html" in html.read_text(encoding="utf-8").lower()
        written = campaign.export("weights", tmp_path / "weights.csv")
        text = campaign.export("weights", platform="json")
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        status = main(["export", "weights", "--campaign", "ratings", "--db", db_url])
    assert status == 0
    assert written.read_bytes() == buffer.getvalue().encode()
    assert [w["worker"] for w in json.loads(text)["weights"]] == [
        w["worker"] for w in doc["workers"]
    ]
    fresh = monitor.analyze(path, kind="rating", scale_min=1, scale_max=5)
    assert _differences(doc["agreement"], fresh.document["agreement"]) == []
    assert _differences(doc["workers"], fresh.document["workers"]) == []


def test_campaign_errors_are_the_commands(db_url: str, tmp_path: Path) -> None:
    with monitor.Campaign(db_url, "nothing") as campaign:
        with pytest.raises(UsageError, match="nothing"):
            campaign.ingest(_write_csv(_ratings(), tmp_path / "r.csv"))
        with pytest.raises(UsageError, match="unknown report format"):
            campaign.report(format="pdf")  # type: ignore[arg-type]


def test_py_typed_is_shipped() -> None:
    import tomllib

    root = Path(__file__).resolve().parents[1]
    data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    assert "py.typed" in data["tool"]["setuptools"]["package-data"]["monitor"]
    assert (root / "monitor" / "py.typed").is_file()
    assert "pandas" in data["project"]["optional-dependencies"]
