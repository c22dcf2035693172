"""McaRunner: cycles per iteration of a basic block, predicted by Debian llvm-19's llvm-mca.

The block is given as assembly (AT&T, x86-64) or as machine code in hex, which ``llvm-mc-19
--disassemble`` turns into assembly first (as the BHive/llvm-mca anchor data were made). Factors are
llvm-mca's global options: ``mcpu`` and the integer/boolean flags in :data:`FLAGS` (factor names
with ``_`` for ``-``). The result is ``Total Cycles / Iterations``; llvm-mca is deterministic, so
repeats agree exactly.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping
from typing import Any

from engine.errors import UserError
from engine.runners.base import MeasureError, Runner, Trial, check_int, check_options
from engine.runners.process import check_outcome, run_process, tail

#: Factor name -> llvm-mca option, and whether it is a boolean switch.
FLAGS: dict[str, tuple[str, bool]] = {
    "mcpu": ("-mcpu", False),
    "dispatch": ("-dispatch", False),
    "register_file_size": ("-register-file-size", False),
    "micro_op_queue_size": ("-micro-op-queue-size", False),
    "decoder_throughput": ("-decoder-throughput", False),
    "lqueue": ("-lqueue", False),
    "squeue": ("-squeue", False),
    "call_latency": ("-call-latency", False),
    "noalias": ("-noalias", True),
}
_HEX = re.compile(r"^(?:[0-9a-fA-F]{2})+$")
_CYCLES = re.compile(r"^Total Cycles:\s+(\d+)", re.MULTILINE)
_ITERATIONS = re.compile(r"^Iterations:\s+(\d+)", re.MULTILINE)
_CPU = re.compile(r"^[A-Za-z0-9_.\-]+$")


def disassemble(hex_block: str, mc: str = "llvm-mc-19", triple: str = "x86_64", timeout: float | None = 30) -> str:
    """AT&T assembly of a hex block; a prefix-only line (``lock``, ``rep``) joins the next one."""
    text = " ".join(f"0x{hex_block[i:i + 2]}" for i in range(0, len(hex_block), 2))
    outcome = run_process([mc, "--disassemble", f"-triple={triple}"], timeout=timeout, stdin=text)
    check_outcome(outcome, timeout, mc)
    if "invalid instruction encoding" in outcome.stderr:
        raise MeasureError("invalid", f"hex block does not disassemble: {tail(outcome.stderr, 2, 300)}")
    lines, pending = [], ""
    for line in outcome.stdout.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("."):
            continue
        if stripped in ("lock", "rep", "repne", "repe", "data16", "rex64"):
            pending += stripped + " "
            continue
        lines.append(pending + stripped)
        pending = ""
    if not lines:
        raise MeasureError("invalid", "hex block disassembles to no instruction")
    return "\n".join(lines) + "\n"


class McaRunner(Runner):
    kind = "mca"
    OPTIONS = ("hex", "asm", "iterations", "triple", "mca", "mc")

    def __init__(self, *, hex: str | None = None, asm: str | None = None, iterations: int = 100,
                 triple: str = "x86_64-unknown-unknown", mca: str = "llvm-mca-19", mc: str = "llvm-mc-19", **common: Any) -> None:
        super().__init__(**common)
        if (hex is None) == (asm is None):
            raise UserError("runner 'mca': give exactly one of 'hex' (machine code) or 'asm' (assembly text)")
        if hex is not None:
            hex = re.sub(r"\s+", "", str(hex))
            if not _HEX.match(hex):
                raise UserError(f"runner 'mca': hex {hex[:40]!r} is not an even-length hex string")
        self.hex, self.asm = hex, asm
        self.iterations = check_int({"iterations": iterations}, "iterations", 100, 1, self.kind)
        self.triple, self.mca, self.mc = triple, mca, mc
        for tool in ([mca, mc] if hex is not None else [mca]):
            if shutil.which(tool) is None:
                raise UserError(f"runner 'mca': {tool} not found (Debian package llvm-19: make system-test-deps)")

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any], **_: object) -> McaRunner:
        check_options(spec, cls.OPTIONS, cls.kind)
        options = {k: spec[k] for k in cls.OPTIONS if k in spec}
        return cls(**options, **cls.common(spec))

    def arguments(self, config: Mapping[str, Any]) -> list[str]:
        args = [f"-mtriple={self.triple}", f"-iterations={self.iterations}"]
        for name, value in config.items():
            if name not in FLAGS:
                raise MeasureError("invalid", f"factor '{name}' is not an llvm-mca option (known: {', '.join(FLAGS)})")
            option, switch = FLAGS[name]
            if switch:
                truth = str(value).strip().lower() in ("true", "1", "yes", "on")
                args.append(f"{option}={'true' if truth else 'false'}")
            elif name == "mcpu":
                if not _CPU.match(str(value)):
                    raise MeasureError("invalid", f"mcpu {value!r} is not a CPU name")
                args.append(f"{option}={value}")
            else:
                try:
                    number = int(float(value))
                except (TypeError, ValueError):
                    raise MeasureError("invalid", f"factor '{name}': {value!r} is not an integer") from None
                if number < 0 or number != float(value):
                    raise MeasureError("invalid", f"factor '{name}': {value!r} must be a non-negative integer")
                args.append(f"{option}={number}")
        return args

    def _run(self, config: dict[str, Any], repeats: int, start: int) -> Trial:
        args = self.arguments(config)
        asm = self.asm
        if asm is None:
            assert self.hex is not None  # __init__ keeps exactly one of asm and hex
            asm = disassemble(self.hex, self.mc, self.triple.split("-")[0], self.timeout)

        def once() -> float:
            outcome = run_process([self.mca, *args, "-"], timeout=self.timeout, stdin=asm)
            if outcome.returncode and "not a recognized processor" in outcome.stderr:
                raise MeasureError("invalid", f"mcpu: {tail(outcome.stderr, 1, 200)}")
            check_outcome(outcome, self.timeout, self.mca)
            cycles, iterations = _CYCLES.search(outcome.stdout), _ITERATIONS.search(outcome.stdout)
            if not cycles or not iterations:
                raise MeasureError("failed", f"llvm-mca printed no 'Total Cycles': {tail(outcome.stdout or outcome.stderr, 3, 300)}")
            return int(cycles.group(1)) / int(iterations.group(1))

        return self.repeat_calls(once, repeats, {"mca_args": " ".join(args), "iterations": self.iterations})
