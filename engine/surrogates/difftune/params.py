"""DiffTune's parameter table for an llvm-mca-like simulator, with its resource model explicit.

Per opcode key (see ``decode.Instruction.key``): ``uops``, ``latency`` (all defs; llvm-mca's
max over defs), ``read_advance`` (7 use slots) and ``port_cycles`` per processor resource. Port
cycles are *net*: a group's cycles exclude the cycles of units and smaller groups it contains,
i.e. what llvm-mca keeps after it subtracts sub-resource cycles, so a table can be written
directly without knowing TableGen's expansion. Globals: ``dispatch_width``, ``rob_size`` (DiffTune's
two), plus ``retire_width`` and ``scheduler_size`` (0 = unbounded): DiffTune does not learn them,
but llvm-mca's models set them (Zen 3 retires 8 per cycle, Zen 4 9; Intel's unified scheduler holds 54-60
µops, which stalls dispatch behind long-latency chains). Two more model fields are not learnt either:
``register_files`` (Zen's physical register files: 192/224 GPR, 160/192 vector registers; a write holds one
from dispatch to retire, and a partial GPR write waits for the register's previous producer) and
``eliminated_moves`` (keys of register moves renamed away at dispatch), ``buffers`` (a model's several scheduler
buffers: Zen's integer 96, FP 64, load 72 and store 64 entries; Sapphire Rapids' three) and ``queues`` (the
load/store unit's queues, Zen's 72 loads and 64 stores, held to retire). Tables written before these fields
existed read as having none (llvm-mca's behaviour for Intel models).

Every table is checked when it is made (:data:`BOUNDS`, :data:`MAX_RESOURCES`, :data:`MAX_ROWS`), whatever
made it. Files are hostile until proven otherwise: at most
:data:`~engine.io.table_import.MAX_IMPORT_BYTES` are read, JSON goes through
:func:`~engine.io.table_import.load_json`, a Parquet file's footer is checked before any data is decoded
(:func:`open_parquet`), and every refusal is one line naming the file, the row or line and the field.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from engine.errors import UserError, brief
from engine.io.table_import import MAX_IMPORT_BYTES, load_json, read_bytes, source_name

N_SLOTS = 7
#: Kinds of physical register file a table may bound (see ``ParamTable.register_files``).
REGISTER_FILE_KINDS = ("gpr", "vec")
#: Kinds of load/store queue a table may bound (see ``ParamTable.queues``).
QUEUE_KINDS = ("load", "store")
_GLOBALS = ("dispatch_width", "rob_size", "retire_width", "scheduler_size", "memory_forwarding", "forwarding_advance",
            "stack_forwarding_advance")
#: Inclusive bounds of each integer field ("units": a unit's count of identical pipes). Generous for real
#: CPUs: llvm-mca-19's x86 models reach 140 µops (Sapphire Rapids' ``xsave``), latencies of 126 and resource
#: cycles near 300 (microcoded instructions), dispatch widths of 6, ROBs of 512 and units of 4 pipes. And
#: small enough for the simulator: latency and busy resources are skipped over, but each µop past the
#: dispatch width costs a step of ~0.2-2 µs, so µops stay under 4x the largest real count (100 iterations
#: of 100 such instructions at width 1: seconds, not minutes); cycle counts stay far inside int64. Retire
#: width and scheduler size 0 mean unbounded.
BOUNDS: dict[str, tuple[int, int]] = {
    "dispatch_width": (1, 64), "rob_size": (1, 4096), "retire_width": (0, 64), "scheduler_size": (0, 4096),
    "memory_forwarding": (0, 1), "forwarding_advance": (-100, 10_000), "stack_forwarding_advance": (-100, 10_000),
    "units": (1, 16), "uops": (0, 500), "latency": (0, 10_000), "read_advance": (0, 10_000),
    "port_cycles": (0, 10_000), "register_files": (1, 4096), "buffers": (1, 4096), "queues": (1, 4096),
}
#: Most resources (units and groups): the simulator keeps an instruction's resources as bits of one int64.
MAX_RESOURCES = 63
#: Most rows a table may hold: LLVM 19's x86 back end knows about 20,000 opcodes.
MAX_ROWS = 100_000
#: Most row groups a Parquet file may hold (pandas writes one per million rows): its footer is read whole.
MAX_ROW_GROUPS = 1000
#: An opcode key: no whitespace (a key-value line splits there), no '.' (a key ends at its first one), and
#: not a ``#`` comment. A resource name may hold a '.'.
_KEY = re.compile(r"[^\s.#][^\s.]{0,199}")
_RESOURCE = re.compile(r"[^\s#]\S{0,199}")
#: The columns of :meth:`ParamTable.to_frame` before the resources (no resource may take their names).
_ROW_COLUMNS = ("key", "uops", "latency", *(f"ra{i}" for i in range(N_SLOTS)))


def _integer(value: Any, field_: str, index: object = None) -> int:
    """``value`` as an int within ``BOUNDS[field_]``, else one line naming the field (and the slot or
    resource ``index``): a bool, a fraction, NaN, infinity or text is not an integer; 4.0 is."""
    low, high = BOUNDS[field_]
    if type(value) is int and low <= value <= high:  # the common case, first: every sampled table passes here
        return value
    name = field_ if index is None else f"{field_}[{index!r}]"
    if isinstance(value, (float, np.floating)) and math.isfinite(value) and float(value).is_integer():
        value = int(value)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise UserError(f"{name}: expected an integer, got {brief(value)}")
    if not low <= value <= high:
        raise UserError(f"{name}: must be from {low:,} to {high:,}, got {brief(int(value))}")
    return int(value)


def _name(value: Any, what: str, pattern: re.Pattern[str] = _RESOURCE) -> str:
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise UserError(f"{what}: expected a name without spaces (at most 200 characters), got {brief(value)}")
    return value


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
        _integer(self.uops, "uops")
        _integer(self.latency, "latency")
        for slot, advance in enumerate(self.read_advance):
            _integer(advance, "read_advance", slot)
        for res, cycles in self.port_cycles:
            _integer(cycles, "port_cycles", res)
        if len({res for res, _ in self.port_cycles}) != len(self.port_cycles):
            raise UserError(f"port_cycles: a resource appears twice in {brief(self.port_cycles)}")


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
    #: 1: a load waits for the data of the store that feeds it, addresses taken as the measuring harness makes them
    #: (every register at one data page): the store-to-load forwarding the core does there, which llvm-mca (0, its
    #: ``-noalias`` default) ignores; llvm-mca's ordering of stores behind older loads and stores goes with it.
    #: Not learnt: a property of the truth, measured blocks' or llvm-mca's.
    memory_forwarding: int = 0
    #: With ``memory_forwarding``: cycles by which a load fed by a store delivers sooner than its row's latency
    #: (negative: later; a forward can take longer than a cache hit). Learnt: greedy search visits it when the start
    #: table forwards.
    forwarding_advance: int = 0
    #: The same for a load of a stack slot (``rsp`` or ``rbp`` plus a displacement): Zen's memory renaming hands
    #: such a value over at rename, about a cycle, where other forwards take longer.
    stack_forwarding_advance: int = 0
    #: Zero-idiom and dependency-breaking keys this model does *not* recognise: they wait for their inputs
    #: (llvm 19's Sapphire Rapids model knows none; znver3 still executes a legacy-SSE ``pxor``).
    dependent_idioms: tuple[str, ...] = ()
    provenance: dict[str, str] = field(default_factory=dict)
    #: Keys of register moves the model eliminates at register renaming (Zen: ``mov``/``movaps`` reg-reg): a
    #: reader of the destination depends on the source's producer, and the move itself executes at dispatch.
    eliminated_moves: tuple[str, ...] = ()
    #: Physical register files, ``(kind, registers)`` with kind ``gpr`` (general-purpose registers and EFLAGS)
    #: or ``vec`` (MMX and vector registers): each write takes one register of its file from dispatch to
    #: retire, and dispatch waits for a free one. A model with a ``gpr`` file renames whole registers, so an
    #: 8- or 16-bit write waits for the register's previous producer (llvm-mca's partial-write false dependency).
    register_files: tuple[tuple[str, int], ...] = ()
    #: Scheduler buffers of a model with several (Zen: integer 96, FP 64, load 72, store 64), ``(name, entries,
    #: member units)``: an instruction whose resources lie within a buffer's units holds one entry from dispatch
    #: to issue, and dispatch waits for a free one. (One unified buffer is ``scheduler_size``.)
    buffers: tuple[tuple[str, int, tuple[str, ...]], ...] = ()
    #: The load/store unit's queues, ``(kind, entries)`` with kind ``load`` or ``store``: a load (store) holds an
    #: entry from dispatch to retire (Zen: 72 and 64; Intel models declare none).
    queues: tuple[tuple[str, int], ...] = ()

    def __post_init__(self) -> None:
        for name in _GLOBALS:
            _integer(getattr(self, name), name)
        for unit, count in self.units:
            _integer(count, "units", _name(unit, "units"))
        unit_names = {u for u, _ in self.units}
        for g, members in self.groups:
            if not members or not set(members) <= unit_names:
                raise UserError(f"groups: {brief(_name(g, 'groups'))} has members {brief(members)} that are not units")
        names = self.resources
        if len(names) > MAX_RESOURCES:
            raise UserError(f"resources: {len(names):,} units and groups, more than the simulator's {MAX_RESOURCES}")
        if len(set(names)) != len(names) or set(names) & set(_ROW_COLUMNS):
            clash = next(n for n in names if names.count(n) > 1 or n in _ROW_COLUMNS)
            raise UserError(f"resources: {brief(clash)} names two resources or a row's column")
        if len(self.rows) > MAX_ROWS:
            raise UserError(f"rows: {len(self.rows):,} rows, more than a table may hold ({MAX_ROWS:,})")
        known = set(names)
        for key, row in self.rows.items():
            _name(key, "row", _KEY)
            for res, cycles in row.port_cycles:
                if res not in known:
                    raise UserError(f"row {brief(key)}: port_cycles uses {brief(res)}={brief(cycles)}, not a resource")
        for key in self.dependent_idioms:
            _name(key, "dependent_idioms", _KEY)
        for key in self.eliminated_moves:
            _name(key, "eliminated_moves", _KEY)
        _check_sizes(self.register_files, "register_files", REGISTER_FILE_KINDS)
        for name, size, members in self.buffers:
            _integer(size, "buffers", _name(name, "buffers"))
            if not members or not set(members) <= unit_names:
                raise UserError(f"buffers: {brief(name)} has members {brief(members)} that are not units")
        _check_sizes(self.queues, "queues", QUEUE_KINDS)
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in self.provenance.items()):
            raise UserError(f"provenance: expected text names and values, got {brief(self.provenance)}")

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
            "eliminated_moves": list(self.eliminated_moves),
            "register_files": [list(f) for f in self.register_files],
            "buffers": [[b, n, list(m)] for b, n, m in self.buffers],
            "queues": [list(q) for q in self.queues],
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


def simple_table(keys: Iterable[str], model: ParamTable | None = None) -> ParamTable:
    """The "simple parameters" baseline (Abel's DiffTune fork, uiCA's evaluation): dispatch width 4, ROB 100,
    every opcode 1 µop of latency 1, no ports, no ReadAdvance. With ``model``, its units and groups (no row uses
    them), so that a surrogate over that resource model can learn from it."""
    units, groups = (model.units, model.groups) if model is not None else ((), ())
    return ParamTable(dispatch_width=4, rob_size=100, units=units, groups=groups,
                      rows=dict.fromkeys(keys, OpParams(1, 1)), provenance={"source": "simple baseline"})


def _listed(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise UserError(f"{what}: expected a list, got {brief(value)}")
    return value


def _pairs(value: Any, what: str) -> list[tuple[str, Any]]:
    """``[[name, value], ...]``, each name checked."""
    pairs = []
    for item in _listed(value, what):
        if not isinstance(item, list) or len(item) != 2:
            raise UserError(f"{what}: expected [name, value] pairs, got {brief(item)}")
        pairs.append((_name(item[0], what), item[1]))
    return pairs


def _check_sizes(pairs: tuple[tuple[str, int], ...], what: str, kinds: tuple[str, ...]) -> None:
    """``(kind, size)`` pairs (register files, queues): each kind known and once, each size within its bounds."""
    for kind, size in pairs:
        if kind not in kinds:
            raise UserError(f"{what}: expected a kind of {', '.join(kinds)}, got {brief(kind)}")
        _integer(size, what, kind)
    if len({k for k, _ in pairs}) != len(pairs):
        raise UserError(f"{what}: a kind appears twice in {brief(pairs)}")


_HEADER_FIELDS = frozenset({*_GLOBALS, "units", "groups", "dependent_idioms", "eliminated_moves", "register_files",
                            "buffers", "queues", "provenance"})


def _buffer(item: Any) -> tuple[str, int, tuple[str, ...]]:
    """``[name, entries, [member units]]``, each part checked."""
    if not isinstance(item, list) or len(item) != 3:
        raise UserError(f"buffers: expected [name, entries, [units]] triples, got {brief(item)}")
    name = _name(item[0], "buffers")
    return name, _integer(item[1], "buffers", name), tuple(_name(m, f"buffers[{name!r}]")
                                                           for m in _listed(item[2], f"buffers[{name!r}]"))


def _from_header(head: Any, rows: dict[str, OpParams]) -> ParamTable:
    """The table :meth:`ParamTable.header` describes, with ``rows``; every field checked for its type."""
    if not isinstance(head, dict):
        raise UserError(f"header: expected an object, got {brief(head)}")
    unknown = sorted(set(head) - _HEADER_FIELDS)
    if unknown:
        raise UserError(f"header: unknown field {brief(unknown[0])}")
    missing = [f for f in ("dispatch_width", "rob_size", "units", "groups") if f not in head]
    if missing:
        raise UserError(f"header: no {missing[0]!r}")
    provenance = head.get("provenance", {})
    if not isinstance(provenance, dict):
        raise UserError(f"provenance: expected an object, got {brief(provenance)}")
    return ParamTable(
        **{g: _integer(head.get(g, 0), g) for g in _GLOBALS},
        units=tuple((u, _integer(n, "units", u)) for u, n in _pairs(head["units"], "units")),
        groups=tuple((g, tuple(_name(m, f"groups[{g!r}]") for m in _listed(members, f"groups[{g!r}]")))
                     for g, members in _pairs(head["groups"], "groups")),
        dependent_idioms=tuple(_listed(head.get("dependent_idioms", []), "dependent_idioms")),
        eliminated_moves=tuple(_listed(head.get("eliminated_moves", []), "eliminated_moves")),
        register_files=tuple((k, _integer(n, "register_files", k))
                             for k, n in _pairs(head.get("register_files", []), "register_files")),
        buffers=tuple(_buffer(b) for b in _listed(head.get("buffers", []), "buffers")),
        queues=tuple((k, _integer(n, "queues", k)) for k, n in _pairs(head.get("queues", []), "queues")),
        rows=rows, provenance=provenance,
    )


def _row(key: str, uops: Any, latency: Any, advance: list[Any], ports: Iterable[tuple[str, Any]],
         model: ParamTable) -> OpParams:
    """One row from a file's values over ``model``'s resources (zero cycles dropped); a refusal names the row."""
    try:
        if len(advance) != N_SLOTS:
            raise UserError(f"read_advance: needs {N_SLOTS} values, got {brief(advance)}")
        cycles = {n: _integer(c, "port_cycles", n) for n, c in ports}
        unknown = sorted(set(cycles) - set(model.resources))
        if unknown:
            raise UserError(f"port_cycles: {brief(unknown[0])} is not a resource of the table")
        return OpParams(_integer(uops, "uops"), _integer(latency, "latency"),
                        tuple(_integer(v, "read_advance", i) for i, v in enumerate(advance)),
                        tuple(sorted((n, c) for n, c in cycles.items() if c)))
    except UserError as exc:
        raise UserError(f"row {brief(key)}: {exc}") from None


_ROW_FIELDS = ("uops", "latency", "read_advance", "port_cycles")


def _document_row(key: str, row: Any, model: ParamTable) -> OpParams:
    if not isinstance(row, dict) or set(row) != set(_ROW_FIELDS):
        raise UserError(f"row {brief(key)}: expected an object of {', '.join(_ROW_FIELDS)}, got {brief(row)}")
    advance, ports = row["read_advance"], row["port_cycles"]
    if not isinstance(advance, list) or not isinstance(ports, dict):
        raise UserError(f"row {brief(key)}: expected a read_advance list and a port_cycles object, got {brief(row)}")
    return _row(key, row["uops"], row["latency"], advance, ports.items(), model)


def from_document(data: Any, what: str = "parameter table") -> ParamTable:
    """The table :meth:`ParamTable.to_document` wrote; a malformed document is one line naming ``what`` (the
    file), the row and the field."""
    try:
        if not isinstance(data, dict) or not isinstance(data.get("rows"), dict):
            raise UserError(f"expected an object with the rows under 'rows', got {brief(data)}")
        model = _from_header({k: v for k, v in data.items() if k != "rows"}, {})
        return model.with_rows({key: _document_row(key, row, model) for key, row in data["rows"].items()})
    except UserError as exc:
        raise UserError(f"{what}: {exc}") from None


_HEADER = "# tunelab parameter table: "
#: A key-value line's field -> the table's field and whether it takes a ``.<slot or resource>`` suffix.
_LINE_FIELDS = {"NumMicroOps": ("uops", False), "WriteLatency": ("latency", False),
                "ReadAdvance": ("read_advance", True), "PortMap": ("port_cycles", True)}
_LINE_GLOBALS = {"DispatchWidth": "dispatch_width", "ReorderBufferSize": "rob_size"}
_INTEGER_TEXT = re.compile(r"-?[0-9]{1,30}")
_SLOTS = {str(i): i for i in range(N_SLOTS)}


def json_object(text: str | bytes, what: str) -> dict[str, Any]:
    """A JSON object (a header), else one line naming ``what``."""
    try:
        data = load_json(text.decode("utf-8", "replace") if isinstance(text, bytes) else text, what)
    except json.JSONDecodeError as exc:
        raise UserError(f"{what}: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise UserError(f"{what}: expected a JSON object, got {brief(data)}")
    return data


def from_key_values(text: str, what: str = "parameter file") -> ParamTable:
    """The table :meth:`ParamTable.to_key_values` wrote; a bad line is one error naming its number and text."""
    head: dict[str, Any] | None = None
    globals_: dict[str, int] = {}
    values: dict[str, dict[str, Any]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        where = f"{what}: line {number}"
        if line.startswith(_HEADER):
            if head is not None:
                raise UserError(f"{where}: a second header line")
            head = json_object(line.removeprefix(_HEADER), f"{where}: the header")
            continue
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 2:
            raise UserError(f"{where} is not 'key integer': {brief(line)}")
        name, _, rest = parts[0].partition(".")
        field_, _, sub = rest.partition(".")
        target: dict[str, Any]
        if not rest and name in _LINE_GLOBALS:
            target, entry, kind, index = globals_, name, _LINE_GLOBALS[name], None
        elif (field_ in _LINE_FIELDS and bool(sub) == _LINE_FIELDS[field_][1] and _KEY.fullmatch(name)
              and (field_ != "ReadAdvance" or sub in _SLOTS)):
            row = values.setdefault(name, {"ReadAdvance": {}, "PortMap": {}})
            target, entry = (row[field_], sub) if sub else (row, field_)
            kind, index = _LINE_FIELDS[field_][0], _SLOTS.get(sub, sub) if sub else None
        else:
            raise UserError(f"{where} has an unknown key: {brief(line)}")
        if entry in target:
            raise UserError(f"{where}: {brief(parts[0])} is given twice")
        try:
            target[entry] = _integer(int(parts[1]) if _INTEGER_TEXT.fullmatch(parts[1]) else parts[1], kind, index)
        except UserError as exc:
            raise UserError(f"{where}: {brief(parts[0])}: {exc}") from None
    if head is None:
        raise UserError(f"{what}: no '{_HEADER.strip()}' line (the resource model)")
    try:
        model = _from_header({**head, **{_LINE_GLOBALS[g]: globals_[g] for g in _LINE_GLOBALS}}, {})
        rows = {}
        for key, r in values.items():
            if len(r["ReadAdvance"]) != N_SLOTS:
                raise UserError(f"row {brief(key)}: needs ReadAdvance.0 to ReadAdvance.{N_SLOTS - 1}")
            advance = [r["ReadAdvance"][str(i)] for i in range(N_SLOTS)]
            rows[key] = _row(key, r["NumMicroOps"], r["WriteLatency"], advance, r["PortMap"].items(), model)
        return model.with_rows(rows)
    except KeyError as exc:
        raise UserError(f"{what}: missing key {brief(str(exc))}") from None
    except UserError as exc:
        raise UserError(f"{what}: {exc}") from None


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200] or type(exc).__name__


def check_file(path: Path, what: str) -> None:
    """Refuse what is not a regular file before opening it (a FIFO would block the reader forever)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise UserError(f"{what}: no such file") from None
    if not stat.S_ISREG(mode):
        raise UserError(f"{what}: not a regular file")


