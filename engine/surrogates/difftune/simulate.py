"""An llvm-mca-like cycle simulator of a basic block under an explicit ParamTable.

Stages follow llvm-mca (out-of-order, default options). Each cycle: retire (in order, executed
in an earlier cycle), release resources, mark executed instructions, issue ready instructions
(best rank first: source index minus dependent reads, then age; an issue can make dependants
ready in the same cycle when ReadAdvance covers the latency), then dispatch in order bounded by
the dispatch width (an instruction with more µops than the width carries over), ROB µops and the
unified scheduler's size. A read waits max(0, latency − ReadAdvance[slot]) cycles after its
producers issue. Zero idioms and dependency breakers ignore their explicit inputs; zero-latency
instructions without resources issue at dispatch. Loads never wait for stores (``-noalias``);
stores wait until the previous store and the previous load group have issued (llvm-mca's LSU
memory groups), unless the table sets ``memory_forwarding``: then a load waits only for the store that
feeds it in the harness (for the store's data, not its latency), delivers after its own latency less
``forwarding_advance`` (``stack_forwarding_advance`` for a stack slot), and nothing else orders memory
(a store waiting for every older load chained each iteration to the last one through the fed load, a
dependency the measured cores do not have). Groups pick a unit the way llvm-mca's ResourceManager does (round-robin masks,
most constrained group first). Total cycles = last retire cycle + 1, llvm-mca's ``Total Cycles``.

Models with register files (Zen, ``ParamTable.register_files``): each register write takes a physical
register of its file from dispatch to retire (zero idioms, eliminated moves and partial writes take none) and
dispatch waits for one; a GPR is renamed whole, so an 8/16-bit write becomes the register's latest producer and
cannot finish before the previous one (llvm-mca's partial-write false dependency: issued once the previous
producer has fewer cycles left than the write's latency). Moves listed in ``eliminated_moves`` are renamed
away at dispatch: they read nothing, execute at once, and their destination aliases the source register
(resolved when read, as llvm-mca does) until it is written again. Models with several scheduler buffers
(``buffers``: an instruction takes an entry of each buffer holding one of its resources, from dispatch to
issue) and load/store queues (``queues``: from dispatch to retire) stall dispatch when one is full.

One implementation serves both: ``simulate_reference`` runs the core as plain Python,
``simulate`` runs the same function compiled by numba.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numba
import numpy as np
import pandas as pd

from engine.errors import UserError, brief
from engine.surrogates.difftune.categories import harness_forwarding, stack_slot
from engine.surrogates.difftune.decode import FLAGS, Block, Instruction
from engine.surrogates.difftune.params import OpParams, ParamTable

# A part with its sub-parts: what a read depends on and what a write updates (decode.py's rule).
_SUB_PARTS = {"q": "qdwlh", "d": "dwlh", "w": "wlh", "l": "l", "h": "h", "x": "x", "y": "yx", "z": "zyx", "-": "-"}
_SUPER = {"d": "q", "x": "yz", "y": "z"}


@dataclass(frozen=True)
class Machine:
    """The table's resource model as arrays: units, sub-units, groups and selection masks."""

    unit_first: np.ndarray
    unit_nsub: np.ndarray
    group_members: np.ndarray  # [G, U] bool
    globals_: np.ndarray  # dispatch width, rob, retire width, scheduler size, GPR and vector files, LQ, SQ
    buffer_size: np.ndarray  # [B] entries of each scheduler buffer


@dataclass(frozen=True)
class Prepared:
    """One block against one table, flattened for the core."""

    uops: np.ndarray
    lat: np.ndarray
    flags: np.ndarray  # [n, 4]: may_load, may_store, uses resources, joins the LSU's memory groups
    res: np.ndarray  # [n, R, 4]: kind (0 unit, 1 group, -1 none), index, cycles, units needed
    res_key: np.ndarray  # [n, R]: llvm-mca's ordering of an instruction's resources (mask order)
    use_keys: np.ndarray  # [n, K, 5] register-mapping keys read, -1 padded
    use_adv: np.ndarray  # [n, K]
    def_keys: np.ndarray  # [n, D, 5]
    move_keys: np.ndarray  # [n, 5, 2]: an eliminated move's (source, destination) keys, part by part; -1 otherwise
    prf_cost: np.ndarray  # [n, 2]: physical registers taken in the GPR and the vector file
    in_buffer: np.ndarray  # [n, B]: 1 where the instruction takes an entry of scheduler buffer b


