"""The generator's loop (costmodel.md §4): programs → compiled configurations → timed with the §4.4 protocol →
one ``.npz`` per graph, resumable.

Programs are handled in *waves*: every configuration of a wave's programs is compiled and calibrated, then pass 1
times each program (its configurations interleaved), then pass 2, so the two passes of a program lie a wave's
measuring time apart (tens of seconds to minutes) and catch drift a back-to-back repeat would not; configurations
whose passes disagree are measured again before the wave is written. A program whose files all exist is skipped,
so an interrupted run resumes where it stopped, losing at most the wave under way.
"""

from __future__ import annotations

import json
import random
import time
import typing
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from engine.errors import UserError
from engine.surrogates.costmodel.generate.jaxbackend import Compiled
from engine.surrogates.costmodel.generate.programs import COUNTED, DagProgram, TileProgram, programs_for
from engine.surrogates.costmodel.generate.protocol import Clock, Protocol, Timings, calibrate, disagreeing, measure_pass, pass_noise, time_batch
from engine.surrogates.costmodel.generate.store import Sample, missing, sample_arrays, sample_path, write_npz
from engine.surrogates.costmodel.hlo import hlo_graph

Program = TileProgram | DagProgram
#: Programs compiled and timed together (see the module docstring); a large-task program alone times for minutes.
WAVE = 4
LARGE_WAVE = 1


class Backend(typing.Protocol):
    """What the loop needs from a compiler: :class:`~.jaxbackend.JaxBackend`, or a fake in tests."""

    def environment(self) -> dict[str, str]: ...

    def empty(self) -> Callable[[], object]: ...

    def compile(self, program: Program) -> list[Compiled]: ...


@dataclass(frozen=True)
class Progress:
    """Reported after each program: ``done`` of ``total`` (skipped ones count as done), the files written now."""

    done: int
    total: int
    program: str
    files: int
    samples: int
    seconds: float


@dataclass(frozen=True)
class Generated:
    """A run's summary; ``noise`` is |log(pass 1 ÷ pass 2)| of every configuration timed in both passes now."""

    task: str
    folder: Path
    programs: int
    written: int
    skipped: int
    files: int
    samples: int
    seconds: float
    noise: list[float] = field(default_factory=list)

    def noise_quantiles(self) -> dict[str, float]:
        """Median and 90th percentile of the pass-to-pass noise (empty without any)."""
        if not self.noise:
            return {}
        return {"median": float(np.median(self.noise)), "p90": float(np.quantile(self.noise, 0.9))}


def generate(task: str, programs: int, out: str | Path, *, seed: int = 0, cpu: int | None = None, protocol: Protocol | None = None,
             backend: Backend | None = None, progress: Callable[[Progress], None] | None = None, wave: int | None = None,
             shard: tuple[int, int] = (0, 1), clock: Clock = time.perf_counter_ns) -> Generated:
    """Make (or complete) the first ``programs`` programs of ``task`` in folder ``out``; see the module docstring.
    The JAX backend pinned to ``cpu`` is used unless ``backend`` is given. ``shard`` (i, n) keeps programs i, i + n, ...
    of them, so that n generators on n cores fill one folder without timing a program twice."""
    protocol = protocol or Protocol()
    wave = wave or (LARGE_WAVE if task == "large" else WAVE)
    if wave < 1:
        raise UserError(f"wave: at least 1 program, got {wave}")
    index, count = shard
    if not 0 <= index < count:
        raise UserError(f"shard: {index}/{count} is not I/N with 0 ≤ I < N")
    specs = programs_for(task, seed, programs)[index::count]
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise UserError(f"--out {folder}: not a folder")
    folder.mkdir(parents=True, exist_ok=True)
    todo = [spec for spec in specs if missing(folder, [f.stem for f in spec.files()])]
    started = time.monotonic()
    state = _State(len(specs) - len(todo), 0, 0, [])
    if todo:
        if backend is None:
            from engine.surrogates.costmodel.generate.jaxbackend import JaxBackend

            backend = JaxBackend(cpu)
        context = _Context(backend, protocol, clock, random.Random(seed), folder, seed)
        for start in range(0, len(todo), wave):
            _wave(context, todo[start:start + wave], state, len(specs), started, progress)
    return Generated(task, folder, len(specs), state.written, state.skipped, state.files, state.samples, time.monotonic() - started,
                     state.noise)