def _is_text(kind: pa.DataType) -> bool:
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind))


@contextmanager
def open_parquet(path: Path, what: str, max_rows: int, dictionary: Sequence[str] = (),
                 max_bytes: int = MAX_IMPORT_BYTES) -> Iterator[pq.ParquetFile]:
    """A Parquet file whose footer promises at most ``max_rows`` rows, ``max_bytes`` bytes on disk and
    ``max_bytes`` uncompressed, checked before any data is decoded (a 4 MB file of constant columns decodes to
    30 M rows), as :func:`~engine.io.table_import.read_bytes` bounds what it inflates. The ``dictionary``
    columns are read dictionary-encoded when they hold text: one long text repeated on every row stays one."""
    check_file(path, what)
    with open(path, "rb") as handle:
        info = os.fstat(handle.fileno())
        if info.st_size > max_bytes:
            raise UserError(f"{what}: {info.st_size:,} bytes, more than the {max_bytes:,} a Parquet file may hold here")
        try:
            file = pq.ParquetFile(handle)
            meta, schema = file.metadata, file.schema_arrow  # the footer, parsed and converted here
            text = sorted({f.name for f in schema if f.name in dictionary and _is_text(f.type)})
            file = pq.ParquetFile(handle, read_dictionary=text) if text else file
        except (pa.ArrowException, OSError) as exc:
            raise UserError(f"{what}: not a readable Parquet file ({_one_line(exc)})") from None
        if meta.num_row_groups > MAX_ROW_GROUPS:
            raise UserError(f"{what}: {meta.num_row_groups:,} row groups, more than {MAX_ROW_GROUPS:,}")
        if meta.num_rows > max_rows:
            raise UserError(f"{what}: {meta.num_rows:,} rows, more than the {max_rows:,} it may hold")
        unpacked = sum(meta.row_group(g).total_byte_size for g in range(meta.num_row_groups))
        if unpacked > max_bytes:
            raise UserError(f"{what}: {unpacked:,} bytes uncompressed, more than the {max_bytes:,} it may hold")
        yield file


