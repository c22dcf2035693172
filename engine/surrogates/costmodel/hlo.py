"""Optimised XLA HLO text (JAX's ``compiled.as_text()``) → the node, edge and feature arrays of a cost-model graph
(costmodel.md §4.2), so that programs compiled and timed locally line up with the converted real TPU samples.

What is read (the format of JAX 0.10.2, older prints accepted where noted):
* the ``HloModule …`` line, then metadata tables (``FileNames``, ``FunctionNames``, ``FileLocations``,
  ``StackFrames``: a header line, rows up to a blank line), which are skipped;
* computations ``[ENTRY ]%name (params) -> type {`` … ``}``, one instruction a line:
  ``[ROOT ]%name = <type> opcode(operands), attr=value, …``, the type an array ``f32[2,3]{1,0}`` or a
  parenthesised tuple; operands are ``%names`` (older XLA prints a type before each).

Rules, matching TpuGraphs and the converted samples:
* every instruction of every computation is a node; the entry computation comes first, the others in text
  order, and ``node_splits`` holds the first node of each;
* an edge ``[u, v]`` for each operand v of u (*u consumes v*), and one from u to the ROOT of every computation u
  calls (``calls=``, ``to_apply=``, ``body=``, ``condition=``, ``branch_computations={…}`` and kin);
* node features: the 24 columns of the converted samples' ``node_feat_names``, in their order, then window and
  slice columns (:data:`EXTRA_FEATURE_NAMES`). Sizes stay raw: the models log-transform them.

Pure Python: the text comes from JAX, but reading it needs no JAX. Malformed text raises a one-line
:class:`UserError` naming the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from engine.errors import UserError, brief

#: XLA's ``PrimitiveType`` enum numbers (xla_data.proto); an unknown type name is 0 (PRIMITIVE_TYPE_INVALID).
ELEMENT_TYPES = {"pred": 1, "s8": 2, "s16": 3, "s32": 4, "s64": 5, "u8": 6, "u16": 7, "u32": 8, "u64": 9, "f16": 10, "f32": 11,
                 "f64": 12, "tuple": 13, "opaque": 14, "c64": 15, "bf16": 16, "token": 17, "c128": 18, "f8e5m2": 19,
                 "f8e4m3fn": 20, "s4": 21, "u4": 22}
TUPLE = ELEMENT_TYPES["tuple"]
RANK = 6
_SIX = range(RANK)
#: The converted real TPU samples' 24 node features, same names and order.
BASE_FEATURE_NAMES = ("is_root", "element_type", *(f"dim_{i}" for i in _SIX), "dim_sum", "dim_product", "tuple_size",
                      "parameter_number", *(f"dimensions_{i}" for i in _SIX), *(f"minor_to_major_{i}" for i in _SIX))
#: Appended after them (TpuGraphs' 140 features have these too): window size and stride of reduce-window and
#: convolution; start and size of slice / dynamic-slice. 0 where the op has none.
EXTRA_FEATURE_NAMES = tuple(f"{kind}_{i}" for kind in ("window_size", "window_stride", "slice_start", "slice_size") for i in _SIX)
NODE_FEATURE_NAMES = BASE_FEATURE_NAMES + EXTRA_FEATURE_NAMES
#: Attributes naming called computations.
CALL_KEYS = ("calls", "to_apply", "body", "condition", "branch_computations", "true_computation", "false_computation",
             "called_computations", "select", "scatter")
#: The metadata tables JAX writes between the module line and the first computation.
TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
#: Entry instructions that launch no work: the rest count as kernels for the roofline's per-kernel cost.
NOT_KERNELS = frozenset({"parameter", "constant", "get-tuple-element", "tuple", "bitcast", "after-all", "partition-id", "replica-id"})
#: Opcodes whose parentheses hold a literal, not operands.
LITERAL_OPCODES = frozenset({"constant", "parameter"})

_COMPUTATION = re.compile(r"^(?P<entry>ENTRY\s+)?%?(?P<name>[^\s(]+)\s*\(.*\)\s*->\s*.*\{$")
_INSTRUCTION = re.compile(r"^(?P<root>ROOT\s+)?%?(?P<name>[^\s=]+)\s*=\s*")
_ARRAY = re.compile(r"(?P<type>[a-z][a-z0-9]*)\[(?P<dims>[^\]]*)\]")
_OPCODE = re.compile(r"\s*(?P<opcode>[a-z][a-z0-9\-]*)\(")
_COMMENT = re.compile(r"/\*.*?\*/")
_CLOSING = {"(": ")", "{": "}", "[": "]"}


@dataclass(frozen=True)
class Shape:
    """An instruction's result type: an array's element type, dims and layout, or a tuple of ``tuple_size``."""

    element_type: int
    dims: tuple[int, ...] = ()
    minor_to_major: tuple[int, ...] = ()
    tuple_size: int = 0


@dataclass(frozen=True)
class Instruction:
    """One HLO instruction as the graph needs it; ``line`` is its 1-based line in the text (for messages)."""

    name: str
    opcode: str
    shape: Shape
    operands: tuple[str, ...]
    callees: tuple[str, ...]
    attributes: dict[str, str]
    is_root: bool
    parameter_number: int
    line: int


@dataclass(frozen=True)
class Computation:
    """One computation's instructions in text order (operands before users); ``line`` is its header's line."""

    name: str
    entry: bool
    instructions: list[Instruction] = field(default_factory=list)
    line: int = 0

    def root(self) -> Instruction:
        """The ROOT instruction: a caller's edge goes to it."""
        roots = [ins for ins in self.instructions if ins.is_root]
        if len(roots) != 1:
            raise UserError(f"HLO text line {self.line}: computation %{self.name} has {len(roots)} ROOT instructions, expected 1")
        return roots[0]


