"""The layers hold: ``engine/`` is pure, only ``storage/`` talks to DuckDB, only ``workflows/`` joins
the two, interfaces (pages, CLI) do no campaign wiring, no module imports in a cycle, and the engine's core never
imports its plug-ins (``engine/surrogates``), which join it through the entry points of pyproject.toml.

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


#: The core: every engine module outside the plug-ins (engine/surrogates).
CORE = {name: path for name, path in MODULES.items() if name.startswith("engine") and not name.startswith("engine.surrogates")}


def test_the_core_never_imports_surrogates():
    """Surrogates are plug-ins: they import the core and plug in through its registries (entry points of group
    ``tunelab.plugins``), never the reverse: not at the top, not inside a function, not by a module's name in a string."""
    offenders = sorted({f"{name} -> {imported}" for name, path in CORE.items() for imported in _imports(name, path)
                        if imported == "engine.surrogates" or imported.startswith("engine.surrogates.")})
    named = sorted({f"{name}: {node.value!r}" for name, path in CORE.items() for node in ast.walk(ast.parse(path.read_text()))
                    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("engine.surrogates")})
    assert offenders == [] and named == [], f"the core reaching into the plug-ins: {offenders + named}"


#: What each plug-in (an entry point of group ``tunelab.plugins``) adds: runner kinds and strategies.
PLUGINS = {"difftune": {"runners": ("simulator",), "strategies": ()},
           "costmodel": {"runners": (), "strategies": ("PF",)}}


def _declared_plugins() -> dict[str, str]:
    import tomllib

    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    return dict(project.get("entry-points", {}).get("tunelab.plugins", {}))


def test_every_plugin_is_declared_installed_and_registers_what_it_names():
    """A plug-in module renamed or moved fails here, not by a runner kind or a strategy silently gone."""
    import importlib
    from importlib.metadata import entry_points

    from engine.lazy import PLUGIN_GROUP
    from engine.runners import runner_class
    from engine.strategies.registry import strategy_class

    declared = _declared_plugins()
    assert set(declared) == set(PLUGINS), declared
    installed = {point.name: point.value for point in entry_points(group=PLUGIN_GROUP)}
    assert installed == declared, "the installed entry points are not pyproject.toml's: install again (make install)"
    for name, module in declared.items():
        assert module in MODULES and module.startswith(f"engine.surrogates.{name}."), (name, module)
        importlib.import_module(module)
        for kind in PLUGINS[name]["runners"]:
            found = runner_class(kind)
            assert found.kind == kind and found.__module__.startswith(f"engine.surrogates.{name}."), (kind, found)
        for strategy in PLUGINS[name]["strategies"]:
            found = strategy_class(strategy)
            assert found.name == strategy and found.__module__.startswith(f"engine.surrogates.{name}."), (strategy, found)


def test_a_fresh_process_finds_the_plugins_through_their_entry_points_and_imports_nothing_heavy():
    """Listing the runner kinds loads every plug-in (CLI start-up pays for it): no strategy, no torch, numba,
    scikit-learn or iced-x86, and no plug-in's runner or strategy module, only the registrations."""
    import json
    import subprocess
    import sys

    heavy = ["torch", "numba", "lightgbm", "sklearn", "iced_x86", "engine.strategies.registry", "engine.strategies.base",
             "engine.surrogates.difftune.runner", "engine.surrogates.costmodel.prefilter"]
    code = ("import json, sys; from engine.runners import RUNNER_KINDS; from engine.strategies.plugins import PLUGGED; "
            f"print(json.dumps([list(RUNNER_KINDS), sorted(PLUGGED), [m for m in {heavy!r} if m in sys.modules]]))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    kinds, strategies, imported = json.loads(done.stdout)
    assert kinds[-1] == "simulator" and strategies == ["PF"] and imported == [], done.stdout


def test_a_broken_plugin_fails_only_the_names_it_would_add(monkeypatch):
    import importlib.metadata

    import engine.lazy
    from engine.errors import UserError
    from engine.runners import runner_class
    from engine.strategies.registry import strategy_class

    real = importlib.metadata.entry_points
    broken = importlib.metadata.EntryPoint("broken", "tunelab_no_such_plugin", engine.lazy.PLUGIN_GROUP)
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **select: [*real(**select), broken])
    monkeypatch.setattr(engine.lazy, "_plugin_failures", None)
    assert runner_class("table").kind == "table" and runner_class("simulator").kind == "simulator"
    assert strategy_class("PF").name == "PF"
    for missing in (lambda: runner_class("tabel"), lambda: strategy_class("XX")):
        with pytest.raises(UserError, match=r"is not one of .*; plug-in 'broken' failed to import \(tunelab_no_such_plugin: "
                                            r"ModuleNotFoundError: No module named 'tunelab_no_such_plugin'\)$") as error:
            missing()
        assert "\n" not in str(error.value)
