"""BHive hex → instructions keyed by LLVM MCInst opcode, with def/use sets from iced-x86.

Two decoders are needed because no LLVM tool prints def/use sets, and iced-x86 does not know
LLVM's opcode names (DiffTune's table key) or its operand layout (ReadAdvance slots). Both
decode the same bytes; a block where they disagree on the instruction count is refused.

Register rule (llvm-mca's, for models without register-file definitions): every register is
canonicalised to its full-width name (``RAX``, ``ZMM0``) plus the *part* accessed:
``q`` 64-bit, ``d`` 32-bit, ``w`` 16-bit, ``l`` low byte, ``h`` high byte for GPRs; ``x``/``y``/
``z`` for 128/256/512-bit vectors; ``-`` for registers without parts. A write updates the part
and its sub-parts; a 32-bit GPR write and a VEX/EVEX vector write also update the super-parts
(they zero the upper bits), while 8/16-bit GPR writes and legacy-SSE writes merge. A read
depends on the latest writers of the part and all its sub-parts. EFLAGS is one register (x87's C0-C3 are
not in it). As in LLVM's MC layer, x87 instructions read and write no stack register, and ``vzeroupper``
writes YMM0-15 and reads nothing. (Models with register files rename whole GPRs: simulate.py.)
"""

from __future__ import annotations

import functools
import importlib.metadata
import re
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, cast

import iced_x86 as iced
from iced_x86._iced_x86_py import Register as IcedRegister

from engine.errors import UserError, brief

LLVM_MC = "llvm-mc-19"
MARKER_HEX = "0f1f840042424242"  # nopl 0x42424242(%rax,%rax)
_MARKER_TEXT = "1111638594(%rax,%rax)"
BATCH = 100
FLAGS = "EFLAGS"

_READ = {iced.OpAccess.READ, iced.OpAccess.COND_READ, iced.OpAccess.READ_WRITE, iced.OpAccess.READ_COND_WRITE}
_WRITE = {iced.OpAccess.WRITE, iced.OpAccess.COND_WRITE, iced.OpAccess.READ_WRITE, iced.OpAccess.READ_COND_WRITE}
# Candidates only: whether a model recognises one is probed per model (``ParamTable.dependent_idioms``).
_ZERO_IDIOM = re.compile(
    r"^(MMX_)?V?(P?XOR|PSUB[BWDQ]|PSUBU?S[BW]|PCMPGT[BWDQ]|ANDNP[SD]|PANDN|XORP[SD])(Y|Z128|Z256|Z)?rr$"
    r"|^(SUB|XOR)(32|64)rr(_REV)?$"
)
_DEP_BREAKING = re.compile(r"^(MMX_)?V?PCMPEQ[BWDQ](Y|Z128|Z256|Z)?rr$|^SBB(32|64)rr(_REV)?$|^CMP(8|16|32|64)rr(_REV)?$")


@dataclass(frozen=True)
class Use:
    """One register read: full-width name, part, and llvm-mca's ReadAdvance slot (use index)."""

    reg: str
    part: str
    slot: int


@dataclass(frozen=True)
class Def:
    """One register write; ``clears_super`` marks writes that zero the upper bits."""

    reg: str
    part: str
    clears_super: bool


@dataclass(frozen=True)
class Instruction:
    """A decoded instruction: what the simulator needs, nothing about encodings."""

    asm: str
    opcode: str
    uses: tuple[Use, ...]
    defs: tuple[Def, ...]
    address_regs: tuple[str, ...]
    may_load: bool
    may_store: bool
    zero_idiom: bool
    dep_breaking: bool

    @functools.cached_property
    def key(self) -> str:
        """Parameter-table key: the opcode, split off where llvm-mca's models resolve the opcode to another
        scheduling class by its operands: zero idioms (``@zero``), slow LEAs (``@slow``: base, index and
        displacement, or a scale other than 1; Zen), SETcc/CMOVcc on a condition reading CF and ZF
        (``@cfzf``: seta/setbe, cmova/cmovbe; Intel)."""
        if self.zero_idiom:
            return f"{self.opcode}@zero"
        variant = operand_variant(self.opcode, self.asm)
        return f"{self.opcode}@{variant}" if variant else self.opcode

    @property
    def base_key(self) -> str:
        """The key before operand variants existed (tables made then have rows only under it)."""
        return f"{self.opcode}@zero" if self.zero_idiom else self.opcode


