"""DiffTune's parameter table for an llvm-mca-like simulator, with its resource model explicit.

Per opcode key (see ``decode.Instruction.key``): ``uops``, ``latency`` (all defs; llvm-mca's
max over defs), ``read_advance`` (7 use slots) and ``port_cycles`` per processor resource. Port
cycles are *net*: a group's cycles exclude the cycles of units and smaller groups it contains,
i.e. what llvm-mca keeps after it subtracts sub-resource cycles, so a table can be written
directly without knowing TableGen's expansion. Globals: ``dispatch_width``, ``rob_size`` (DiffTune's
two), plus ``retire_width`` and ``scheduler_size`` (0 = unbounded): DiffTune does not learn them,
but llvm-mca's models set them (znver retires 8 per cycle; Intel's unified scheduler holds 54-60
µops, which stalls dispatch behind long-latency chains).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from engine.errors import UserError, brief

N_SLOTS = 7
_GLOBALS = ("dispatch_width", "rob_size", "retire_width", "scheduler_size")


@dataclass(frozen=True)
class OpParams:
    """One opcode's row."""

    uops: int
    latency: int
    read_advance: tuple[int, ...] = (0,) * N_SLOTS
    port_cycles: tuple[tuple[str, int], ...] = ()

    def __post_init__(self) -> None:
        if len(self.read_advance) != N_SLOTS:
            raise UserError(f"read_advance: needs {N_SLOTS} values, got {brief(self.read_advance)}")
        for name, value in (("uops", self.uops), ("latency", self.latency)):
            if value < 0:
                raise UserError(f"{name}: must be ≥ 0, got {brief(value)}")


@dataclass(frozen=True)
class ParamTable:
    """Globals, resource model (units with their unit counts, groups with member units) and rows."""

    dispatch_width: int
    rob_size: int
    units: tuple[tuple[str, int], ...]
    groups: tuple[tuple[str, tuple[str, ...]], ...]
    rows: dict[str, OpParams] = field(default_factory=dict)
    retire_width: int = 0
    scheduler_size: int = 0
    #: Zero-idiom and dependency-breaking keys this model does *not* recognise: they wait for their inputs
    #: (llvm 19's Sapphire Rapids model knows none; znver3 still executes a legacy-SSE ``pxor``).
    dependent_idioms: tuple[str, ...] = ()
    provenance: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.dispatch_width < 1:
            raise UserError(f"dispatch_width: must be ≥ 1, got {brief(self.dispatch_width)}")
        if self.rob_size < 1:
            raise UserError(f"rob_size: must be ≥ 1, got {brief(self.rob_size)}")
        unit_names = {u for u, _ in self.units}
        for g, members in self.groups:
            if not members or not set(members) <= unit_names:
                raise UserError(f"groups: {brief(g)} has members {brief(members)} that are not units")
        known = unit_names | {g for g, _ in self.groups}
        for key, row in self.rows.items():
            for res, cycles in row.port_cycles:
                if res not in known or cycles < 0:
                    raise UserError(f"port_cycles: {brief(key)} uses {brief(res)}={brief(cycles)}")

    @property
    def resources(self) -> list[str]:
        """Units then groups, in llvm-mca's mask order (units first, each kind alphabetical)."""
        return [u for u, _ in self.units] + [g for g, _ in self.groups]

    def with_rows(self, rows: dict[str, OpParams]) -> ParamTable:
        """A copy with other rows (e.g. a sampled or learnt table over the same resource model)."""
        return replace(self, rows=dict(rows))

    # -- serialisation -------------------------------------------------------------------------

    def header(self) -> dict[str, Any]:
        """Everything but the rows, as JSON-ready data."""
        return {
            **{g: getattr(self, g) for g in _GLOBALS},
            "units": [list(u) for u in self.units],
            "groups": [[g, list(m)] for g, m in self.groups],
            "dependent_idioms": list(self.dependent_idioms),
            "provenance": dict(self.provenance),
        }

    def to_frame(self) -> pd.DataFrame:
        """One row per key: uops, latency, ra0..ra6 and one column per resource (0 when unused)."""
        names = self.resources
        records = []
        for key, row in sorted(self.rows.items()):
            ports = dict(row.port_cycles)
            records.append({"key": key, "uops": row.uops, "latency": row.latency,
                            **{f"ra{i}": v for i, v in enumerate(row.read_advance)},
                            **{n: ports.get(n, 0) for n in names}})
        columns = ["key", "uops", "latency", *(f"ra{i}" for i in range(N_SLOTS)), *names]
        return pd.DataFrame.from_records(records, columns=columns)

    def to_document(self) -> dict[str, Any]:
        """The whole table as JSON-ready data (what ``.json`` files and the store keep)."""
        rows = {k: {"uops": r.uops, "latency": r.latency, "read_advance": list(r.read_advance),
                    "port_cycles": dict(r.port_cycles)} for k, r in sorted(self.rows.items())}
        return {**self.header(), "rows": rows}

    def to_key_values(self) -> str:
        """DiffTune's parameter file: ``key value`` lines, every key a simulator looks up (zeros included).

        Keys: ``DispatchWidth``, ``ReorderBufferSize``, then per opcode ``OP.NumMicroOps``, ``OP.WriteLatency``,
        ``OP.ReadAdvance.<slot>`` and ``OP.PortMap.<resource>``. The resource model and what DiffTune does not
        learn ride along as ``#`` lines, so :func:`from_key_values` rebuilds the whole table."""
        lines = [f"# tunelab parameter table: {json.dumps(self.header(), sort_keys=True)}",
                 f"DispatchWidth {self.dispatch_width}", f"ReorderBufferSize {self.rob_size}"]
        for key, row in sorted(self.rows.items()):
            ports = dict(row.port_cycles)
            lines += [f"{key}.NumMicroOps {row.uops}", f"{key}.WriteLatency {row.latency}",
                      *(f"{key}.ReadAdvance.{i} {v}" for i, v in enumerate(row.read_advance)),
                      *(f"{key}.PortMap.{r} {ports.get(r, 0)}" for r in self.resources)]
        return "\n".join(lines) + "\n"

    def save(self, path: str | Path) -> None:
        """JSON for ``.json``, Parquet (header in the file's metadata) for ``.parquet``, DiffTune's ``key value``
        lines for ``.txt``."""
        p = Path(path)
        if p.suffix == ".json":
            p.write_text(json.dumps(self.to_document(), indent=1))
        elif p.suffix == ".parquet":
            frame = self.to_frame()
            frame.attrs["difftune"] = json.dumps(self.header())
            frame.to_parquet(p, index=False)
        elif p.suffix == ".txt":
            p.write_text(self.to_key_values())
        else:
            raise UserError(f"path: a table is saved as .json, .parquet or .txt, got {brief(str(path))}")


