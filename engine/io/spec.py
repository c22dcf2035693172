"""Study spec files: YAML or TOML text a person writes, reads and keeps under version control.

A spec holds what :class:`engine.study.StudySpec` holds, nothing else (unknown keys are errors, so a
typo such as ``constriants`` cannot silently drop the constraints)::

    name: Laplacian tiles            # study name: letters, digits, space, _ . -
    description: BOAST Laplacian on a K40c
    objective: time_per_pixel        # the measured response (an identifier)
    direction: minimize              # or maximize
    runner: {kind: table}            # how to measure: table, synthetic, command ...
    factors:
      - {name: elements_number, kind: ordinal, levels: [1, 2, 3, 4, 6, 8, 12, 24]}
      - {name: y_component_number, kind: integer, low: 1, high: 6}          # step: 1 by default
      - {name: lws_y, kind: ordinal, powers_of_two: [1, 1024]}              # 1, 2, 4, ..., 1024
      - {name: load_overlap, kind: boolean}                                 # levels false, true
      - {name: layout, kind: categorical, levels: [row, column]}
    constraints:                     # checked expressions (engine/space/expr.py), never eval'd
      - elements_number % y_component_number == 0
      - lws_y <= 1024

The same in TOML uses top-level keys, ``runner = {kind = "table"}`` and one ``[[factors]]`` table per
factor. YAML is read with a SafeLoader made stricter (:class:`_SpecLoader`: no aliases, no key given
twice, no nesting past :data:`~engine.io.table_import.MAX_DEPTH`); a spec holds at most
:data:`MAX_SPEC_BYTES`. Errors are one line: malformed text names its line; field errors (duplicate
factor names, empty or non-numeric levels, bad constraints, unknown runner kinds) come from
:mod:`engine.space.factors` / :mod:`engine.study` unchanged. A spec a study could not use is refused here
too: a ``command`` runner whose ``command`` is text rather than an argument list (no shell runs it), and a
factor or objective named like a column of Tunelab's measurement tables (:data:`engine.study.RESERVED_COLUMNS`).
"""

from __future__ import annotations

import shlex
import tomllib
from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError

from engine.errors import UserError, brief
from engine.io.table_import import MAX_DEPTH, check_depth, source_name
from engine.space.text import valid_count
from engine.study import StudySpec, check_column_names

FORMATS = ("yaml", "toml")
_EXTENSIONS = {".yaml": "yaml", ".yml": "yaml", ".toml": "toml"}
#: A spec is a small text file; refusing huge input keeps a hostile upload from eating memory.
MAX_SPEC_BYTES = 1_000_000
_PLAIN = (str, int, float, bool, type(None))
_TOP_KEYS = ("name", "description", "objective", "direction", "runner", "factors", "constraints")
#: Words that only a shell gives meaning to: in an argument list they would reach the program as text.
_SHELL_SYNTAX = frozenset({"|", "||", "&&", "&", ";", "<", ">", ">>", "2>", "2>&1"})
_FACTOR_KEYS = ("name", "kind", "type", "levels", "low", "high", "step", "range", "powers_of_two")


def _check_factor(i: int, item: Any) -> None:
    """Shape checks Space.from_dict does not make, so bad input fails with a message, not a KeyError."""
    if not isinstance(item, Mapping):
        raise UserError(f"spec: factor #{i + 1} must be a mapping with name, kind and levels, got {brief(item)}")
    label = f"factor {brief(item.get('name', f'#{i + 1}'))}"
    unknown = [k for k in item if k not in _FACTOR_KEYS]
    if unknown:
        raise UserError(f"{label}: unknown key {brief(unknown[0])} (allowed: {', '.join(_FACTOR_KEYS)})")
    kind = item.get("kind", item.get("type"))
    generators = [k for k in ("low", "high", "range", "powers_of_two") if k in item]
    if "levels" in item and generators:
        raise UserError(f"{label}: give either 'levels' or '{generators[0]}', not both")
    if "low" in item or "high" in item or "range" in item:
        if kind != "integer":
            raise UserError(f"{label}: low/high and range need kind: integer, not {brief(kind)}")
        if "range" not in item and ("low" not in item or "high" not in item):
            raise UserError(f"{label}: needs both 'low' and 'high'")
    if "step" in item and "low" not in item:
        raise UserError(f"{label}: 'step' needs 'low' and 'high'")
    if "powers_of_two" in item and kind != "ordinal":
        raise UserError(f"{label}: powers_of_two needs kind: ordinal, not {brief(kind)}")


