"""Export the best configuration of a study: JSON, YAML, CSV, a C header, a shell env file, and
Kernel Tuner's T4 results JSON.

The best is either *measured* (the configuration with the best mean over its ok repeats, with a
t-interval of that mean when it has two or more) or *predicted* by a model (with its prediction
interval); :class:`BestConfig` holds either, and every writer is a pure function to text. Every format
marks a prediction as one (it was never run): the JSON/YAML ``prediction`` block, the CSV ``source``
column, the header's and env file's comments, and in T4 a measurement named ``predicted <objective>``
with ``correctness`` 0 (not verified) and no runtimes. What a person must know before using a prediction
(:attr:`BestConfig.warnings`: worse than the best measured, below a table's optimum) goes with it.

Values in the C header and the env file: booleans are ``1``/``0``, numbers are written exactly
(``repr``), categorical levels are quoted (a C string literal; shell single quotes when needed).
Nothing in a value or a name can end a literal, a comment or a line: the header escapes every byte
outside printable ASCII, comments drop control characters, the env file refuses them, and names that
C reserves or the shell acts on (``PATH``, ``LD_PRELOAD``) are refused.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import shlex
import unicodedata
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from engine.errors import UserError, brief
from engine.io.files import safe_filename
from engine.io.jsonable import plain
from engine.io.spreadsheet import csv_quoting, spreadsheet_value
from engine.study import StudySpec

if TYPE_CHECKING:  # a frame of measurements is one way in; the plain rows of best_of need no pandas
    import pandas as pd

FORMAT = "tunelab-best"
VERSION = 1
SOURCES = ("measured", "predicted")

#: What identifies a configuration among measurements: a tuple of its levels, its key in the store.
Key = TypeVar("Key", bound=Hashable)


@dataclass(frozen=True)
class BestConfig:
    """The best configuration and what is known about its objective value. ``undetermined`` names the
    factors a predicted best cannot set: neither in the model nor fixed by a decision; ``config``
    leaves them out, so no file writes a guess as a tuned setting."""

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
    undetermined: tuple[str, ...] = ()
    created_at: str = field(default_factory=lambda: datetime.now(UTC).replace(microsecond=0).isoformat())
    search: str = ""  # a prediction: how the model's optimum was found (exact, or the best of a descent)
    measured_best: float | None = None  # a prediction: the best measured value, to compare with
    table_value: float | None = None  # a prediction in a table study: the table's value at the configuration
    table_optimum: float | None = None  # a prediction in a table study: the table's best value

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise UserError(f"best configuration: source {brief(self.source)} must be one of {', '.join(SOURCES)}")
        object.__setattr__(self, "config", {str(k): plain(v) for k, v in self.config.items()})

    def _better(self, a: float, b: float) -> bool:
        return a < b if self.direction == "minimize" else a > b

    @property
    def worse_than_measured(self) -> bool:
        """A prediction worse than a configuration already measured: the measured one is the safer export."""
        return (self.source == "predicted" and self.measured_best is not None
                and self._better(self.measured_best, self.value))

    @property
    def extrapolated(self) -> bool:
        """A prediction better than every row of the table that lists the whole space: beyond what exists."""
        return (self.source == "predicted" and self.table_optimum is not None
                and self._better(self.value, self.table_optimum))

    @property
    def warnings(self) -> list[str]:
        """One line per thing to know before using this configuration (a prediction's, so far)."""
        lines = []
        if self.table_value is not None:
            lines.append(f"predicted {self.objective} = {self.value:.4g}, the table says {self.table_value:.4g}")
        if self.extrapolated:
            lines.append(f"the prediction {self.value:.4g} is better than the table's optimum {self.table_optimum:.4g}: "
                         "an extrapolation, not a value any configuration reaches")
        if self.worse_than_measured:
            lines.append(f"the predicted {self.objective} = {self.value:.4g} is worse than the best measured "
                         f"{self.measured_best:.4g}: export the measured best instead")
        return lines

    def to_dict(self) -> dict[str, Any]:
        doc = {
            "format": FORMAT, "version": VERSION, "study": self.study, "objective": self.objective,
            "direction": self.direction, "source": self.source, "value": self.value,
            "interval": {"level": self.level, "lower": self.lower, "upper": self.upper},
            "repeats": self.repeats, "unit": self.unit, "created_at": self.created_at,
            "configuration": dict(self.config),
            "undetermined": list(self.undetermined),
        }
        if self.source == "predicted":
            doc["prediction"] = {"measured": False, "search": self.search, "measured_best": _finite(self.measured_best),
                                 "table_value": _finite(self.table_value), "table_optimum": _finite(self.table_optimum),
                                 "warnings": self.warnings}
        return doc


def best_measured(spec: StudySpec, measurements: pd.DataFrame, level: float = 0.95) -> BestConfig:
    """:func:`best_of` a frame of measurements: factor columns, ``value`` and (else all are ok) ``status``."""
    names = spec.space.names
    missing = [n for n in (*names, "value") if n not in measurements.columns]
    if missing:
        raise UserError(f"best configuration: measurements lack column '{missing[0]}'")
    status = measurements["status"] if "status" in measurements else ["ok"] * len(measurements)
    rows = zip(zip(*(measurements[n] for n in names)), measurements["value"], status)
    return best_of(spec, rows, lambda config: dict(zip(names, config)), level)


def best_of(spec: StudySpec, measurements: Iterable[tuple[Key, Any, str]], config: Callable[[Key], Mapping[str, Any]],
            level: float = 0.95) -> BestConfig:
    """The configuration with the best mean over its ok repeats (ties: the first measured), from plain
    ``(configuration, value, status)`` rows; ``config`` turns the winner's identity into its factors' levels. A value
    that is no finite number (NaN, missing) counts as no measurement."""
    repeats: dict[Key, list[float]] = {}
    for key, value, status in measurements:
        number = _number(value)
        if status == "ok" and number is not None:
            repeats.setdefault(key, []).append(number)
    if not repeats:
        raise UserError(f"study '{spec.name}': no successful measurement yet, so no best configuration")
    pick = min if spec.direction == "minimize" else max
    best = pick(repeats, key=lambda key: math.fsum(repeats[key]) / len(repeats[key]))
    values = repeats[best]
    mean, lower, upper = (values[0], None, None) if len(values) == 1 else _t_interval(values, level)
    return BestConfig(spec.name, spec.objective, spec.direction, dict(config(best)), mean, "measured", lower, upper,
                      level, len(values), tuple(values))


def _number(value: Any) -> float | None:
    """``value`` as a finite float, or None (what ``pd.to_numeric(errors="coerce")`` then a finite test keep)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _t_interval(values: Sequence[float], level: float) -> tuple[float, float, float]:
    """The mean of two or more ``values`` and its Student t interval. numpy is imported here alone: a
    configuration measured once has no interval, and exporting it starts without it."""
    import numpy as np

    from engine.analysis.quantiles import t_quantile

    array = np.array(values, dtype=float)
    half = t_quantile(0.5 + level / 2, len(array) - 1) * array.std(ddof=1) / math.sqrt(len(array))
    return float(array.mean()), float(array.mean() - half), float(array.mean() + half)


def best_predicted(spec: StudySpec, config: Mapping[str, Any], predicted: float, lower: float | None = None,
                   upper: float | None = None, level: float = 0.95, undetermined: Sequence[str] = (), *,
                   search: str = "", measured_best: float | None = None, table_value: float | None = None,
                   table_optimum: float | None = None) -> BestConfig:
    """A model's predicted best (e.g. :func:`engine.analysis.predict` at its optimum) as a BestConfig;
    the ``undetermined`` factors' levels in ``config`` are the optimum's arbitrary pick and are dropped.
    ``search`` says how the optimum was found; ``measured_best``, ``table_value`` and ``table_optimum``
    are what the prediction is compared with (:attr:`BestConfig.warnings`)."""
    missing = [n for n in spec.space.names if n not in config]
    if missing:
        raise UserError(f"best configuration: the predicted point lacks factor '{missing[0]}'")
    point = {n: config[n] for n in spec.space.names if n not in undetermined}

    def number(value: float | None) -> float | None:
        return None if value is None else float(value)

    return BestConfig(spec.name, spec.objective, spec.direction, point, float(predicted), "predicted",
                      number(lower), number(upper), level, undetermined=tuple(n for n in spec.space.names if n in undetermined),
                      search=search, measured_best=number(measured_best), table_value=number(table_value),
                      table_optimum=number(table_optimum))


def _notes(best: BestConfig) -> list[str]:
    """The comment lines a header or env file adds: a prediction says it is one, and what to know about it."""
    lines = [f"not determined by the model: {', '.join(best.undetermined)}"] if best.undetermined else []
    if best.source == "predicted":
        lines.append("a model's prediction, never measured" + (f" ({best.search})" if best.search else ""))
    return lines + [f"warning: {line}" for line in best.warnings]


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
    from engine.io.spec import dump_yaml

    return dump_yaml(json.loads(to_json(best)), sort_keys=False)


def to_csv(best: BestConfig) -> str:
    """One header line and one row: the factors, then the objective and what is known about it; text a spreadsheet
    would run as a formula is quoted (:func:`engine.io.spreadsheet.spreadsheet_value`)."""
    row = {**best.config, best.objective: best.value, "source": best.source, "lower": best.lower,
           "upper": best.upper, "level": best.level, "repeats": best.repeats}
    if len(row) != len(best.config) + 6:
        raise UserError(f"best configuration: a factor is named like an export column ({', '.join(row)})")
    names, values = [spreadsheet_value(k) for k in row], ["" if v is None else spreadsheet_value(v) for v in row.values()]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n", quoting=csv_quoting((*names, *values)))
    writer.writerows([names, values])
    return out.getvalue()


def _c_value(value: Any, name: str) -> str:
    """A C constant: ``1``/``0`` for booleans, numbers exactly (parenthesised when negative, so ``a-X``
    stays a subtraction), anything else a string literal."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        if not -_INT64 <= value < _INT64:
            raise UserError(f"best configuration: {name} = {brief(value)} does not fit a C long long")
        return f"({value})" if value < 0 else str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise UserError(f"best configuration: {name} = {value} cannot be written as a C constant")
        return f"({value!r})" if math.copysign(1.0, value) < 0 else repr(value)
    return _c_string(str(value))


#: Characters a C string literal writes with a short escape; ``?`` too, so no trigraph (``??/``) can form.
_C_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "?": "\\?"}


