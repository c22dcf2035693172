"""CKernelRunner: a built-in pack of SPAPT-like C kernels, generated per configuration, compiled
with gcc (binaries cached by a hash of source and flags), timed in-process and checked.

Each kernel is a C template (``kernels/<name>.c``) inside a common harness (``kernels/harness.c``)
that times ``kernel()`` with ``CLOCK_MONOTONIC`` over warm-ups and repeats in one process and then
compares the output with a plain reference loop. Factors (any subset may be in a study's space;
missing ones take their baseline value):

========== ==================================================== =========
factor     meaning                                               baseline
========== ==================================================== =========
T_I, T_J,  loop tile size (1 = untiled)                          1
T_K
U_I, U_J,  ``#pragma GCC unroll`` factor on that loop (1 = none)  1
U_K
SCR        scalar replacement (register accumulators/hoisting)   false
VEC        ``GCC ivdep`` on streaming loops, ``omp simd``         false
           on register reductions (there U_J has no effect: gcc
           refuses ``GCC unroll`` on an ``omp simd`` loop)
OMP        OpenMP parallel row bands (``-fopenmp``)              false
THREADS    ``OMP_NUM_THREADS`` when OMP is on                    1
OPT        gcc optimisation level: O0, O1, O2, O3, Os, Ofast     O3
MARCH      ``-march=native``                                     false
FUNROLL    ``-funroll-loops``                                    false
========== ==================================================== =========

Binaries and baselines live in the cache folder (option ``cache``, else ``$TUNELAB_CACHE``, else
``~/.cache/tunelab``, on the machine that measures). The baseline (gcc -O3, no transformation) is
measured once per kernel, size and machine and kept there, so every result carries ``baseline_s``
and ``speedup`` in its metadata and results read as speed-ups over -O3.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import platform
import shutil
import string
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import UserError
from engine.runners.base import MeasureError, Runner, Trial, check_int, check_options, check_positive, utc_now
from engine.runners.process import check_outcome, run_process, tail

if TYPE_CHECKING:
    from engine.space.factors import Space

KERNEL_DIR = Path(__file__).with_name("kernels")
OPT_LEVELS = ("O0", "O1", "O2", "O3", "Os", "Ofast")
#: Largest relative error (norm-wise) accepted against the reference: reordered double sums differ
#: by a few ulps times the sum length, far below this; a wrong transformation is far above it.
TOLERANCE = 1e-9

TILES = (1, 8, 16, 32, 64, 128)
UNROLLS = (1, 2, 4, 8)


@dataclass(frozen=True)
class Kernel:
    """A kernel template: which loops it tiles/unrolls, its default search space, typical sizes."""

    name: str
    title: str
    tiles: tuple[str, ...]
    unrolls: tuple[str, ...]
    default_n: int

    @property
    def factor_names(self) -> tuple[str, ...]:
        return (*self.tiles, *self.unrolls, "SCR", "VEC", "OMP", "THREADS", "OPT", "MARCH", "FUNROLL")

    def space_dict(self) -> dict[str, Any]:
        """The default search space, as a spec's ``factors``/``constraints`` mapping."""
        factors = [{"name": t, "kind": "ordinal", "levels": list(TILES)} for t in self.tiles]
        factors += [{"name": u, "kind": "ordinal", "levels": list(UNROLLS)} for u in self.unrolls]
        factors += [{"name": b, "kind": "boolean"} for b in ("SCR", "VEC", "OMP")]
        factors += [{"name": "THREADS", "kind": "ordinal", "levels": [1, 2, 4]},
                    {"name": "OPT", "kind": "categorical", "levels": ["O1", "O2", "O3"]},
                    {"name": "MARCH", "kind": "boolean"}, {"name": "FUNROLL", "kind": "boolean"}]
        return {"factors": factors, "constraints": ["OMP or THREADS == 1"]}

    def space(self) -> Space:
        from engine.space.factors import Space

        return Space.from_dict(self.space_dict())