_X87 = re.compile(r"^ST\d$")
_FPU_FLAGS = iced.RflagsBits.C0 | iced.RflagsBits.C1 | iced.RflagsBits.C2 | iced.RflagsBits.C3
_LEA = re.compile(r"^LEA(16|32|64|64_32)r$")
# AT&T memory operand: [disp](base[,index[,scale]])
ADDRESS = re.compile(r"(?P<disp>[-+]?(?:0x[0-9a-fA-F]+|\d+))?\((?P<base>%\w+)?(?:,(?P<index>%\w+)?(?:,(?P<scale>\d+))?)?\)")
_CF_ZF = re.compile(r"^(set|cmov)(a|be|nbe|na)[wlq]?$")


@functools.lru_cache(maxsize=1 << 16)
def operand_variant(opcode: str, asm: str) -> str:
    """The scheduling variant an instruction's operands select (``""`` for the opcode's usual class)."""
    if _LEA.match(opcode):
        m = ADDRESS.search(asm)
        if m is None:
            return ""
        disp = m.group("disp")
        three = bool(m.group("base")) and bool(m.group("index")) and disp is not None and int(disp, 0) != 0
        scaled = m.group("scale") is not None and int(m.group("scale")) != 1
        return "slow" if three or scaled else ""
    if opcode.startswith(("SETCC", "CMOV")) and _CF_ZF.match(asm.split()[0]):
        return "cfzf"
    return ""


@dataclass(frozen=True)
class Block:
    """A basic block: its BHive hex and instructions in program order."""

    hex: str
    instructions: tuple[Instruction, ...]


@dataclass(frozen=True)
class _McInst:
    asm: str
    opcode: str
    operands: tuple[str, ...]  # "Reg:53", "Imm:1", ...


def _reg(value: int) -> IcedRegister:
    """iced's stubs type registers as an enum; at run time they are plain ints."""
    return cast(IcedRegister, value)


def canonical(reg: int) -> tuple[str, str]:
    """iced register → (full-width name, part)."""
    reg = _reg(reg)
    full = iced.RegisterExt.full_register(reg)
    name = _NAMES[full]
    if iced.RegisterExt.is_gpr(reg):
        size = iced.RegisterExt.size(reg)
        if size == 1:
            return name, "h" if reg in _HIGH8 else "l"
        return name, {8: "q", 4: "d", 2: "w"}[size]
    if iced.RegisterExt.is_vector_register(reg):
        return name, {16: "x", 32: "y", 64: "z"}[iced.RegisterExt.size(reg)]
    return name, "-"


_NAMES = {v: k for k, v in vars(iced.Register).items() if not k.startswith("_") and isinstance(v, int)}
_HIGH8 = {iced.Register.AH, iced.Register.BH, iced.Register.CH, iced.Register.DH}


def _run_mc(data: str) -> tuple[list[_McInst], bool]:
    """Disassemble ``data`` (``0x..`` bytes); returns instructions and whether llvm-mc warned."""
    try:
        proc = subprocess.run(
            [LLVM_MC, "--disassemble", "-triple=x86_64", "--show-inst"],
            input=data, capture_output=True, text=True, check=False,
        )
    except FileNotFoundError:
        raise UserError(f"{LLVM_MC} is not installed: it decodes the blocks (Debian: apt-get install llvm-19)") from None
    out: list[_McInst] = []
    asm, opcode, ops = "", "", list[str]()
    for line in proc.stdout.splitlines():
        if "<MCInst #" in line:
            head, _, tail = line.partition("# <MCInst #")
            asm, opcode, ops = " ".join(head.split()), tail.split()[1].rstrip(">"), []
        elif "<MCOperand " in line:
            ops.append(line.split("<MCOperand ", 1)[1].split(">", 1)[0])
        else:
            continue
        if line.rstrip().endswith(">") and (line.rstrip().endswith(">>") or "<MCOperand " not in line):
            out.append(_McInst(asm, opcode, tuple(ops)))
    return out, "warning" in proc.stderr or proc.returncode != 0