def spec_from_data(data: Any) -> StudySpec:
    """A StudySpec from parsed YAML/TOML data, after the shape checks the dataclasses leave out."""
    if not isinstance(data, Mapping):
        raise UserError(f"spec: expected a mapping of name, objective, factors ... at the top level, got {brief(data)}")
    unknown = [k for k in data if k not in _TOP_KEYS]
    if unknown:
        raise UserError(f"spec: unknown key {brief(unknown[0])} (allowed: {', '.join(_TOP_KEYS)})")
    if "name" not in data:
        raise UserError("spec: missing 'name'")
    check_plain(data, "spec")
    factors = data.get("factors")
    if not isinstance(factors, list) or not factors:
        raise UserError(f"spec: 'factors' must be a non-empty list, got {brief(factors)}")
    for i, item in enumerate(factors):
        _check_factor(i, item)
    runner = data.get("runner", {"kind": "table"})
    if not isinstance(runner, Mapping) or not isinstance(runner.get("kind"), str):
        raise UserError(f"spec: 'runner' must be a mapping with a 'kind', got {brief(runner)}")
    if not isinstance(data.get("description") or "", str):
        raise UserError(f"spec: 'description' must be text, got {brief(data['description'])}")
    if runner["kind"] == "command" and "command" in runner:
        _check_argument_list(runner["command"])
    spec = StudySpec.from_dict(data)
    check_column_names(spec, "spec")
    return spec


def _check_argument_list(command: Any) -> None:
    """A command runner runs its argument list as is, never through a shell, so text (``./bench --n={n} | tee``)
    cannot be split safely: it is refused with the list it would be, instead of failing at the first run."""
    if isinstance(command, str):
        try:
            words = shlex.split(command)
        except ValueError:  # an unclosed quote
            words = []
        if _SHELL_SYNTAX & set(words):
            hint = "put the pipe or redirection in a script and give ['./script', ...]"
        else:
            hint = f"give {brief(words)}" if words else "give one item per argument"
        raise UserError(f"spec: runner 'command' must be a list of arguments, not the text {brief(command)} "
                        f"(no shell runs it): {hint}")
    if not isinstance(command, list):
        raise UserError(f"spec: runner 'command' must be a list of arguments, not {brief(command)}")
    if not command:
        raise UserError("spec: runner 'command' must be a non-empty list of arguments")
    bad = [item for item in command if isinstance(item, bool) or not isinstance(item, (str, int, float))]
    if bad:  # a YAML ``yes`` is a boolean: quote it
        raise UserError(f"spec: runner 'command' argument {brief(bad[0])} is not text or a number")


def check_plain(value: Any, where: str) -> None:
    """A spec is stored as JSON: text, numbers, booleans, null, lists, and mappings with text keys. TOML
    dates and YAML ``!!binary`` or ``!!set`` values would pass parsing and break saving, so they stop here."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise UserError(f"{where}: key {brief(key)} must be text")
            check_plain(item, f"{where}.{key}" if key.isidentifier() and len(key) <= 40 else f"{where}[{brief(key)}]")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            check_plain(item, f"{where}[{i}]")
    elif not isinstance(value, _PLAIN):
        raise UserError(f"{where}: {brief(value)} is not text, a number, a boolean or null")


def parse_spec(text: str, fmt: str, *, satisfiable: bool = False) -> StudySpec:
    """Parse spec text in ``fmt`` ("yaml" or "toml").

    ``satisfiable=True`` also refuses a spec whose constraints exclude every configuration (counted by
    enumeration, or by sampling a huge space): what creating a study wants, and :func:`load_spec` does.
    """
    if fmt not in FORMATS:
        raise UserError(f"spec format {brief(fmt)} must be 'yaml' or 'toml'")
    if len(text) > MAX_SPEC_BYTES or len(text.encode("utf-8", "replace")) > MAX_SPEC_BYTES:
        raise UserError(f"spec: {len(text):,} characters is more than a spec may hold ({MAX_SPEC_BYTES:,} bytes)")
    data = _parse_yaml(text) if fmt == "yaml" else _parse_toml(text)
    check_depth(data, "spec")
    spec = spec_from_data(data)
    if satisfiable:
        valid_count(spec.space)  # raises, naming the constraint, when nothing is valid
    return spec


def _parse_yaml(text: str) -> Any:
    try:
        return yaml.load(text, Loader=_SpecLoader)  # noqa: S506 - a SafeLoader, stricter still
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = " ".join(str(exc.problem or exc.context).split())
        raise UserError(f"spec: malformed YAML{where}: {problem}") from None
    except yaml.YAMLError as exc:
        raise UserError(f"spec: malformed YAML: {' '.join(str(exc).split())}") from None


def _parse_toml(text: str) -> Any:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"spec: malformed TOML: {' '.join(str(exc).split())}") from None
    except RecursionError:
        raise UserError("spec: malformed TOML: arrays or tables nested too deep to read") from None
    except ValueError:  # int('9' * 5000): past Python's integer conversion limit
        raise UserError("spec: malformed TOML: a number has more digits than Python converts (4,300)") from None


class _SpecLoader(yaml.SafeLoader):
    """``yaml.safe_load`` made strict for small hand-written files. It refuses aliases (``*a``: a few
    lines of nested aliases expand to gigabytes), nesting past MAX_DEPTH (the composer recurses), and a
    key given twice in one mapping (YAML keeps the last silently). Dates stay text (``2024-01-01`` is a
    level, not a ``datetime``), and an integer too long for Python to convert stays text too, so the
    field holding it refuses it by name."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()  # type: ignore[no-untyped-call]  # untyped in types-PyYAML
        if isinstance(event, yaml.AliasEvent):
            raise ComposerError(None, None, f"alias *{event.anchor} is not allowed in a spec; repeat the value",
                                event.start_mark)  # type: ignore[arg-type]  # stubs: C-loader mark
        if not isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            return super().compose_node(parent, index)
        if self._depth >= MAX_DEPTH:
            raise ComposerError(None, None, f"lists or mappings nested more than {MAX_DEPTH} deep",
                                event.start_mark)  # type: ignore[arg-type]
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: set[Hashable] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, Hashable) and key in seen:
                raise ConstructorError("while reading a mapping", node.start_mark,
                                       f"key {brief(key)} appears twice", key_node.start_mark)
            if isinstance(key, Hashable):
                seen.add(key)
        return super().construct_mapping(node, deep)

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int | str:  # type: ignore[override]  # text on purpose
        try:
            return super().construct_yaml_int(node)
        except ValueError:  # more digits than int() converts
            return self.construct_scalar(node)


