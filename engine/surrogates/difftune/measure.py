"""Ground truth on the local CPU: basic-block throughputs measured with the harness of difftune.md §9.3.

The C harness (``harness/harness.c``) runs each block unrolled ``u`` times in a child the kernel
confines (seccomp: no system call but its result pipe; harness.c says how) and reports the TSC ticks
of every repetition with its context switches and page faults. This module refuses blocks that must
not run, pins the harness to one core, calibrates TSC ticks per core cycle before and after every
batch, and turns two unroll factors into cycles per 100 iterations (BHive's unit). No PMU is needed:
these VMs expose none.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import statistics
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import iced_x86
import pandas as pd

from engine.errors import UserError, brief
from engine.runners.ckernel import cache_dir

HARNESS_SOURCE = Path(__file__).with_name("harness") / "harness.c"
BUILT_HARNESS = Path(__file__).resolve().parents[3] / "build" / "difftune-harness"
CFLAGS = ("-O2", "-std=gnu11", "-fPIE", "-pie")
# `add %rax,%rax`: a 1-cycle dependency chain on every core we target. `add $1,%rax` is not one on
# Golden Cove (Sapphire Rapids), which eliminates immediate adds at rename (~4 per cycle measured).
CALIBRATION_BLOCK = "4801c0"
STATUSES = ("ok", "refused", "fault", "timeout", "noisy")

# ---- CPU identity ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CpuIdentity:
    """What /proc/cpuinfo says about the first logical CPU; measurements are only comparable within one."""

    vendor: str
    family: int
    model: int
    stepping: int
    microcode: str
    model_name: str
    flags: frozenset[str]

    @property
    def short_id(self) -> str:
        """Vendor, family, model and stepping (``intel-6-167-1``): stable across reboots and microcode updates."""
        tag = {"GenuineIntel": "intel", "AuthenticAMD": "amd"}.get(self.vendor, self.vendor.lower() or "unknown")
        return f"{tag}-{self.family}-{self.model}-{self.stepping}"

    @property
    def label(self) -> str:
        """The id and the name, as a measurement's report names its CPU: ``amd-25-1-1 (AMD EPYC)``."""
        return f"{self.short_id} ({self.model_name})"


def cpu_identity(cpuinfo: str | None = None) -> CpuIdentity:
    """Parse ``cpuinfo`` (default: this machine's /proc/cpuinfo), first processor only."""
    text = Path("/proc/cpuinfo").read_text() if cpuinfo is None else cpuinfo
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return CpuIdentity(
        vendor=fields.get("vendor_id", ""),
        family=_int_field(fields, "cpu family"),
        model=_int_field(fields, "model"),
        stepping=_int_field(fields, "stepping"),
        microcode=fields.get("microcode", ""),
        model_name=fields.get("model name", ""),
        flags=frozenset(fields.get("flags", "").split()),
    )


def _int_field(fields: dict[str, str], key: str) -> int:
    try:
        return int(fields.get(key, "-1"), 0)
    except ValueError:
        raise UserError(f"cpuinfo field {key!r}: {brief(fields[key])} is not an integer") from None