def machine(table: ParamTable) -> Machine:
    """Array view of a table's resource model (shared by every block)."""
    units = [u for u, _ in table.units]
    nsub = np.array([n for _, n in table.units], dtype=np.int64)
    first = np.concatenate([[0], np.cumsum(nsub)[:-1]]).astype(np.int64)
    members = np.zeros((max(len(table.groups), 1), len(units)), dtype=np.bool_)
    for g, (_, mem) in enumerate(table.groups):
        for m in mem:
            members[g, units.index(m)] = True
    files, queues = dict(table.register_files), dict(table.queues)
    glob = np.array([table.dispatch_width, table.rob_size, table.retire_width, table.scheduler_size,
                     files.get("gpr", 0), files.get("vec", 0), queues.get("load", 0), queues.get("store", 0)],
                    dtype=np.int64)
    return Machine(first, nsub, members, glob, np.array([n for _, n, _ in table.buffers] or [0], dtype=np.int64))


def row_of(ins: Instruction, table: ParamTable) -> OpParams | None:
    """The instruction's row: its key's, else (a table made before operand variants) its base key's."""
    row = table.rows.get(ins.key)
    return table.rows.get(ins.base_key) if row is None else row


def _keys(reg: str, parts: str, ids: dict[str, int]) -> list[int]:
    return [ids.setdefault(f"{reg}.{p}", len(ids)) for p in parts]


