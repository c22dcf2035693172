"""Decoding BHive hex with llvm-mc-19 and iced-x86 (real llvm-mc processes)."""

import pytest

from engine.errors import UserError
from engine.surrogates.difftune.decode import Def, Use, decode_block, decode_blocks


def test_opcode_keys_slots_and_flags() -> None:
    block = decode_block("48031e" "f0480103" "31c0" "b001")
    load_op, locked, zero, partial = block.instructions
    assert load_op.opcode == "ADD64rm" and load_op.may_load and not load_op.may_store
    assert load_op.uses == (Use("RBX", "q", 0), Use("RSI", "q", 1)) and load_op.address_regs == ("RSI",)
    assert load_op.defs[0] == Def("RBX", "q", False)
    assert locked.asm.startswith("lock") and locked.opcode == "ADD64mr" and locked.may_store
    assert Use("RAX", "q", 5) in locked.uses  # after the five memory operands
    assert zero.zero_idiom and zero.key == "XOR32rr@zero" and zero.defs[0] == Def("RAX", "d", True)
    assert partial.defs == (Def("RAX", "l", False),)


def test_implicit_registers() -> None:
    pop, mul = decode_block("5b" "48f7e3").instructions
    assert pop.uses == (Use("RSP", "q", 0),) and {d.reg for d in pop.defs} == {"RBX", "RSP"}
    assert {d.reg for d in mul.defs} == {"RAX", "RDX", "EFLAGS"} and Use("RAX", "q", 1) in mul.uses


def test_batch_keeps_order_and_refuses_bad_blocks() -> None:
    out = decode_blocks(["4801c3", "0f0b0f", "90"])
    assert [b.instructions[0].opcode for b in (out[0], out[2]) if not isinstance(b, str)] == ["ADD64rr", "NOOP"]
    assert isinstance(out[1], str) and "0f0b0f" in out[1]
    with pytest.raises(UserError, match="hex"):
        decode_block("xyz")


def test_a_missing_llvm_mc_is_named_with_its_package(monkeypatch) -> None:
    from engine.surrogates.difftune import decode

    monkeypatch.setattr(decode, "LLVM_MC", "llvm-mc-19-absent")
    with pytest.raises(UserError, match=r"^llvm-mc-19-absent is not installed: .*apt-get install llvm-19\)$"):
        decode._run_mc("0x90")


def test_operand_variants_split_keys() -> None:
    """llvm-mca resolves some opcodes to another scheduling class by their operands: those get their own key."""
    fast, slow3, scaled, scale1 = decode_block("488d4108" "488d4c1808" "488d1498" "488d0418").instructions
    assert [i.key for i in (fast, slow3, scaled, scale1)] == ["LEA64r", "LEA64r@slow", "LEA64r@slow", "LEA64r"]
    assert slow3.base_key == "LEA64r"
    seta, setb, cmova = decode_block("0f97c0" "0f92c0" "480f47d8").instructions
    assert [seta.key, setb.key, cmova.key] == [f"{seta.opcode}@cfzf", setb.opcode, f"{cmova.opcode}@cfzf"]


def test_vzeroupper_reads_nothing() -> None:
    (vzu,) = decode_block("c5f877").instructions
    assert vzu.uses == () and vzu.defs[0] == Def("ZMM0", "y", True) and len(vzu.defs) == 16


def test_x87_stack_registers_carry_no_dependency() -> None:
    """LLVM's x87 MC instructions write no ST(i) and C0-C3 are not EFLAGS: fxch has nothing to depend on."""
    fxch, fucomi, faddp = decode_block("d9ca" "dbe9" "dec1").instructions
    assert (fxch.uses, fxch.defs) == ((), ()) and faddp.defs == ()
    assert fucomi.defs == (Def("EFLAGS", "-", False),)


def test_reversed_encodings_are_idiom_candidates_too() -> None:
    """``xorl %eax, %eax`` encoded 33 c0 is XOR32rr_REV: LLVM's models list it beside XOR32rr."""
    xor_rev, cmp8 = decode_block("33c0" "38c0").instructions
    assert xor_rev.zero_idiom and xor_rev.key == "XOR32rr_REV@zero"
    assert cmp8.dep_breaking and cmp8.opcode == "CMP8rr"
