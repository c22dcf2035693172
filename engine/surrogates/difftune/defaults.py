"""Default parameter tables read out of llvm-mca-19 for one ``-mcpu``.

llvm-mca prints, per instruction, µops, latency and resource pressure spread over *units*; the
net cycles per group are recovered by a greedy integer decomposition over the model's groups
(largest group first), checked and, where it leaves a residual, replaced by non-negative least
squares (scipy.optimize.nnls). ReadAdvance is printed nowhere, so it is probed: a producer of
known latency L feeds one operand slot of the instruction, and the consumer issues
max(0, L − advance) cycles after the producer (llvm-mca's timeline shows both cycles).

Groups are the models' own where known (Haswell, Skylake, Sandy/Ivy Bridge, Sapphire Rapids, Zen 3/4; other
models' are inferred from the spreads). Register files and the moves a model eliminates at renaming are
probed with ``-register-file-stats`` (which file a GPR and a vector write map into; whether a move is
eliminated); the retire width is the model's RetireControlUnit (Zen 3: 8, Zen 4 and Zen 5, which llvm 19
models as Zen 4: 9). Scheduler buffers come from ``-scheduler-stats``; the load and store queues are counted
as the loads (stores) dispatched behind a long division before the stall ``-dispatch-stats`` puts on them.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from collections.abc import Iterable, Iterator, Sequence
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import nnls

from engine.errors import UserError, brief
from engine.surrogates.difftune.decode import FLAGS, Block, Instruction
from engine.surrogates.difftune.params import N_SLOTS, OpParams, ParamTable, load

LLVM_MCA = "llvm-mca-19"
BATCH = 100


def _zen_groups(z: str) -> dict[str, tuple[str, ...]]:
    """The Zen 3 / Zen 4 models' ProcResGroups, one per member set (llvm-mca uses the first of groups with
    equal members and zeroes the others). The scheduler groups (all integer, all FP pipes) only model
    buffers and never keep net cycles, like Intel's all-port groups."""
    fp = {"FPU0123": "0123", "FPFMul01": "01", "FPFAdd01": "23", "FPFMisc12": "12", "FPVMul01": "03"}
    if z == "Zn4":
        fp["FPFMisc123"] = "123"
    groups = {f"{z}ALU0123": tuple(f"{z}ALU{c}" for c in "0123"), f"{z}AGU012": tuple(f"{z}AGU{c}" for c in "012"),
              f"{z}BRU01": (f"{z}ALU0", f"{z}BRU1"), f"{z}ALU03": (f"{z}ALU0", f"{z}ALU3"),
              f"{z}ALU12": (f"{z}ALU1", f"{z}ALU2")}
    groups.update({f"{z}{name}": tuple(f"{z}FP{c}" for c in pipes) for name, pipes in fp.items()})
    return groups


# The all-port groups (HWPortAny...) only model the scheduler buffer: they never keep net cycles.
_HSW_LIKE = ("01", "23", "237", "04", "05", "06", "15", "16", "56", "015", "056", "0156")
# ProcResGroups of the LLVM 19 X86 scheduling models (names and members as llvm-mca knows them).
_SPR = ("00_01", "00_01_05", "00_01_05_06", "00_05", "00_05_06", "00_06", "01_05", "01_05_10", "02_03", "02_03_11",
        "07_08", "00_01_05_06_10", "04_09", "02_03_07_08_11")