def _bytes_arg(hexes: Iterable[str]) -> str:
    return " ".join(f"0x{h[i:i + 2]}" for h in hexes for i in range(0, len(h), 2))


def _merge_prefixes(insts: list[_McInst]) -> list[_McInst]:
    """Fold prefix-only lines (``lock``, ``rep``...) into the next instruction, as llvm-mca needs."""
    out: list[_McInst] = []
    pending: list[str] = []
    for inst in insts:
        if inst.opcode.endswith("_PREFIX"):
            pending.append(inst.asm)
            continue
        out.append(_McInst(" ".join([*pending, inst.asm]), inst.opcode, inst.operands) if pending else inst)
        pending = []
    return out


@functools.lru_cache(maxsize=1)
def _llvm_registers() -> dict[int, int]:
    """LLVM register number → iced register, learnt by disassembling one instruction per register."""
    enc = iced.Encoder(64)
    probes: list[tuple[int, bytes]] = []

    def add(reg: int, instr: iced.Instruction) -> None:
        enc.encode(instr, 0)
        probes.append((reg, enc.take_buffer()))

    C, R, I = iced.Code, iced.Register, iced.Instruction
    for i in range(16):
        for code, base in ((C.XOR_RM64_R64, R.RAX), (C.XOR_RM32_R32, R.EAX), (C.XOR_RM16_R16, R.AX)):
            add(base + i, I.create_reg_reg(code, _reg(base + i), _reg(base + i)))
        add(R.XMM0 + i, I.create_reg_reg_reg(C.VEX_VPXOR_XMM_XMM_XMMM128, _reg(R.XMM0 + i), _reg(R.XMM0 + i), _reg(R.XMM0 + i)))
        add(_reg(R.YMM0 + i), I.create_reg_reg_reg(C.VEX_VPXOR_YMM_YMM_YMMM256, _reg(R.YMM0 + i), _reg(R.YMM0 + i), _reg(R.YMM0 + i)))
    for i in range(20):
        add(_reg(R.AL + i), I.create_reg_reg(C.XOR_RM8_R8, _reg(R.AL + i), _reg(R.AL + i)))
    for i in range(32):
        add(_reg(R.ZMM0 + i), I.create_reg_reg_reg(C.EVEX_VPXORD_ZMM_K1Z_ZMM_ZMMM512B32, _reg(R.ZMM0 + i), _reg(R.ZMM0 + i), _reg(R.ZMM0 + i)))
        if i >= 16:
            add(R.XMM0 + i, I.create_reg_reg_reg(C.EVEX_VPXORD_XMM_K1Z_XMM_XMMM128B32, _reg(R.XMM0 + i), _reg(R.XMM0 + i), _reg(R.XMM0 + i)))
            add(_reg(R.YMM0 + i), I.create_reg_reg_reg(C.EVEX_VPXORD_YMM_K1Z_YMM_YMMM256B32, _reg(R.YMM0 + i), _reg(R.YMM0 + i), _reg(R.YMM0 + i)))
    for i in range(8):
        add(_reg(R.MM0 + i), I.create_reg_reg(C.PXOR_MM_MMM64, _reg(R.MM0 + i), _reg(R.MM0 + i)))
        add(_reg(R.ST0 + i), I.create_reg(C.FLD_STI, _reg(R.ST0 + i)))
        add(_reg(R.K0 + i), I.create_reg_reg(C.VEX_KMOVW_KR_KM16, _reg(R.K0 + i), _reg(R.K0 + i)))
    add(R.RIP, I.create_mem(C.NOP_RM32, iced.MemoryOperand(R.RIP, displ=0)))
    for seg in (R.ES, R.CS, R.SS, R.DS, R.FS, R.GS):
        add(_reg(seg), I.create_mem(C.NOP_RM32, iced.MemoryOperand(R.RAX, displ=0, seg=_reg(seg))))
    insts, _ = _run_mc("\n".join(_bytes_arg([b.hex()]) for _, b in probes))
    insts = _merge_prefixes(insts)
    known: dict[int, int] = {}
    for (reg, _), inst in zip(probes, insts, strict=True):
        numbers = {int(op[4:]) for op in inst.operands if op.startswith("Reg:")} - {0} - set(known)
        if len(numbers) == 1:
            known[numbers.pop()] = reg
    return known


