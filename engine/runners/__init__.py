"""Runners: how a configuration is measured. A study spec names one by ``runner: {kind: ...}``.

``runner_from_spec(spec.runner, space=..., table=...)`` builds it; ``runner.measure(config)``
returns one :class:`MeasureResult` per repeat. Modules are imported on demand, so naming a runner
kind costs only that runner's imports (PyTorch is imported only inside a torch measurement).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from engine.errors import UserError
from engine.runners.base import MeasureError, MeasureResult, Runner, Trial
from engine.runners.status import STATUSES

if TYPE_CHECKING:
    import pandas as pd

    from engine.space.factors import Space

#: kind -> (module, class)
RUNNER_KINDS: dict[str, tuple[str, str]] = {
    "command": ("engine.runners.command", "CommandRunner"),
    "ckernel": ("engine.runners.ckernel", "CKernelRunner"),
    "python": ("engine.runners.python_runner", "PythonRunner"),
    "torch": ("engine.runners.torch_runner", "TorchRunner"),
    "mca": ("engine.runners.mca", "McaRunner"),
    "simulator": ("engine.runners.simulator", "SimulatorRunner"),
    "table": ("engine.runners.table", "TableRunner"),
    "synthetic": ("engine.runners.synthetic", "SyntheticRunner"),
}


def runner_class(kind: str) -> type[Runner]:
    if kind not in RUNNER_KINDS:
        raise UserError(f"runner kind {kind!r} is not one of {', '.join(RUNNER_KINDS)}")
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


__all__ = ["RUNNER_KINDS", "STATUSES", "MeasureError", "MeasureResult", "Runner", "Trial", "runner_class",
           "runner_from_spec"]
