"""A block's category for per-category figures (BHive groups its blocks by what they do; its category file
is not available here, so the kind is read from the decoded instructions): scalar or vector, and what it
does with memory."""

from __future__ import annotations

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


def harness_shared_addresses(block: Block, addresses: list[int | None] | None = None) -> set[int]:
    """The addresses both a store and a load of the block touch in the measuring harness (:func:`harness_addresses`,
    or ``addresses`` already computed): the core forwards the stored value to the load, a dependency through memory
    that llvm-mca (and our simulator, unless its table sets ``memory_forwarding``) does not model."""
    at = harness_addresses(block) if addresses is None else addresses
    loads = {a for a, ins in zip(at, block.instructions) if a is not None and ins.may_load}
    return loads & {a for a, ins in zip(at, block.instructions) if a is not None and ins.may_store}


def harness_aliasing(block: Block) -> bool:
    """Whether a store and a load of the block meet at one address in the harness (:func:`harness_shared_addresses`)."""
    return bool(harness_shared_addresses(block))


def _register_value(register: str | None) -> int:
    if not register or register == "%rip":
        return 0
    return _MIDDLE if register in _PAGE_MIDDLE else _BASE
