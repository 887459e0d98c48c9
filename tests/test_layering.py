"""DESIGN.md section 1: metrics are pure; the store knows nothing of metrics."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "monitor"
FORBIDDEN = {
    "metrics": (
        "sqlalchemy",
        "alembic",
        "psycopg",
        "jinja2",
        "apscheduler",
        "monitor.store",
        "monitor.report",
        "monitor.cli",
        "monitor.runtime",
        "distributed",
        "monitor.actions",
        "monitor.ingest",
        "monitor.pipeline",
        "monitor.incremental",
        "monitor.rules",
    ),
    "store": (
        "monitor.metrics",
        "monitor.actions",
        "monitor.report",
        "monitor.cli",
        "monitor.runtime",
        "distributed",
        "monitor.pipeline",
        "monitor.incremental",
        "monitor.rules",
        "jinja2",
    ),
    # pure: a run's values and the thresholds in, flags and decisions out
    "rules": (
        "sqlalchemy",
        "alembic",
        "psycopg",
        "jinja2",
        "apscheduler",
        "monitor.store",
        "monitor.report",
        "monitor.cli",
        "monitor.runtime",
        "distributed",
        "monitor.actions",
        "monitor.ingest",
        "monitor.pipeline",
        "monitor.incremental",
        "monitor.core.settings",
    ),
    # what a process keeps between runs: below the pipeline, beside the store
    "incremental": (
        "monitor.report",
        "monitor.cli",
        "monitor.runtime",
        "distributed",
        "monitor.actions",
        "monitor.ingest",
        "monitor.pipeline",
        "monitor.rules",
        "jinja2",
    ),
    # reads the store, never computes a measure or runs a rule
    "report": (
        "monitor.pipeline",
        "monitor.incremental",
        "monitor.rules",
        "monitor.cli",
        "monitor.runtime",
        "distributed",
        "monitor.actions",
        "monitor.ingest",
        "monitor.metrics",
    ),
    # the platforms' APIs: below the CLI, beside ingest and the store (the verdict of a run,
    # from the report's document, for the notifications; never the HTML)
    "connectors": (
        "monitor.cli",
        "monitor.runtime",
        "distributed",
        "jinja2",
        "monitor.metrics",
        "monitor.rules",
    ),
    # the foundations every layer may use: nothing above them (the settings read the store's
    # URL rules)
    "core": (
        "monitor.metrics",
        "monitor.rules",
        "monitor.pipeline",
        "monitor.incremental",
        "monitor.ingest",
        "monitor.report",
        "monitor.connectors",
        "monitor.actions",
        "monitor.runtime",
        "monitor.api",
        "monitor.cli",
        "sqlalchemy",
        "jinja2",
        "scipy",
    ),
    # what a user does with a run: below the ways monitor runs and the command line
    "actions": ("monitor.runtime", "monitor.api", "monitor.cli"),
    # the ways monitor runs: below the command line
    "runtime": ("monitor.api", "monitor.cli"),
}


def _imports(path: Path) -> list[tuple[str, bool]]:
    """(module, at module level) for every import in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = set(map(id, tree.body))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, id(node) in top) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.module, id(node) in top))
    return out


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports(layer: str) -> None:
    bad = [
        f"{p.relative_to(ROOT)}: {mod}"
        for p in sorted((ROOT / layer).rglob("*.py"))
        for mod, _ in _imports(p)
        if mod.startswith(FORBIDDEN[layer])
    ]
    assert bad == []


def test_api_is_below_the_cli_and_imports_no_dataframe_library() -> None:
    """``monitor/api/`` is what the CLI calls; pandas only inside ``to_pandas``, lazily."""
    modules = sorted((ROOT / "api").glob("*.py"))
    assert modules
    imports = [(p.name, m, top) for p in modules for m, top in _imports(p)]
    assert [(p, m) for p, m, _ in imports if m.startswith("monitor.cli")] == []
    dataframes = [
        (p, m) for p, m, top in imports if m.split(".")[0] in ("pandas", "polars") and top
    ]
    assert dataframes == []


def test_pymc_only_in_phi_and_lazily() -> None:
    offenders = [
        f"{p.relative_to(ROOT)}"
        for p in sorted(ROOT.rglob("*.py"))
        for mod, top in _imports(p)
        if mod.split(".")[0] in ("pymc", "pytensor", "arviz") and (top or "phi" not in p.name)
    ]
    assert offenders == []


def test_help_is_instant() -> None:
    import subprocess
    import sys

    code = "import sys, monitor.cli; print(sorted(m for m in ('pymc','scipy','alembic','jinja2','pandas','distributed') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_pipeline_imports_have_no_circle() -> None:
    """The per-kind modules import what they share (``collect``, ``params``); ``measure``
    imports the kinds' modules, ``run`` the measure."""
    pkg = ROOT / "pipeline"
    graph = {
        p.stem: {
            mod.rsplit(".", 1)[1]
            for mod, _ in _imports(p)
            if mod.startswith("monitor.pipeline.") and mod.count(".") == 2
        }
        | {
            a.name
            for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
            if isinstance(node, ast.ImportFrom) and node.module == "monitor.pipeline"
            for a in node.names
        }
        for p in pkg.glob("*.py")
    }

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in graph.get(start, ()):
            if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                return True
        return False

    circles = sorted(m for m in graph if m != "__init__" and reaches(m, m, {m}))
    assert circles == []


def test_the_rules_settings_import_only_the_sections() -> None:
    """``monitor/core/thresholds.py`` is read by the settings at start-up and by the rules: it
    imports nothing of monitor but ``monitor.core.sections`` (no metric, no store, no scipy)."""
    imports = [m for m, _ in _imports(ROOT / "core" / "thresholds.py")]
    assert [m for m in imports if m.startswith("monitor") and m != "monitor.core.sections"] == []
    assert [m for m in imports if m.split(".")[0] in ("numpy", "scipy", "sqlalchemy")] == []
