"""Export the best configuration of a study: JSON, YAML, CSV, a C header, a shell env file, and
Kernel Tuner's T4 results JSON.

The best is either *measured* (the configuration with the best mean over its ok repeats, with a
t-interval of that mean when it has two or more) or *predicted* by a model (with its prediction
interval); :class:`BestConfig` holds either, and every writer is a pure function to text.

Values in the C header and the env file: booleans are ``1``/``0``, numbers are written exactly
(``repr``), categorical levels are quoted (a C string literal; shell single quotes when needed).
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from engine.errors import UserError
from engine.io.export import safe_filename
from engine.study import StudySpec

FORMAT = "tunelab-best"
VERSION = 1
SOURCES = ("measured", "predicted")


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


@dataclass(frozen=True)
class BestConfig:
    """The best configuration and what is known about its objective value."""

    study: str
    objective: str
    direction: str
    config: dict[str, Any]
    value: float
    source: str = "measured"
    lower: float | None = None
    upper: float | None = None
    level: float = 0.95
    repeats: int = 0
    values: tuple[float, ...] = ()
    unit: str = ""
    created_at: str = field(default_factory=lambda: datetime.now(UTC).replace(microsecond=0).isoformat())

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise UserError(f"best configuration: source {self.source!r} must be one of {', '.join(SOURCES)}")
        object.__setattr__(self, "config", {str(k): _plain(v) for k, v in self.config.items()})

    def to_dict(self) -> dict:
        return {
            "format": FORMAT, "version": VERSION, "study": self.study, "objective": self.objective,
            "direction": self.direction, "source": self.source, "value": self.value,
            "interval": {"level": self.level, "lower": self.lower, "upper": self.upper},
            "repeats": self.repeats, "unit": self.unit, "created_at": self.created_at,
            "configuration": dict(self.config),
        }


def best_measured(spec: StudySpec, measurements: pd.DataFrame, level: float = 0.95) -> BestConfig:
    """The configuration with the best mean over its ok repeats (ties: the first measured)."""
    names = spec.space.names
    missing = [n for n in (*names, "value") if n not in measurements.columns]
    if missing:
        raise UserError(f"best configuration: measurements lack column '{missing[0]}'")
    ok = measurements
    if "status" in ok:
        ok = ok[ok["status"] == "ok"]
    ok = ok[np.isfinite(pd.to_numeric(ok["value"], errors="coerce").to_numpy(dtype=float))]
    if ok.empty:
        raise UserError(f"study '{spec.name}': no successful measurement yet, so no best configuration")
    groups = ok.groupby(names, sort=False, dropna=False)["value"]
    means = groups.mean()
    best_index = means.idxmin() if spec.direction == "minimize" else means.idxmax()
    values = groups.get_group(best_index).to_numpy(dtype=float)
    config = dict(zip(names, best_index if isinstance(best_index, tuple) else (best_index,)))
    lower = upper = None
    if len(values) >= 2:
        from scipy.special import stdtrit  # Student t quantile, without importing all of scipy.stats

        half = stdtrit(len(values) - 1, 0.5 + level / 2) * values.std(ddof=1) / math.sqrt(len(values))
        lower, upper = float(values.mean() - half), float(values.mean() + half)
    return BestConfig(spec.name, spec.objective, spec.direction, config, float(values.mean()), "measured",
                      lower, upper, level, len(values), tuple(float(v) for v in values))


def best_predicted(spec: StudySpec, config: Mapping[str, Any], predicted: float, lower: float | None = None,
                   upper: float | None = None, level: float = 0.95) -> BestConfig:
    """A model's predicted best (e.g. :func:`engine.analysis.predict` at its argmin) as a BestConfig."""
    missing = [n for n in spec.space.names if n not in config]
    if missing:
        raise UserError(f"best configuration: the predicted point lacks factor '{missing[0]}'")
    point = {n: config[n] for n in spec.space.names}
    return BestConfig(spec.name, spec.objective, spec.direction, point, float(predicted), "predicted",
                      None if lower is None else float(lower), None if upper is None else float(upper), level)


# -- writers --------------------------------------------------------------------------------------------


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def to_json(best: BestConfig) -> str:
    doc = best.to_dict()
    for key in ("value",):
        doc[key] = _finite(doc[key])
    doc["interval"] = {k: _finite(v) if k != "level" else v for k, v in doc["interval"].items()}
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def to_yaml(best: BestConfig) -> str:
    import yaml

    return yaml.safe_dump(json.loads(to_json(best)), sort_keys=False, allow_unicode=True)


