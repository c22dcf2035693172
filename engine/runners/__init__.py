"""Runners: how a configuration is measured. A study spec names one by ``runner: {kind: ...}``.

``runner_from_spec(spec.runner, space=..., table=...)`` builds it; ``runner.measure(config)``
returns one :class:`MeasureResult` per repeat. Modules are imported on demand, so naming a runner
kind costs only that runner's imports (PyTorch is imported only inside a torch measurement).

A plug-in adds a kind with :func:`register_runner` (DiffTune's ``simulator``, from its plug-in module, an entry
point of pyproject.toml); the plug-ins are loaded the first time a kind is missing or the kinds are listed
(:class:`engine.lazy.Registry`).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from engine.errors import UserError
from engine.lazy import Registry, plugin_failures_note
from engine.runners.base import MeasureError, MeasureResult, Runner, Trial
from engine.runners.status import STATUSES

if TYPE_CHECKING:
    import pandas as pd

    from engine.space.factors import Space

#: A plug-in's kinds: kind -> (module, class) (:func:`register_runner`).
_PLUGGED: dict[str, tuple[str, str]] = {}
#: kind -> (module, class): the core's, then the plug-ins'
RUNNER_KINDS: Registry[tuple[str, str]] = Registry({
    "command": ("engine.runners.command", "CommandRunner"),
    "ckernel": ("engine.runners.ckernel", "CKernelRunner"),
    "python": ("engine.runners.python_runner", "PythonRunner"),
    "torch": ("engine.runners.torch_runner", "TorchRunner"),
    "mca": ("engine.runners.mca", "McaRunner"),
    "table": ("engine.runners.table", "TableRunner"),
    "synthetic": ("engine.runners.synthetic", "SyntheticRunner"),
}, _PLUGGED, lambda module, name: (module, name))


def register_runner(kind: str, module: str, attribute: str) -> None:
    """A plug-in's runner kind: ``module.attribute`` (a :class:`Runner`), imported when a spec first names it."""
    _PLUGGED[kind] = (module, attribute)


def runner_class(kind: str) -> type[Runner]:
    if kind not in RUNNER_KINDS:
        raise UserError(f"runner kind {kind!r} is not one of {', '.join(RUNNER_KINDS)}{plugin_failures_note()}")
    module, name = RUNNER_KINDS[kind]
    found: type[Runner] = getattr(importlib.import_module(module), name)
    return found


def runner_from_spec(runner: Mapping[str, Any], *, space: Space | None = None, table: pd.DataFrame | None = None) -> Runner:
    """The runner a study spec's ``runner`` mapping describes.

    ``space`` is the study's :class:`~engine.space.factors.Space` (table and synthetic runners key
    configurations with it); ``table`` the imported table of a table study (``Store.study_table``).
    """
    if not isinstance(runner, Mapping) or "kind" not in runner:
        raise UserError(f"runner {runner!r} must be a mapping with a 'kind'")
    return runner_class(str(runner["kind"])).from_spec(runner, space=space, table=table)


__all__ = ["RUNNER_KINDS", "STATUSES", "MeasureError", "MeasureResult", "Runner", "Trial", "register_runner",
           "runner_class", "runner_from_spec"]