# Intel family 6 models (Intel SDM vol. 4 table 2-1, Linux arch/x86/include/asm/intel-family.h) by the
# llvm-mca-19 scheduling model closest to their core.
_INTEL_FAMILY6: dict[str, tuple[int, ...]] = {
    "nehalem": (0x1A, 0x1E, 0x1F, 0x2E),
    "westmere": (0x25, 0x2C, 0x2F),
    "sandybridge": (0x2A, 0x2D),
    "ivybridge": (0x3A, 0x3E),
    "haswell": (0x3C, 0x3F, 0x45, 0x46),
    "broadwell": (0x3D, 0x47, 0x4F, 0x56),
    "skylake": (0x4E, 0x5E, 0x8E, 0x9E, 0xA5, 0xA6),
    "skylake-avx512": (0x55,),
    "cannonlake": (0x66,),
    "icelake-client": (0x7D, 0x7E),
    "icelake-server": (0x6A, 0x6C),
    "tigerlake": (0x8C, 0x8D),
    "rocketlake": (0xA7, 0xA8),
    "alderlake": (0x97, 0x9A, 0xBE, 0xBF),
    "raptorlake": (0xB7, 0xBA),
    "meteorlake": (0xAA, 0xAC),
    "arrowlake": (0xC5, 0xC6),
    "lunarlake": (0xBD,),
    "sapphirerapids": (0x8F,),
    "emeraldrapids": (0xCF,),
    "graniterapids": (0xAD, 0xAE),
    "bonnell": (0x1C, 0x26),
    "silvermont": (0x37, 0x4A, 0x4D, 0x5A, 0x5D),
    "goldmont": (0x5C, 0x5F),
    "goldmont-plus": (0x7A,),
    "tremont": (0x86, 0x96, 0x9C),
    "sierraforest": (0xAF,),
    "grandridge": (0xB6,),
    "knl": (0x57,),
    "knm": (0x85,),
}
_INTEL_BY_MODEL = {model: name for name, models in _INTEL_FAMILY6.items() for model in models}
_AMX_CPUS = ("sapphirerapids", "emeraldrapids", "graniterapids")
# AMD family 0x19 (25) model ranges on Zen 4: Genoa/Storm Peak 0x10-0x1F, Raphael/Phoenix 0x60-0x7F,
# Bergamo/Siena 0xA0-0xAF; every other family-25 model is Zen 3 (Milan 0x01, Vermeer 0x21, Cezanne 0x50).
_ZEN4_MODELS = (range(0x10, 0x20), range(0x60, 0x80), range(0xA0, 0xB0))


def nearest_mcpu(identity: CpuIdentity) -> str:
    """The ``llvm-mca-19 -mcpu`` whose scheduling model is nearest to this core.

    Intel family 6 goes by model number, except that a hypervisor may report a model the flags
    contradict: AMX (``amx_tile``) exists only from Sapphire Rapids on, so a host reporting e.g.
    model 167 (Rocket Lake) with AMX is a Sapphire Rapids (Golden Cove) core, or Granite Rapids
    when ``amx_fp16`` is present too. AMD goes by family (23: Zen 1/2, 25: Zen 3/4, 26: Zen 5).
    Anything else falls back on the instruction-set level of its flags.
    """
    if identity.vendor == "GenuineIntel" and identity.family == 6:
        name = _INTEL_BY_MODEL.get(identity.model)
        if "amx_tile" in identity.flags and name not in _AMX_CPUS:
            return "graniterapids" if "amx_fp16" in identity.flags else "sapphirerapids"
        if name == "skylake-avx512" and identity.stepping >= 5:
            return "cooperlake" if identity.stepping >= 10 else "cascadelake"
        if name:
            return name
    if identity.vendor in ("AuthenticAMD", "HygonGenuine"):
        amd = _amd_mcpu(identity.family, identity.model)
        if amd:
            return amd
    return _mcpu_from_flags(identity.flags)


def _amd_mcpu(family: int, model: int) -> str | None:
    if family == 23:
        return "znver1" if model < 0x30 else "znver2"
    if family == 25:
        return "znver4" if any(model in span for span in _ZEN4_MODELS) else "znver3"
    if family == 26:
        return "znver5"
    return None


def _mcpu_from_flags(flags: frozenset[str]) -> str:
    if {"avx512f", "avx512bw", "avx512vl"} <= flags:
        return "skylake-avx512"
    if {"avx2", "fma", "bmi2"} <= flags:
        return "haswell"
    if "avx" in flags:
        return "sandybridge"
    return "x86-64"


# ---- what may run ---------------------------------------------------------------------------------

