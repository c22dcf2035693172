"""The simulator against real llvm-mca-19 runs on hand-picked blocks, and numba == reference."""

import json
import subprocess

import pytest

from engine.surrogates.difftune.decode import Block, decode_block
from engine.surrogates.difftune.defaults import default_table
from engine.surrogates.difftune.simulate import simulate, simulate_reference, timeline

BLOCKS = {
    "add chain": "4801c34801d8",
    "independent adds": "4801c34801c14801c24801c6",
    "imul chain": "480fafc0",
    "load-op ReadAdvance": "48031e4801d8",
    "zero idiom": "31c04801c3",
    "partial register": "b0014801c3",
    "store/load pair": "4889074c8b07",
    "divide": "48f7f3",
    "pops": "5b5d415c415d415eb901000000",
    "fma then vzeroupper": "c59d59e0c59559e9c4e28db8e2c4e285b8ebc57c1044c1e0c5d558e4c462ddb8c6c57c1144c1e0c5f877",
    "vector load-op": "c5fc5806c5fc58c0",
    "adc through flags": "4883d0004813442408",
    "rep movs": "f3a4",
}


def _mca(block: Block, mcpu: str, iterations: int = 100) -> int:
    text = "\n".join(i.asm for i in block.instructions) + "\n"
    proc = subprocess.run(["llvm-mca-19", "-mtriple=x86_64-unknown-unknown", f"-mcpu={mcpu}",
                           f"-iterations={iterations}", "--all-views=0", "--summary-view", "--json"],
                          input=text, capture_output=True, text=True, check=True)
    return int(json.loads(proc.stdout)["CodeRegions"][0]["SummaryView"]["TotalCycles"])


@pytest.fixture(scope="module")
def setup() -> tuple[list[Block], object]:
    blocks = [decode_block(h) for h in BLOCKS.values()]
    return blocks, default_table(blocks, "haswell")


def test_matches_llvm_mca_haswell(setup: tuple) -> None:
    blocks, table = setup
    ours = simulate(blocks, table)
    theirs = [_mca(b, "haswell") for b in blocks]
    assert dict(zip(BLOCKS, ours.tolist())) == dict(zip(BLOCKS, theirs))


def test_idioms_follow_the_model() -> None:
    """Sapphire Rapids' LLVM 19 model recognises no zero idiom: ``xorl %esi, %esi`` waits for its input."""
    blocks = [decode_block(h) for h in ("31f64889df", "31c04801c3", "660fefc0660fd4c0", "39f64801c3")]
    table = default_table(blocks, "sapphirerapids")
    assert table.dependent_idioms
    assert simulate(blocks, table).tolist() == [_mca(b, "sapphirerapids") for b in blocks]


def test_reference_equals_numba(setup: tuple) -> None:
    blocks, table = setup
    assert [simulate_reference(b, table, iterations=20) for b in blocks] == simulate(blocks, table, 20).tolist()


def test_timeline_like_llvm_mca(setup: tuple) -> None:
    blocks, table = setup
    frame = timeline(blocks[0], table, iterations=3)
    assert list(frame["issued"]) == [1, 2, 3, 4, 5, 6]  # a 1-cycle add chain issues once per cycle
    assert int(frame["retired"].max()) + 1 == _mca(blocks[0], "haswell", 3)


# -- Zen: register files, move elimination, partial writes, operand variants (each against llvm-mca-19) ----------