@dataclass(frozen=True)
class HloGraph:
    """A module's graph in the Tunelab schema's terms (see the module docstring); ``names`` are the instruction
    names, ``computations`` the computation names in node order, ``kernels`` the entry's work-launching
    instructions (a static count: a while body's kernels count once)."""

    opcodes: np.ndarray
    node_feat: np.ndarray
    edges: np.ndarray
    node_splits: np.ndarray
    names: tuple[str, ...]
    computations: tuple[str, ...]
    kernels: int
    feat_names: tuple[str, ...] = NODE_FEATURE_NAMES


def hlo_graph(text: str) -> HloGraph:
    """The graph of an optimised HLO module's text: entry computation first, every instruction a node."""
    computations = parse_module(text)
    ordered = sorted(computations.values(), key=lambda comp: not comp.entry)
    ids = {(comp.name, ins.name): i for i, (comp, ins) in enumerate((c, ins) for c in ordered for ins in c.instructions)}
    roots = {comp.name: ids[(comp.name, comp.root().name)] for comp in ordered}
    edges = [(ids[(comp.name, ins.name)], ids[(comp.name, operand)]) for comp in ordered for ins in comp.instructions
             for operand in ins.operands]
    edges += [(ids[(comp.name, ins.name)], roots[callee]) for comp in ordered for ins in comp.instructions for callee in ins.callees]
    instructions = [ins for comp in ordered for ins in comp.instructions]
    starts = np.cumsum([0] + [len(comp.instructions) for comp in ordered[:-1]])
    return HloGraph(
        opcodes=np.array([ins.opcode for ins in instructions], dtype=str),
        node_feat=np.array([node_features(ins) for ins in instructions], dtype=np.float32).reshape(len(instructions), len(NODE_FEATURE_NAMES)),
        edges=np.array(edges, dtype=np.int64).reshape(-1, 2),
        node_splits=starts.astype(np.int64),
        names=tuple(ins.name for ins in instructions),
        computations=tuple(comp.name for comp in ordered),
        kernels=sum(ins.opcode not in NOT_KERNELS for ins in ordered[0].instructions),
    )


def parse_module(text: str) -> dict[str, Computation]:
    """Computations by name, in text order, with every operand and callee checked to exist."""
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None or not lines[first].startswith("HloModule"):
        raise UserError(f"HLO text line {1 if first is None else first + 1}: expected 'HloModule …', the first line of XLA's HLO text")
    computations: dict[str, Computation] = {}
    current: Computation | None = None
    skipping = False
    for number, raw in enumerate(lines[first + 1:], start=first + 2):
        line = raw.strip()
        if skipping or (current is None and line in TABLES):
            skipping = bool(line)
        elif current is not None:
            current = _inside(current, line, number, computations)
        elif line:
            current = _computation(line, number, computations)
    if current is not None:
        raise UserError(f"HLO text line {current.line}: computation %{current.name} is not closed by '}}'")
    _check(computations)
    return computations


def _inside(current: Computation, line: str, number: int, computations: dict[str, Computation]) -> Computation | None:
    """One line of a computation's body: an instruction, the closing brace (returns None) or a blank line."""
    if line == "}":
        computations[current.name] = current
        return None
    if line:
        current.instructions.append(parse_instruction(line, number))
    return current