def to_csv(best: BestConfig) -> str:
    """One header line and one row: the factors, then the objective and what is known about it."""
    row = {**best.config, best.objective: best.value, "source": best.source, "lower": best.lower,
           "upper": best.upper, "level": best.level, "repeats": best.repeats}
    if len(row) != len(best.config) + 6:
        raise UserError(f"best configuration: a factor is named like an export column ({', '.join(row)})")
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(row), lineterminator="\n")
    writer.writeheader()
    writer.writerow({k: "" if v is None else v for k, v in row.items()})
    return out.getvalue()


def _c_value(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise UserError(f"best configuration: {value} cannot be written as a C constant")
        return repr(value)
    text = str(value)
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


_ASCII_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_C_KEYWORDS = frozenset({
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern",
    "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short", "signed",
    "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while"
})


def _check_names(best: BestConfig, what: str) -> None:
    for name in best.config:
        if not _ASCII_NAME.match(name) or (what == "C header" and name in _C_KEYWORDS):
            raise UserError(f"best configuration: factor name {name!r} cannot be a {what} name (ASCII letters, digits, _)")


def _comment(text: str) -> str:
    return text.replace("*/", "* /").replace("\n", " ")


def to_header(best: BestConfig) -> str:
    """A C header: an include guard, a comment saying where the values come from, one #define per factor."""
    _check_names(best, "C header")
    guard = "TUNELAB_BEST_" + re.sub(r"[^A-Za-z0-9]", "_", best.study).upper() + "_H"
    interval = (f" ({best.level:.0%} interval {best.lower:.6g} .. {best.upper:.6g})"
                if best.lower is not None and best.upper is not None else "")
    lines = [
        f"/* Best configuration of Tunelab study '{_comment(best.study)}' ({best.source}). */",
        f"/* {_comment(best.objective)} = {best.value:.6g}{interval}; {best.direction}; {best.created_at} */",
        f"#ifndef {guard}", f"#define {guard}", "",
    ]
    lines += [f"#define {name} {_c_value(value)}" for name, value in best.config.items()]
    lines += ["", f"#endif /* {guard} */", ""]
    return "\n".join(lines)


def _shell_value(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return repr(value)
    return shlex.quote(str(value))


def to_env(best: BestConfig) -> str:
    """``NAME=value`` lines that ``sh`` can source (``set -a; . file``) and env-file readers accept."""
    _check_names(best, "environment variable")
    lines = [f"# Best configuration of Tunelab study '{best.study}' ({best.source}): "
             f"{best.objective} = {best.value:.6g}".replace("\n", " ")]
    lines += [f"{name}={_shell_value(value)}" for name, value in best.config.items()]
    return "\n".join(lines) + "\n"


def to_t4(best: BestConfig) -> str:
    """Kernel Tuner's T4 results document (schema 1.0.0) holding the best configuration."""
    result = {
        "timestamp": best.created_at,
        "configuration": dict(best.config),
        "objectives": [best.objective],
        "times": {"runtimes": [v for v in best.values if math.isfinite(v)]},
        "invalidity": "correct",
        "correctness": 1,
        "measurements": [{"name": best.objective, "value": _finite(best.value), "unit": best.unit}],
    }
    doc = {"schema_version": "1.0.0", "results": [result],
           "metadata": {"tunelab": {"study": best.study, "source": best.source, "direction": best.direction,
                                    "interval": {"level": best.level, "lower": _finite(best.lower),
                                                 "upper": _finite(best.upper)}}}}
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


WRITERS: dict[str, tuple[Callable[[BestConfig], str], str]] = {
    "json": (to_json, ".json"),
    "yaml": (to_yaml, ".yaml"),
    "csv": (to_csv, ".csv"),
    "header": (to_header, ".h"),
    "env": (to_env, ".env"),
    "t4": (to_t4, ".t4.json"),
}
FORMATS: Sequence[str] = tuple(WRITERS)


def export_best(best: BestConfig, fmt: str) -> str:
    """``best`` written in format ``fmt`` (one of :data:`FORMATS`)."""
    if fmt not in WRITERS:
        raise UserError(f"best configuration: format {fmt!r} is not one of {', '.join(FORMATS)}")
    return WRITERS[fmt][0](best)


def best_filename(best: BestConfig, fmt: str) -> str:
    """A safe default file name, e.g. ``Matrix multiply (this CPU)-best.h``."""
    if fmt not in WRITERS:
        raise UserError(f"best configuration: format {fmt!r} is not one of {', '.join(FORMATS)}")
    return safe_filename(f"{best.study}-best{WRITERS[fmt][1]}", fallback=f"best{WRITERS[fmt][1]}")