def prepare(block: Block, table: ParamTable) -> Prepared:
    """Flatten a block's instructions with their table rows; a missing key is a UserError."""
    units = [u for u, _ in table.units]
    groups = [g for g, _ in table.groups]
    members = dict(table.groups)
    n = len(block.instructions)
    rows = []
    for ins in block.instructions:
        row = row_of(ins, table)
        if row is None:
            raise UserError(f"key: the table has no row for {brief(ins.key)} ({brief(ins.asm)})")
        rows.append(row)
    width_r = max([len(r.port_cycles) for r in rows] + [1])
    width_u = max([len(i.uses) for i in block.instructions] + [1])
    width_d = max([len(i.defs) for i in block.instructions] + [1])
    res = np.full((n, width_r, 4), -1, dtype=np.int64)
    res_key = np.zeros((n, width_r), dtype=np.int64)
    use_keys = np.full((n, width_u, 5), -1, dtype=np.int64)
    use_adv = np.zeros((n, width_u), dtype=np.int64)
    def_keys = np.full((n, width_d, 5), -1, dtype=np.int64)
    flags = np.zeros((n, 4), dtype=np.int64)
    move_keys = np.full((n, 5, 2), -1, dtype=np.int64)
    in_buffer = np.zeros((n, max(len(table.buffers), 1)), dtype=np.int64)
    buffers = [set(m) for _, _, m in table.buffers]
    prf_cost = np.zeros((n, 2), dtype=np.int64)
    ids: dict[str, int] = {}
    dependent = set(table.dependent_idioms)
    eliminated = set(table.eliminated_moves)
    renames_gprs = any(kind == "gpr" for kind, _ in table.register_files)
    partial_uses = []
    latency = np.array([r.latency for r in rows], dtype=np.int64)
    for i, (ins, row) in enumerate(zip(block.instructions, rows, strict=True)):
        entries = []
        for name, cycles in row.port_cycles:
            if cycles <= 0:
                continue
            if name in members:
                mem = set(members[name])
                mask = (1 << (len(units) + groups.index(name))) | sum(1 << units.index(m) for m in mem)
                entries.append((bin(mask).count("1"), mask, 1, groups.index(name), cycles, mem))
            else:
                entries.append((1, 1 << units.index(name), 0, units.index(name), cycles, {name}))
        entries.sort(key=lambda e: (e[0], e[1]))
        for r, (_, mask, kind, index, cycles, mem) in enumerate(entries):
            need = 1
            if kind == 1:  # llvm-mca: a group needs one more ready unit per contained resource used
                need += sum(1 for e in entries[:r] if e[5] <= mem)
                need = min(need, len(mem))
            res[i, r] = (kind, index, cycles, need)
            res_key[i, r] = mask
        # with the harness's own dependencies through memory, llvm-mca's conservative ordering goes
        flags[i] = (ins.may_load, ins.may_store, bool(entries), (ins.may_load or ins.may_store) and not table.memory_forwarding)
        for b, buffer in enumerate(buffers):  # llvm-mca: a buffer every resource inside it brings along
            in_buffer[i, b] = any(e[5] <= buffer for e in entries)
        independent = (ins.zero_idiom or ins.dep_breaking) and ins.key not in dependent
        move = _eliminable(ins, eliminated)
        if move is not None:  # renamed away: no reads, no register taken; readers follow the source
            src, dst = (_keys(reg, move[2], ids) for reg in move[:2])
            move_keys[i, : len(src), 0] = src
            move_keys[i, : len(dst), 1] = dst
            continue
        for k, use in enumerate(ins.uses):
            if independent and use.reg != FLAGS:
                continue
            ks = _keys(use.reg, _SUB_PARTS[use.part], ids)
            use_keys[i, k, : len(ks)] = ks
            use_adv[i, k] = row.read_advance[use.slot] if use.slot < len(row.read_advance) else 0
        zero = ins.zero_idiom and ins.key not in dependent
        for k, d in enumerate(ins.defs):
            parts = _SUB_PARTS[d.part] + (_SUPER.get(d.part, "") if d.clears_super else "")
            gpr = d.part in "qdwlh"
            if renames_gprs and gpr:
                parts = "qdwlh"  # a GPR is renamed whole: every write is the register's latest
                if d.part in "wlh":  # a partial write waits for the register's previous producer
                    partial_uses.append((i, _keys(d.reg, "q", ids), max(0, row.latency - 1)))
            ks = _keys(d.reg, parts, ids)
            def_keys[i, k, : len(ks)] = ks
            if not zero and not (gpr and d.part in "wlh"):
                if gpr or d.reg == FLAGS:
                    prf_cost[i, 0] += 1
                elif d.part in "xyz" or d.reg.startswith("MM"):
                    prf_cost[i, 1] += 1
    if table.memory_forwarding:  # a store writes its address like a register; a load it feeds reads it
        forwarding = harness_forwarding(block)
        if forwarding.loads:
            stored = np.full((n, 1, 5), -1, dtype=np.int64)
            for i in forwarding.loads:
                advance = table.stack_forwarding_advance if stack_slot(block.instructions[i].asm) else table.forwarding_advance
                latency[i] = max(0, latency[i] - advance)
            for i, address in forwarding.loads.items():
                # the value leaves with the store's data: another instruction's store latency is no part of the
                # chain (its ReadAdvance cancels it), a read-modify-write's own latency is
                source = forwarding.source(i)
                partial_uses.append((i, _keys(f"memory@{address}", "-", ids), 0 if source == i else int(latency[source])))
            for i, address in forwarding.stores.items():
                stored[i, 0, 0] = _keys(f"memory@{address}", "-", ids)[0]
            def_keys = np.concatenate([def_keys, stored], axis=1)
    if partial_uses:  # more read slots: the false dependencies and the forwarded stores
        slots = np.zeros(n, dtype=np.int64)
        for i, _, _ in partial_uses:
            slots[i] += 1
        extra = np.full((n, int(slots.max()), 5), -1, dtype=np.int64)
        extra_adv = np.zeros((n, int(slots.max())), dtype=np.int64)
        slots[:] = 0
        for i, ks, adv in partial_uses:
            extra[i, slots[i], : len(ks)] = ks
            extra_adv[i, slots[i]] = adv
            slots[i] += 1
        use_keys = np.concatenate([use_keys, extra], axis=1)
        use_adv = np.concatenate([use_adv, extra_adv], axis=1)
    return Prepared(np.array([r.uops for r in rows], dtype=np.int64), latency,
                    flags, res, res_key, use_keys, use_adv, def_keys, move_keys, prf_cost, in_buffer)


def _eliminable(ins: Instruction, eliminated: set[str]) -> tuple[str, str, str] | None:
    """(source, destination, parts) of a register move the table eliminates at renaming; None otherwise. Like
    llvm-mca, only a write of a whole register (a GPR's 64 or 32 bits, a vector register) is eliminated."""
    if ins.key not in eliminated or len(ins.uses) != 1 or len(ins.defs) != 1:
        return None
    use, d = ins.uses[0], ins.defs[0]
    if d.part in "qd" and use.part in "qd":
        return use.reg, d.reg, "qdwlh"
    if d.part in "xyz" and use.part == d.part:
        return use.reg, d.reg, _SUB_PARTS[d.part]
    return None