def _computation(line: str, number: int, computations: dict[str, Computation]) -> Computation:
    match = _COMPUTATION.match(line)
    if match is None:
        raise UserError(f"HLO text line {number}: expected a computation '%name (params) -> type {{', got {brief(line, 60)}")
    if match["name"] in computations:
        raise UserError(f"HLO text line {number}: computation %{match['name']} is defined twice")
    return Computation(match["name"], bool(match["entry"]), line=number)


def _check(computations: dict[str, Computation]) -> None:
    """One entry computation; every operand defined in its computation, every callee a computation."""
    entries = [comp.name for comp in computations.values() if comp.entry]
    if len(entries) != 1:
        raise UserError(f"HLO text: {len(entries)} ENTRY computations, expected exactly 1")
    for comp in computations.values():
        comp.root()
        defined = {ins.name for ins in comp.instructions}
        if len(defined) != len(comp.instructions):
            raise UserError(f"HLO text line {comp.line}: computation %{comp.name} defines an instruction name twice")
        for ins in comp.instructions:
            missing = [name for name in ins.operands if name not in defined]
            if missing:
                raise UserError(f"HLO text line {ins.line}: operand %{missing[0]} of %{ins.name} is not defined in %{comp.name}")
            unknown = [name for name in ins.callees if name not in computations]
            if unknown:
                raise UserError(f"HLO text line {ins.line}: %{ins.name} calls %{unknown[0]}, which is not a computation")


def parse_instruction(line: str, number: int) -> Instruction:
    """``[ROOT ]%name = <type> opcode(operands), attrs…`` → :class:`Instruction`. Comments such as the
    ``/*index=5*/`` XLA puts in long operand lists and tuple types are dropped first."""
    line = _COMMENT.sub("", line)
    head = _INSTRUCTION.match(line)
    if head is None:
        raise UserError(f"HLO text line {number}: expected an instruction '%name = type opcode(…)', got {brief(line, 60)}")
    rest = line[head.end():]
    shape, width = _shape(rest, number)
    found = _OPCODE.match(rest, width)
    if found is None:
        raise UserError(f"HLO text line {number}: no 'opcode(' after the type of %{head['name']}")
    close = _matching(rest, found.end() - 1, number)
    inside = rest[found.end():close]
    attributes = _attributes(rest[close + 1:], number)
    opcode = found["opcode"]
    return Instruction(
        name=head["name"],
        opcode=opcode,
        shape=shape,
        operands=() if opcode in LITERAL_OPCODES else tuple(_operand(piece, number) for piece in split_top(inside) if piece),
        callees=tuple(name for key in CALL_KEYS if key in attributes for name in _names(attributes[key])),
        attributes=attributes,
        is_root=bool(head["root"]),
        parameter_number=_integer(inside, number) if opcode == "parameter" else -1,
        line=number,
    )


def _shape(text: str, number: int) -> tuple[Shape, int]:
    """The type at the start of ``text`` and where it ends: a tuple ``(…)`` or an array ``f32[2,3]{1,0}``."""
    if text.startswith("("):
        end = _matching(text, 0, number)
        return Shape(TUPLE, tuple_size=len([part for part in split_top(text[1:end]) if part])), end + 1
    array = _ARRAY.match(text)
    if array is None:
        raise UserError(f"HLO text line {number}: expected a type such as f32[2,3]{{1,0}} or a (tuple), got {brief(text, 40)}")
    end = array.end()
    layout: tuple[int, ...] = ()
    if text.startswith("{", end):
        close = _matching(text, end, number)
        layout = _integers(text[end + 1:close].split(":")[0], number)
        end = close + 1
    dims = tuple(_integer(dim.removeprefix("<="), number) for dim in split_top(array["dims"]) if dim)
    return Shape(ELEMENT_TYPES.get(array["type"], 0), dims, layout), end


def _operand(piece: str, number: int) -> str:
    """An operand's name: the last word of ``%a`` or ``f32[2]{0} %a`` (older XLA prints the type too)."""
    word = piece.split()[-1]
    if not word.startswith("%"):
        raise UserError(f"HLO text line {number}: operand {brief(piece, 40)} is not a %name")
    return word[1:]


def _names(value: str) -> list[str]:
    """Computation names of ``%c`` or ``{%a, %b}``."""
    inner = value[1:-1] if value.startswith("{") and value.endswith("}") else value
    return [part.strip().removeprefix("%") for part in split_top(inner) if part.strip()]