def read_parquet(file: pq.ParquetFile, what: str, columns: Sequence[str] | None = None) -> pa.Table:
    """The data (``columns`` only, if given) of a file :func:`open_parquet` checked; damaged pages are one line
    naming ``what``."""
    try:
        return file.read(columns=columns)
    except (pa.ArrowException, OSError) as exc:
        raise UserError(f"{what}: unreadable Parquet data ({_one_line(exc)})") from None


def _values(column: pa.ChunkedArray) -> list[Any]:
    """A column's values; a dictionary-encoded one as references to its dictionary's values, never copies."""
    array = column.combine_chunks()
    if not pa.types.is_dictionary(array.type):
        return array.to_pylist()  # type: ignore[no-any-return]  # pyarrow is untyped
    words = array.dictionary.to_pylist()
    return [None if i is None else words[i] for i in array.indices.to_pylist()]


def _fits(column: str, kind: pa.DataType) -> bool:
    """Text (read dictionary-encoded) for the key, numbers elsewhere: fixed-width columns whose decoded size
    the footer's row count bounds."""
    if column == "key":
        return bool(pa.types.is_dictionary(kind) and _is_text(kind.value_type))
    return bool(pa.types.is_integer(kind) or pa.types.is_floating(kind))


def _parquet_model(schema: pa.Schema) -> ParamTable:
    """The resource model a table's Parquet schema holds (the header in pandas' ``attrs``), with the schema's
    columns checked against it: names, order and kinds."""
    if b"PANDAS_ATTRS" not in (schema.metadata or {}):
        raise UserError("no tunelab header in its metadata (a table ParamTable.save wrote has one)")
    attrs = json_object(schema.metadata[b"PANDAS_ATTRS"], "the metadata")
    if not isinstance(attrs.get("difftune"), str):
        raise UserError("the metadata: no 'difftune' header")
    model = _from_header(json_object(attrs["difftune"], "the header"), {})
    columns = [*_ROW_COLUMNS, *model.resources]
    if schema.names != columns:
        at = next(i for i, (a, b) in enumerate(zip([*schema.names, None], [*columns, None])) if a != b)
        found, wanted = ([*map(brief, names), "no more columns"][at] for names in (schema.names, columns))
        raise UserError(f"column {at + 1}: expected {wanted}, got {found}")
    for c in columns:
        if not _fits(c, schema.field(c).type):
            raise UserError(f"column {brief(c)}: {schema.field(c).type} is not {'text' if c == 'key' else 'a number'}")
    return model