def simple_table(keys: Iterable[str]) -> ParamTable:
    """The "simple parameters" baseline (Abel's DiffTune fork, uiCA's evaluation): dispatch width 4, ROB 100,
    every opcode 1 µop of latency 1, no ports, no ReadAdvance."""
    return ParamTable(dispatch_width=4, rob_size=100, units=(), groups=(), rows=dict.fromkeys(keys, OpParams(1, 1)),
                      provenance={"source": "simple baseline"})


def _from_header(head: dict[str, Any], rows: dict[str, OpParams]) -> ParamTable:
    return ParamTable(
        dispatch_width=int(head["dispatch_width"]), rob_size=int(head["rob_size"]),
        retire_width=int(head.get("retire_width", 0)), scheduler_size=int(head.get("scheduler_size", 0)),
        units=tuple((str(u), int(n)) for u, n in head["units"]),
        groups=tuple((str(g), tuple(m)) for g, m in head["groups"]),
        dependent_idioms=tuple(str(k) for k in head.get("dependent_idioms", ())),
        rows=rows, provenance={str(k): str(v) for k, v in head.get("provenance", {}).items()},
    )


def from_document(data: dict[str, Any]) -> ParamTable:
    """The table :meth:`ParamTable.to_document` wrote; a malformed document is one line naming what is wrong."""
    try:
        rows = {str(k): OpParams(int(r["uops"]), int(r["latency"]), tuple(int(x) for x in r["read_advance"]),
                                 tuple(sorted((str(n), int(c)) for n, c in r["port_cycles"].items())))
                for k, r in data["rows"].items()}
        return _from_header(data, rows)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise UserError(f"parameter table: malformed document ({type(exc).__name__}: {brief(str(exc))})") from None