def _disassemble(hexes: Sequence[str]) -> list[list[_McInst] | None]:
    """llvm-mc over blocks in batches; a batch with a warning or a wrong marker count is redone per block."""
    out: list[list[_McInst] | None] = []
    for start in range(0, len(hexes), BATCH):
        chunk = hexes[start:start + BATCH]
        joined = [part for h in chunk for part in (h, MARKER_HEX)]
        insts, warned = _run_mc(_bytes_arg(joined))
        groups: list[list[_McInst]] = [[]]
        for inst in _merge_prefixes(insts):
            if inst.opcode == "NOOPL" and _MARKER_TEXT in inst.asm:
                groups.append([])
            else:
                groups[-1].append(inst)
        if not warned and len(groups) == len(chunk) + 1 and not groups[-1]:
            out.extend(groups[:-1])
            continue
        for h in chunk:
            single, single_warned = _run_mc(_bytes_arg([h]))
            out.append(None if single_warned else _merge_prefixes(single))
    return out


def _explicit_defs(mc: _McInst, written: Sequence[int], regs: dict[int, int]) -> int:
    """How many leading MCInst register operands are definitions (x86 puts defs first)."""
    limit = len(written)
    count = 0
    for op in mc.operands:
        if count == limit or not op.startswith("Reg:"):
            break
        reg = regs.get(int(op[4:]))
        if reg is None or canonical(reg)[0] not in {canonical(w)[0] for w in written}:
            break
        count += 1
    return count


def _instruction(mc: _McInst, ins: iced.Instruction, info: iced.InstructionInfo, regs: dict[int, int]) -> Instruction:
    """Join one llvm-mc instruction with the iced decode of the same bytes."""
    written_ops = [ins.op_register(i) for i in range(ins.op_count)
                   if ins.op_kind(i) == iced.OpKind.REGISTER and info.op_access(i) in _WRITE]
    n_defs = _explicit_defs(mc, written_ops, regs)
    vex = ins.encoding != iced.EncodingKind.LEGACY
    defs: list[Def] = []
    uses: list[Use] = []
    explicit_uses: set[tuple[str, str]] = set()
    for index, op in enumerate(mc.operands):
        if not op.startswith("Reg:") or op == "Reg:0":
            continue
        reg = regs.get(int(op[4:]))
        if reg is None:
            raise UserError(f"instruction: unknown LLVM register {brief(op)} in {brief(mc.asm)}")
        name, part = canonical(reg)
        if name in {"RIP", "ES", "CS", "SS", "DS", "FS", "GS"}:
            continue
        if index < n_defs:
            defs.append(Def(name, part, part == "d" or (part in "xyz" and vex)))
        else:
            explicit_uses.add((name, part))
            uses.append(Use(name, part, index - n_defs))
    n_explicit_uses = len(mc.operands) - n_defs
    implicit_reads: list[tuple[str, str]] = []
    implicit_writes: list[tuple[str, str]] = []
    address = {canonical(r)[0] for m in info.used_memory() for r in (m.base, m.index) if r != iced.Register.NONE}
    for used in info.used_registers():
        name, part = canonical(used.register)
        if name in {"RIP", "ES", "CS", "SS", "DS", "FS", "GS"}:
            continue
        if used.access in _READ and (name, part) not in implicit_reads and (name, part) not in explicit_uses:
            implicit_reads.append((name, part))
        if used.access in _WRITE and (name, part) not in implicit_writes and not any(d.reg == name for d in defs):
            implicit_writes.append((name, part))
    if ins.rflags_read & ~_FPU_FLAGS:  # x87's C0-C3 live in the FPU status word, not EFLAGS
        implicit_reads.append((FLAGS, "-"))
    if ins.rflags_modified & ~_FPU_FLAGS:
        implicit_writes.append((FLAGS, "-"))
    uses += [Use(n, p, n_explicit_uses + k) for k, (n, p) in enumerate(implicit_reads)]
    defs += [Def(n, p, p == "d") for n, p in implicit_writes]
    if mc.opcode in ("VZEROUPPER", "VZEROALL"):  # LLVM: writes YMM0-15, reads nothing (iced lists the XMMs read)
        uses, defs = [], [Def(f"ZMM{r}", "y", True) for r in range(16)]
    # x87: LLVM's MC instructions write no stack register (their ST(i) operands are inputs; the stack is the
    # code generator's business), so for llvm-mca no x87 result feeds another through ST(i): keep none.
    uses = [u for u in uses if not _X87.match(u.reg)]
    defs = [d for d in defs if not _X87.match(d.reg)]
    mem = info.used_memory()
    reg_uses = [op for op in mc.operands[n_defs:] if op.startswith("Reg:") and op != "Reg:0"]
    same_sources = len(reg_uses) >= 2 and len(set(reg_uses)) == 1
    return Instruction(
        asm=mc.asm,
        opcode=mc.opcode,
        uses=tuple(uses),
        defs=tuple(defs),
        address_regs=tuple(sorted(address - {"RIP"})),
        may_load=any(m.access in _READ for m in mem),
        may_store=any(m.access in _WRITE for m in mem),
        zero_idiom=same_sources and bool(_ZERO_IDIOM.match(mc.opcode)),
        dep_breaking=same_sources and bool(_DEP_BREAKING.match(mc.opcode)),
    )