ZEN_BLOCKS = {
    # vpmaxsd's xmm1 comes through an eliminated vmovdqa: the load-op's ReadAdvance covers the max (1 cycle a
    # round, not 8)
    "vector move eliminated": "c4e2713d07c5f96fc8",
    # movq/movl eliminated: addq's register operand follows imul through the move
    "gpr move eliminated": "480fafc04889c348031f89d9",
    # xorl %eax, %eax breaks the imul chain
    "zero idiom": "480fafc031c04801c3",
    # 3-operand and scaled LEAs take the slow ALU form (2 µops, 2 cycles), the others the AGU one
    "slow and fast lea": "488d4c1808488d4108488d1498",
    # movb $1, %al waits for imul's rax (a partial write renames the whole register)
    "partial write": "480fafc0b0014801c3",
    # vzeroupper reads nothing
    "vzeroupper": "c5f877c5f558c8",
    # x87 results feed nothing through ST(i) in LLVM's MC layer; fucomi still writes EFLAGS
    "x87": "f20f11442410dd442410dec1d9c9dbe9ddd9",
    # a load feeding 8 imuls, and 32 adds writing registers and EFLAGS: the integer register file (192 / 224
    # registers), not the ROB, bounds the rounds in flight
    "register file bound": "488b07" + "480fafc0" * 8 + "".join(f"4183{c:02x}01" for c in range(0xc0, 0xc8)) * 4,
    # a 16-load pointer chase, then 20 stores (24 loads): the store (load) queue, held to retire, bounds the rounds
    "store queue bound": "488b07" + "488b00" * 15 + "".join(f"4c8946{8 * k:02x}" for k in range(1, 16))
                         + "".join(f"4c8986{8 * k:02x}000000" for k in range(16, 21)),
    "load queue bound": "488b07" + "488b00" * 15
                        + "".join(f"4c8b{0x46 + 8 * (k % 8):02x}{8 * k:02x}" for k in range(1, 16))
                        + "".join(f"4c8b{0x86 + 8 * (k % 8):02x}{8 * k:02x}000000" for k in range(16, 25)),
    # a vsqrtsd chain and 30 vaddsd waiting on it: the 64-entry FP scheduler fills
    "fp scheduler bound": "c5fb1007" + "c5fb51c0" * 6 + "c56b58c8c56358d0c55b58d8c55358e0c54b58e8c57358c0" * 5,
}


@pytest.mark.parametrize("mcpu", ["znver3", "znver4"])
def test_zen_matches_llvm_mca(mcpu: str) -> None:
    blocks = [decode_block(h) for h in ZEN_BLOCKS.values()]
    table = default_table(blocks, mcpu)
    ours = simulate(blocks, table).tolist()
    assert dict(zip(ZEN_BLOCKS, ours)) == {name: _mca(b, mcpu) for name, b in zip(ZEN_BLOCKS, blocks)}
    assert ours == [simulate_reference(b, table) for b in blocks]


def test_zen_mechanisms_are_what_matches() -> None:
    """Each mechanism changes the result: without it the simulator leaves llvm-mca (the tables come from it)."""
    from dataclasses import replace

    blocks = {name: decode_block(h) for name, h in ZEN_BLOCKS.items()}
    table = default_table(list(blocks.values()), "znver3")
    assert {"MOV64rr", "MOV32rr", "VMOVDQArr"} <= set(table.eliminated_moves)
    assert dict(table.register_files) == {"gpr": 192, "vec": 160} and table.retire_width == 8
    lea = blocks["slow and fast lea"].instructions
    assert [i.key for i in lea] == ["LEA64r@slow", "LEA64r", "LEA64r@slow"]
    assert table.rows["LEA64r@slow"].uops == 2 and table.rows["LEA64r"].uops == 1
    no_elimination = replace(table, eliminated_moves=())
    assert simulate([blocks["vector move eliminated"]], no_elimination)[0] > 7 * 100
    no_files = replace(table, register_files=())
    assert simulate([blocks["partial write"]], no_files)[0] != _mca(blocks["partial write"], "znver3")
    assert simulate([blocks["register file bound"]], no_files)[0] < _mca(blocks["register file bound"], "znver3")
    assert dict(table.queues) == {"load": 72, "store": 64}
    assert {(b, n) for b, n, _ in table.buffers} == {("Zn3Int", 96), ("Zn3FP", 64), ("Zn3Load", 72), ("Zn3Store", 64)}
    no_queues, no_buffers = replace(table, queues=()), replace(table, buffers=())
    for name in ("store queue bound", "load queue bound"):
        assert simulate([blocks[name]], no_queues)[0] < _mca(blocks[name], "znver3")
    assert simulate([blocks["fp scheduler bound"]], no_buffers)[0] < _mca(blocks["fp scheduler bound"], "znver3")


def test_zen4_differs_from_zen3_where_llvm_mca_does() -> None:
    blocks = [decode_block(h) for h in ZEN_BLOCKS.values()]
    zen3, zen4, zen5 = (default_table(blocks, m) for m in ("znver3", "znver4", "znver5"))
    assert (zen3.retire_width, zen4.retire_width, zen5.retire_width) == (8, 9, 9)
    assert dict(zen4.register_files) == {"gpr": 224, "vec": 192} == dict(zen5.register_files)
    assert zen3.rob_size == 256 and zen4.rob_size == 320
    assert any(g.endswith("FPFMisc123") for g, _ in zen4.groups) and not any(g.endswith("FPFMisc123") for g, _ in zen3.groups)