_REFUSED_MNEMONICS = {
    getattr(iced_x86.Mnemonic, name): name.lower()
    for name in ("SYSCALL", "SYSENTER", "SYSEXIT", "SYSRET", "INT", "INT1", "INT3", "INTO", "HLT", "CPUID",
                 "IN", "OUT", "INSB", "INSW", "INSD", "OUTSB", "OUTSW", "OUTSD", "WRFSBASE", "WRGSBASE",
                 "RDTSC", "RDTSCP", "RDPMC", "MONITOR", "MWAIT", "UMONITOR", "UMWAIT", "TPAUSE", "XTEST",
                 "ENCLU", "PCONFIG", "VMCALL", "VMFUNC")
}


def refusal(hex_block: str) -> str | None:
    """Why the block must not run (one line), or None: a first filter that names a reason. It decodes
    linearly, so bytes hidden in an immediate pass it; the harness's sandbox (seccomp, a read-only state
    page, the parent's deadline) is what stops those.

    Refused: undecodable bytes; any control flow (it would leave the unrolled body); privileged,
    I/O, system-call, interrupt, halt and ``cpuid`` instructions; ``wr{fs,gs}base``, which would
    move the harness's thread pointer; timestamp and monitor/wait instructions, which disturb timing.
    """
    try:
        code = bytes.fromhex(hex_block)
    except ValueError:
        return f"not hexadecimal: {brief(hex_block, 40)}"
    if not code:
        return "empty block"
    decoder = iced_x86.Decoder(64, code)
    for instr in decoder:
        where = f"at byte {instr.ip}"
        if instr.is_invalid:
            return f"undecodable {where}"
        if instr.flow_control != iced_x86.FlowControl.NEXT:
            return f"control flow {where}: {instr}"
        if instr.is_privileged:
            return f"privileged {where}: {instr}"
        if instr.mnemonic in _REFUSED_MNEMONICS:
            return f"{_REFUSED_MNEMONICS[instr.mnemonic]} {where}"
    return None


# ---- the harness binary ---------------------------------------------------------------------------


def harness_binary() -> Path:
    """``build/difftune-harness`` (``make difftune-harness``) when newer than its source, else a copy
    compiled on demand with ``cc`` into the Tunelab cache, keyed by a hash of the source."""
    source = HARNESS_SOURCE.read_bytes()
    if BUILT_HARNESS.is_file() and BUILT_HARNESS.stat().st_mtime >= HARNESS_SOURCE.stat().st_mtime:
        return BUILT_HARNESS
    key = hashlib.sha256(source + " ".join(CFLAGS).encode()).hexdigest()[:16]
    target = cache_dir() / "difftune-harness" / key / "difftune-harness"
    if not target.is_file():
        _compile(target)
    return target


def _compile(target: Path) -> None:
    compiler = shutil.which("cc")
    if compiler is None:
        raise UserError("C compiler 'cc': not found on PATH (the harness needs it)")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".tmp{os.getpid()}")
    done = subprocess.run([compiler, *CFLAGS, str(HARNESS_SOURCE), "-o", str(partial)],
                          capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["no message"])[0]
        raise UserError(f"harness source {HARNESS_SOURCE.name}: cc failed: {first}")
    partial.replace(target)


# ---- running jobs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    """One harness run: ``block`` unrolled ``unroll`` times, timed ``repeats`` times in one child."""

    block: str
    unroll: int
    repeats: int


