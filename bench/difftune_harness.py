"""The basic-block harness on this CPU: sanity micro-blocks against published latencies and
throughputs, then the yield and run-to-run noise on BHive blocks (difftune.md §9.3).

Part 1 measures micro-blocks whose cycles per iteration are known for the host's core and prints the
error of each. Part 2 (``--blocks N``) measures the first N blocks of the llvm-mca anchor sample
that are not on BHive's may-alias list, prints the yield (fraction measured cleanly) and, with
``--passes 2``, the MAPE between two passes (the noise floor).

    python bench/difftune_harness.py                       # sanity blocks only
    python bench/difftune_harness.py --blocks 200 --passes 2
    python bench/difftune_harness.py --blocks 500 --passes 4 --baseline /tmp/old-harness

``--baseline BINARY`` measures the same blocks with another build of the harness (e.g. the harness.c of an
earlier commit: ``git show REV:engine/surrogates/difftune/harness/harness.c > old.c && cc -O2 -std=gnu11
-fPIE -pie -o /tmp/old-harness old.c``) side by side with this one, in alternating order, and prints the
seconds and yield of each, and the difference between the two beside the noise between passes of one.

Expected values, cycles per iteration, by core (``nearest_mcpu``):
* Golden Cove (sapphirerapids, emeraldrapids, alderlake, raptorlake): Intel 64 and IA-32
  Architectures Optimization Reference Manual, Golden Cove chapter (5 integer ALU ports, L1D
  load-to-use 5 cycles, FADD on the fast adder 2 cycles, FMA 4; FMUL is left out, as the sources
  disagree and 3 is measured here); uops.info (ADL-P) for
  IMUL r64 (3), DIV r32 (12) and DIV r64 (15) with small operands; store-to-load forwarding of an
  exact 64-bit match about 5 (Agner Fog, microarchitecture guide, Intel cores since Skylake: 4-5).
* Zen 3 / Zen 4 (znver3, znver4): AMD Software Optimization Guides for family 19h (4 integer ALUs,
  L1D load-to-use 4 cycles, FADD/FMUL 3, FMA 4) and uops.info (IMUL r64 3).
* Zen 5 (znver5): AMD Software Optimization Guide for family 1Ah (6 integer ALUs, L1D 4 cycles,
  FADD 2, FMUL 3, FMA 4).
* Skylake family (skylake, skylake-avx512, cascadelake): Intel Optimization Reference Manual and
  uops.info (L1D 4 cycles with a simple address, FADD/FMUL/FMA 4, IMUL r64 3).
A value a source does not give is left out (the block is measured and printed without an error).
The independent-add groups are bound by latency (1 per chain) and by the ALU count; dependent
1-cycle chains do not schedule perfectly on real cores, so those two read a little high.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

from engine.surrogates.difftune.bhive import select
from engine.surrogates.difftune.measure import Settings, cpu_identity, harness_binary, measure, nearest_mcpu
from engine.surrogates.difftune.metrics import accuracy

# name: (hex, AT&T text)
SANITY = {
    "add chain": ("4801c0", "add %rax,%rax"),
    "4 independent adds": ("4d01c04d01c94d01d24d01db", "add %r8,%r8; add %r9,%r9; add %r10,%r10; add %r11,%r11"),
    "6 independent adds": ("4d01c04d01c94d01d24d01db4d01e44d01ed", "add %r8,%r8 ... add %r13,%r13"),
    "imul chain": ("480fafc0", "imul %rax,%rax"),
    "L1 load chain": ("488b00", "mov (%rax),%rax"),
    "store/load forward": ("488903488b03", "mov %rax,(%rbx); mov (%rbx),%rax"),
    "store + load, independent": ("48894424084c8b4c2410", "mov %rax,8(%rsp); mov 16(%rsp),%r9"),
    "div r32 chain": ("31d2f7f1", "xor %edx,%edx; div %ecx"),
    "div r64 chain": ("31d248f7f1", "xor %edx,%edx; div %rcx"),
    "vector FMA chain": ("c4e275b8c2", "vfmadd231ps %ymm2,%ymm1,%ymm0"),
    "vector add chain": ("c5fc58c1", "vaddps %ymm1,%ymm0,%ymm0"),
    "vector mul chain": ("c5fc59c1", "vmulps %ymm1,%ymm0,%ymm0"),
}

GOLDEN_COVE = {"add chain": 1.0, "4 independent adds": 1.0, "6 independent adds": 1.2, "imul chain": 3.0,
               "L1 load chain": 5.0, "store/load forward": 5.0, "store + load, independent": 0.5,
               "div r32 chain": 12.0, "div r64 chain": 15.0, "vector FMA chain": 4.0, "vector add chain": 2.0}
ZEN3_4 = {"add chain": 1.0, "4 independent adds": 1.0, "6 independent adds": 1.5, "imul chain": 3.0,
          "L1 load chain": 4.0, "store + load, independent": 0.5, "vector FMA chain": 4.0, "vector add chain": 3.0,
          "vector mul chain": 3.0}
ZEN5 = {**ZEN3_4, "6 independent adds": 1.0, "vector add chain": 2.0}
SKYLAKE = {"add chain": 1.0, "4 independent adds": 1.0, "6 independent adds": 1.5, "imul chain": 3.0,
           "L1 load chain": 4.0, "store + load, independent": 1.0, "vector FMA chain": 4.0, "vector add chain": 4.0,
           "vector mul chain": 4.0}
EXPECTED = {
    **dict.fromkeys(("sapphirerapids", "emeraldrapids", "alderlake", "raptorlake"), GOLDEN_COVE),
    **dict.fromkeys(("znver3", "znver4"), ZEN3_4),
    "znver5": ZEN5,
    **dict.fromkeys(("skylake", "skylake-avx512", "cascadelake"), SKYLAKE),
}


def sanity(settings: Settings, mcpu: str) -> None:
    """Each micro-block's cycles per iteration (min and median) against the expected value."""
    expected = EXPECTED.get(mcpu, {})
    frame = measure([hex_ for hex_, _ in SANITY.values()], settings)
    print(f"{'block':27s} {'status':7s} {'min':>7s} {'median':>7s} {'expected':>8s} {'error':>7s}  instructions")
    for (name, (_, text)), row in zip(SANITY.items(), frame.itertuples(), strict=True):
        want = expected.get(name)
        got = row.cycles100 / 100
        error = f"{(got - want) / want:+.1%}" if want and row.status == "ok" else ""
        print(f"{name:27s} {row.status:7s} {got:7.3f} {row.cycles100_median / 100:7.3f} "
              f"{want if want else '':>8} {error:>7s}  {text}")