_GROUPS: dict[str, dict[str, tuple[str, ...]]] = {
    "HW": {f"HWPort{g}": tuple(f"HWPort{c}" for c in g) for g in _HSW_LIKE},
    "SKL": {f"SKLPort{g}": tuple(f"SKLPort{c}" for c in g) for g in _HSW_LIKE},
    "SB": {"SBPort01": ("SBPort0", "SBPort1"), "SBPort05": ("SBPort0", "SBPort5"),
           "SBPort15": ("SBPort1", "SBPort5"), "SBPort015": ("SBPort0", "SBPort1", "SBPort5")},
    "SPR": {f"SPRPort{g}": tuple(f"SPRPort{c}" for c in g.split("_")) for g in _SPR},
    **{z: _zen_groups(z) for z in ("Zn3", "Zn4")},
}
#: The Zen models' scheduler groups: buffers only (ALU0 is also BRU0 there).
_BUFFER_GROUPS = {**{f"{z}Int": tuple(f"{z}{u}" for u in ("ALU0", "ALU1", "ALU2", "ALU3", "AGU0", "AGU1", "AGU2", "BRU1"))
                     for z in ("Zn3", "Zn4")},
                  **{f"{z}FP": tuple(f"{z}FP{c}" for c in ("0", "1", "2", "3", "45")) for z in ("Zn3", "Zn4")}}
#: Retire width per model (llvm-mca's RetireControlUnit; Intel models leave it unbounded). znver5 uses Zen 4's model.
_RETIRE_WIDTH = {"Zn3": 8, "Zn4": 9}
#: Provenance entry naming (space-separated) the idiom candidates the source model does not recognise.
#: Bumped when what a cached default table holds changes, so older cached tables are rebuilt, not reused.
TABLE_FORMAT = 3