def _check_hex(text: str) -> str:
    h = text.strip().lower()
    if not h or len(h) % 2 or not re.fullmatch(r"[0-9a-f]+", h):
        raise UserError(f"hex: not a block of machine code: {brief(text)}")
    return h


#: What decoded a block (a stored decoding is reused only by the same decoders and the same rules: ``DECODE_RULES``
#: counts this module's revisions of what it makes of them; 2: x87 and vzeroupper as LLVM sees them, ``_REV``
#: and saturating-subtract idiom candidates).
DECODE_RULES = 2
DECODER = f"{LLVM_MC}+iced-x86-{importlib.metadata.version('iced-x86')}+rules-{DECODE_RULES}"


def block_document(block: Block) -> list[dict[str, Any]]:
    """A block's instructions as JSON-ready data (the store keeps decoded blocks)."""
    return [asdict(instruction) for instruction in block.instructions]


def block_from_document(hex_text: str, document: Sequence[dict[str, Any]]) -> Block:
    """The block :func:`block_document` wrote."""
    return Block(hex_text, tuple(
        Instruction(**{**i, "uses": tuple(Use(**u) for u in i["uses"]), "defs": tuple(Def(**d) for d in i["defs"]),
                       "address_regs": tuple(i["address_regs"])}) for i in document))


def decode_blocks(hexes: Sequence[str]) -> list[Block | str]:
    """Decode many blocks; each entry is a Block or a one-line reason why that block is refused."""
    clean = [_check_hex(h) for h in hexes]
    regs = _llvm_registers()
    factory = iced.InstructionInfoFactory()
    out: list[Block | str] = []
    for h, mcs in zip(clean, _disassemble(clean), strict=True):
        if mcs is None:
            out.append(f"block {h[:32]}: llvm-mc cannot decode it")
            continue
        decoded = list(iced.Decoder(64, bytes.fromhex(h)))
        if any(d.code == iced.Code.INVALID for d in decoded) or len(decoded) != len(mcs):
            out.append(f"block {h[:32]}: llvm-mc finds {len(mcs)} instructions, iced-x86 {len(decoded)}")
            continue
        try:
            out.append(Block(h, tuple(_instruction(m, d, factory.info(d), regs) for m, d in zip(mcs, decoded, strict=True))))
        except UserError as err:
            out.append(str(err))
    return out


def decode_block(hex_text: str) -> Block:
    """Decode one block or raise a one-line UserError."""
    result = decode_blocks([hex_text])[0]
    if isinstance(result, str):
        raise UserError(result)
    return result
