"""The layers hold: ``engine/`` is pure, only ``storage/`` talks to DuckDB, only ``workflows/`` joins
the two, interfaces (pages, CLI) do no campaign wiring, and no module imports in a cycle.

Read from the source with :mod:`ast` (every import, including the lazy ones inside functions), so a
violation fails here before it spreads.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.io.paths import REPO_ROOT

PACKAGES = ("engine", "storage", "workflows", "app", "pages")
#: What an interface (a page or a CLI command) must not wire itself: a session does it.
WIRING = {"engine.execution.Campaign", "engine.execution.campaign", "engine.runners.runner_from_spec",
          "workflows.recording", "engine.execution.tuning", "engine.execution.review"}


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (REPO_ROOT / package).rglob("*.py"):
            name = ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> Iterator[str]:
    """Every name imported by the module (``package.module`` and ``package.module.attribute``)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def _top(imported: str) -> str:
    return imported.split(".")[0]


@pytest.mark.parametrize("forbidden", ["duckdb", "streamlit", "storage", "workflows", "app", "pages"])
def test_the_engine_imports_no_outer_layer(forbidden):
    offenders = sorted({name for name, path in MODULES.items() if name.startswith("engine")
                        for imported in _imports(name, path) if _top(imported) == forbidden})
    assert offenders == [], f"engine modules importing {forbidden}: {offenders}"


def test_only_storage_talks_to_duckdb_and_nothing_below_the_interfaces_imports_streamlit():
    duck = sorted({name for name, path in MODULES.items() if not name.startswith("storage")
                   for imported in _imports(name, path) if _top(imported) == "duckdb"})
    assert duck == []
    lit = sorted({name for name, path in MODULES.items() if _top(name) in ("engine", "storage", "workflows")
                  for imported in _imports(name, path) if _top(imported) == "streamlit"})
    assert lit == []


#: What storage may read from the engine: the definitions of what it stores, nothing that runs.
STORED_DEFINITIONS = ("engine.errors", "engine.study", "engine.space", "engine.io", "engine.runners.status")


def test_storage_does_not_run_the_engine():
    offenders = sorted({f"{name} -> {imported}" for name, path in MODULES.items() if name.startswith("storage")
                        for imported in _imports(name, path)
                        if _top(imported) in ("workflows", "app", "pages")
                        or (_top(imported) == "engine" and not imported.startswith(STORED_DEFINITIONS))})
    assert offenders == []


def test_pages_and_cli_commands_leave_campaign_wiring_to_the_workflows():
    interfaces = {name: path for name, path in MODULES.items() if name.startswith(("pages", "app.cli", "app."))}
    offenders = sorted({f"{name} -> {imported}" for name, path in interfaces.items()
                        for imported in _imports(name, path) if imported in WIRING})
    assert offenders == []


def test_no_module_imports_in_a_cycle():
    graph = {name: set() for name in MODULES}
    for name, path in MODULES.items():
        for imported in _imports(name, path):
            target = imported
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != name and not name.startswith(target + "."):  # a package's own __init__
                graph[name].add(target)
    cycles = _cycles(graph)
    assert cycles == [], f"import cycles: {cycles}"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_engine_is_grouped_by_the_method_with_at_most_three_loose_files():
    loose = sorted(p.name for p in (REPO_ROOT / "engine").glob("*.py") if p.name != "__init__.py")
    assert len(loose) <= 3, loose
    for package in ("space", "model", "design", "strategies", "runners", "execution", "analysis", "io", "compare",
                    "surrogates"):
        assert (REPO_ROOT / "engine" / package / "__init__.py").is_file(), package


LAZY_PACKAGES = [name for name, path in MODULES.items()
                 if path.name == "__init__.py" and "lazy_exports(" in path.read_text()]


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_what_mypy_sees_of_a_lazy_package_is_what_runs(package):
    """A lazy package lists its names twice, ``_EXPORTS`` for the interpreter and a ``TYPE_CHECKING``
    block for mypy; a name added to one and not the other would type-check yet fail, or the reverse."""
    tree = ast.parse(MODULES[package].read_text())
    exports = next(ast.literal_eval(node.value) for node in tree.body
                   if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "_EXPORTS" for t in node.targets))
    block = next(node for node in tree.body
                 if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING")
    seen = {(imp.module, alias.name) for imp in block.body if isinstance(imp, ast.ImportFrom) for alias in imp.names}
    assert seen == {(f"{package}.{module}", name) for module, names in exports.items() for name in names}