def _mca(args: Sequence[str], text: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([LLVM_MCA, "-mtriple=x86_64-unknown-unknown", *args], input=text,
                          capture_output=True, text=True, check=False)


def _clean_unit(name: str) -> str:
    return re.sub(r"\.([\x00-\x1f])", lambda m: f".{ord(m.group(1))}", name)


def _instruction_tables(mcpu: str, asms: Sequence[str]) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """Sub-unit names and per-asm rows; lines llvm-mca rejects are dropped and the rest retried."""
    rows: dict[str, dict[str, Any]] = {}
    subunits: list[str] = []
    for start in range(0, len(asms), BATCH):
        todo = list(asms[start:start + BATCH])
        while todo:
            proc = _mca([f"-mcpu={mcpu}", "--instruction-tables", "--json"], "\n".join(todo) + "\n")
            bad = {int(m) - 1 for m in re.findall(r"<stdin>:(\d+):\d+: error", proc.stderr)}
            if proc.returncode != 0:
                if not bad:
                    raise UserError(f"mcpu: llvm-mca-19 rejects {brief(mcpu)}: {proc.stderr.strip()[:200]}")
                todo = [a for i, a in enumerate(todo) if i not in bad]
                continue
            data = json.loads(proc.stdout)
            subunits = [_clean_unit(n) for n in data["TargetInfo"]["Resources"]]
            region = data["CodeRegions"][0]
            pressure: dict[int, dict[str, float]] = {}
            for p in region["ResourcePressureView"]["ResourcePressureInfo"]:
                pressure.setdefault(p["InstructionIndex"], {})[subunits[p["ResourceIndex"]]] = p["ResourceUsage"]
            for i, info in enumerate(region["InstructionInfoView"]["InstructionList"]):
                rows[todo[i]] = {"uops": info["NumMicroOpcodes"], "latency": info["Latency"], "pressure": pressure.get(i, {})}
            break
    return subunits, rows


def _unit_of(subunit: str) -> str:
    """``SBPort23.1`` → ``SBPort23``: llvm-mca prints one column per unit of a multi-unit resource."""
    return subunit.rsplit(".", 1)[0] if re.search(r"\.\d+$", subunit) else subunit


def resource_model(subunits: Sequence[str], spreads: Iterable[dict[str, float]]) -> tuple[
        tuple[tuple[str, int], ...], tuple[tuple[str, tuple[str, ...]], ...]]:
    """Units (with sub-unit counts) from llvm-mca's names, and the model's groups.

    For models not listed here, groups are inferred: every set of units sharing one instruction's
    equal, positive per-unit usage is a candidate group.
    """
    counts: dict[str, int] = {}
    for name in subunits:
        counts[_unit_of(name)] = counts.get(_unit_of(name), 0) + 1
    units = tuple(counts.items())  # llvm-mca's resource order, which fixes the selection masks
    prefix = next((p for p in _GROUPS if all(u.startswith(p) for u, _ in units)), None)
    if prefix is not None:
        groups = {g: m for g, m in _GROUPS[prefix].items() if set(m) <= set(counts)}
    else:
        groups = {}
        for spread in spreads:
            per_unit: dict[str, float] = {}
            for sub, use in spread.items():
                per_unit[_unit_of(sub)] = per_unit.get(_unit_of(sub), 0.0) + use
            by_value: dict[float, list[str]] = {}
            for unit, use in per_unit.items():
                by_value.setdefault(round(use / counts[unit], 4), []).append(unit)
            for members in by_value.values():
                if len(members) > 1:
                    groups.setdefault("+".join(sorted(members)), tuple(sorted(members)))
    return units, tuple(sorted((g, tuple(sorted(m))) for g, m in groups.items()))


def _columns(units: Sequence[tuple[str, int]], groups: Sequence[tuple[str, tuple[str, ...]]],
             subunits: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """Candidate resources and the per-sub-unit spread of one cycle on each (llvm-mca's view)."""
    count = dict(units)
    names = [u for u, _ in units] + [g for g, _ in groups]
    matrix = np.zeros((len(subunits), len(names)))
    index = {s: i for i, s in enumerate(subunits)}
    for j, name in enumerate(names):
        members = dict(groups).get(name, (name,))
        for m in members:
            subs = [f"{m}.{k}" for k in range(count[m])] if count[m] > 1 else [m]
            for s in subs:
                matrix[index[s], j] += 1.0 / len(members) / count[m]
    return names, matrix


def recover_ports(spread: dict[str, float], names: Sequence[str], matrix: np.ndarray,
                  subunits: Sequence[str]) -> dict[str, int]:
    """Net integer cycles per resource that reproduce llvm-mca's per-sub-unit spread."""
    target = np.array([spread.get(s, 0.0) for s in subunits])
    residual = target.copy()
    cycles: dict[str, int] = {}
    order = sorted(range(len(names)), key=lambda j: (-np.count_nonzero(matrix[:, j]), names[j]))
    for j in order:
        col = matrix[:, j]
        mask = col > 0
        n = int(np.floor(min(residual[mask] / col[mask]) + 1e-6))
        if n > 0:
            cycles[names[j]] = n
            residual = residual - n * col
    if np.abs(residual).max(initial=0.0) < 1e-3:
        return cycles
    solution, _ = nnls(matrix, target)
    return {names[j]: int(round(v)) for j, v in enumerate(solution) if round(v) > 0}


# -- ReadAdvance probes ------------------------------------------------------------------------

def _producer(reg: str, part: str, avoid: set[str]) -> str | None:
    """A long-latency instruction writing ``reg`` (all parts) without touching other operands."""
    if reg == "EFLAGS":
        spare = next(r for r in ("R15", "R14", "R13", "R12") if r not in avoid)
        return f"imulq (%rax), %{spare.lower()}"
    if reg.startswith("ZMM") and part in "xy" and int(reg[3:]) < 16:
        return f"vmulpd (%rax), %ymm{reg[3:]}, %ymm{reg[3:]}"
    if reg in _GPR64:
        return f"crc32q (%{reg.lower()}), %{reg.lower()}"
    return None


_GPR64 = {"RAX", "RBX", "RCX", "RDX", "RSI", "RDI", "RBP", "RSP", *(f"R{i}" for i in range(8, 16))}


def _probe_regions(instr: Instruction) -> list[tuple[int, str]]:
    """(slot, probe text) for each register slot that can be probed on its own."""
    out = []
    names = [u.reg for u in instr.uses]
    avoid = set(names) | {d.reg for d in instr.defs}
    for use in instr.uses:
        if use.slot >= N_SLOTS or names.count(use.reg) != 1 or use.reg in instr.address_regs:
            continue
        producer = _producer(use.reg, use.part, avoid)
        if producer is not None:
            out.append((use.slot, f"{producer}\n{producer}\n{instr.asm}"))
    return out


def _batches(texts: Sequence[str]) -> Iterator[tuple[Sequence[str], str]]:
    """The texts :data:`BATCH` at a time, each batch as one llvm-mca input of one code region per text."""
    for start in range(0, len(texts), BATCH):
        chunk = texts[start:start + BATCH]
        yield chunk, "".join(f"# LLVM-MCA-BEGIN p{i}\n{t}\n# LLVM-MCA-END p{i}\n" for i, t in enumerate(chunk))


def _timelines(mcpu: str, texts: Sequence[str]) -> list[list[dict[str, Any]] | None]:
    """llvm-mca's one-iteration timeline of each text (one code region each, batched); None where rejected."""
    out: list[list[dict[str, Any]] | None] = []
    for chunk, text in _batches(texts):
        proc = _mca([f"-mcpu={mcpu}", "-iterations=1", "--timeline", "--json"], text)
        if proc.returncode != 0:
            out.extend([None] * len(chunk))
            continue
        out.extend(r["TimelineView"]["TimelineInfo"] for r in json.loads(proc.stdout)["CodeRegions"])
    return out


def probe_read_advance(mcpu: str, instrs: Sequence[Instruction]) -> dict[str, list[int]]:
    """ReadAdvance per key, slot by slot, from two-producer chains feeding the slot (batched)."""
    probes = [(ins.key, slot, text) for ins in instrs for slot, text in _probe_regions(ins)]
    out = {ins.key: [0] * N_SLOTS for ins in instrs}
    for (key, slot, _), line in zip(probes, _timelines(mcpu, [t for _, _, t in probes]), strict=True):
        if line is not None:
            producer, consumer = line[-2], line[-1]
            out[key][slot] = max(0, producer["CycleExecuted"] - max(consumer["CycleIssued"], producer["CycleIssued"]))
    return out


def probe_dependent_idioms(mcpu: str, instrs: Sequence[Instruction]) -> list[str]:
    """Keys of the decoder's idiom candidates that this model does not recognise (it waits for their inputs).

    Which idioms break dependencies is per model (Sapphire Rapids' knows none; Zen 3 also breaks legacy-SSE
    ones but still executes them), so each candidate follows a long-latency producer of its register.
    """
    probes = []
    for ins in instrs:
        use = next((u for u in ins.uses if u.reg != FLAGS), None)
        producer = None if use is None else _producer(use.reg, use.part, {u.reg for u in ins.uses})
        if producer is not None:
            probes.append((ins.key, f"{producer}\n{ins.asm}"))
    lines = _timelines(mcpu, [t for _, t in probes])
    return sorted(key for (key, _), line in zip(probes, lines, strict=True)
                  if line is not None and line[-1]["CycleIssued"] >= line[-2]["CycleExecuted"] - 1)


# -- register files and move elimination -------------------------------------------------------

def _register_file_stats(mcpu: str, texts: Sequence[str]) -> list[list[dict[str, int]] | None]:
    """Per text (one code region each): its register files' ``size``, ``mappings`` and ``eliminated`` moves."""
    out: list[list[dict[str, int]] | None] = []
    for chunk, text in _batches(texts):
        proc = _mca([f"-mcpu={mcpu}", "-iterations=1", "--all-views=0", "-register-file-stats"], text)
        if proc.returncode != 0:  # one text spoils the batch: the others one by one
            out.extend([None] if len(chunk) == 1 else [_register_file_stats(mcpu, [t])[0] for t in chunk])
            continue
        regions = re.split(r"^\[\d+\] Code Region", proc.stdout, flags=re.M)[1:] or [proc.stdout]
        for region in regions[:len(chunk)]:
            files = []
            for part in re.split(r"^\*\s+Register File #\d+", region, flags=re.M)[1:]:
                size = re.search(r"Number of physical registers:\s+(\d+)", part)
                mappings = re.search(r"Total number of mappings created:\s+(\d+)", part)
                eliminated = re.search(r"Number of moves eliminated:\s+(\d+)", part)
                files.append({"size": int(size.group(1)) if size else 0, "mappings": int(mappings.group(1)) if mappings else 0,
                              "eliminated": int(eliminated.group(1)) if eliminated else 0})
            out.append(files)
        out.extend([None] * (len(chunk) - len(regions[:len(chunk)])))
    return out


def probe_register_files(mcpu: str) -> tuple[tuple[str, int], ...]:
    """The model's bounded physical register files, found by which file a GPR and a vector write map into
    (Intel models declare none: llvm-mca renames without bound there)."""
    probes = {"gpr": "addq $1, %rax", "vec": "vpaddd %xmm0, %xmm0, %xmm1"}
    stats = _register_file_stats(mcpu, list(probes.values()))
    out = []
    for kind, files in zip(probes, stats, strict=True):
        used = [f for f in files or [] if f["mappings"] > 0 and f["size"] > 0]
        if used:
            out.append((kind, used[0]["size"]))
    return tuple(out)


def probe_eliminated_moves(mcpu: str, instrs: Sequence[Instruction]) -> list[str]:
    """Keys of the register-to-register moves this model eliminates at register renaming."""
    candidates = [i for i in instrs if not i.may_load and not i.may_store and len(i.uses) == 1 and len(i.defs) == 1
                  and i.uses[0].reg != FLAGS and i.defs[0].reg != FLAGS and i.uses[0].reg != i.defs[0].reg]
    stats = _register_file_stats(mcpu, [i.asm for i in candidates])
    return sorted({i.key for i, files in zip(candidates, stats, strict=True)
                   if files is not None and any(f["eliminated"] > 0 for f in files)})


# -- the table ---------------------------------------------------------------------------------

def _globals(mcpu: str) -> tuple[int, int, list[tuple[str, int]]]:
    """Dispatch width, ROB size and the scheduler buffers (resource name, entries)."""
    proc = _mca([f"-mcpu={mcpu}", "-iterations=1", "--all-views=0", "-dispatch-stats", "-retire-stats",
                 "-scheduler-stats", "--summary-view"], "addq %rax, %rbx\n")
    width = re.search(r"Dispatch Width:\s+(\d+)", proc.stdout)
    rob = re.search(r"Total ROB Entries:\s+(\d+)", proc.stdout)
    if proc.returncode != 0 or width is None or rob is None:
        raise UserError(f"mcpu: llvm-mca-19 does not know {brief(mcpu)}")
    queues = re.findall(r"^(\S+)\s+\d+\s+\d+\s+(\d+)\s*$", proc.stdout.split("Scheduler's queue usage:")[-1], re.M)
    return int(width.group(1)), int(rob.group(1)), [(name, int(size)) for name, size in queues]


def _buffers(queues: Sequence[tuple[str, int]], units: Sequence[tuple[str, int]],
             groups: Sequence[tuple[str, tuple[str, ...]]]) -> tuple[int, tuple[tuple[str, int, tuple[str, ...]], ...]]:
    """One buffer is the unified scheduler (``scheduler_size``); several become ``buffers`` with their units
    (a unit's own, a group's, or a scheduler group's members)."""
    if len(queues) == 1:
        return queues[0][1], ()
    names = {u for u, _ in units}
    known = {**_BUFFER_GROUPS, **dict(groups)}
    out = []
    for name, size in queues:
        members = (name,) if name in names else known.get(name, ())
        if members and set(members) <= names:
            out.append((name, size, members))
    return 0, tuple(out)


def probe_queues(mcpu: str) -> tuple[tuple[str, int], ...]:
    """The load and store queues' entries: loads (stores) behind a long division, counted up to the first
    dispatch stall that llvm-mca's dispatch statistics put on that queue (Intel models declare none)."""
    out = []
    for kind, ins, stall in (("load", "movq (%rsp), %r8", "LQ"), ("store", "movq %r8, (%rsp)", "SQ")):
        text = "divq %rcx\n" + f"{ins}\n" * 150
        stats = _mca([f"-mcpu={mcpu}", "-iterations=1", "--all-views=0", "-dispatch-stats"], text)
        stalled = re.search(rf"{stall}\s+- [^:]*:\s+(\d+)", stats.stdout)
        if stats.returncode != 0 or stalled is None or int(stalled.group(1)) == 0:
            continue
        line = _timelines(mcpu, [text])[0]
        if line is None:
            continue
        cycles = [x["CycleDispatched"] for x in line[1:]]
        size = next((i for i in range(1, len(cycles)) if cycles[i] > cycles[i - 1] + 1), 0)
        if size:
            out.append((kind, size))
    return tuple(out)


def default_table(blocks: Sequence[Block], mcpu: str, cache: str | Path | None = None) -> ParamTable:
    """llvm-mca-19's defaults for the keys of ``blocks``; rows and probes cached under ``cache``."""
    if not re.fullmatch(r"[a-z0-9_-]+", mcpu):
        raise UserError(f"mcpu: not a CPU name: {brief(mcpu)}")
    exemplars: dict[str, Instruction] = {}
    idioms: dict[str, Instruction] = {}  # a dep-breaking candidate shares its key with ordinary uses
    for block in blocks:
        for ins in block.instructions:
            exemplars.setdefault(ins.key, ins)
            if ins.zero_idiom or ins.dep_breaking:
                idioms.setdefault(ins.key, ins)
    cache_file = None
    if cache is not None:
        digest = hashlib.sha1("\n".join(sorted(exemplars)).encode()).hexdigest()[:12]
        cache_file = Path(cache) / f"table_{mcpu}_v{TABLE_FORMAT}_{digest}.json"
        if cache_file.exists():
            return load(cache_file)
    width, rob, queues = _globals(mcpu)
    subunits, info = _instruction_tables(mcpu, [i.asm for i in exemplars.values()])
    units, groups = resource_model(subunits, (r["pressure"] for r in info.values()))
    rs, buffers = _buffers(queues, units, groups)
    names, matrix = _columns(units, groups, subunits)
    advance = probe_read_advance(mcpu, [i for i in exemplars.values() if i.may_load and i.asm in info])
    rows = {}
    for key, ins in exemplars.items():
        if ins.asm not in info:
            continue
        r = info[ins.asm]
        ports = recover_ports(r["pressure"], names, matrix, subunits)
        rows[key] = OpParams(int(r["uops"]), int(r["latency"]), tuple(advance.get(key, [0] * N_SLOTS)),
                             tuple(sorted(ports.items())))
    table = ParamTable(dispatch_width=width, rob_size=rob, units=units, groups=groups, rows=rows,
                       retire_width=_RETIRE_WIDTH.get(units[0][0][:3] if units else "", 0), scheduler_size=rs,
                       dependent_idioms=tuple(probe_dependent_idioms(mcpu, list(idioms.values()))),
                       eliminated_moves=tuple(probe_eliminated_moves(mcpu, list(exemplars.values()))),
                       register_files=probe_register_files(mcpu), buffers=buffers, queues=probe_queues(mcpu),
                       provenance={"source": "llvm-mca --instruction-tables + ReadAdvance probes",
                                   "llvm": LLVM_MCA, "mcpu": mcpu, "date": date.today().isoformat()})
    if cache_file is not None:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        table.save(cache_file)
    return table
