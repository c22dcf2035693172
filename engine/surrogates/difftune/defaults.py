"""Default parameter tables read out of llvm-mca-19 for one ``-mcpu``.

llvm-mca prints, per instruction, µops, latency and resource pressure spread over *units*; the
net cycles per group are recovered by a greedy integer decomposition over the model's groups
(largest group first), checked and, where it leaves a residual, replaced by non-negative least
squares (scipy.optimize.nnls). ReadAdvance is printed nowhere, so it is probed: a producer of
known latency L feeds one operand slot of the instruction, and the consumer issues
max(0, L − advance) cycles after the producer (llvm-mca's timeline shows both cycles).
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from collections.abc import Iterable, Sequence
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
}
_RETIRE_WIDTH = {"znver3": 8, "znver4": 8}
#: Provenance entry naming (space-separated) the idiom candidates the source model does not recognise.
#: Bumped when what a cached default table holds changes, so older cached tables are rebuilt, not reused.
TABLE_FORMAT = 2


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


def _timelines(mcpu: str, texts: Sequence[str]) -> list[list[dict[str, Any]] | None]:
    """llvm-mca's one-iteration timeline of each text (one code region each, batched); None where rejected."""
    out: list[list[dict[str, Any]] | None] = []
    for start in range(0, len(texts), BATCH):
        chunk = texts[start:start + BATCH]
        text = "".join(f"# LLVM-MCA-BEGIN p{i}\n{t}\n# LLVM-MCA-END p{i}\n" for i, t in enumerate(chunk))
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


# -- the table ---------------------------------------------------------------------------------

def _globals(mcpu: str) -> tuple[int, int, int]:
    """Dispatch width, ROB size and the unified scheduler's size (0 when the model has several)."""
    proc = _mca([f"-mcpu={mcpu}", "-iterations=1", "--all-views=0", "-dispatch-stats", "-retire-stats",
                 "-scheduler-stats", "--summary-view"], "addq %rax, %rbx\n")
    width = re.search(r"Dispatch Width:\s+(\d+)", proc.stdout)
    rob = re.search(r"Total ROB Entries:\s+(\d+)", proc.stdout)
    if proc.returncode != 0 or width is None or rob is None:
        raise UserError(f"mcpu: llvm-mca-19 does not know {brief(mcpu)}")
    queues = re.findall(r"^(\S+)\s+\d+\s+\d+\s+(\d+)\s*$", proc.stdout.split("Scheduler's queue usage:")[-1], re.M)
    return int(width.group(1)), int(rob.group(1)), int(queues[0][1]) if len(queues) == 1 else 0


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
    width, rob, rs = _globals(mcpu)
    subunits, info = _instruction_tables(mcpu, [i.asm for i in exemplars.values()])
    units, groups = resource_model(subunits, (r["pressure"] for r in info.values()))
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
                       retire_width=_RETIRE_WIDTH.get(mcpu, 0), scheduler_size=rs,
                       dependent_idioms=tuple(probe_dependent_idioms(mcpu, list(idioms.values()))),
                       provenance={"source": "llvm-mca --instruction-tables + ReadAdvance probes",
                                   "llvm": LLVM_MCA, "mcpu": mcpu, "date": date.today().isoformat()})
    if cache_file is not None:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        table.save(cache_file)
    return table