def _c_string(text: str) -> str:
    """A C string literal of ``text``'s UTF-8 bytes. Printable ASCII stays; every other byte is a
    three-digit octal escape, which (unlike ``\\xNN``) never swallows the digit after it. A control
    character cannot end the literal or the line, so no value can inject a ``#define``."""
    out = []
    for byte in text.encode("utf-8", "surrogatepass"):
        char = chr(byte)
        out.append(_C_ESCAPES.get(char) or (char if 0x20 <= byte < 0x7F else f"\\{byte:03o}"))
    return '"' + "".join(out) + '"'


_INT64 = 2**63
_ASCII_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_C_KEYWORDS = frozenset({
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern",
    "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short", "signed",
    "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while",
    # C23 keywords and what <stdbool.h>/<assert.h> define; 'defined' cannot be a macro at all
    "alignas", "alignof", "bool", "constexpr", "false", "nullptr", "static_assert", "thread_local", "true",
    "typeof", "typeof_unqual", "defined",
})
#: Variables a shell or the dynamic loader acts on: sourcing a file that sets them runs someone's code.
_SHELL_SPECIAL = frozenset({
    "PATH", "IFS", "ENV", "BASH_ENV", "CDPATH", "HOME", "SHELL", "PS1", "PS2", "PS4", "PROMPT_COMMAND",
    "SHELLOPTS", "BASHOPTS", "GLOBIGNORE", "PYTHONPATH", "PYTHONSTARTUP", "PERL5OPT", "NODE_OPTIONS",
})
_SHELL_SPECIAL_PREFIXES = ("LD_", "DYLD_", "BASH_FUNC_")


