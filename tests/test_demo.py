"""The demo: seeded generation of canonical files, and the whole loop on a small scale."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from monitor.actions.demo import generate, run_demo
from monitor.core.settings import Settings
from monitor.store.engine import make_engine, session_factory
from monitor.store.migrate import upgrade


def test_generation_is_seeded_and_canonical(tmp_path: Path) -> None:
    a = generate(tmp_path / "a", seed=7, n_workers=20, n_items=200, per_item=5)
    b = generate(tmp_path / "b", seed=7, n_workers=20, n_items=200, per_item=5)
    assert [c.spec.kind for c in a] == ["rating", "label", "multilabel", "pairwise"]
    for x, y in zip(a, b, strict=True):
        assert x.judgments.read_bytes() == y.judgments.read_bytes()
        assert x.planted == y.planted
    ratings, labels, multi, pairwise = a
    with ratings.judgments.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == ["worker", "item", "value", "judgment_id", "created_at", "duration_s"]
    assert len(rows) == 1000
    assert {int(r["value"]) for r in rows} <= {1, 2, 3, 4, 5}
    per_worker: dict[str, int] = {}
    for r in rows:
        per_worker[r["worker"]] = per_worker.get(r["worker"], 0) + 1
    assert len(per_worker) == 20
    assert min(per_worker.values()) >= 40  # balanced
    assert len(ratings.planted.spammers) == 2
    assert len(ratings.planted.adversarial) == 1
    assert len(ratings.planted.ambiguous) == 20
    with multi.judgments.open(newline="") as fh:
        assert any("|" in r["value"] for r in csv.DictReader(fh))
    with pairwise.judgments.open(newline="") as fh:
        prefs = list(csv.DictReader(fh))
    assert {p["preference"] for p in prefs} == {"left", "right", "tie"}
    assert all(p["left"] != p["right"] for p in prefs)
    assert len(prefs) == 20 * 45
    with labels.items.open(newline="") as fh:
        items = list(csv.DictReader(fh))
    assert list(items[0]) == ["item", "gold", "text"]
    assert len(items) == 200
    assert (
        generate(tmp_path / "c", seed=8)[0].judgments.read_bytes() != ratings.judgments.read_bytes()
    )


@pytest.mark.slow
def test_demo_loop_finds_the_planted_spammers(tmp_path: Path) -> None:
    from monitor.report.document import build_document

    url = f"sqlite:///{tmp_path / 'demo.db'}"
    engine = make_engine(url)
    upgrade(engine)
    settings = Settings(database_url=url, bootstrap_samples=50, phi="map")
    lines: list[str] = []
    paths = run_demo(
        engine,
        settings,
        data_dir=tmp_path / "data",
        report_dir=tmp_path / "reports",
        seed=1,
        n_workers=12,
        n_items=60,
        per_item=4,
        log=lines.append,
    )
    assert [p.name for p in paths] == [
        "demo-ratings.html",
        "demo-labels.html",
        "demo-multilabel.html",
        "demo-pairwise.html",
    ]
    assert all(p.read_text().startswith("<!doctype html>") for p in paths)
    planted = generate(tmp_path / "again", seed=1, n_workers=12, n_items=60, per_item=4)
    with session_factory(engine)() as s:
        doc = build_document(s, "demo-labels")
        flagged = {w["worker"] for w in doc["workers"] if w["flags"]}
        assert set(planted[1].planted.spammers) & flagged
        assert len(doc["history"]) == 2  # two batches, two runs: a trend
        # the pipeline applied the default policy (suggest) at the end of each run
        suggested = {d["worker"] for d in doc["decisions"] if d["action"] == "suggest"}
        assert flagged
        assert flagged <= suggested
        assert {d["actor"] for d in doc["decisions"]} == {"policy:suggest"}
        pw = build_document(s, "demo-pairwise")
        assert any(w["transitivity"]["kappa"] is not None for w in pw["workers"])
    # a second run reuses the campaigns: nothing new to ingest
    lines.clear()
    run_demo(
        engine,
        settings,
        data_dir=tmp_path / "data2",
        report_dir=tmp_path / "reports",
        seed=1,
        n_workers=12,
        n_items=60,
        per_item=4,
        log=lines.append,
    )
    assert any("reusing" in line for line in lines)
    assert all(
        "run " not in line or "nothing new" in line
        for line in lines
        if "judgments ingested" in line
    )


def test_the_demo_removes_its_temporary_folder_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 29: every demo left a /tmp/monitor-demo-* folder behind. Without --data-dir the
    CSV files live in a temporary folder removed at the end; with it they are kept."""
    import tempfile

    from monitor.cli import main

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.chdir(tmp_path)
    for key, value in (("BOOTSTRAP_SAMPLES", "0"), ("PHI", "off"), ("CACHE_DIR", "")):
        monkeypatch.setenv(f"MONITOR_{key}", value)
    small = ["--workers", "8", "--items", "10", "--per-item", "2"]
    db = ["--db", f"sqlite:///{tmp_path / 'demo.db'}"]
    assert main(["demo", *small, *db]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines()[0] == (
        "demo data written to a temporary folder, removed at the end "
        "(--data-dir DIR keeps the CSV files)"
    )
    assert list(scratch.iterdir()) == []
    assert out.splitlines()[0] == "reports:"
    assert len(out.splitlines()) == 5
    kept = tmp_path / "kept"
    assert main(["demo", *small, *db, "--data-dir", str(kept)]) == 0
    assert capsys.readouterr().err.splitlines()[0] == f"demo data written to {kept}"
    assert (kept / "demo-ratings.csv").is_file()
    assert list(scratch.iterdir()) == []


def test_the_demo_writes_no_report_through_a_link(tmp_path: Path) -> None:
    """The report folder may be shared: a link planted where a demo report goes is replaced,
    and the file it pointed to is left as it was."""
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    engine = make_engine(url)
    upgrade(engine)
    settings = Settings(database_url=url, bootstrap_samples=0, phi="off")
    reports, victim = tmp_path / "reports", tmp_path / "precious.txt"
    reports.mkdir()
    victim.write_text("precious", encoding="utf-8")
    (reports / "demo-ratings.html").symlink_to(victim)
    paths = run_demo(
        engine, settings, report_dir=reports, seed=1, n_workers=8, n_items=10, per_item=2,
        log=lambda line: None,
    )  # fmt: skip
    assert victim.read_text(encoding="utf-8") == "precious"
    link = reports / "demo-ratings.html"
    assert link in paths
    assert not link.is_symlink()
    assert "<html" in link.read_text(encoding="utf-8").lower()
