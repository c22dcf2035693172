"""Package attributes imported on first use (PEP 562), and registries the plug-ins complete on first need.

``tunelab`` builds every sub-command's parser at start-up and the dashboard imports each page's
packages; statsmodels, scipy.stats and pandas take seconds to import, so naming a package must not
import them. A package lists ``{module: (name, ...)}`` and gets its ``__getattr__`` and ``__dir__``.

Plug-ins (the surrogates: DiffTune's simulator runner, the cost model's pre-filter strategy) are found through
entry points: the core never names them. A :class:`Registry` (``engine.runners.RUNNER_KINDS``,
``engine.strategies.registry.STRATEGIES``) imports them the first time a name is missing or its names are listed.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

V = TypeVar("V")


def lazy_exports(package: str, exports: Mapping[str, Sequence[str]], namespace: dict[str, Any],
                 eager: Sequence[str] = ()) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """(``__all__``, ``__getattr__``, ``__dir__``) for ``package``: a name of ``exports`` is imported
    from its module the first time it is read, then kept in ``namespace`` (the package's globals)."""
    module_of = {name: module for module, names in exports.items() for name in names}
    public = [*eager, *sorted(module_of)]

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return public

    return public, __getattr__, __dir__


#: The entry-point group of Tunelab's plug-ins (pyproject.toml's ``[project.entry-points."tunelab.plugins"]``):
#: each names a module whose import registers what the plug-in adds (a runner kind, a strategy) with the core's
#: registries, by module and attribute, so that importing it costs nothing more than the core's registries.
PLUGIN_GROUP = "tunelab.plugins"
_plugins_lock = threading.RLock()
_plugin_failures: dict[str, str] | None = None


def load_plugins() -> dict[str, str]:
    """Import every installed plug-in once (the first call; later calls return at once); the plug-ins that failed
    to import, ``{entry point: "module: error"}``, reported with a name none of the others registered."""
    global _plugin_failures
    with _plugins_lock:  # a second thread waits for the first one's plug-ins; the same thread (a plug-in) goes on
        if _plugin_failures is None:
            _plugin_failures = {}
            from importlib.metadata import entry_points

            try:
                points = list(entry_points(group=PLUGIN_GROUP))
            except Exception as exc:  # unreadable metadata: the core's own names still work
                _plugin_failures[PLUGIN_GROUP] = f"the installed entry points: {_one_line(exc)}"
                points = []
            for point in points:
                try:
                    point.load()
                except Exception as exc:  # a broken install fails the names it would have added, nothing else
                    _plugin_failures[point.name] = f"{point.value}: {_one_line(exc)}"
        return _plugin_failures


def _one_line(exc: Exception) -> str:
    return f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}"


def plugin_failures_note() -> str:
    """``""``, or the plug-ins that failed to import, to append to a "not one of" error (it stays one line)."""
    return "".join(f"; plug-in {name!r} failed to import ({error})" for name, error in load_plugins().items())


def imported(module: str, attribute: str) -> Any:
    """``module.attribute``, the module imported now."""
    return getattr(importlib.import_module(module), attribute)


class Registry(Mapping[str, V]):
    """Names -> entries (runner kinds, strategies): the core's own, then those the plug-ins registered (``plugged``,
    a live ``{name: (module, attribute)}`` the plug-ins fill, read through ``resolve`` when a name is first read).
    The plug-ins are loaded (:func:`load_plugins`) the first time a name is missing or the names are listed; a
    core name is never replaced."""

    def __init__(self, core: Mapping[str, V], plugged: Mapping[str, tuple[str, str]],
                 resolve: Callable[[str, str], V]) -> None:
        self._core, self._plugged, self._resolve = dict(core), plugged, resolve
        self._resolved: dict[str, V] = {}

    def __getitem__(self, name: str) -> V:
        if name in self._core:
            return self._core[name]
        if name not in self._plugged:
            load_plugins()
        if name not in self._resolved:
            self._resolved[name] = self._resolve(*self._plugged[name])
        return self._resolved[name]

    def __contains__(self, name: object) -> bool:
        if name in self._core:
            return True
        if name not in self._plugged:
            load_plugins()
        return name in self._plugged

    def __iter__(self) -> Iterator[str]:
        load_plugins()
        return iter([*self._core, *(name for name in self._plugged if name not in self._core)])

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return f"Registry({list(self._core)} + plug-ins {list(self._plugged)})"