def test_old_tables_without_variant_rows_still_simulate() -> None:
    """A table made before operand variants has ``LEA64r`` only: the slow LEA falls back to that row."""
    block = decode_block(ZEN_BLOCKS["slow and fast lea"])
    table = default_table([block], "znver3")
    old = table.with_rows({k: v for k, v in table.rows.items() if "@" not in k})
    assert simulate([block], old)[0] > 0


def test_memory_forwarding_chains_a_load_to_the_older_store_of_its_address() -> None:
    """With ``memory_forwarding`` a read-modify-write of one address is a chain from iteration to iteration (the
    harness's registers all hold one address); without it, llvm-mca's view, the iterations overlap. A store and a
    load of different addresses are unaffected."""
    from dataclasses import replace

    rmw, apart, meeting = (decode_block(h) for h in ("480107", "48894708488b5e10", "48894708488b5e08"))
    table = default_table([rmw, apart, meeting], "znver3")
    on = replace(table, memory_forwarding=1)
    row = table.rows[rmw.instructions[0].key]
    assert simulate([rmw], on)[0] >= 100 * row.latency > simulate([rmw], table)[0]  # one iteration after the other
    assert simulate([apart], on)[0] == simulate([apart], table)[0]
    assert simulate([meeting], on)[0] >= simulate([meeting], table)[0]
    assert [simulate_reference(b, on) for b in (rmw, apart, meeting)] == list(simulate([rmw, apart, meeting], on))
    sooner = replace(on, forwarding_advance=2)  # the fed read-modify-write delivers 2 cycles before its latency
    assert simulate([rmw], sooner)[0] == pytest.approx(simulate([rmw], on)[0] - 200, abs=5)
    assert simulate([apart], sooner)[0] == simulate([apart], on)[0]  # no load is fed: nothing changes
    assert simulate_reference(rmw, sooner) == simulate([rmw], sooner)[0]
    assert simulate([rmw], replace(on, stack_forwarding_advance=2))[0] == simulate([rmw], on)[0]  # (%rdi): no stack slot
    later = replace(on, forwarding_advance=-3)  # a forward slower than a cache hit
    assert simulate([rmw], later)[0] == pytest.approx(simulate([rmw], on)[0] + 300, abs=5)


def test_with_memory_forwarding_a_store_no_longer_waits_for_older_loads() -> None:
    """``movq %r13, 24(%rbx); movq 24(%r12), %rdx; cmpq $0, 8(%rdx)``: the load reads what this iteration stored,
    and nothing carries over to the next iteration (measured: 0.76 cycles per iteration on Sapphire Rapids). With
    llvm-mca's rule that a store waits for every older load, the next iteration's store would wait for this
    iteration's second load, and the forwarded load behind it: a chain of both loads' latency per iteration."""
    from dataclasses import replace

    block = decode_block("4c896b18498b54241848837a0800")
    on = replace(default_table([block], "znver3"), memory_forwarding=1)
    load = on.rows[block.instructions[1].key]
    assert simulate([block], on)[0] < 100 * load.latency
    assert simulate_reference(block, on) == simulate([block], on)[0]


def test_a_fed_load_chains_to_its_store_s_data_not_to_the_store_s_latency() -> None:
    """``movq 8(%rsp), %rax; addq $1, %rax; movq %rax, 8(%rsp)``: a chain through a stack slot from iteration to
    iteration, load, add, store. The value leaves with the store's data, so the store row's latency is no part of
    it; the load's latency less the stack advance and the add's are."""
    from dataclasses import replace

    block = decode_block("488b4424084883c0014889442408")
    table = replace(default_table([block], "znver3"), memory_forwarding=1)
    load, add, store = (i.key for i in block.instructions)
    slow_store = table.with_rows({**table.rows, store: replace(table.rows[store], latency=30)})
    slower = 30 - table.rows[store].latency  # the last iteration's store retires that much later, once
    assert simulate([block], slow_store)[0] == pytest.approx(simulate([block], table)[0] + slower, abs=2)
    chain = table.rows[load].latency + table.rows[add].latency
    assert simulate([block], table)[0] == pytest.approx(100 * chain, rel=0.05)
    renamed = replace(table, stack_forwarding_advance=table.rows[load].latency)
    assert simulate([block], renamed)[0] == pytest.approx(100 * table.rows[add].latency, rel=0.1)
    assert simulate_reference(block, renamed) == simulate([block], renamed)[0]
