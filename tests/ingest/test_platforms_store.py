"""Platform files shaped like the real exports, ingested into both stores (issue 17)."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "platforms"


def run(capsys: pytest.CaptureFixture[str], db_url: str, *words: str) -> tuple[int, list[str]]:
    code = main([*words, "--db", db_url])
    out, err = capsys.readouterr()
    return code, out.splitlines() + err.splitlines()


def test_toloka_task_suite_stores_every_task(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(DATA / "toloka_task_suite.tsv")
    run(capsys, db_url, "campaign", "create", "pets", "--kind", "label")
    assert run(capsys, db_url, "ingest", path, "--campaign", "pets", "--map", "item=image") == (
        0,
        [
            f"{path} (toloka, detected platform toloka): 6 rows: 6 new, 0 duplicate, 0 rejected",
            "1 items with gold values or texts stored",
            "categories taken from the data: cat, dog",
            "campaign platform set to toloka (workers' history is per platform)",
        ],
    )
    _code, out = run(capsys, db_url, "ingest", path, "--campaign", "pets", "--map", "item=image")
    assert out[0].endswith("6 rows: 0 new, 6 duplicate, 0 rejected")
    assert run(capsys, db_url, "campaign", "list")[1] == [
        "pets\tlabel cat, dog (nominal)\t6 judgments, 2 workers, 3 items, platform toloka"
    ]


def test_mturk_several_questions_per_hit(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(DATA / "mturk_multi_question.csv")
    run(capsys, db_url, "campaign", "create", "s", "--kind", "label")
    words = ["--map", "item=Input.id{n}", "--map", "value=Answer.q{n}", "--map", "text=text{n}"]
    assert run(capsys, db_url, "ingest", path, "--campaign", "s", *words) == (
        0,
        [
            f"{path} (mturk, detected platform mturk): 7 rows: 7 new, 0 duplicate, 0 rejected",
            "5 items with gold values or texts stored",
            "1 unanswered questions skipped (blank answer cells)",
            "categories taken from the data: negative, neutral, positive",
            "campaign platform set to mturk (workers' history is per platform)",
        ],
    )
    assert run(capsys, db_url, "ingest", path, "--campaign", "s", *words)[1][0].endswith(
        "7 rows: 0 new, 7 duplicate, 0 rejected"
    )
    path = str(DATA / "mturk_bounding_boxes.csv")
    run(capsys, db_url, "campaign", "create", "boxes", "--kind", "multilabel", "--open")
    code, out = run(capsys, db_url, "ingest", path, "--campaign", "boxes",
                    "--map", "value=annotatedResult.boundingBoxes")  # fmt: skip
    assert code == 2
    assert out[0].startswith(
        f"{path}:2: column 'Answer.annotatedResult.boundingBoxes': a JSON object is not a label"
    )
