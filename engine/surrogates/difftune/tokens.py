"""Ithemal's canonical token sequences (difftune.md §4.1), derived from iced-x86, and their vocabulary.

Per instruction: mnemonic, ``<SRCS>``, source operands, ``<DSTS>``, destinations, ``<END>``. Registers are
``FULL.part`` (decode.canonical's naming, so ``EAX`` and ``RAX`` share the full name but not the token); a
memory operand is ``<MEM>`` base index [``<DISP>``] ``</MEM>`` among the sources when read and the
destinations when written; immediates are ``<IMM>``. Implicit registers (``rep movs``' RCX, ``push``'s RSP)
and EFLAGS follow the explicit operands, with iced's read/write roles; address registers are sources only
inside their ``<MEM>`` group, as in Ithemal.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import iced_x86 as iced

from engine.errors import UserError, brief
from engine.surrogates.difftune.decode import FLAGS, Block, canonical

SRCS, DSTS, END, MEM, MEM_END, DISP, IMM = "<SRCS>", "<DSTS>", "<END>", "<MEM>", "</MEM>", "<DISP>", "<IMM>"
PAD, UNK = "<PAD>", "<UNK>"

_READ = {iced.OpAccess.READ, iced.OpAccess.COND_READ, iced.OpAccess.READ_WRITE, iced.OpAccess.READ_COND_WRITE}
_WRITE = {iced.OpAccess.WRITE, iced.OpAccess.COND_WRITE, iced.OpAccess.READ_WRITE, iced.OpAccess.READ_COND_WRITE}
_MNEMONICS = {v: k.upper() for k, v in vars(iced.Mnemonic).items() if not k.startswith("_") and isinstance(v, int)}
_SEGMENTS = {iced.Register.ES, iced.Register.CS, iced.Register.SS, iced.Register.DS, iced.Register.FS, iced.Register.GS}
_IMMEDIATES = {iced.OpKind.IMMEDIATE8, iced.OpKind.IMMEDIATE8_2ND, iced.OpKind.IMMEDIATE16, iced.OpKind.IMMEDIATE32,
               iced.OpKind.IMMEDIATE64, iced.OpKind.IMMEDIATE8TO16, iced.OpKind.IMMEDIATE8TO32, iced.OpKind.IMMEDIATE8TO64,
               iced.OpKind.IMMEDIATE32TO64, iced.OpKind.NEAR_BRANCH16, iced.OpKind.NEAR_BRANCH32, iced.OpKind.NEAR_BRANCH64}


def _register(reg: int) -> str:
    name, part = canonical(reg)
    return name if part == "-" else f"{name}.{part}"


def _memory(ins: iced.Instruction) -> list[str]:
    parts = [_register(r) for r in (ins.memory_base, ins.memory_index) if r != iced.Register.NONE]
    return [MEM, *parts, *([DISP] if ins.memory_displacement else []), MEM_END]


def instruction_tokens(ins: iced.Instruction, info: iced.InstructionInfo) -> list[str]:
    """One decoded instruction in canonical form."""
    srcs: list[str] = []
    dsts: list[str] = []
    explicit: set[str] = set()  # full names: iced also lists RAX as written by ``mov eax, ...``
    for i in range(ins.op_count):
        kind, access = ins.op_kind(i), info.op_access(i)
        if kind == iced.OpKind.REGISTER:
            explicit.add(canonical(ins.op_register(i))[0])
            token = [_register(ins.op_register(i))]
        elif kind == iced.OpKind.MEMORY:
            token = _memory(ins)
        elif kind in _IMMEDIATES:
            token = [IMM]
        else:
            continue  # string-instruction operands ([rsi]/[rdi]) appear through the implicit registers
        if access in _READ or kind in _IMMEDIATES or kind == iced.OpKind.MEMORY and access not in _WRITE:
            srcs += token
        if access in _WRITE:
            dsts += token
    address = {ins.memory_base, ins.memory_index} if any(ins.op_kind(i) == iced.OpKind.MEMORY for i in range(ins.op_count)) else set()
    for used in info.used_registers():
        reg = used.register
        if canonical(reg)[0] in explicit or reg in address or reg in _SEGMENTS or reg == iced.Register.RIP:
            continue
        if used.access in _READ and _register(reg) not in srcs:
            srcs.append(_register(reg))
        if used.access in _WRITE and _register(reg) not in dsts:
            dsts.append(_register(reg))
    if ins.rflags_read:
        srcs.append(FLAGS)
    if ins.rflags_modified:
        dsts.append(FLAGS)
    return [_MNEMONICS[ins.mnemonic], SRCS, *srcs, DSTS, *dsts, END]


def block_tokens(block: Block) -> list[list[str]]:
    """Token sequences of a block's instructions, decoded again from its bytes (iced-x86 only)."""
    factory = iced.InstructionInfoFactory()
    decoded = list(iced.Decoder(64, bytes.fromhex(block.hex)))
    if len(decoded) != len(block.instructions):
        raise UserError(f"block {brief(block.hex)}: iced-x86 finds {len(decoded)} instructions, the block has {len(block.instructions)}")
    return [instruction_tokens(ins, factory.info(ins)) for ins in decoded]


@dataclass(frozen=True)
class Vocabulary:
    """Token → id; id 0 pads, id 1 stands for tokens not seen in training."""

    tokens: tuple[str, ...]

    @classmethod
    def build(cls, blocks: Iterable[Block], min_count: int = 1) -> Vocabulary:
        """Tokens of the training blocks seen at least ``min_count`` times, most frequent first (ties by name)."""
        counts = Counter(t for b in blocks for seq in block_tokens(b) for t in seq)
        kept = sorted((t for t, c in counts.items() if c >= min_count), key=lambda t: (-counts[t], t))
        return cls((PAD, UNK, *kept))

    def __len__(self) -> int:
        return len(self.tokens)

    def encode(self, blocks: Sequence[Block]) -> list[list[list[int]]]:
        """Per block, per instruction, token ids."""
        index = {t: i for i, t in enumerate(self.tokens)}
        unk = index[UNK]
        return [[[index.get(t, unk) for t in seq] for seq in block_tokens(b)] for b in blocks]

    def to_document(self) -> list[str]:
        return list(self.tokens)

    @classmethod
    def from_document(cls, data: Any) -> Vocabulary:
        tokens = tuple(str(t) for t in cast(list[Any], data))
        if tokens[:2] != (PAD, UNK):
            raise UserError(f"vocabulary: must start with {PAD}, {UNK}, got {brief(tokens[:2])}")
        return cls(tokens)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_document()))

    @classmethod
    def load(cls, path: str | Path) -> Vocabulary:
        return cls.from_document(json.loads(Path(path).read_text()))