KERNELS: dict[str, Kernel] = {
    k.name: k
    for k in (
        Kernel("mm", "matrix multiply C = A·B", ("T_I", "T_J", "T_K"), ("U_K", "U_J"), 256),
        Kernel("bicg", "BiCG sub-kernel q = A·p, s = rᵀ·A", ("T_I", "T_J"), ("U_I", "U_J"), 2000),
        Kernel("gesummv", "y = α·A·x + β·B·x", ("T_I", "T_J"), ("U_I", "U_J"), 2000),
        Kernel("jacobi2d", "2-D Jacobi 5-point stencil", ("T_I", "T_J"), ("U_I", "U_J"), 500),
    )
}

BASELINE: dict[str, Any] = {
    "T_I": 1, "T_J": 1, "T_K": 1, "U_I": 1, "U_J": 1, "U_K": 1, "SCR": False, "VEC": False, "OMP": False,
    "THREADS": 1, "OPT": "O3", "MARCH": False, "FUNROLL": False,
}


def kernel_named(name: str) -> Kernel:
    if name not in KERNELS:
        raise UserError(f"kernel {name!r} is not one of {', '.join(KERNELS)}")
    return KERNELS[name]


def cache_dir() -> Path:
    """``$TUNELAB_CACHE``, else ``$XDG_CACHE_HOME/tunelab``, else ``~/.cache/tunelab``."""
    if os.environ.get("TUNELAB_CACHE"):
        return Path(os.environ["TUNELAB_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "tunelab"


def _as_bool(value: Any, name: str) -> bool:
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return bool(value)
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0", "yes", "no", "on", "off"):
        return value.strip().lower() in ("true", "1", "yes", "on")
    raise MeasureError("invalid", f"factor {name}: {value!r} is not a boolean")


def _as_int(value: Any, name: str, low: int, high: int) -> int:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise MeasureError("invalid", f"factor {name}: {value!r} is not an integer") from None
    if isinstance(value, bool) or not number.is_integer() or not low <= number <= high:
        raise MeasureError("invalid", f"factor {name}: {value!r} must be an integer in {low}..{high}")
    return int(number)


def settings(kernel: Kernel, config: Mapping[str, Any]) -> dict[str, Any]:
    """The configuration completed with baseline values and checked: every factor known and in range."""
    unknown = [k for k in config if k not in kernel.factor_names]
    if unknown:
        raise MeasureError("invalid", f"kernel {kernel.name} has no factor {unknown[0]!r} "
                                      f"(factors: {', '.join(kernel.factor_names)})")
    values = {name: config.get(name, BASELINE[name]) for name in kernel.factor_names}
    out: dict[str, Any] = {}
    for name, value in values.items():
        if name.startswith("T_"):
            out[name] = _as_int(value, name, 1, 1 << 16)
        elif name.startswith("U_"):
            out[name] = _as_int(value, name, 1, 64)
        elif name == "THREADS":
            out[name] = _as_int(value, name, 1, 1024)
        elif name == "OPT":
            text = str(value).lstrip("-")
            if text not in OPT_LEVELS:
                raise MeasureError("invalid", f"factor OPT: {value!r} is not one of {', '.join(OPT_LEVELS)}")
            out[name] = text
        else:
            out[name] = _as_bool(value, name)
    if out["THREADS"] > 1 and not out["OMP"]:
        raise MeasureError("invalid", f"THREADS={out['THREADS']} needs OMP on")
    return out


def render(kernel: Kernel, values: Mapping[str, Any], steps: int = 10) -> str:
    """The complete C source for one configuration (harness + kernel template, placeholders filled)."""
    vec = values["VEC"]

    def unroll(name: str) -> str:
        factor = values.get(name, 1)
        return f"#pragma GCC unroll {factor}" if factor > 1 else ""

    fill = {
        **{t: values.get(t, 1) if values.get(t, 1) > 1 else 0 for t in ("T_I", "T_J", "T_K")},
        "UNROLL_I": unroll("U_I"), "UNROLL_J": unroll("U_J"), "UNROLL_K": unroll("U_K"),
        # gcc cannot put "GCC unroll" on an "omp simd" loop: on a vectorised reduction, SIMD wins
        "UNROLL_JR": "" if vec else unroll("U_J"),
        "SCR": int(values["SCR"]),
        "SIMD": "#pragma GCC ivdep" if vec else "",
        "SIMD_REDUCE": "#pragma omp simd reduction(+:acc)" if vec else "",
        "SIMD_REDUCE2": "#pragma omp simd reduction(+:t, u)" if vec else "",
        "OMP_FOR": "#pragma omp parallel for schedule(static)" if values["OMP"] else "",
        "STEPS": int(steps),
    }
    body = string.Template((KERNEL_DIR / f"{kernel.name}.c").read_text()).substitute(fill)
    harness = (KERNEL_DIR / "harness.c").read_text()
    return harness.replace("/* @KERNEL@ */", body)


def flags(values: Mapping[str, Any], extra: Sequence[str] = ()) -> list[str]:
    out = [f"-{values['OPT']}", "-std=gnu11", "-fopenmp-simd"]
    if values["MARCH"]:
        out.append("-march=native")
    if values["FUNROLL"]:
        out.append("-funroll-loops")
    if values["OMP"]:
        out.append("-fopenmp")
    return out + list(extra)


@cache
def compiler_identity(compiler: str) -> str:
    """The compiler's path and version and the CPU model: part of the binary cache key (a binary
    built with -march=native belongs to its CPU)."""
    path = shutil.which(compiler)
    if path is None:
        raise MeasureError("failed", f"C compiler {compiler!r} not found (install gcc: make system-test-deps)")
    outcome = run_process([path, "-dumpfullversion", "-dumpversion"], timeout=30)
    cpu = platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu += " " + line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{path} {outcome.stdout.strip()} {cpu}"


def _hash(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


@dataclass(frozen=True)
class Binary:
    path: Path
    compile_s: float
    cached: bool


def compile_source(source: str, cflags: Sequence[str], *, compiler: str = "gcc", timeout: float | None = 120.0,
                   folder: Path | None = None) -> Binary:
    """Compile ``source`` once per (source, flags, compiler); later calls reuse the cached binary.

    The binary is linked under a temporary name and renamed, so concurrent workers never run half a
    file. A compile error raises :class:`MeasureError` ('failed') with the compiler's message.
    """
    folder = folder or cache_dir() / "ckernel"
    key = _hash(source, " ".join(cflags), compiler_identity(compiler))
    target = folder / f"k-{key}"
    if target.is_file():
        return Binary(target, 0.0, True)
    folder.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"build-{key}-", dir=folder))
    try:
        src = work / "kernel.c"
        src.write_text(source)
        started = time.perf_counter()
        outcome = run_process([compiler, *cflags, str(src), "-o", str(work / "a.out"), "-lm"], timeout=timeout)
        seconds = time.perf_counter() - started
        if outcome.timed_out:
            raise MeasureError("failed", f"compile killed after {timeout:g} s")
        if outcome.returncode != 0:
            raise MeasureError("failed", f"compile failed ({' '.join(cflags)}): {tail(outcome.stderr, 12, 1500)}")
        os.replace(work / "a.out", target)
        return Binary(target, seconds, False)
    finally:
        shutil.rmtree(work, ignore_errors=True)


class CKernelRunner(Runner):
    """Generate, compile, run and check one of the built-in kernels for a configuration."""

    kind = "ckernel"
    OPTIONS = ("kernel", "n", "steps", "cflags", "compiler", "compile_timeout", "baseline", "baseline_repeats", "cache")

    def __init__(self, kernel: str, *, n: int | None = None, steps: int = 10, cflags: Sequence[str] = (),
                 compiler: str = "gcc", compile_timeout: float | None = 120.0, baseline: bool = True,
                 baseline_repeats: int = 5, cache: str | None = None, **common: Any) -> None:
        super().__init__(**common)
        self.kernel = kernel_named(kernel)
        self.n = check_int({"n": n if n is not None else self.kernel.default_n}, "n", 0, 4, self.kind)
        self.steps = check_int({"steps": steps}, "steps", 10, 1, self.kind)
        if isinstance(cflags, str) or not all(isinstance(f, str) for f in cflags):
            raise UserError(f"runner 'ckernel': cflags must be a list of strings, got {cflags!r}")
        self.cflags = list(cflags)
        self.compiler = compiler
        self.compile_timeout = check_positive({"t": compile_timeout}, "t", 120.0, self.kind)
        self.baseline = bool(baseline)
        self.baseline_repeats = check_int({"baseline_repeats": baseline_repeats}, "baseline_repeats", 5, 1, self.kind)
        # None: the cache of whichever machine measures (a Dask worker's own), found when measuring
        self.cache = None if cache is None else str(Path(cache).expanduser())

    def folder(self) -> Path:
        return (Path(self.cache) if self.cache else cache_dir()) / "ckernel"

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any], **_: object) -> CKernelRunner:
        check_options(spec, cls.OPTIONS, cls.kind)
        if "kernel" not in spec:
            raise UserError(f"runner 'ckernel': needs 'kernel' (one of {', '.join(KERNELS)})")
        options = {k: spec[k] for k in cls.OPTIONS if k in spec and k != "kernel"}
        return cls(spec["kernel"], **options, **cls.common(spec))

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "kernel": self.kernel.name, "n": self.n}

    def build(self, values: Mapping[str, Any]) -> tuple[Binary, list[str]]:
        cflags = flags(values, self.cflags)
        source = render(self.kernel, values, self.steps)
        binary = compile_source(source, cflags, compiler=self.compiler, timeout=self.compile_timeout, folder=self.folder())
        return binary, cflags

    def execute(self, binary: Binary, values: Mapping[str, Any], repeats: int, warmup: int) -> dict[str, Any]:
        """Run the binary once (warm-ups + repeats in-process); the parsed JSON line."""
        env = {**os.environ, "OMP_NUM_THREADS": str(values["THREADS"])}
        argv = [str(binary.path), str(self.n), str(warmup), str(repeats), "1" if self.check else "0"]
        outcome = run_process(argv, timeout=self.timeout, env=env)
        check_outcome(outcome, self.timeout, f"kernel {self.kernel.name}")
        try:
            report: dict[str, Any] = json.loads(outcome.stdout.strip().splitlines()[-1])
        except (json.JSONDecodeError, IndexError):
            raise MeasureError("failed", f"kernel output is not the expected JSON line: {tail(outcome.stdout, 3, 300)!r}") from None
        if self.check and not report.get("error", 0.0) <= TOLERANCE:  # NaN fails too
            raise MeasureError("failed", f"wrong result: relative error {report.get('error')} against the reference "
                                         f"(tolerance {TOLERANCE:g})")
        return report

    def baseline_seconds(self) -> float:
        """The -O3, untransformed kernel's median time, measured once and cached on disk."""
        values = settings(self.kernel, {})
        binary, cflags = self.build(values)
        folder = self.folder()
        record = folder / f"baseline-{_hash(binary.path.name, str(self.n), str(self.steps))}.json"
        with open(folder / ".baseline.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # concurrent workers: one measures, the others read
            if record.is_file():
                return float(json.loads(record.read_text())["seconds"])
            report = self.execute(binary, values, self.baseline_repeats, max(self.warmup, 1))
            times = sorted(report["times"])
            seconds: float = times[len(times) // 2]
            record.write_text(json.dumps({"kernel": self.kernel.name, "n": self.n, "flags": cflags, "times": times,
                                          "seconds": seconds, "measured_at": utc_now().isoformat()}))
            return seconds

    def _run(self, config: dict[str, Any], repeats: int, start: int) -> Trial:
        values = settings(self.kernel, config)
        metadata: dict[str, Any] = {"kernel": self.kernel.name, "n": self.n}
        binary, cflags = self.build(values)
        metadata.update(flags=" ".join(cflags), compile_s=round(binary.compile_s, 4), cached_binary=binary.cached)
        report = self.execute(binary, values, repeats, self.warmup)
        metadata.update(checksum=report["checksum"], rel_error=report.get("error"))
        trial = Trial(values=[float(t) for t in report["times"]], metadata=metadata)
        if self.baseline:
            try:
                base = self.baseline_seconds()
            except MeasureError as exc:  # the configuration's own times stand; say why there is no speed-up
                metadata["baseline_error"] = exc.error
                return trial
            metadata["baseline_s"] = base
            trial.per_repeat = [{"speedup": base / t if t > 0 else None} for t in trial.values]
        return trial