# -- the core ----------------------------------------------------------------------------------

@numba.njit(cache=True)
def _select(state: np.ndarray, sel: int, ready: int) -> int:
    """llvm-mca's round-robin choice among ready bits (highest candidate bit first)."""
    cand = ready & state[sel, 0]
    if cand == 0:
        state[sel, 0] = state[sel, 2] ^ state[sel, 1]
        state[sel, 1] = 0
        cand = ready & state[sel, 0]
        if cand == 0:
            state[sel, 0] = state[sel, 2]
            cand = ready & state[sel, 0]
    bit = 1
    while cand >> 1:
        cand >>= 1
        bit <<= 1
    state[sel, 0] &= bit | (bit - 1)
    return bit


@numba.njit(cache=True)
def _used(state: np.ndarray, sel: int, mask: int) -> None:
    if mask > state[sel, 0]:
        state[sel, 1] |= mask
        return
    state[sel, 0] &= ~mask
    if state[sel, 0] == 0:
        state[sel, 0] = state[sel, 2] ^ state[sel, 1]
        state[sel, 1] = 0


@numba.njit(cache=True)
def _free_subs(free_at: np.ndarray, first: int, nsub: int, cycle: int) -> int:
    mask = 0
    for s in range(nsub):
        if free_at[first + s] <= cycle:
            mask |= 1 << s
    return mask


@numba.njit(cache=True)
def _ready_members(members: np.ndarray, g: int, free_at: np.ndarray, first: np.ndarray, nsub: np.ndarray,
                   cycle: int) -> int:
    mask = 0
    for u in range(members.shape[1]):
        if members[g, u] and _free_subs(free_at, first[u], nsub[u], cycle) != 0:
            mask |= 1 << u
    return mask


@numba.njit(cache=True)
def _popcount(x: int) -> int:
    c = 0
    while x:
        x &= x - 1
        c += 1
    return c


@numba.njit(cache=True)
def _ready_units(free_at: np.ndarray, first: np.ndarray, nsub: np.ndarray, cycle: int) -> int:
    """Bit u set when unit u has a free sub-unit (computed once per issue, shared by every candidate)."""
    mask = 0
    for u in range(nsub.shape[0]):
        if _free_subs(free_at, first[u], nsub[u], cycle) != 0:
            mask |= 1 << u
    return mask


@numba.njit(cache=True)
def _available(i: int, res: np.ndarray, group_mask: np.ndarray, ready: int) -> bool:
    for r in range(res.shape[1]):
        kind = res[i, r, 0]
        if kind == 0:
            if not (ready >> res[i, r, 1]) & 1:
                return False
        elif kind == 1:
            if _popcount(ready & group_mask[res[i, r, 1]]) < res[i, r, 3]:
                return False
    return True


@numba.njit(cache=True)
def _use_unit(u: int, cycles: int, cycle: int, free_at: np.ndarray, first: np.ndarray, nsub: np.ndarray,
              members: np.ndarray, state: np.ndarray, n_groups: int) -> None:
    """Take one sub-unit of unit ``u`` for ``cycles`` and update the selection state like llvm-mca."""
    if nsub[u] == 1:
        sub = 0
    else:
        bit = _select(state, n_groups + u, _free_subs(free_at, first[u], nsub[u], cycle))
        sub = 0
        while (1 << sub) != bit:
            sub += 1
    free_at[first[u] + sub] = cycle + cycles
    if nsub[u] > 1:
        _used(state, n_groups + u, 1 << sub)
    if _free_subs(free_at, first[u], nsub[u], cycle) == 0:
        for g in range(n_groups):
            if members[g, u]:
                _used(state, g, 1 << u)