_HEADER = "# tunelab parameter table: "
_ROW_FIELDS = {"NumMicroOps", "WriteLatency", "ReadAdvance", "PortMap"}


def from_key_values(text: str) -> ParamTable:
    """The table :meth:`ParamTable.to_key_values` wrote; a bad line is one error naming its number and text."""
    head: dict[str, Any] | None = None
    values: dict[str, dict[str, Any]] = {}
    globals_: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith(_HEADER):
            head = json.loads(line.removeprefix(_HEADER))
            continue
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split()
        name, _, rest = parts[0].partition(".") if len(parts) == 2 else ("", "", "")
        field_, _, sub = rest.partition(".")
        try:
            value = int(parts[1])
        except (IndexError, ValueError):
            raise UserError(f"parameter file: line {number} is not 'key integer': {brief(line)}") from None
        if not rest and name in ("DispatchWidth", "ReorderBufferSize"):
            globals_[name] = value
        elif field_ in _ROW_FIELDS and (sub or field_ in ("NumMicroOps", "WriteLatency")):
            row = values.setdefault(name, {"ReadAdvance": {}, "PortMap": {}})
            if sub:
                row[field_][sub] = value
            else:
                row[field_] = value
        else:
            raise UserError(f"parameter file: line {number} has an unknown key: {brief(line)}")
    if head is None:
        raise UserError(f"parameter file: no '{_HEADER.strip()}' line (the resource model)")
    try:
        rows = {k: OpParams(int(r["NumMicroOps"]), int(r["WriteLatency"]),
                            tuple(int(r["ReadAdvance"][str(i)]) for i in range(N_SLOTS)),
                            tuple(sorted((n, c) for n, c in r["PortMap"].items() if c)))
                for k, r in values.items()}
        head = {**head, "dispatch_width": globals_["DispatchWidth"], "rob_size": globals_["ReorderBufferSize"]}
    except KeyError as exc:
        raise UserError(f"parameter file: missing key {brief(str(exc))}") from None
    return _from_header(head, rows)


def load(path: str | Path) -> ParamTable:
    """Read a table written by ``ParamTable.save``."""
    p = Path(path)
    if p.suffix == ".txt":
        return from_key_values(p.read_text())
    if p.suffix == ".json":
        return from_document(json.loads(p.read_text()))
    if p.suffix == ".parquet":
        frame = pd.read_parquet(p)
        head = json.loads(frame.attrs["difftune"])
        table = _from_header(head, {})
        names = table.resources
        rows = {str(r["key"]): OpParams(int(r["uops"]), int(r["latency"]),
                                        tuple(int(r[f"ra{i}"]) for i in range(N_SLOTS)),
                                        tuple(sorted((n, int(r[n])) for n in names if int(r[n]))))
                for r in frame.to_dict("records")}
        return table.with_rows(rows)
    raise UserError(f"path: a table is read from .json, .parquet or .txt, got {brief(str(path))}")


def diff(a: ParamTable, b: ParamTable) -> pd.DataFrame:
    """Tidy list of changed fields: columns key ('*' for globals), field, a, b."""
    out: list[tuple[str, str, Any, Any]] = []
    for g in _GLOBALS:
        if getattr(a, g) != getattr(b, g):
            out.append(("*", g, getattr(a, g), getattr(b, g)))
    for part in ("units", "groups", "dependent_idioms"):
        if getattr(a, part) != getattr(b, part):
            out.append(("*", part, getattr(a, part), getattr(b, part)))
    fa, fb = a.to_frame().set_index("key"), b.to_frame().set_index("key")
    for key in sorted(set(fa.index) | set(fb.index)):
        ra = fa.loc[key] if key in fa.index else None
        rb = fb.loc[key] if key in fb.index else None
        for col in [*fa.columns, *(c for c in fb.columns if c not in fa.columns)]:
            va = None if ra is None or col not in ra else int(ra[col])
            vb = None if rb is None or col not in rb else int(rb[col])
            if va != vb and not ({va, vb} <= {None, 0} and (ra is not None and rb is not None)):
                out.append((key, col, va, vb))
    return pd.DataFrame(out, columns=["key", "field", "a", "b"])
