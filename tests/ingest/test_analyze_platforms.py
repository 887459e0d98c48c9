"""``monitor analyze`` accepts every platform format (CONTRACT section 3, issue: importers)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from monitor.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "platforms"

CASES = [
    ("mturk_batch.csv", ["--kind", "rating", "--min", "1", "--max", "5",
                         "--map", "value=relevance", "--map", "item=doc_id"], "mturk"),
    ("mturk_pairwise.csv", ["--kind", "pairwise", "--map", "left=left_id",
                            "--map", "right=Input.right_id",
                            "--map", "pairwise=left=A,right=B,tie=same|both good"], "mturk"),
    ("toloka_assignments.tsv", ["--kind", "label", "--map", "item=url",
                                "--map", "value=label"], "toloka"),
    ("labelstudio_export.json", ["--kind", "label", "--map", "item=data.doc"], "labelstudio"),
    ("labelstudio_pairwise.json", ["--kind", "pairwise"], "labelstudio"),
    ("toloka_task_suite.tsv", ["--kind", "label", "--map", "item=image"], "toloka"),
    ("mturk_multi_question.csv", ["--kind", "label", "--map", "item=Input.id{n}",
                                  "--map", "value=Answer.q{n}"], "mturk"),
    ("figure_eight_full.csv", ["--kind", "label", "--map", "item=tweet_id"], "figure-eight"),
    ("prolific_answers.csv", ["--kind", "rating", "--min", "1", "--max", "5",
                              "--map", "worker=PROLIFIC_PID",
                              "--option", f"export={DATA / 'prolific_export.csv'}"], "prolific"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "options", "platform"), CASES, ids=[c[0] for c in CASES])
def test_analyze_reads_platform_exports(name: str, options: list[str], platform: str) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["analyze", str(DATA / name), *options, "--format", platform, "--json",
                       "--bootstrap", "0", "--phi", "off"])  # fmt: skip
    assert status == 0
    doc = json.loads(out.getvalue())
    assert doc["campaign"]["n_judgments"] > 0
    assert doc["workers"]
    assert all(isinstance(w["worker"], str) for w in doc["workers"])