@numba.njit(cache=True)
def _issue_resources(i: int, res: np.ndarray, res_key: np.ndarray, cycle: int, free_at: np.ndarray,
                     first: np.ndarray, nsub: np.ndarray, members: np.ndarray, state: np.ndarray,
                     n_groups: int) -> None:
    work = np.empty(res.shape[1], dtype=np.int64)
    n_work = 0
    for r in range(res.shape[1]):
        kind = res[i, r, 0]
        if kind < 0:
            continue
        if kind == 1 and _popcount(_ready_members(members, res[i, r, 1], free_at, first, nsub, cycle)) > 1:
            work[n_work] = r
            n_work += 1
            continue
        u = res[i, r, 1]
        if kind == 1:
            ready = _ready_members(members, res[i, r, 1], free_at, first, nsub, cycle)
            if ready == 0:
                continue
            bit = _select(state, res[i, r, 1], ready)
            u = 0
            while (1 << u) != bit:
                u += 1
        _use_unit(u, res[i, r, 2], cycle, free_at, first, nsub, members, state, n_groups)
    while n_work > 0:
        counts = np.empty(n_work, dtype=np.int64)
        for a in range(n_work):
            counts[a] = _popcount(_ready_members(members, res[i, work[a], 1], free_at, first, nsub, cycle))
        for a in range(1, n_work):  # insertion sort by (ready units, mask)
            b = a
            while b > 0 and (counts[b] < counts[b - 1] or (counts[b] == counts[b - 1] and res_key[i, work[b]] < res_key[i, work[b - 1]])):
                counts[b], counts[b - 1] = counts[b - 1], counts[b]
                work[b], work[b - 1] = work[b - 1], work[b]
                b -= 1
        kept = 0
        for a in range(n_work):
            r = work[a]
            ready = _ready_members(members, res[i, r, 1], free_at, first, nsub, cycle)
            if a == 0 or _popcount(ready) == 1:
                if ready != 0:
                    bit = _select(state, res[i, r, 1], ready)
                    u = 0
                    while (1 << u) != bit:
                        u += 1
                    _use_unit(u, res[i, r, 2], cycle, free_at, first, nsub, members, state, n_groups)
            else:
                work[kept] = r
                kept += 1
        n_work = kept


@numba.njit(cache=True)
def _next_event(cycle: int, oldest: int, next_dispatch: int, times: np.ndarray, waiting: np.ndarray,
                n_waiting: int, in_flight: np.ndarray, n_in_flight: int, pend: np.ndarray, rt: np.ndarray,
                free_at: np.ndarray) -> int:
    """After a cycle in which nothing happened, the next cycle in which something can: nothing changes until
    a retire, a memory completion, a read becoming ready or a sub-unit's release (skipping is exact)."""
    nxt = -1
    if oldest < next_dispatch and times[oldest, 3] >= 0:
        nxt = times[oldest, 3] + 1
    for a in range(n_in_flight):
        t = times[in_flight[a], 3]
        nxt = t if nxt < 0 else min(nxt, t)
    for a in range(n_waiting):
        j = waiting[a]
        if pend[j] == 0 and rt[j] > cycle:
            nxt = rt[j] if nxt < 0 else min(nxt, rt[j])
    for s in range(free_at.shape[0]):
        if free_at[s] > cycle:
            nxt = free_at[s] if nxt < 0 else min(nxt, free_at[s])
    return max(cycle + 1, nxt)