@dataclass
class _State:
    skipped: int
    files: int
    samples: int
    noise: list[float]
    written: int = 0


@dataclass
class _Context:
    backend: Backend
    protocol: Protocol
    clock: Clock
    rng: random.Random
    folder: Path
    seed: int
    meta: dict[str, str] = field(default_factory=dict)
    dispatch_ns: float = float("nan")

    def __post_init__(self) -> None:
        self.meta = {**self.backend.environment(), "protocol": json.dumps(asdict(self.protocol)), "seed": str(self.seed)}
        self.dispatch_ns = dispatch_overhead(self.backend.empty(), self.clock, self.protocol)


def dispatch_overhead(call: Callable[[], object], clock: Clock, protocol: Protocol) -> float:
    """ns of an empty call, timed like any configuration: what a kernel under ``small_s`` mostly measures."""
    calls = max(calibrate(call, clock, protocol), 1)
    return min(time_batch(call, calls, clock) / calls for _ in range(protocol.repeats))


def _wave(context: _Context, specs: Sequence[Program], state: _State, total: int, started: float,
          progress: Callable[[Progress], None] | None) -> None:
    compiled = [context.backend.compile(spec) for spec in specs]
    timings = measure_wave(compiled, context.protocol, context.clock, context.rng)
    for spec, comps, timing in zip(specs, compiled, timings):
        written = _write(context, spec, comps, timing)
        state.files += written
        state.samples += len(comps)
        state.written += 1
        state.noise += pass_noise(timing.minima()).tolist()
        if progress is not None:
            progress(Progress(state.skipped + state.written, total, spec.name, state.files, state.samples, time.monotonic() - started))


def measure_wave(compiled: Sequence[Sequence[Compiled]], protocol: Protocol, clock: Clock, rng: random.Random) -> list[Timings]:
    """Calibrate every configuration, run the planned passes program by program, then re-measure disagreements."""
    timings = [Timings.empty(len(comps), protocol) for comps in compiled]
    for comps, timing in zip(compiled, timings):
        timing.calls[:] = [calibrate(comp.call, clock, protocol) for comp in comps]
    for slot in range(protocol.passes):
        for comps, timing in zip(compiled, timings):
            _pass(comps, timing, np.flatnonzero(timing.calls > 0), slot, protocol, clock, rng)
    for retry in range(protocol.retries):
        for comps, timing in zip(compiled, timings):
            rows = np.flatnonzero(disagreeing(timing.minima(), protocol.tolerance) & (timing.calls > 0))
            _pass(comps, timing, rows, protocol.passes + retry, protocol, clock, rng)
    return timings


def _pass(comps: Sequence[Compiled], timing: Timings, rows: np.ndarray, slot: int, protocol: Protocol, clock: Clock,
          rng: random.Random) -> None:
    if len(rows):
        times = measure_pass([comps[i].call for i in rows], timing.calls[rows].tolist(), protocol.repeats, clock, rng)
        timing.record(slot, rows, times)


def _write(context: _Context, spec: Program, comps: Sequence[Compiled], timing: Timings) -> int:
    """The program's files; returns how many."""
    configs = spec.configurations()
    files = spec.files()
    for graph_file in files:
        rows = np.array(graph_file.configs)
        chosen = comps[graph_file.graph]
        feat = np.array([[_column(configs[i].features, comps[i], name) for name in spec.columns] for i in rows], dtype=np.float64)
        options = {configs[i].label: configs[i].options for i in rows}
        sample = Sample(
            graph=hlo_graph(chosen.hlo), program=spec.name, task=spec.task, columns=spec.columns, config_feat=feat,
            timings=Timings(timing.repeats_ns[rows], timing.calls[rows], timing.load[rows]),
            default=int(np.flatnonzero(rows == graph_file.graph)[0]),
            extra={"graph_flops": chosen.flops, "graph_bytes": chosen.bytes, "dispatch_ns": context.dispatch_ns},
            meta={**context.meta, "config_options": json.dumps(options), "configs": json.dumps([configs[i].label for i in rows])},
        )
        write_npz(sample_path(context.folder, graph_file.stem), sample_arrays(sample, context.protocol))
    return len(files)


def _column(features: dict[str, float], comp: Compiled, name: str) -> float:
    """A configuration column: the spec's own, or the compiler's count for :data:`COUNTED` columns."""
    if name in COUNTED:
        return comp.flops if name == "config_flops" else comp.bytes
    return float(features[name])