def _check_names(best: BestConfig, what: str) -> None:
    for name in best.config:
        if not _ASCII_NAME.match(name):
            raise UserError(f"best configuration: factor name {brief(name)} cannot be a {what} name "
                            "(ASCII letters, digits, _)")
        if what == "C header" and (name in _C_KEYWORDS or re.match(r"^_[A-Z_]", name)):
            raise UserError(f"best configuration: factor name '{name}' is a C keyword or a reserved identifier")
        if what == "environment variable" and (name in _SHELL_SPECIAL or name.startswith(_SHELL_SPECIAL_PREFIXES)):
            raise UserError(f"best configuration: factor name '{name}' is a variable the shell or loader acts on")


#: Control characters, line and paragraph separators, lone surrogates: what may end a line for some reader.
_LINE_BREAKING = frozenset({"Cc", "Cs", "Zl", "Zp"})


def _unprintable(char: str) -> bool:
    """Control, format (bidi overrides), surrogate and line/paragraph-separator characters."""
    return unicodedata.category(char)[0] == "C" or unicodedata.category(char) in ("Zl", "Zp")


def _comment(text: str) -> str:
    """Text for a one-line comment: unprintable characters dropped, then ``*/`` and ``/*`` broken."""
    text = "".join(ch for ch in str(text) if not _unprintable(ch))
    return text.replace("*/", "* /").replace("/*", "/ *")