@numba.njit(cache=True)
def _core(uops: np.ndarray, lat: np.ndarray, flags: np.ndarray, res: np.ndarray, res_key: np.ndarray,
          use_keys: np.ndarray, use_adv: np.ndarray, def_keys: np.ndarray, move_keys: np.ndarray,
          prf_cost: np.ndarray, in_buffer: np.ndarray, first: np.ndarray, nsub: np.ndarray, members: np.ndarray,
          glob: np.ndarray, buffer_size: np.ndarray, iterations: int, times: np.ndarray) -> int:
    """Run ``iterations`` copies of the block; fills ``times`` [N, 5] (dispatch, ready, issue,
    executed, retired) and returns total cycles."""
    n = uops.shape[0]
    total = n * iterations
    width, rob_size, retire_width, rs_size = glob[0], glob[1], glob[2], glob[3]
    n_units = nsub.shape[0]
    n_groups = members.shape[0]
    n_keys = 1 + max(use_keys.max(), def_keys.max(), move_keys.max())
    prf_size = glob[4:6]
    prf_used = np.zeros(2, dtype=np.int64)
    has_prf = prf_size[0] > 0 or prf_size[1] > 0
    lq_size, sq_size = glob[6], glob[7]
    lq_used = 0
    sq_used = 0
    n_buffers = buffer_size.shape[0] if buffer_size[0] > 0 else 0
    buffer_used = np.zeros(buffer_size.shape[0], dtype=np.int64)
    alias = np.full(n_keys, -1, dtype=np.int64)  # an eliminated move's destination reads its source's key
    free_at = np.zeros(nsub.sum(), dtype=np.int64)
    state = np.zeros((n_groups + n_units, 3), dtype=np.int64)
    group_mask = np.zeros(n_groups, dtype=np.int64)
    for g in range(n_groups):
        for u in range(n_units):
            if members[g, u]:
                group_mask[g] |= 1 << u
        state[g, 0] = group_mask[g]
        state[g, 2] = group_mask[g]
    for u in range(n_units):
        state[n_groups + u, 0] = (1 << nsub[u]) - 1
        state[n_groups + u, 2] = (1 << nsub[u]) - 1
    map_writer = np.full(n_keys, -1, dtype=np.int64)
    map_def = np.full(n_keys, -1, dtype=np.int64)
    rt = np.zeros(total, dtype=np.int64)
    pend = np.zeros(total, dtype=np.int64)
    users = np.zeros(total, dtype=np.int64)
    group = np.zeros(total, dtype=np.int64)
    edge_cap = total * use_keys.shape[1] * use_keys.shape[2] + 1
    e_reader = np.empty(edge_cap, dtype=np.int64)
    e_adv = np.empty(edge_cap, dtype=np.int64)
    e_next = np.empty(edge_cap, dtype=np.int64)
    head = np.full(total, -1, dtype=np.int64)
    n_edges = 0
    # LSU memory groups (ids from 1): instructions, issued, executed, predecessors, released preds
    grp = np.zeros((total + 1, 5), dtype=np.int64)
    s_next = np.empty(2 * total + 1, dtype=np.int64)
    s_group = np.empty(2 * total + 1, dtype=np.int64)
    s_head = np.full(total + 1, -1, dtype=np.int64)
    n_succ = 0
    n_grp = 0
    cur_load = 0
    cur_store = 0
    for j in range(total):
        times[j, 0] = -1
        times[j, 1] = -1
        times[j, 2] = -1
        times[j, 3] = -1
        times[j, 4] = -1
    waiting = np.empty(total, dtype=np.int64)  # dispatched, not issued, in program order
    n_waiting = 0
    in_flight = np.empty(total, dtype=np.int64)  # issued memory instructions still executing
    n_in_flight = 0
    pairs_w = np.empty(use_keys.shape[2], dtype=np.int64)
    pairs_d = np.empty(use_keys.shape[2], dtype=np.int64)
    next_dispatch = 0
    oldest = 0  # first instruction not yet retired
    rob_used = 0
    rs_used = 0
    carry = 0
    cycle = 0
    last_retire = 0
    while oldest < total:
        # retire
        busy = carry > 0
        retired = 0
        while oldest < next_dispatch and times[oldest, 3] >= 0 and times[oldest, 3] < cycle:
            if retire_width > 0 and retired == retire_width:
                break
            times[oldest, 4] = cycle
            rob_used -= min(uops[oldest % n], rob_size)
            if has_prf:
                for f in range(2):
                    if prf_size[f] > 0:
                        prf_used[f] -= min(prf_cost[oldest % n, f], prf_size[f])
            if lq_size > 0 and flags[oldest % n, 0]:
                lq_used -= 1
            if sq_size > 0 and flags[oldest % n, 1]:
                sq_used -= 1
            last_retire = cycle
            retired += 1
            oldest += 1
            busy = True
        # executed this cycle: LSU bookkeeping
        kept = 0
        for a in range(n_in_flight):
            j = in_flight[a]
            if times[j, 3] != cycle:
                in_flight[kept] = j
                kept += 1
                continue
            g = group[j]
            grp[g, 2] += 1
            busy = True
            if grp[g, 2] == grp[g, 0]:
                if cur_load == g:
                    cur_load = 0
                if cur_store == g:
                    cur_store = 0
        n_in_flight = kept
        # issue
        while True:
            best = -1
            best_at = 0
            best_rank = 0
            ready = _ready_units(free_at, first, nsub, cycle)
            for a in range(n_waiting):
                j = waiting[a]
                if times[j, 0] >= cycle or pend[j] > 0 or rt[j] > cycle:
                    continue
                if group[j] > 0 and grp[group[j], 4] < grp[group[j], 3]:
                    continue
                rank = j - users[j]
                if best >= 0 and (rank > best_rank or (rank == best_rank and j > best)):
                    continue
                if _available(j % n, res, group_mask, ready):
                    best = j
                    best_at = a
                    best_rank = rank
            if best < 0:
                break
            n_waiting -= 1
            for a in range(best_at, n_waiting):
                waiting[a] = waiting[a + 1]
            busy = True
            i = best % n
            if times[best, 1] < 0:
                times[best, 1] = max(rt[best], times[best, 0])
            _issue_resources(i, res, res_key, cycle, free_at, first, nsub, members, state, n_groups)
            if flags[i, 2] and rs_size > 0:
                rs_used -= 1
            for b in range(n_buffers):
                buffer_used[b] -= in_buffer[i, b]
            times[best, 2] = cycle
            times[best, 3] = cycle + lat[i]
            e = head[best]
            while e >= 0:
                r = e_reader[e]
                rt[r] = max(rt[r], cycle + max(0, lat[i] - e_adv[e]))
                pend[r] -= 1
                e = e_next[e]
            g = group[best]
            if g > 0 and lat[i] > 0:
                in_flight[n_in_flight] = best
                n_in_flight += 1
            if g > 0:
                grp[g, 1] += 1
                if grp[g, 1] == grp[g, 0]:
                    s = s_head[g]
                    while s >= 0:
                        grp[s_group[s], 4] += 1
                        s = s_next[s]
                if lat[i] == 0:
                    grp[g, 2] += 1
                    if grp[g, 2] == grp[g, 0]:
                        if cur_load == g:
                            cur_load = 0
                        if cur_store == g:
                            cur_store = 0
        # dispatch
        avail = width
        if carry > 0:
            avail = 0 if carry >= width else width - carry
            carry -= width - avail
        while next_dispatch < total:
            j = next_dispatch
            i = j % n
            if min(uops[i], width) > avail or rob_size - rob_used < min(uops[i], rob_size):
                break
            if flags[i, 2] and rs_size > 0 and rs_used >= rs_size:
                break
            if has_prf and ((prf_size[0] > 0 and prf_used[0] + min(prf_cost[i, 0], prf_size[0]) > prf_size[0]) or
                            (prf_size[1] > 0 and prf_used[1] + min(prf_cost[i, 1], prf_size[1]) > prf_size[1])):
                break
            if (lq_size > 0 and flags[i, 0] and lq_used >= lq_size) or (sq_size > 0 and flags[i, 1] and sq_used >= sq_size):
                break
            full = False
            for b in range(n_buffers):
                if in_buffer[i, b] and buffer_used[b] >= buffer_size[b]:
                    full = True
            if full:
                break
            for b in range(n_buffers):
                buffer_used[b] += in_buffer[i, b]
            if lq_size > 0 and flags[i, 0]:
                lq_used += 1
            if sq_size > 0 and flags[i, 1]:
                sq_used += 1
            if has_prf:
                for f in range(2):
                    if prf_size[f] > 0:
                        prf_used[f] += min(prf_cost[i, f], prf_size[f])
            if uops[i] > width:
                carry = uops[i] - width
                avail = 0
            else:
                avail -= uops[i]
            times[j, 0] = cycle
            busy = True
            rob_used += min(uops[i], rob_size)
            if flags[i, 2] and rs_size > 0:
                rs_used += 1
            for k in range(use_keys.shape[1]):
                n_pairs = 0
                for q in range(use_keys.shape[2]):
                    key = use_keys[i, k, q]
                    if key >= 0 and alias[key] >= 0:
                        key = alias[key]
                    if key < 0 or map_writer[key] < 0:
                        continue
                    dup = False
                    for p in range(n_pairs):
                        if pairs_w[p] == map_writer[key] and pairs_d[p] == map_def[key]:
                            dup = True
                    if not dup:
                        pairs_w[n_pairs] = map_writer[key]
                        pairs_d[n_pairs] = map_def[key]
                        n_pairs += 1
                for p in range(n_pairs):
                    w = pairs_w[p]
                    if times[w, 2] >= 0:
                        rt[j] = max(rt[j], times[w, 2] + max(0, lat[w % n] - use_adv[i, k]))
                    else:
                        users[w] += 1
                        pend[j] += 1
                        e_reader[n_edges] = j
                        e_adv[n_edges] = use_adv[i, k]
                        e_next[n_edges] = head[w]
                        head[w] = n_edges
                        n_edges += 1
            for k in range(def_keys.shape[1]):
                for q in range(def_keys.shape[2]):
                    key = def_keys[i, k, q]
                    if key >= 0:
                        map_writer[key] = j
                        map_def[key] = k
                        alias[key] = -1
            for q in range(move_keys.shape[1]):
                src = move_keys[i, q, 0]
                if src >= 0:
                    alias[move_keys[i, q, 1]] = alias[src] if alias[src] >= 0 else src
            if flags[i, 3]:
                if flags[i, 1]:
                    n_grp += 1
                    g = n_grp
                    grp[g, 0] = 1
                    for pred in (cur_load, cur_store):
                        if pred > 0 and not (grp[pred, 1] == grp[pred, 0] and grp[pred, 1] > grp[pred, 2]):
                            grp[g, 3] += 1
                            s_group[n_succ] = g
                            s_next[n_succ] = s_head[pred]
                            s_head[pred] = n_succ
                            n_succ += 1
                        if cur_load == cur_store:
                            break
                    cur_store = g
                    if flags[i, 0]:
                        cur_load = g
                else:
                    executing = cur_load > 0 and grp[cur_load, 1] == grp[cur_load, 0] and grp[cur_load, 1] > grp[cur_load, 2]
                    if cur_load == 0 or cur_load <= cur_store or executing:
                        n_grp += 1
                        cur_load = n_grp
                    grp[cur_load, 0] += 1
                    g = cur_load
                group[j] = g
            next_dispatch += 1
            if lat[i] == 0 and not flags[i, 2] and pend[j] == 0 and rt[j] <= cycle and group[j] == 0:
                times[j, 1] = cycle
                times[j, 2] = cycle
                times[j, 3] = cycle
                e = head[j]
                while e >= 0:
                    r = e_reader[e]
                    rt[r] = max(rt[r], cycle)
                    pend[r] -= 1
                    e = e_next[e]
            else:
                waiting[n_waiting] = j
                n_waiting += 1
        if busy:
            cycle += 1
        else:
            cycle = _next_event(cycle, oldest, next_dispatch, times, waiting, n_waiting, in_flight, n_in_flight,
                                pend, rt, free_at)
    return last_retire + 1


