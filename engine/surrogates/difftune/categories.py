"""A block's category for per-category figures (BHive groups its blocks by what they do; its category file
is not available here, so the kind is read from the decoded instructions): scalar or vector, and what it
does with memory."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from engine.surrogates.difftune.decode import ADDRESS, Block

#: The harness's register values (harness.c): every general-purpose register holds the data page's address, rsp
#: and rbp its middle. Only equality between addresses matters here, so the page's base is arbitrary.
_PAGE_MIDDLE = ("%rsp", "%rbp", "%esp", "%ebp")
_BASE, _MIDDLE = 0x2324000, 0x2324000 + 0x800
#: Full-width names of registers that make a block "vector" (iced-x86's ZMMn cover XMM/YMM/ZMM; MMX and x87 too).
_VECTOR_PREFIXES = ("ZMM", "MM", "ST", "K")


def category(block: Block) -> str:
    """``"scalar, load"``, ``"vector, load+store"``, ``"scalar, no memory"``..."""
    registers = {u.reg for i in block.instructions for u in i.uses} | {d.reg for i in block.instructions for d in i.defs}
    kind = "vector" if any(r.startswith(_VECTOR_PREFIXES) for r in registers) else "scalar"
    loads, stores = any(i.may_load for i in block.instructions), any(i.may_store for i in block.instructions)
    memory = {(False, False): "no memory", (True, False): "load", (False, True): "store", (True, True): "load+store"}
    return f"{kind}, {memory[(loads, stores)]}"


def harness_addresses(block: Block) -> list[int | None]:
    """Each instruction's memory address in the measuring harness, where every register starts at the data page's
    address (None: no memory operand). Registers are taken at their start values, so an address whose register the
    block changes first may be misjudged."""
    out: list[int | None] = []
    for ins in block.instructions:
        found = ADDRESS.search(ins.asm) if ins.may_load or ins.may_store else None
        out.append(None if found is None else int(found.group("disp") or "0", 0) + _register_value(found.group("base"))
                   + int(found.group("scale") or 1) * _register_value(found.group("index")))
    return out


@dataclass(frozen=True)
class Forwarding:
    """Which loads of a block read what a store of the block wrote, in the measuring harness: ``loads`` and ``stores``
    map an instruction's index to the address they meet at (an instruction that loads and stores can be in both)."""

    loads: dict[int, Hashable]
    stores: dict[int, Hashable]

    def source(self, load: int) -> int:
        """The store that feeds ``load``: the latest before it in the iteration, else the last of the block (the
        previous iteration's; the load itself for a read-modify-write)."""
        address = self.loads[load]
        same = [j for j, k in self.stores.items() if k == address]
        before = [j for j in same if j < load]
        return max(before) if before else max(same)


def harness_forwarding(block: Block) -> Forwarding:
    """The stores whose value a later load of the block reads back (the core forwards it: a dependency through
    memory that llvm-mca, and our simulator unless its table sets ``memory_forwarding``, does not model).

    An address whose registers the block never writes is the same in every iteration (:func:`harness_addresses`):
    a load of it reads the latest store to it, in this iteration or the last.
    An address whose registers the block writes (a pointer stepped by the loop) differs from one iteration to the
    next: a load reads a store only when both come in this iteration, the store first, with the same expression
    and no write to its registers in between."""
    at = harness_addresses(block)
    written = {d.reg for ins in block.instructions for d in ins.defs}
    writes_so_far: dict[str, int] = {}
    keys: list[Hashable | None] = []
    for ins, address in zip(block.instructions, at, strict=True):
        moving = set(ins.address_regs) & written
        found = ADDRESS.search(ins.asm) if address is not None and moving else None
        if address is None or (moving and found is None):
            keys.append(None)
        elif moving and found is not None:  # the expression, and which write of each of its registers it sees
            keys.append((found.group(0), tuple(sorted((r, writes_so_far.get(r, 0)) for r in moving))))
        else:
            keys.append(address)
        for d in ins.defs:
            writes_so_far[d.reg] = writes_so_far.get(d.reg, 0) + 1
    stores = {i: key for i, (key, ins) in enumerate(zip(keys, block.instructions)) if key is not None and ins.may_store}
    loads: dict[int, Hashable] = {}
    for i, (key, ins) in enumerate(zip(keys, block.instructions)):
        if key is None or not ins.may_load:
            continue
        stable = isinstance(key, int)
        if any(k == key and (stable or j < i) for j, k in stores.items()):
            loads[i] = key
    fed = set(loads.values())
    return Forwarding(loads, {i: key for i, key in stores.items() if key in fed})


def stack_slot(asm: str) -> bool:
    """Whether an instruction's memory operand is a stack slot: ``rsp`` or ``rbp`` plus a displacement, no index."""
    found = ADDRESS.search(asm)
    return found is not None and found.group("base") in _PAGE_MIDDLE and not found.group("index")


def harness_aliasing(block: Block) -> bool:
    """Whether a load of the block reads back what a store of it wrote in the harness (:func:`harness_forwarding`)."""
    return bool(harness_forwarding(block).loads)


def _register_value(register: str | None) -> int:
    if not register or register == "%rip":
        return 0
    return _MIDDLE if register in _PAGE_MIDDLE else _BASE