def _attributes(text: str, number: int) -> dict[str, str]:
    """``, key=value, …`` after the operands; values may nest braces and hold quoted strings."""
    attributes = {}
    for part in split_top(text):
        if not part:
            continue
        key, equals, value = part.partition("=")
        if not equals or not key.strip():
            raise UserError(f"HLO text line {number}: attribute {brief(part, 40)} is not key=value")
        attributes[key.strip()] = value.strip()
    return attributes


def split_top(text: str, separator: str = ",") -> list[str]:
    """``text`` split at ``separator`` outside brackets and quoted strings; parts stripped."""
    parts, depth, start, quoted, escaped = [], 0, 0, False, False
    for i, char in enumerate(text):
        if quoted:
            escaped, quoted = (not escaped and char == "\\"), quoted and (escaped or char != '"')
        elif char == '"':
            quoted = True
        elif char in "({[":
            depth += 1
        elif char in ")}]":
            depth -= 1
        elif char == separator and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return parts


def _matching(text: str, start: int, number: int) -> int:
    """Index of the bracket closing the one at ``start``, skipping quoted strings."""
    stack, quoted, escaped = [], False, False
    for i in range(start, len(text)):
        char = text[i]
        if quoted:
            escaped, quoted = (not escaped and char == "\\"), quoted and (escaped or char != '"')
        elif char == '"':
            quoted = True
        elif char in _CLOSING:
            stack.append(_CLOSING[char])
        elif char in ")}]":
            if not stack or stack.pop() != char:
                break
            if not stack:
                return i
    raise UserError(f"HLO text line {number}: unbalanced {text[start]!r} in {brief(text[start:], 40)}")


def _integer(text: str, number: int) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise UserError(f"HLO text line {number}: expected an integer, got {brief(text.strip(), 40)}") from None


def _integers(text: str, number: int) -> tuple[int, ...]:
    return tuple(_integer(part, number) for part in text.split(",") if part.strip())


def node_features(ins: Instruction) -> list[float]:
    """The :data:`NODE_FEATURE_NAMES` row of one instruction (lists cut to 6 entries, padded as the samples are:
    0 for dims and attributes, −1 for the layout)."""
    shape = ins.shape
    dims = shape.dims
    product = float(np.prod(dims)) if dims else 1.0
    return [float(ins.is_root), float(shape.element_type), *_pad(dims, 0), float(sum(dims)), product, float(shape.tuple_size),
            float(ins.parameter_number), *_pad(_attribute_integers(ins, "dimensions"), 0), *_pad(shape.minor_to_major, -1),
            *_pad(_window(ins, "size"), 0), *_pad(_window(ins, "stride"), 0), *_pad(_slice(ins)[0], 0), *_pad(_slice(ins)[1], 0)]


def _pad(values: tuple[int, ...], fill: int) -> list[float]:
    return [float(v) for v in values[:RANK]] + [float(fill)] * (RANK - min(len(values), RANK))


def _attribute_integers(ins: Instruction, key: str) -> tuple[int, ...]:
    """``dimensions={0,2}`` → (0, 2); absent → ()."""
    value = ins.attributes.get(key, "").strip("{}")
    return _integers(value, ins.line)


def _window(ins: Instruction, part: str) -> tuple[int, ...]:
    """A ``window={size=1x32 stride=1x32 …}`` entry as integers."""
    for item in ins.attributes.get("window", "").strip("{}").split():
        key, _, value = item.partition("=")
        if key == part:
            return tuple(_integer(v, ins.line) for v in value.split("x"))
    return ()


def _slice(ins: Instruction) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(starts, sizes) of ``slice={[a:b], [c:d:s]}``, or (zeros, sizes) of ``dynamic_slice_sizes={…}``."""
    if "dynamic_slice_sizes" in ins.attributes:
        dynamic = _attribute_integers(ins, "dynamic_slice_sizes")
        return (0,) * len(dynamic), dynamic
    starts: list[int] = []
    sizes: list[int] = []
    for bound in split_top(ins.attributes.get("slice", "").strip("{}")):
        if not bound:
            continue
        parts = _integers(bound.strip("[]").replace(":", ","), ins.line)
        if len(parts) not in (2, 3):
            raise UserError(f"HLO text line {ins.line}: slice bound {brief(bound, 30)} is not [start:limit(:stride)]")
        stride = parts[2] if len(parts) == 3 else 1
        starts.append(parts[0])
        sizes.append(-(-(parts[1] - parts[0]) // max(stride, 1)))
    return tuple(starts), tuple(sizes)
