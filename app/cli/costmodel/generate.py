"""``tunelab costmodel generate``: real graph + configuration + runtime samples compiled and timed on this CPU with
JAX (costmodel.md §4), one ``.npz`` per graph in a folder; a rerun into the same folder continues."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from app.cli._common import MAX_COUNT, add_json, bounded
from app.cli._output import emit
from engine.surrogates.costmodel.generate.programs import TASKS

MAX_CPU = 4095


def register_generate(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = actions.add_parser("generate", help="compile and time programs with JAX on one pinned core (needs the costmodel-data extra); "
                                            "a rerun into the same folder continues")
    p.add_argument("--task", choices=TASKS, required=True,
                   help="tile: lax.map chunk sizes of row-wise functions; joint: chunk size × split; large: chunk size × split × "
                        "YNN fusions, ≥ 200 configurations a program; absolute: random op DAGs and small blocks")
    p.add_argument("--programs", type=int, required=True, action=bounded(1, MAX_COUNT), help="programs the folder should hold")
    p.add_argument("--out", required=True, help="folder of .npz files (created; existing programs are skipped)")
    p.add_argument("--seed", type=int, default=0, action=bounded(0, 2**31 - 1), help="which programs, and the timing order")
    p.add_argument("--cpu", type=int, action=bounded(0, MAX_CPU), help="CPU to pin to (default: the highest one allowed)")
    p.add_argument("--passes", type=int, default=2, action=bounded(1, 10), help="timing passes per configuration (default 2)")
    p.add_argument("--repeats", type=int, default=9, action=bounded(1, 100), help="timed batches per pass, the minimum kept (default 9)")
    p.add_argument("--shard", default="0/1", type=_shard, metavar="I/N",
                   help="time only programs I, I+N, I+2N, ... of the list (one generator per core into the same folder)")
    add_json(p)
    p.set_defaults(func=_generate)


def _shard(text: str) -> tuple[int, int]:
    """``I/N`` with 0 ≤ I < N."""
    index, _, count = text.partition("/")
    if not (index.isdigit() and count.isdigit() and 0 <= int(index) < int(count)):
        raise argparse.ArgumentTypeError(f"{text!r} is not I/N with 0 ≤ I < N, e.g. 1/2")
    return int(index), int(count)


def _generate(args: argparse.Namespace) -> int:
    from engine.surrogates.costmodel.generate.protocol import Protocol
    from engine.surrogates.costmodel.generate.run import Progress, generate

    def progress(step: Progress) -> None:
        print(f"\r{step.done}/{step.total} programs, {step.samples:,} samples timed now, {step.seconds:.0f} s ({step.program})",
              end="", file=sys.stderr, flush=True)

    shown = not args.json
    protocol = Protocol(repeats=args.repeats, passes=args.passes)
    done = generate(args.task, args.programs, Path(args.out), seed=args.seed, cpu=args.cpu, protocol=protocol, shard=args.shard,
                    progress=progress if shown else None)
    if shown and done.written:
        print(file=sys.stderr)
    noise = done.noise_quantiles()
    floor = (f"; pass-to-pass |log ratio| median {noise['median']:.1%}, p90 {noise['p90']:.1%}" if noise else "")
    emit({"task": done.task, "folder": str(done.folder), "programs": done.programs, "written": done.written, "skipped": done.skipped,
          "files": done.files, "samples": done.samples, "seconds": done.seconds, "noise": noise}, args.json,
         f"{done.task}: {done.written} programs timed now ({done.files} files, {done.samples:,} samples) and {done.skipped} already "
         f"there, in {done.seconds:.0f} s{floor}; files in {done.folder}")
    return 0