def _from_parquet(path: Path, what: str) -> ParamTable:
    with open_parquet(path, what, MAX_ROWS, dictionary=("key",)) as file:
        try:
            model = _parquet_model(file.schema_arrow)
        except UserError as exc:
            raise UserError(f"{what}: {exc}") from None
        data = {c: _values(read_parquet(file, what, [c]).column(0)) for c in file.schema_arrow.names}
    rows: dict[str, OpParams] = {}
    try:
        for i, key in enumerate(data["key"]):
            if not isinstance(key, str) or key in rows:
                raise UserError(f"row {i + 1}: key {brief(key)} is {'repeated' if key in rows else 'not text'}")
            rows[key] = _row(key, data["uops"][i], data["latency"][i], [data[f"ra{s}"][i] for s in range(N_SLOTS)],
                             ((n, data[n][i]) for n in model.resources), model)
        return model.with_rows(rows)
    except UserError as exc:
        raise UserError(f"{what}: {exc}") from None


def load(path: str | Path) -> ParamTable:
    """Read a table written by ``ParamTable.save``; anything else is one line naming the file."""
    p = Path(path)
    what = f"parameter table {source_name(p)}"
    if p.suffix not in (".json", ".parquet", ".txt"):
        raise UserError(f"path: a table is read from .json, .parquet or .txt, got {brief(str(path))}")
    if p.suffix == ".parquet":
        return _from_parquet(p, what)
    check_file(p, what)
    data = read_bytes(p, what)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{what}: not UTF-8 text (byte {exc.start})") from None
    return from_key_values(text, what) if p.suffix == ".txt" else from_document(json_object(text, what), what)


def diff(a: ParamTable, b: ParamTable) -> pd.DataFrame:
    """Tidy list of changed fields: columns key ('*' for globals), field, a, b."""
    out: list[tuple[str, str, Any, Any]] = []
    for g in _GLOBALS:
        if getattr(a, g) != getattr(b, g):
            out.append(("*", g, getattr(a, g), getattr(b, g)))
    for part in ("units", "groups", "dependent_idioms", "eliminated_moves", "register_files", "buffers", "queues"):
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