_SpecLoader.add_constructor("tag:yaml.org,2002:int", _SpecLoader.construct_yaml_int)
_SpecLoader.add_constructor("tag:yaml.org,2002:timestamp", _SpecLoader.construct_yaml_str)  # type: ignore[type-var]


def load_spec(path: str | Path) -> StudySpec:
    """Read a spec file; the format follows the extension (.yaml, .yml, .toml).

    This is how ``tunelab study create`` reads a spec, so a spec whose constraints exclude every
    configuration is refused here, before a study exists.
    """
    path, label = Path(path), source_name(path)
    fmt = _EXTENSIONS.get(path.suffix.lower())
    if fmt is None:
        raise UserError(f"spec {label}: extension {brief(path.suffix or '(none)')} is not .yaml, .yml or .toml")
    try:
        with open(path, "rb") as handle:  # at most one byte past the limit: /dev/zero never ends
            raw = handle.read(MAX_SPEC_BYTES + 1)
    except FileNotFoundError:
        raise UserError(f"spec {label}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"spec {label}: is a folder, not a file") from None
    if len(raw) > MAX_SPEC_BYTES:
        raise UserError(f"spec {label}: more than {MAX_SPEC_BYTES:,} bytes, the most a spec may hold")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"spec {label}: not UTF-8 text (byte {exc.start})") from None
    try:
        return parse_spec(text, fmt, satisfiable=True)
    except UserError as exc:
        raise UserError(f"{label}: {exc}") from None


class _Dumper(yaml.SafeDumper):
    """``yaml.safe_dump``, except that text holding a line break YAML folds when it is unquoted or
    single-quoted (NEL, LS, PS) is written double-quoted, escaped, so it reads back unchanged."""


