"""The runner interface: measure one configuration, get one :class:`MeasureResult` per repeat run.

A runner is a small picklable object built from the study spec's ``runner`` mapping (see
:func:`engine.runners.runner_from_spec`), so executors can ship it to worker processes or Dask
workers once and call :meth:`Runner.measure` there. ``measure`` never raises for a measurement that
went wrong: a compile error, a non-zero exit, a timeout or a wrong answer is a *result* (status
``failed``/``timeout``/``invalid`` with the error text), because a campaign must record it and go on.

Repeats: a failure ends a configuration's repeats, so a result list holds the repeats that ran, the
failing one last; results are numbered from ``start`` so a resumed campaign continues the numbering.
A value that is not a finite number (``nan``, ``inf``) is such a failure, whatever the runner.

What a result keeps is bounded (:data:`ERROR_LIMIT`, :data:`METADATA_LIMIT`): a program or a callable
that reports megabytes cannot bloat the store or a worker's reply.
"""

from __future__ import annotations

import json
import math
import socket
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar

from engine.errors import UserError
from engine.runners.status import STATUSES

if TYPE_CHECKING:
    import pandas as pd

    from engine.space.factors import Space

#: Most characters of an error text a result keeps (its start and its end).
ERROR_LIMIT = 8 * 1024
#: Most characters of metadata (as JSON) a result keeps; entries beyond it are replaced by a note.
METADATA_LIMIT = 64 * 1024
#: Options every runner takes besides its own.
COMMON_OPTIONS = ("repeats", "warmup", "timeout", "check")


def utc_now() -> datetime:
    """A naive UTC timestamp (what the store keeps)."""
    return datetime.now(UTC).replace(tzinfo=None)


@dataclass(frozen=True)
class MeasureResult:
    """One repeat of one configuration: the value (None unless ok), its status and provenance."""

    value: float | None
    status: str = "ok"
    error: str | None = None
    repeat: int = 0
    metadata: Mapping[str, Any] = field(default_factory=dict)
    host: str = field(default_factory=socket.gethostname)
    started_at: datetime | None = None
    finished_at: datetime | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"measurement status {self.status!r} is not one of {', '.join(STATUSES)}")

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value, "status": self.status, "error": self.error, "repeat": self.repeat,
            "host": self.host, "metadata": dict(self.metadata),
            "started_at": self.started_at.isoformat() if self.started_at else None,
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
        }


class MeasureError(Exception):
    """Raised inside a runner to end the current configuration with a status and an error text."""

    def __init__(self, status: str, error: str) -> None:
        super().__init__(error)
        self.status = status
        self.error = error


@dataclass
class Trial:
    """What a runner's :meth:`Runner._run` produced: values of the repeats that ran, shared metadata,
    and the failure that stopped it (if any)."""

    values: list[float] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    failure: MeasureError | None = None
    #: Per-repeat metadata (e.g. a speed-up), aligned with ``values`` where given.
    per_repeat: list[dict[str, Any]] | None = None


def bounded_text(text: str, limit: int = ERROR_LIMIT) -> str:
    """``text`` whole, or its start and end with a note in between when longer than ``limit``."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half:,} characters not kept ...]\n{text[-half:]}"


def json_default(value: Any) -> Any:
    """``json.dumps`` fallback for runner metadata: numpy scalars and arrays (anything with ``item``
    or ``tolist``) as Python values, anything else as text, so a callable's metadata never fails a
    result. Duck-typed, not :func:`engine.io.jsonable.plain`: importing ``engine.io`` would load
    pandas into every runner process and the Python runner's sandbox."""
    for method in ("item", "tolist"):
        if callable(getattr(value, method, None)):
            try:
                return getattr(value, method)()
            except (TypeError, ValueError):
                pass
    return str(value)


#: The older name, still imported by :mod:`engine.runners.python_runner`.
plain = json_default


def _json_size(value: Any) -> int:
    if isinstance(value, (str, bytes)):
        return len(value)
    try:
        return len(json.dumps(value, default=json_default))
    except (TypeError, ValueError):  # keys JSON cannot take, a circular structure
        return len(str(value))


def bounded_metadata(metadata: Mapping[str, Any], limit: int = METADATA_LIMIT) -> dict[str, Any]:
    """``metadata`` with every entry that would take it past ``limit`` characters of JSON replaced
    by a short note saying how big it was."""
    kept, used = {}, 0
    for key, value in metadata.items():
        size = _json_size(value)
        if used + size > limit:
            value, size = f"<not kept: {size:,} characters over the {limit:,}-character metadata limit>", 80
        kept[key] = value
        used += size
    return kept


def check_int(options: Mapping[str, object], name: str, default: int, low: int, what: str) -> int:
    value = options.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise UserError(f"runner '{what}': {name} {value!r} must be an integer >= {low}")
    return value


