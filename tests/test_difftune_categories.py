"""A block's category, and whether its loads and stores meet in the measuring harness (real llvm-mc decoding)."""

from __future__ import annotations

import pytest

from engine.surrogates.difftune.categories import category, harness_aliasing, stack_slot
from engine.surrogates.difftune.decode import Block, decode_blocks

STORE_RDI_8 = "48894708"  # mov %rax,8(%rdi)
LOAD_RSI_8 = "488b5e08"  # mov 8(%rsi),%rbx
LOAD_RSI_16 = "488b5e10"  # mov 16(%rsi),%rbx
ADD_TO_MEMORY = "480107"  # add %rax,(%rdi): reads and writes one address
STORE_RSP = "48890424"  # mov %rax,(%rsp): rsp holds the page's middle
LOAD_RDI_0x800 = "488b8f00080000"  # mov 0x800(%rdi),%rcx: the same address as (%rsp)
LOAD_RDI = "488b1f"  # mov (%rdi),%rbx
LOAD_RBX, STORE_RBX, STEP_RBX = "488b03", "488903", "4883c308"  # mov (%rbx),%rax; mov %rax,(%rbx); add $8,%rbx


@pytest.mark.parametrize(("hex_block", "aliasing"), [
    (STORE_RDI_8 + LOAD_RSI_8, True),  # every register holds one value: 8(%rdi) is 8(%rsi)
    (STORE_RDI_8 + LOAD_RSI_16, False),
    (ADD_TO_MEMORY, True),  # a read-modify-write chain through memory, iteration after iteration
    (STORE_RSP + LOAD_RDI, False),
    (STORE_RSP + LOAD_RDI_0x800, True),
    (LOAD_RSI_8 + LOAD_RSI_8, False),  # loads alone never wait for each other
    (LOAD_RBX + STORE_RBX + STEP_RBX, False),  # the pointer moves on: the next load reads a new address
    (STORE_RBX + LOAD_RBX + STEP_RBX, True),  # in one iteration, the store first
    (STORE_RBX + STEP_RBX + LOAD_RBX, False),  # the step comes between them
    (LOAD_RBX + STORE_RBX, True),  # a pointer that stays: the next iteration reads this one's store
])
def test_loads_and_stores_meet_where_the_harness_registers_make_one_address(hex_block: str, aliasing: bool) -> None:
    block = decode_blocks([hex_block])[0]
    assert isinstance(block, Block)
    assert harness_aliasing(block) is aliasing


def test_the_category_says_scalar_or_vector_and_what_touches_memory() -> None:
    block = decode_blocks([STORE_RDI_8 + LOAD_RSI_8])[0]
    assert isinstance(block, Block) and category(block) == "scalar, load+store"


def test_a_stack_slot_is_rsp_or_rbp_plus_a_displacement() -> None:
    assert stack_slot("addq $2, 8(%rsp)") and stack_slot("movl -4(%rbp), %eax") and stack_slot("movq %rax, (%rsp)")
    assert not stack_slot("movq 8(%rdi), %rax") and not stack_slot("movq (%rsp,%rax,8), %rcx") and not stack_slot("addq %rax, %rbx")