def run_harness(jobs: Sequence[Job], *, cpu: int, timeout_s: float, binary: Path | None = None,
                grace_s: float = 10.0) -> list[dict[str, Any]]:
    """The harness's JSON record for each job, in order, the harness pinned to ``cpu``.

    The harness runs in a process group of its own, killed whole when it is late (each job's timeout plus
    2 s, plus ``grace_s`` to start) or interrupted; its sandboxed children die with it (and cannot fork),
    so nothing a block started outlives the call.
    """
    if not jobs:
        return []
    command = [str(binary or harness_binary()), "--cpu", str(cpu), "--timeout-ms", str(max(1, round(timeout_s * 1000)))]
    lines = "".join(f"{job.block} {job.unroll} {job.repeats}\n" for job in jobs)
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    wait_s = len(jobs) * (timeout_s + 2.0) + grace_s
    try:
        stdout, stderr = process.communicate(lines, timeout=wait_s)
    except BaseException as exc:  # late, or interrupted: nothing of the group may outlive the call
        _kill_group(process)
        if isinstance(exc, subprocess.TimeoutExpired):
            raise RuntimeError(f"difftune harness: no answer within {wait_s:.0f} s for {len(jobs)} jobs") from None
        raise
    records = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    if process.returncode != 0 or len(records) != len(jobs):
        message = (stderr.strip().splitlines() or [f"{len(records)} of {len(jobs)} results"])[-1]
        raise RuntimeError(f"difftune harness failed (exit {process.returncode}): {message}")
    broken = next((r["detail"] for r in records if r.get("status") == "error" and "sandbox" in r.get("detail", "")), None)
    if broken:
        raise RuntimeError(f"difftune harness: {broken}: no block runs outside its sandbox")
    return records