def to_header(best: BestConfig) -> str:
    """A C header: an include guard, a comment saying where the values come from, one #define per factor."""
    _check_names(best, "C header")
    guard = "TUNELAB_BEST_" + re.sub(r"[^A-Za-z0-9]", "_", best.study).upper() + "_H"
    if guard in best.config:
        raise UserError(f"best configuration: factor name '{guard}' is the header's include guard")
    interval = (f" ({best.level:.0%} interval {best.lower:.6g} .. {best.upper:.6g})"
                if best.lower is not None and best.upper is not None else "")
    lines = [
        "/* " + _comment(f"Best configuration of Tunelab study '{best.study}' ({best.source}).") + " */",
        "/* " + _comment(f"{best.objective} = {best.value:.6g}{interval}; {best.direction}; {best.created_at}") + " */",
        *["/* " + _comment(line) + " */" for line in _notes(best)],
        f"#ifndef {guard}", f"#define {guard}", "",
    ]
    lines += [f"#define {name} {_c_value(value, name)}" for name, value in best.config.items()]
    lines += ["", f"#endif /* {guard} */", ""]
    return "\n".join(lines)


def _shell_value(value: Any, name: str) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return repr(value)
    text = str(value)
    bad = next((ch for ch in text if unicodedata.category(ch) in _LINE_BREAKING), None)
    if bad is not None:  # a newline would start a new variable for every line-based env-file reader
        raise UserError(f"best configuration: {name} = {brief(text)} holds control character {bad!r}, "
                        "which an env file cannot carry")
    return shlex.quote(text)


def to_env(best: BestConfig) -> str:
    """``NAME=value`` lines that ``sh`` can source (``set -a; . file``) and env-file readers accept.

    Text is single-quoted (``'`` as ``'"'"'``); a value holding a control character is refused.
    """
    _check_names(best, "environment variable")
    lines = ["# " + _comment(f"Best configuration of Tunelab study '{best.study}' ({best.source}): "
                             f"{best.objective} = {best.value:.6g}")]
    lines += ["# " + _comment(line) for line in _notes(best)]
    lines += [f"{name}={_shell_value(value, name)}" for name, value in best.config.items()]
    return "\n".join(lines) + "\n"


def to_t4(best: BestConfig) -> str:
    """Kernel Tuner's T4 results document (schema 1.0.0) holding the best configuration. A measured best is a
    correct result with its runtimes; a predicted one was never run: its measurement is named ``predicted
    <objective>``, it has no runtimes, and ``correctness`` is 0 (the schema requires a number; 1 would claim a
    verified run). ``invalidity`` stays ``correct``: the configuration is valid in the space."""
    predicted = best.source == "predicted"
    name = f"predicted {best.objective}" if predicted else best.objective
    result = {
        "timestamp": best.created_at,
        "configuration": dict(best.config),
        "objectives": [name],
        "times": {} if predicted else {"runtimes": [v for v in best.values if math.isfinite(v)]},
        "invalidity": "correct",
        "correctness": 0 if predicted else 1,
        "measurements": [{"name": name, "value": _finite(best.value), "unit": best.unit}],
    }
    tunelab = {"study": best.study, "source": best.source, "direction": best.direction,
               "undetermined": list(best.undetermined),
               "interval": {"level": best.level, "lower": _finite(best.lower), "upper": _finite(best.upper)}}
    if predicted:
        tunelab["prediction"] = best.to_dict()["prediction"]
    doc = {"schema_version": "1.0.0", "results": [result], "metadata": {"tunelab": tunelab}}
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
        raise UserError(f"best configuration: format {brief(fmt)} is not one of {', '.join(FORMATS)}")
    return WRITERS[fmt][0](best)


def best_filename(best: BestConfig, fmt: str) -> str:
    """A safe default file name, e.g. ``Matrix multiply (this CPU)-best.h``."""
    if fmt not in WRITERS:
        raise UserError(f"best configuration: format {brief(fmt)} is not one of {', '.join(FORMATS)}")
    return safe_filename(f"{best.study}-best{WRITERS[fmt][1]}", fallback=f"best{WRITERS[fmt][1]}")