def _run(prep: Prepared, mach: Machine, iterations: int, compiled: bool) -> tuple[int, np.ndarray]:
    if iterations < 1:
        raise UserError(f"iterations: must be ≥ 1, got {brief(iterations)}")
    times = np.empty((len(prep.uops) * iterations, 5), dtype=np.int64)
    fn = _core if compiled else _core.py_func
    cycles = fn(prep.uops, prep.lat, prep.flags, prep.res, prep.res_key, prep.use_keys, prep.use_adv,
                prep.def_keys, prep.move_keys, prep.prf_cost, prep.in_buffer, mach.unit_first, mach.unit_nsub,
                mach.group_members, mach.globals_, mach.buffer_size, iterations, times)
    return int(cycles), times


def simulate_reference(block: Block, table: ParamTable, iterations: int = 100) -> int:
    """Total cycles, computed by the core run as plain Python (readable, slow)."""
    return _run(prepare(block, table), machine(table), iterations, compiled=False)[0]


def simulate(blocks: Sequence[Block], table: ParamTable, iterations: int = 100) -> np.ndarray:
    """Total cycles per block, by the numba-compiled core."""
    mach = machine(table)
    return np.array([_run(prepare(b, table), mach, iterations, compiled=True)[0] for b in blocks], dtype=np.int64)


def simulated(blocks: Sequence[Block], table: ParamTable) -> np.ndarray:
    """:func:`simulate` where the table has a row for every opcode of a block, NaN elsewhere (it cannot be
    simulated): what scoring a table on blocks it was not built for needs."""
    out = np.full(len(blocks), np.nan)
    usable = [i for i, b in enumerate(blocks) if all(row_of(x, table) is not None for x in b.instructions)]
    if usable:
        out[usable] = simulate([blocks[i] for i in usable], table)
    return out


def timeline(block: Block, table: ParamTable, iterations: int = 3) -> pd.DataFrame:
    """Per instruction and iteration: dispatch, ready, issue, executed and retire cycles (llvm-mca -timeline)."""
    _, times = _run(prepare(block, table), machine(table), iterations, compiled=True)
    n = len(block.instructions)
    frame = pd.DataFrame(times, columns=["dispatched", "ready", "issued", "executed", "retired"])
    frame.insert(0, "iteration", np.arange(len(frame)) // n)
    frame.insert(1, "index", np.arange(len(frame)) % n)
    frame.insert(2, "asm", [block.instructions[i].asm for i in frame["index"]])
    return frame
