"""What a study is: a named search space, an objective with a direction, and how to measure it.

The runner is a small plain mapping (``{"kind": "table"}``, ``{"kind": "synthetic", "name": "toy"}``,
``{"kind": "command", ...}``) so a study spec stays a data file a person can read and edit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.errors import UserError, brief
from engine.lazy import plugin_failures_note
from engine.runners import RUNNER_KINDS
from engine.space.factors import Space

DIRECTIONS = ("minimize", "maximize")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.()\-]{0,99}$")
#: How each measurement was taken: the store's measurement columns besides value, status and error.
PROVENANCE_COLUMNS = ("repeat", "host", "started_at", "finished_at", "strategy", "step", "design_id", "measurement_id")
#: Columns Tunelab's tables put beside a study's factors: the store's measurements and the per-configuration
#: mean an analysis fits (``n_repeats``). A factor so named would be a second column of that name and break every
#: measured table; an objective so named would clash where exports and analyses rename ``value`` after it.
RESERVED_COLUMNS = ("value", "status", "error", *PROVENANCE_COLUMNS, "n_repeats")


def check_study_name(name: Any) -> str:
    """Study names appear in file names and URLs: letters, digits, space, ``_ . - ( )``, ≤ 100 chars."""
    if not isinstance(name, str) or not _NAME.match(name.strip()):
        raise UserError(f"study name {brief(name)}: use 1-100 letters, digits, spaces, '_', '.', '-' or parentheses")
    return name.strip()


def check_runner(runner: Any) -> None:
    """The runner kind must be a registered one, so a typo fails at ``study create``, not at ``run``.

    Only the registry's names are read: no runner module (PyTorch!) is imported to check a spec.
    """
    if not isinstance(runner, Mapping) or "kind" not in runner:
        raise UserError(f"runner {brief(runner)} must be a mapping with a 'kind'")
    if not isinstance(runner["kind"], str) or runner["kind"] not in RUNNER_KINDS:
        raise UserError(f"runner kind {brief(runner['kind'])} is not one of {', '.join(RUNNER_KINDS)}{plugin_failures_note()}")


def check_reserved(names: Iterable[str], what: str, role: str = "factor") -> None:
    """Refuse, in one line naming ``what``, a name among ``names`` that is one of :data:`RESERVED_COLUMNS`."""
    clash = next((name for name in names if name in RESERVED_COLUMNS), None)
    if clash is not None:
        raise UserError(f"{what}: {role} '{clash}' is reserved: Tunelab's measurement tables have a column of that "
                        f"name ({', '.join(RESERVED_COLUMNS)}); rename it")


def check_column_names(spec: StudySpec, what: str) -> None:
    """Refuse a factor or objective named like a :data:`RESERVED_COLUMNS` column; the objective may be ``value``,
    the column it names. Checked where a study is made (spec files, imports), not by :class:`StudySpec`, so that
    a study stored before the rule still opens, to be exported or deleted."""
    check_reserved(spec.space.names, what)
    if spec.objective != "value":
        check_reserved([spec.objective], what, "objective")


@dataclass(frozen=True)
class StudySpec:
    """Everything needed to (re)create a study, independent of any stored measurement."""

    name: str
    space: Space
    objective: str = "time"
    direction: str = "minimize"
    runner: Mapping[str, Any] = field(default_factory=lambda: {"kind": "table"})
    description: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", check_study_name(self.name))
        if not isinstance(self.objective, str) or not self.objective.isidentifier():
            raise UserError(f"objective {brief(self.objective)} must be an identifier")
        if self.objective in self.space.names:
            raise UserError(f"objective '{self.objective}' is also a factor name")
        if self.direction not in DIRECTIONS:
            raise UserError(f"direction {brief(self.direction)} must be 'minimize' or 'maximize'")
        check_runner(self.runner)

    @property
    def sign(self) -> float:
        """+1 when smaller is better, -1 otherwise: ``sign * value`` is always minimised."""
        return 1.0 if self.direction == "minimize" else -1.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "objective": self.objective,
            "direction": self.direction,
            "runner": dict(self.runner),
            **self.space.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StudySpec:
        if not isinstance(data, Mapping):
            raise UserError("study spec: expected a mapping at the top level")
        if "name" not in data:
            raise UserError("study spec: missing 'name'")
        objective = data.get("objective", "time")
        direction = data.get("direction", "minimize")
        if isinstance(objective, Mapping):
            direction = objective.get("direction", direction)
            objective = objective.get("name", "time")
        runner = data.get("runner") or {"kind": "table"}
        check_runner(runner)
        return cls(
            name=data["name"],
            space=Space.from_dict(data),
            objective=objective,
            direction=direction,
            runner=dict(runner),
            description=str(data.get("description") or ""),
        )