def bhive(settings: Settings, count: int, passes: int) -> None:
    """Yield per pass, the statuses, and the MAPE between the first two passes."""
    blocks = select(count, source="anchor")
    results = []
    for index in range(passes):
        start = time.perf_counter()
        frame = measure(blocks, settings)
        seconds = time.perf_counter() - start
        counts = frame["status"].value_counts().to_dict()
        print(f"pass {index + 1}: {len(blocks)} blocks in {seconds:.0f} s, yield {counts.get('ok', 0) / len(blocks):.1%} "
              f"({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))})")
        results.append(frame)
    refused = results[0][results[0]["status"] == "refused"]["reason"].str.split(" at ").str[0].value_counts()
    if len(refused):
        print("refusals:", ", ".join(f"{k} {v}" for k, v in refused.items()))
    if passes >= 2:
        print_noise(results[0], results[1])


def print_noise(first: pd.DataFrame, second: pd.DataFrame, label: str = "two-pass noise") -> None:
    """The second pass scored against the first over blocks clean in both, by the minimum and the median."""
    both = (first["status"] == "ok") & (second["status"] == "ok")
    for column in ("cycles100", "cycles100_median"):
        noise = accuracy(second.loc[both, column], first.loc[both, column])
        print(f"{label} ({column}): MAPE {noise.mape:.2%}, median APE {noise.median_ape:.2%}, "
              f"within 5% {noise.within_5pct:.1%}, Kendall tau {noise.kendall_tau:.3f} over {noise.n} blocks")


def side_by_side(settings: Settings, count: int, passes: int, baseline: Path) -> None:
    """The same blocks through the baseline build and this one, alternately: time, yield and agreement."""
    blocks = select(count, source="anchor") if count else [hex_ for hex_, _ in SANITY.values()]
    builds = {"baseline": baseline, "current": harness_binary()}
    frames: dict[str, list[pd.DataFrame]] = {name: [] for name in builds}
    seconds = dict.fromkeys(builds, 0.0)
    for index in range(passes):
        for name in (list(builds) if index % 2 == 0 else list(builds)[::-1]):
            start = time.perf_counter()
            frames[name].append(measure(blocks, settings, binary=builds[name]))
            seconds[name] += time.perf_counter() - start
    for name, runs in frames.items():
        yields = [float((frame["status"] == "ok").mean()) for frame in runs]
        print(f"{name:8s} {builds[name]}: {seconds[name] / passes:.2f} s per pass of {len(blocks)} blocks, "
              f"yield {min(yields):.1%}-{max(yields):.1%}")
    print(f"seconds per pass, current / baseline: {seconds['current'] / seconds['baseline']:.3f}")
    for k in range(passes - 1):
        for label, first, second in (("baseline vs baseline", frames["baseline"][k], frames["baseline"][k + 1]),
                                     ("current vs current", frames["current"][k], frames["current"][k + 1]),
                                     ("current vs baseline", frames["baseline"][k], frames["current"][k + 1])):
            print_noise(first, second, f"passes {k + 1}-{k + 2}, {label}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=0, help="measure the first N anchor blocks (not may-alias)")
    parser.add_argument("--passes", type=int, default=1, help="passes over those blocks (2: the noise between them)")
    parser.add_argument("--repeats", type=int, default=Settings.repeats)
    parser.add_argument("--baseline", type=Path, help="another harness build to measure side by side with this one")
    args = parser.parse_args()
    identity = cpu_identity()
    mcpu = nearest_mcpu(identity)
    print(f"CPU {identity.short_id} ({identity.model_name}, microcode {identity.microcode}) -> -mcpu={mcpu}")
    settings = Settings(repeats=args.repeats)
    if args.baseline:
        side_by_side(settings, args.blocks, max(2, args.passes), args.baseline)
        return
    sanity(settings, mcpu)
    if args.blocks:
        bhive(settings, args.blocks, args.passes)


if __name__ == "__main__":
    main()
