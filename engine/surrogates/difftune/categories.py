"""A block's category for per-category figures (BHive groups its blocks by what they do; its category file
is not available here, so the kind is read from the decoded instructions): scalar or vector, and what it
does with memory."""

from __future__ import annotations

from engine.surrogates.difftune.decode import Block

#: Full-width names of registers that make a block "vector" (iced-x86's ZMMn cover XMM/YMM/ZMM; MMX and x87 too).
_VECTOR_PREFIXES = ("ZMM", "MM", "ST", "K")


def category(block: Block) -> str:
    """``"scalar, load"``, ``"vector, load+store"``, ``"scalar, no memory"``..."""
    registers = {u.reg for i in block.instructions for u in i.uses} | {d.reg for i in block.instructions for d in i.defs}
    kind = "vector" if any(r.startswith(_VECTOR_PREFIXES) for r in registers) else "scalar"
    loads, stores = any(i.may_load for i in block.instructions), any(i.may_store for i in block.instructions)
    memory = {(False, False): "no memory", (True, False): "load", (False, True): "store", (True, True): "load+store"}
    return f"{kind}, {memory[(loads, stores)]}"