def check_positive(options: Mapping[str, object], name: str, default: float | None, what: str) -> float | None:
    value = options.get(name, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or not math.isfinite(value):
        raise UserError(f"runner '{what}': {name} {value!r} must be a positive number of seconds")
    return float(value)


def check_options(options: Mapping[str, object], allowed: tuple[str, ...], what: str) -> None:
    """Refuse unknown keys in a runner mapping: a typo must not silently fall back to a default."""
    known = set(allowed) | set(COMMON_OPTIONS) | {"kind"}
    for key in options:
        if key not in known:
            raise UserError(f"runner '{what}': unknown option '{key}' (known: {', '.join(sorted(known - {'kind'}))})")


def finite_value(value: Any) -> float:
    """``value`` as a finite float; otherwise a 'failed' :class:`MeasureError` saying what it was."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise MeasureError("failed", f"measured value {value!r:.80} is not a number") from None
    if not math.isfinite(number):
        raise MeasureError("failed", f"measured value {number} is not a finite number")
    return number


def _finite(values: list[float], failure: MeasureError | None) -> tuple[list[float], MeasureError | None]:
    """The values up to the first one that is not a finite number, which becomes the failure."""
    kept: list[float] = []
    for value in values:
        try:
            kept.append(finite_value(value))
        except MeasureError as exc:
            return kept, exc
    return kept, failure


class Runner(ABC):
    """Measures configurations. Subclasses implement :meth:`_run`; :meth:`measure` wraps it."""

    kind: ClassVar[str] = ""
    #: Whether a measurement occupies a GPU (the Dask executor then runs one at a time per GPU).
    uses_gpu: bool = False
    #: Most repeats a configuration can have (a table holds one value per configuration).
    max_repeats: int | None = None
    #: Untimed runs before the repeats when a spec names none.
    default_warmup: ClassVar[int] = 0
    #: Whether the ``auto`` executor measures in the calling process: a computation with nothing to isolate,
    #: time or parallelise (a table lookup, a synthetic function), where a process pool's start-up (1-2 s on
    #: 2 cores, issue 31) is most of the run.
    in_process: ClassVar[bool] = False

    def __init__(self, *, repeats: int = 1, warmup: int | None = None, timeout: float | None = 60.0,
                 check: Any = True) -> None:
        self.repeats = check_int({"repeats": repeats}, "repeats", 1, 1, self.kind)
        warmup = self.default_warmup if warmup is None else warmup
        self.warmup = check_int({"warmup": warmup}, "warmup", 0, 0, self.kind)
        self.timeout = check_positive({"timeout": timeout}, "timeout", 60.0, self.kind)
        self.check = check

    if TYPE_CHECKING:  # every subclass defines it; declared for the type checker only

        @classmethod
        def from_spec(cls, spec: Mapping[str, Any], *, space: Space | None = None,
                      table: pd.DataFrame | None = None) -> Runner:
            """The runner a study spec's ``runner`` mapping describes."""

    @classmethod
    def common(cls, options: Mapping[str, Any]) -> dict[str, Any]:
        """The common options of a runner mapping, validated."""
        return {
            "repeats": check_int(options, "repeats", 1, 1, cls.kind),
            "warmup": check_int(options, "warmup", cls.default_warmup, 0, cls.kind),
            "timeout": check_positive(options, "timeout", 60.0, cls.kind),
            "check": options.get("check", True),
        }

    def measure(self, config: Mapping[str, Any], repeats: int | None = None, start: int = 0) -> list[MeasureResult]:
        """Measure ``config``: warm-up runs, then ``repeats`` timed runs, numbered from ``start``."""
        n = self.repeats if repeats is None else int(repeats)
        if self.max_repeats is not None:
            n = min(n, max(self.max_repeats - start, 0))
        if n <= 0:
            return []
        started = utc_now()
        try:
            trial = self._run(dict(config), n, start)
        except MeasureError as exc:
            trial = Trial(failure=exc)
        except Exception as exc:  # noqa: BLE001 - a runner bug or a library error is still a recorded result
            trial = Trial(failure=MeasureError("failed", f"{type(exc).__name__}: {exc}"))
        finished = utc_now()
        values, failure = _finite(trial.values[:n], trial.failure)
        metadata = bounded_metadata(trial.metadata)
        results = []
        for i, value in enumerate(values):
            extra = trial.per_repeat[i] if trial.per_repeat and i < len(trial.per_repeat) else {}
            results.append(MeasureResult(value, "ok", None, start + i, bounded_metadata({**metadata, **extra}),
                                         started_at=started, finished_at=finished))
        if failure is not None and len(results) < n:
            results.append(MeasureResult(None, failure.status, bounded_text(str(failure.error)), start + len(results),
                                         metadata, started_at=started, finished_at=finished))
        return results

    @abstractmethod
    def _run(self, config: dict[str, Any], repeats: int, start: int) -> Trial:
        """Run warm-ups and ``repeats`` repeats of ``config``; raise :class:`MeasureError` to fail it."""

    def repeat_calls(self, once: Callable[[], float], repeats: int, metadata: dict[str, Any] | None = None) -> Trial:
        """For runners that measure one repeat per call: warm-ups (discarded), then the repeats;
        a :class:`MeasureError` keeps the values measured so far."""
        trial = Trial(metadata=dict(metadata or {}))
        try:
            for _ in range(self.warmup):
                once()
            for _ in range(repeats):
                trial.values.append(finite_value(once()))
        except MeasureError as exc:
            trial.failure = exc
        return trial

    def describe(self) -> dict[str, Any]:
        """A short JSON-ready description (for logs and CLI output)."""
        return {"kind": self.kind, "repeats": self.repeats, "warmup": self.warmup, "timeout": self.timeout}
