"""The import graph of ``monitor/``: no circles, and no module reaching into another's private
names. Every import counts, at module level, inside a function (a lazy import) or under
``TYPE_CHECKING``: a lazy import only hides a circle until it is run."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "monitor"


def _name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _absolute(module: str, node: ast.ImportFrom) -> str:
    """The module an ``from ... import`` names, relative imports resolved."""
    if node.level == 0:
        return node.module or ""
    package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
    return f"{base}.{node.module}" if node.module else base


def _imports(module: str, source: str | None = None) -> list[tuple[str, str | None, int]]:
    """(module imported, name imported from it or None, line) for every import of ``module``
    (its file, or the ``source`` given)."""
    if source is None:
        source = MODULES[module].read_text(encoding="utf-8")
    out: list[tuple[str, str | None, int]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(a.name, None, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, node)
            out += [(source, a.name, node.lineno) for a in node.names]
    return out


def _graph() -> dict[str, set[str]]:
    """Module -> the modules of ``monitor`` it imports (``from package import sub`` is an edge
    to the submodule, ``from package import name`` to the package's ``__init__``). Importing a
    submodule also runs its packages' ``__init__``, but that is no edge: an ``__init__`` that
    names its submodules' functions would otherwise close a circle with each of them."""
    graph: dict[str, set[str]] = {}
    for module in MODULES:
        targets = set()
        for source, name, _ in _imports(module):
            if name is not None and f"{source}.{name}" in MODULES:
                targets.add(f"{source}.{name}")
            elif source in MODULES:
                targets.add(source)
        graph[module] = targets - {module}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def test_circles_finds_a_circle_and_only_one() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_imports_under_type_checking_in_functions_and_relative_count() -> None:
    source = (
        "if TYPE_CHECKING:\n    from monitor.a import B\n\n"
        "def f():\n    from monitor.c import d\n    from .e import _g\n"
    )
    assert _imports("monitor.report.items", source) == [
        ("monitor.a", "B", 2),
        ("monitor.c", "d", 5),
        ("monitor.report.e", "_g", 6),
    ]
    assert _private_imports("monitor.report.items", source) == [
        "line 6: monitor.report.e import _g"
    ]
    assert _private_imports("monitor.x", "from monitor.metrics._common import encode\n") == [
        "line 1: monitor.metrics._common import encode"
    ]
    assert _private_imports("monitor.x", "from monitor.x import _own\nfrom y import _z\n") == []


def test_monitor_has_no_import_circle() -> None:
    assert circles(_graph()) == []


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_imports(module: str, source: str | None = None) -> list[str]:
    return [
        f"line {line}: {imported}" + (f" import {name}" if name else "")
        for imported, name, line in _imports(module, source)
        if imported.split(".")[0] == "monitor"
        and (
            any(_private(part) for part in imported.split("."))
            or (name is not None and _private(name) and imported != module)
        )
    ]


def _private_attributes(module: str, source: str | None = None) -> list[str]:
    """``m._x`` where ``m`` names another module of ``monitor`` (``import monitor.a as m``,
    ``from monitor import a as m``)."""
    if source is None:
        source = MODULES[module].read_text(encoding="utf-8")
    tree = ast.parse(source)
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases |= {a.asname: a.name for a in node.names if a.asname and a.name in MODULES}
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, node)
            aliases |= {
                a.asname or a.name: f"{base}.{a.name}"
                for a in node.names
                if f"{base}.{a.name}" in MODULES
            }
    return [
        f"line {node.lineno}: {aliases[node.value.id]}.{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in aliases
        and _private(node.attr)
    ]


def test_private_attributes_are_found() -> None:
    source = "from monitor.metrics.agreement import kappa as k\n\nk._weights(1)\nk.cohen_kappa\n"
    assert _private_attributes("monitor.x", source) == [
        "line 3: monitor.metrics.agreement.kappa._weights"
    ]


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_private_name_of_another_module(module: str) -> None:
    """A name with a leading underscore is its module's own: what another module needs is
    public in the module that owns its idea. Private modules (``_x.py``) likewise."""
    assert _private_imports(module) == []
    assert _private_attributes(module) == []