def _kill_group(process: subprocess.Popen[str]) -> None:
    """SIGKILL the harness's whole process group, then reap the harness (never after: a reaped leader's
    id could name another group)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def clean_ticks(record: dict[str, Any]) -> list[int]:
    """Repetitions after the first with no context switch and no page fault (BHive discards the first too)."""
    if record.get("status") != "ok":
        return []
    rows = list(zip(record["ticks"], record["csw"], record["flt"], strict=True))[1:]
    return [ticks for ticks, csw, flt in rows if csw == 0 and flt == 0]


# ---- arithmetic -----------------------------------------------------------------------------------


def ticks_per_cycle(ticks_long: float, ticks_short: float, n: int) -> float:
    """TSC ticks per core cycle from 1-cycle chains of 2n and n instructions: the difference is n cycles."""
    if n <= 0 or ticks_long <= ticks_short:
        raise ValueError(f"calibration: chains of {2 * n} and {n} took {ticks_long} and {ticks_short} ticks")
    return (ticks_long - ticks_short) / n


def cycles_per_100(ticks_a: float, ticks_b: float, a: int, b: int, ratio: float) -> float:
    """Cycles per 100 iterations, 100·(L_a − L_b)/(a − b) with L = ticks / ratio: the fixed overhead cancels."""
    return 100.0 * (ticks_a - ticks_b) / ratio / (a - b)


def drift(before: float, after: float) -> float:
    """Relative change of the calibration ratio across a batch."""
    return abs(after - before) / before


# ---- measuring ------------------------------------------------------------------------------------


def default_cpu() -> int:
    """The last CPU this process may use: away from CPU 0, where most interrupts land."""
    return max(os.sched_getaffinity(0))


def calibrate(*, cpu: int, n: int, repeats: int, timeout_s: float, binary: Path | None = None) -> float:
    """TSC ticks per core cycle, from the minimum clean times of ``add %rax,%rax`` chains of 2n and n."""
    jobs = [Job(CALIBRATION_BLOCK, 2 * n, repeats), Job(CALIBRATION_BLOCK, n, repeats)]
    long_run, short_run = (clean_ticks(r) for r in run_harness(jobs, cpu=cpu, timeout_s=timeout_s, binary=binary))
    if not long_run or not short_run:
        raise RuntimeError("calibration: no clean repetition (is the machine busy?)")
    return ticks_per_cycle(min(long_run), min(short_run), n)


@dataclass(frozen=True)
class Settings:
    """How blocks are measured; the defaults follow difftune.md §9.3, with 64 repeats rather than 16 and
    unrolls 400/200 rather than BHive's 200/100: the TSC here ticks in steps of 2 (2.8 cycles per 100
    iterations at 200/100), so both cut the two-pass noise. Measured on the 1,792 anchor blocks (Golden
    Cove): MAPE between passes of the median 2.6% at 200/100, 1.6% at 400/200, 1.1% at 800/400 (which
    puts 40 KB of a 50-byte block past the L1i); a second or two per 1,000 blocks either way."""

    unrolls: tuple[int, int] = (400, 200)
    #: Short blocks are unrolled further (both factors scaled alike) until the longer body holds this many
    #: instructions: at 400 copies a one-instruction block runs ~60 cycles, where two TSC steps are 5%.
    min_instructions: int = 1600
    repeats: int = 64
    timeout_s: float = 1.0
    batch_size: int = 100
    calibration_n: int = 2000
    calibration_repeats: int = 32
    max_drift: float = 0.01
    min_clean: int = 8
    retries: int = 1
    cpu: int | None = None


def check_settings(settings: Settings) -> None:
    """One-line UserError for a setting out of range."""
    a, b = settings.unrolls
    if not (isinstance(a, int) and isinstance(b, int) and a > b >= 1):
        raise UserError(f"unrolls: {brief(settings.unrolls)} must be two integers a > b >= 1")
    if not 16 <= settings.repeats <= 4096:
        raise UserError(f"repeats: {brief(settings.repeats)} must be in 16..4096")
    if not 1 <= settings.min_clean < settings.repeats:
        raise UserError(f"min_clean: {brief(settings.min_clean)} must be in 1..repeats-1")
    if not settings.timeout_s > 0:
        raise UserError(f"timeout_s: {brief(settings.timeout_s)} must be positive")
    for name in ("batch_size", "calibration_n", "calibration_repeats"):
        if not 1 <= getattr(settings, name) <= (4096 if name == "calibration_repeats" else 1 << 20):
            raise UserError(f"{name}: {brief(getattr(settings, name))} must be a positive integer")
    if settings.retries < 0:
        raise UserError(f"retries: {brief(settings.retries)} must be >= 0")
    if not 0 < settings.max_drift < 1:
        raise UserError(f"max_drift: {brief(settings.max_drift)} must be in (0, 1)")
    if not 1 <= settings.min_instructions <= 1 << 20:
        raise UserError(f"min_instructions: {brief(settings.min_instructions)} must be a positive integer")
    if settings.cpu is not None and settings.cpu not in os.sched_getaffinity(0):
        raise UserError(f"cpu: {brief(settings.cpu)} is not one this process may run on")


def measure(blocks: Iterable[str], settings: Settings = Settings(), *, binary: Path | None = None) -> pd.DataFrame:
    """One row per block: status (ok / refused / fault / timeout / noisy), reason, cycles per 100
    iterations from the minima and from the medians, and every clean repeat of both unroll factors.

    ``df.attrs`` holds the CPU identity and its nearest ``-mcpu``. Blocks are refused before any
    runs; the rest go in batches bracketed by calibrations, a batch whose ratio moved more than
    ``max_drift`` is measured again (``retries`` times), then its blocks are marked noisy.
    """
    check_settings(settings)
    hexes = [_normalised(block) for block in blocks]
    rows: dict[str, dict[str, Any]] = {}
    runnable: list[str] = []
    for block in dict.fromkeys(hexes):
        reason = refusal(block)
        if reason:
            rows[block] = _row(block, "refused", reason)
        else:
            runnable.append(block)
    cpu = default_cpu() if settings.cpu is None else settings.cpu
    binary = binary or (harness_binary() if runnable else None)
    for start in range(0, len(runnable), settings.batch_size):
        batch = runnable[start:start + settings.batch_size]
        rows.update(_measure_batch(batch, settings, cpu, binary))
    identity = cpu_identity()
    frame = pd.DataFrame([rows[block] for block in hexes])
    frame.attrs.update(cpu=identity.short_id, cpu_model_name=identity.model_name, mcpu=nearest_mcpu(identity),
                        unrolls=settings.unrolls)
    return frame


def _normalised(block: str) -> str:
    if not isinstance(block, str):
        raise UserError(f"block: {brief(block)} is not a hexadecimal string")
    return block.strip().lower()


def unrolls_for(block: str, settings: Settings) -> tuple[int, int]:
    """The two unroll factors of one block: ``settings.unrolls`` scaled by a whole number until the longer
    body holds ``settings.min_instructions`` instructions."""
    a, b = settings.unrolls
    count = sum(1 for _ in iced_x86.Decoder(64, bytes.fromhex(block)))
    scale = max(1, -(-settings.min_instructions // (a * max(count, 1))))
    return a * scale, b * scale


def _measure_batch(batch: list[str], settings: Settings, cpu: int, binary: Path | None) -> dict[str, dict[str, Any]]:
    unrolls = {block: unrolls_for(block, settings) for block in batch}
    jobs = [Job(block, unroll, settings.repeats) for block in batch for unroll in unrolls[block]]
    moved = 0.0
    for _ in range(settings.retries + 1):
        before = _calibrate(settings, cpu, binary)
        records = run_harness(jobs, cpu=cpu, timeout_s=settings.timeout_s, binary=binary)
        after = _calibrate(settings, cpu, binary)
        moved = drift(before, after)
        if moved <= settings.max_drift:
            ratio = (before + after) / 2
            return {block: _result(block, records[2 * i], records[2 * i + 1], unrolls[block], settings, ratio)
                    for i, block in enumerate(batch)}
    reason = f"calibration moved {moved:.1%} across the batch"
    return {block: _failure(block, records[2 * i], records[2 * i + 1]) or _row(block, "noisy", reason)
            for i, block in enumerate(batch)}


def _calibrate(settings: Settings, cpu: int, binary: Path | None) -> float:
    return calibrate(cpu=cpu, n=settings.calibration_n, repeats=settings.calibration_repeats,
                     timeout_s=settings.timeout_s, binary=binary)


def _result(block: str, rec_a: dict[str, Any], rec_b: dict[str, Any], unrolls: tuple[int, int], settings: Settings,
            ratio: float) -> dict[str, Any]:
    failure = _failure(block, rec_a, rec_b)
    if failure:
        return failure
    clean_a, clean_b = clean_ticks(rec_a), clean_ticks(rec_b)
    a, b = unrolls
    base = {"ticks_per_cycle": ratio, "clean_a": clean_a, "clean_b": clean_b, "fault_maps": rec_a.get("maps", 0),
            "unrolls": unrolls}
    if min(len(clean_a), len(clean_b)) < settings.min_clean:
        return _row(block, "noisy", f"{len(clean_a)} and {len(clean_b)} clean repeats (< {settings.min_clean})", **base)
    by_min = cycles_per_100(min(clean_a), min(clean_b), a, b, ratio)
    by_median = cycles_per_100(statistics.median(clean_a), statistics.median(clean_b), a, b, ratio)
    if by_min <= 0:
        return _row(block, "noisy", f"unroll {a} was not slower than unroll {b}", **base)
    return _row(block, "ok", "", cycles100=by_min, cycles100_median=by_median, **base)


def _failure(block: str, rec_a: dict[str, Any], rec_b: dict[str, Any]) -> dict[str, Any] | None:
    """The row of a block whose run faulted or timed out: no calibration drift makes that noise."""
    for record in (rec_a, rec_b):
        if record["status"] != "ok":
            return _row(block, record["status"] if record["status"] in STATUSES else "fault",
                        record.get("detail") or record["status"], fault_maps=record.get("maps", 0))
    return None


def _row(block: str, status: str, reason: str, **values: Any) -> dict[str, Any]:
    row: dict[str, Any] = {"hex": block, "status": status, "reason": reason, "cycles100": float("nan"),
                           "cycles100_median": float("nan"), "ticks_per_cycle": float("nan"),
                           "clean_a": [], "clean_b": [], "fault_maps": 0, "unrolls": None}
    row.update(values)
    return row
