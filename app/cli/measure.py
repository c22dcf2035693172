"""``tunelab measure``: one configuration of a built-in C kernel, measured now (no study needed)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from app.cli._common import MAX_RUNS, add_json, bounded
from app.cli._output import emit
from app.cli.run import add_executor, check_executor_args

if TYPE_CHECKING:
    from engine.runners.ckernel import Kernel

_TRUE, _FALSE = {"true", "1", "yes", "on"}, {"false", "0", "no", "off"}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("measure", help="measure one configuration of a built-in C kernel (mm, bicg, gesummv, jacobi2d)")
    p.add_argument("--kernel", required=True, help="built-in kernel name")
    p.add_argument("--set", action="append", default=[], metavar="FACTOR=VALUE",
                   help="a factor value (repeatable); factors not set take the -O3 baseline value")
    p.add_argument("--size", type=int, action=bounded(1, 1_000_000), help="problem size N (default: the kernel's)")
    p.add_argument("--repeats", type=int, default=3, action=bounded(1, MAX_RUNS))
    p.add_argument("--warmup", type=int, default=1, action=bounded(0, MAX_RUNS))
    p.add_argument("--timeout", type=float, default=60.0, help="seconds for the kernel run")
    add_executor(p)
    add_json(p)
    p.set_defaults(func=_measure)


def parse_settings(kernel: Kernel, items: list[str]) -> dict[str, Any]:
    """``FACTOR=VALUE`` strings as typed values, by the kind of the kernel's factor."""
    space = kernel.space()
    config: dict[str, Any] = {}
    for item in items:
        name, sep, text = item.partition("=")
        name, text = name.strip(), text.strip()
        if not sep or not name or not text:
            raise ValueError(f"--set {item!r}: expected FACTOR=VALUE")
        if name not in kernel.factor_names:
            raise ValueError(f"--set {name}: kernel '{kernel.name}' has no such factor "
                             f"(factors: {', '.join(kernel.factor_names)})")
        factor = space.factor(name)
        if factor.kind == "boolean":
            if text.lower() not in _TRUE | _FALSE:
                raise ValueError(f"--set {name}={text}: expected true or false")
            config[name] = text.lower() in _TRUE
        elif factor.numeric:
            try:
                config[name] = int(text)
            except ValueError:
                raise ValueError(f"--set {name}={text}: expected an integer") from None
        else:
            config[name] = text
    return config


def _measure(args: argparse.Namespace) -> int:
    import statistics

    from engine.runners.ckernel import CKernelRunner, kernel_named
    from workflows.kernels import measure_once

    check_executor_args(args)
    kernel = kernel_named(args.kernel)
    config = parse_settings(kernel, args.set)
    runner = CKernelRunner(kernel.name, n=args.size, repeats=args.repeats, warmup=args.warmup, timeout=args.timeout)
    results = measure_once(runner, config, executor=args.executor, workers=args.workers, scheduler=args.scheduler)
    ok = [r for r in results if r.ok]
    meta = results[0].metadata if results else {}
    data: dict[str, Any] = {"kernel": kernel.name, "n": runner.n, "config": config, "flags": meta.get("flags"),
            "baseline_s": meta.get("baseline_s"), "results": [r.to_dict() for r in results],
            "median_s": statistics.median(r.value for r in ok if r.value is not None) if ok else None}
    if data["median_s"] and data["baseline_s"]:
        data["speedup"] = data["baseline_s"] / data["median_s"]
    lines = [f"kernel {kernel.name} ({kernel.title}) n={runner.n} {config or '(baseline)'}",
             f"  flags: {meta.get('flags', '?')}"]
    lines += [f"  repeat {r.repeat}: {r.status} " + (f"{r.value * 1e3:.4g} ms" if r.ok and r.value is not None else (r.error or "")) for r in results]
    if ok:
        lines.append(f"median {data['median_s'] * 1e3:.4g} ms" + (
            f"; speed-up {data['speedup']:.3g}x over gcc -O3 baseline {data['baseline_s'] * 1e3:.4g} ms" if "speedup" in data else ""))
    emit(data, args.json, "\n".join(lines))
    return 0 if ok else 1