def _represent_str(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    style = '"' if any(ch in text for ch in "\x85\u2028\u2029") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_Dumper.add_representer(str, _represent_str)


def dump_yaml(data: Any, **options: Any) -> str:
    """YAML text that ``yaml.safe_load`` reads back to ``data``, Unicode kept readable."""
    return str(yaml.dump(data, Dumper=_Dumper, allow_unicode=True, **options))


def dump_spec(spec: StudySpec, fmt: str = "yaml") -> str:
    """Spec text that :func:`parse_spec` reads back to an equal spec."""
    data = spec.to_dict()
    if fmt == "yaml":
        return dump_yaml(data, sort_keys=False, default_flow_style=None, width=100)
    if fmt == "toml":
        return _toml(data)
    raise UserError(f"spec format {brief(fmt)} must be 'yaml' or 'toml'")


def _toml(data: Mapping[str, Any]) -> str:
    """TOML text (tomli-w); the factors come last, as an array of tables, so the file reads top-down."""
    import tomli_w

    ordered = {key: value for key, value in data.items() if key != "factors"} | {"factors": data["factors"]}
    try:
        return tomli_w.dumps(ordered)
    except TypeError as exc:  # a value TOML has no form for (None, a set...)
        raise UserError(f"spec: {str(exc).splitlines()[0]}; TOML cannot represent it") from None


# -- templates a person can start from in the dashboard ---------------------------------------------
_TOY_LEVELS = "[-1.0, -0.8, -0.6, -0.4, -0.2, 0.0, 0.2, 0.4, 0.6, 0.8, 1.0]"

TEMPLATES: dict[str, str] = {
    "Paper toy problem (8 factors)": """\
# The tutorial problem of the DLMT paper (dlmt.md section 3): eight factors on 11 levels each,
# y = -1.5 x1 + 1.3 x3 + 3.1 x5 - 1.4 x7 + 1.35 x8^2 + 1.6 x1 x3 + noise; x2, x4, x6 are inert.
name: Paper toy problem
description: DLMT paper toy function, 8 factors on 11 levels
objective: y
direction: minimize
runner: {kind: synthetic, name: toy}
factors:
"""
    + "".join(f"  - {{name: x{i}, kind: ordinal, levels: {_TOY_LEVELS}}}\n" for i in range(1, 9))
    + "constraints: []\n",
    "GPU kernel (tile sizes, constraints)": """\
# A Laplacian-like GPU kernel (BOAST, as in the CCGrid'19 paper): work split, vector width,
# thread-block shape. Validity constraints from the kernel-size checker.
name: GPU kernel tiles
description: Laplacian-like GPU kernel with tile sizes and block shape
objective: time_per_pixel
direction: minimize
runner: {kind: table}
factors:
  - {name: elements_number, kind: ordinal, levels: [1, 2, 3, 4, 5, 6, 8, 9, 10, 12, 15, 16, 18, 20, 24]}
  - {name: y_component_number, kind: integer, low: 1, high: 6}
  - {name: vector_length, kind: ordinal, powers_of_two: [1, 16]}
  - {name: temporary_size, kind: ordinal, levels: [2, 4]}
  - {name: load_overlap, kind: boolean, levels: [false, true]}
  - {name: threads_number, kind: ordinal, powers_of_two: [32, 1024]}
  - {name: lws_y, kind: ordinal, powers_of_two: [1, 1024]}
constraints:
  - lws_y <= threads_number
  - elements_number % y_component_number == 0
  - elements_number / y_component_number <= 4
""",
    "CPU loop nest (tiles, unroll, flags)": """\
# A small SPAPT-like loop nest compiled and timed by a command. {name} in the command's arguments is
# replaced by the factor's value for each configuration (no shell runs it); the metric regex reads the
# measured time from what the command prints, e.g. "time: 0.0123".
name: CPU loop nest
description: Tiled, unrolled loop nest with compiler flags (SPAPT-like)
objective: time
direction: minimize
runner:
  kind: command
  command: ["./measure.sh", "--tile-i={T1_I}", "--tile-j={T1_J}", "--unroll-i={U_I}", "--unroll-j={U_J}",
            "--scalar-replacement={SCR}", "--vectorize={VEC}", "--opt={OPT}"]
  metric: {regex: "time: *([0-9.eE+-]+)"}
  timeout: 1200
factors:
  - {name: T1_I, kind: ordinal, powers_of_two: [1, 256]}
  - {name: T1_J, kind: ordinal, powers_of_two: [1, 256]}
  - {name: U_I, kind: integer, low: 1, high: 8}
  - {name: U_J, kind: integer, low: 1, high: 8}
  - {name: SCR, kind: boolean}
  - {name: VEC, kind: boolean}
  - {name: OPT, kind: categorical, levels: ["-O2", "-O3", "-Ofast"]}
constraints:
  - U_I == 1 or U_J == 1
  - U_I * U_J <= 8
""",
    "Triton matmul (CUDA GPU)": """\
# A Triton fp16 matrix multiply timed with CUDA events on the first GPU; each configuration is
# checked against float64. Tiles that do not fit the GPU's shared memory fail and are recorded.
# The second constraint keeps the fp32 accumulator at <= 128 registers per thread: on an H100,
# 256x256 tiles on 2 warps spilled so badly that each took 145-200 s before timing out.
name: Triton matmul
description: Triton fp16 matmul block sizes, warps and pipeline stages on a CUDA GPU
objective: seconds
direction: minimize
runner: {kind: torch, op: triton_matmul, device: cuda, size: 4096, dtype: float16, inner: 10, repeats: 3}
factors:
  - {name: BLOCK_M, kind: ordinal, powers_of_two: [32, 256]}
  - {name: BLOCK_N, kind: ordinal, powers_of_two: [32, 256]}
  - {name: BLOCK_K, kind: ordinal, powers_of_two: [32, 128]}
  - {name: GROUP_M, kind: ordinal, levels: [1, 4, 8, 16]}
  - {name: num_warps, kind: ordinal, levels: [2, 4, 8]}
  - {name: num_stages, kind: integer, low: 2, high: 5}
constraints:
  - (BLOCK_M + BLOCK_N) * BLOCK_K * 2 * num_stages <= 229376
  - BLOCK_M * BLOCK_N <= 4096 * num_warps
""",
}
