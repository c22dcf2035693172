"""Bench: the decision loop of issue 30 on the toy problem, today's rule against the new one, same seeds.

**The page's loop** (what a person clicking the dashboard's defaults gets), for each seed s:

1. the toy study as the demo seeds it (a 12-run Plackett-Burman screening), measured with noise seed s;
2. Design page defaults: D-optimal (Fedorov, 5 starts, criterion D, design seed s) for the full cubic model,
   2k runs, over the page's candidates (a uniform sample of 20,000 of the 214 M configurations, seed 0; with
   factors fixed, every configuration left, at most 100,000 of them: the page would take all 1.77 M left
   after two fixes and spend minutes per design), the measured runs forced in;
3. Analyze: every measurement that agrees with the fixed factors, the model the last decision handed on,
   Type I, threshold 0.05, the default transform; accept the proposal;
4. back to 2 with the next model, until a proposal fixes nothing or no factor is left (at most 8 steps).

The answer is the fixed levels and, for the factors left, the last proposal's predicted best; its *true*
(noise-free) objective is the figure (the toy's optimum is -8.9). Variants, on the same noise and the same
step-1 design (common random numbers): ``today`` (any term with p < 0.05; levels from the candidates, the
20,000-row sample while the space is too large to list), ``term+optimum``, ``factor+sample`` and ``new``
(the whole-factor test, Holm across factors; levels from the model's optimum), plus ``factor-fdr``.

**The DLMT strategy** on the full cubic model with 2k designs, budget 100, configured like the page (every
significant factor fixed at once) and with its defaults (the most significant factor per step), rule term
against factor: the true objective of its best measured configuration, and whether it fixes an inert factor.

**The Laplacian** (the paper's table): the paper protocol (``PAPER_DLMT``, term rule) must stay at mean
slowdown ≤ 1.02 on ≤ 60 measurements; and DLMT's defaults with either rule at budgets 60 and 125.

Intervals: Wilson 95% for proportions, percentile bootstrap 95% (10,000 resamples) for means and paired
differences. The seeds (1000 + i) were never used while the code was written.

    .venv/bin/python bench/decisions.py [--seeds 50] [--jobs 2] [--lap-reps 200] [--skip-strategy] [--skip-laplacian]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.analysis import LinearModel, propose_decision  # noqa: E402
from engine.analysis.options import default_transform  # noqa: E402
from engine.analysis.study_data import candidate_set, restrict  # noqa: E402
from engine.design import optimal_design, plackett_burman, suggest_size  # noqa: E402
from engine.io.spec import TEMPLATES, parse_spec  # noqa: E402
from engine.model.choice import default_choice, to_formula  # noqa: E402
from engine.runners.synthetic import evaluate, toy_truth  # noqa: E402
from engine.space.configs import config_keys  # noqa: E402
from engine.study import StudySpec  # noqa: E402

INERT = ("x2", "x4", "x6")
OPTIMUM = -8.9
#: (name, rule, adjust, levels from the model's optimum?)
VARIANTS = (("today", "term", "holm", False), ("term+optimum", "term", "holm", True),
            ("factor+sample", "factor", "holm", False), ("new", "factor", "holm", True),
            ("factor-fdr", "factor", "fdr", True))
MAX_STEPS = 8
DESIGN_CANDIDATES = 100_000
BOOT = 10_000


def toy(seed: int) -> StudySpec:
    """The toy study whose noise is drawn from ``seed``: the same configuration has the same value in every variant."""
    spec = parse_spec(TEMPLATES["Paper toy problem (8 factors)"], "yaml")
    return replace(spec, runner={**spec.runner, "seed": seed})


def measure(spec: StudySpec, frame: pd.DataFrame) -> pd.DataFrame:
    out = frame[spec.space.names].reset_index(drop=True).copy()
    out["y"] = evaluate(spec.runner, out, config_keys(spec.space, out))
    return out


def design_step(spec: StudySpec, data: pd.DataFrame, formula: str, fixed: dict[str, Any], seed: int) -> pd.DataFrame:
    """The Design page's default D-optimal design for ``formula``, the runs that agree with ``fixed`` forced in
    (every configuration left when there are no more than the design's runs: a full factorial); returns the new
    runs, measured."""
    candidates = candidate_set(spec, None, seed=0, fixed=fixed)
    if len(candidates) > DESIGN_CANDIDATES:
        candidates = candidates.sample(DESIGN_CANDIDATES, random_state=0).reset_index(drop=True)
    rhs = "~ " + formula.split("~", 1)[1].strip()
    runs = suggest_size(rhs, "2k", data=candidates.head(2000))
    forced = restrict(data, fixed)[spec.space.names].drop_duplicates()
    if len(candidates) <= runs + len(forced):
        design = candidates
    else:
        design = optimal_design(candidates, rhs, runs, repeats=5, seed=seed, criterion="D", forced=forced).design
    new = design[spec.space.names].merge(forced, how="left", indicator=True)
    return measure(spec, new[new["_merge"] == "left_only"])


def page_loop(seed: int) -> list[dict[str, Any]]:
    """Every variant of the page's loop on one seed (step 1's design and data shared)."""
    spec = toy(seed)
    space = spec.space
    screening = measure(spec, plackett_burman(space, runs=12, seed=0).design)
    cubic = to_formula(default_choice(space), "y")
    first = pd.concat([screening, design_step(spec, screening, cubic, {}, seed)], ignore_index=True)
    rows = []
    for name, rule, adjust, optimum in VARIANTS:
        data, formula = first, cubic
        fixed: dict[str, Any] = {}
        step1: set[str] = set()
        point: dict[str, Any] = {}
        for step in range(1, MAX_STEPS + 1):
            if step > 1:
                data = pd.concat([data, design_step(spec, data, formula, fixed, seed + step)], ignore_index=True)
            here = restrict(data, fixed)
            model = LinearModel(formula, default_transform(here["y"])).fit(here)
            where = space if optimum else candidate_set(spec, None, seed=0, fixed=fixed)
            decision = propose_decision(model, 0.05, candidates=where, fixed=fixed, rule=rule, adjust=adjust)
            point = decision.evidence["predicted_best"]["point"]
            fix = decision.proposed["fix"]
            if step == 1:
                step1 = set(fix)
            if not fix:
                break
            fixed = {**fixed, **fix}
            formula = decision.proposed["formula"]
            if formula.split("~", 1)[1].strip() == "1":
                break
        final = {**point, **fixed}
        truth = float(toy_truth(pd.DataFrame([final]))[0])
        rows.append({"seed": seed, "variant": name, "steps": step, "runs": len(data), "truth": truth,
                     **{f"fixed_{f}": f in step1 for f in INERT}, "step1": ",".join(sorted(step1))})
    return rows


#: DLMT's configurations on the toy: like the page (every significant factor fixed at once), and its defaults
#: (the most significant factor per step); both on the full cubic model with 2k designs.
STRATEGY_CONFIGS: tuple[tuple[str, dict[str, Any]], ...] = (("like the page (fix all)", {"fix": "all"}), ("defaults (fix top)", {}))


def strategy_runs(seed: int) -> list[dict[str, Any]]:
    """DLMT on the full cubic model, budget 100, each configuration by either rule."""
    from engine.strategies import drive, make_strategy
    from engine.strategies.dlmt import DLMT
    from engine.strategies.domain import Domain

    spec = toy(seed)
    space = spec.space
    domain = Domain(space)
    cubic = default_choice(space).terms()

    def measured(index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        frame = space.from_level_index(index)
        return evaluate(spec.runner, frame, config_keys(space, frame)), np.full(len(frame), "ok")

    rows = []
    for config, options in STRATEGY_CONFIGS:
        for rule in ("term", "factor"):
            s = drive(make_strategy("DLMT", domain, 100, seed=seed, options={"formula": cubic, **options, "rule": rule}),
                      measured)
            assert isinstance(s, DLMT)
            best = s.history().sort_values("value", kind="stable").iloc[0]
            truth = float(toy_truth(pd.DataFrame([best[space.names].to_dict()]))[0])
            fixed = {f for d in s.decisions for f in (d.chosen or {}).get("fix", {})}
            rows.append({"seed": seed, "config": config, "rule": rule, "truth": truth, "used": s.used,
                         "inert": bool(fixed & set(INERT))})
    return rows


def wilson(k: int, n: int) -> tuple[float, float]:
    if n == 0:
        return math.nan, math.nan
    z, p = 1.959963984540054, k / n
    centre, half = (p + z * z / (2 * n)) / (1 + z * z / n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def bootstrap(values: np.ndarray) -> tuple[float, float]:
    rng = np.random.default_rng(0)
    means = values[rng.integers(0, len(values), (BOOT, len(values)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def run_all(fn: Callable[[int], list[dict[str, Any]]], seeds: list[int], jobs: int) -> pd.DataFrame:
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    with ProcessPoolExecutor(jobs) as pool:
        for i, result in enumerate(pool.map(fn, seeds), start=1):
            rows += result
            print(f"\r  {i}/{len(seeds)} seeds, {time.perf_counter() - started:.0f} s", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return pd.DataFrame(rows)


def report_page(runs: pd.DataFrame) -> None:
    n = runs["seed"].nunique()
    print(f"\nThe page's loop on the toy, {n} seeds: step 1 fixes an inert factor (share of seeds, Wilson 95%)")
    for name in [v[0] for v in VARIANTS]:
        part = runs[runs["variant"] == name]
        cells = []
        for f in INERT:
            k = int(part[f"fixed_{f}"].sum())
            low, high = wilson(k, n)
            cells.append(f"{f} {k / n:5.1%} [{low:.1%}, {high:.1%}]")
        k = int(part[[f"fixed_{f}" for f in INERT]].any(axis=1).sum())
        low, high = wilson(k, n)
        cells.append(f"any {k / n:5.1%} [{low:.1%}, {high:.1%}]")
        print(f"  {name:14s} " + "   ".join(cells))
    print(f"\nFinal true objective (optimum {OPTIMUM}), mean [bootstrap 95%]; paired difference to today; runs; steps")
    today = runs[runs["variant"] == "today"].set_index("seed")["truth"]
    for name in [v[0] for v in VARIANTS]:
        part = runs[runs["variant"] == name].set_index("seed")
        truth = part["truth"].to_numpy()
        low, high = bootstrap(truth)
        diff = (part["truth"] - today.loc[part.index]).to_numpy()
        dlow, dhigh = bootstrap(diff)
        at_optimum = float(np.mean(truth <= OPTIMUM + 1e-9))
        print(f"  {name:14s} {truth.mean():7.3f} [{low:.3f}, {high:.3f}]  diff {diff.mean():+.3f} [{dlow:+.3f}, {dhigh:+.3f}]"
              f"  at the optimum {at_optimum:5.1%}  runs {part['runs'].mean():5.1f}  steps {part['steps'].mean():.2f}")


def report_strategy(runs: pd.DataFrame) -> None:
    n = runs["seed"].nunique()
    print(f"\nDLMT on the toy (full cubic, 2k designs), budget 100, {n} seeds: true objective of the best measured, "
          "mean [bootstrap 95%]; paired difference to the term rule; runs fixing an inert factor at any step")
    for config, _ in STRATEGY_CONFIGS:
        part = runs[runs["config"] == config]
        term = part[part["rule"] == "term"].set_index("seed")["truth"]
        for rule in ("term", "factor"):
            these = part[part["rule"] == rule].set_index("seed")
            truth = these["truth"].to_numpy()
            low, high = bootstrap(truth)
            dlow, dhigh = bootstrap((these["truth"] - term.loc[these.index]).to_numpy())
            k = int(these["inert"].sum())
            ilow, ihigh = wilson(k, n)
            print(f"  {config:24s} {rule:6s} {truth.mean():7.3f} [{low:.3f}, {high:.3f}]  diff "
                  f"{truth.mean() - term.mean():+.3f} [{dlow:+.3f}, {dhigh:+.3f}]  inert fixed {k / n:5.1%} "
                  f"[{ilow:.1%}, {ihigh:.1%}]  at the optimum {np.mean(truth <= OPTIMUM + 1e-9):.1%}")


def report_laplacian(reps: int, jobs: int) -> None:
    from engine.compare.presets import PAPER_DLMT
    from engine.compare.replay import load_table
    from engine.compare.run import run_benchmark
    from engine.io.paths import data_dir

    folder = data_dir()
    if folder is None or not (folder / "laplacian" / "search_space.csv").is_file():
        print("\nLaplacian: the shared data folder is absent")
        return
    table = load_table(folder / "laplacian" / "search_space.csv", "time_per_pixel")
    print(f"\nLaplacian (DLMT, {reps} repetitions each, seed 11; mean slowdown [bootstrap 95%], max, mean budget used)")
    cases: list[tuple[str, int, dict[str, Any]]] = [("paper protocol (term)", 125, dict(PAPER_DLMT)), ("default, term", 60, {"rule": "term"}),
             ("default, factor", 60, {"rule": "factor"}), ("default, term", 125, {"rule": "term"}),
             ("default, factor", 125, {"rule": "factor"})]
    for label, budget, options in cases:
        started = time.perf_counter()
        runs = run_benchmark(table, ["DLMT"], reps=reps, budget=budget, jobs=jobs, seed=11, options={"DLMT": options}).runs
        slow = runs["slowdown"].to_numpy(dtype=float)
        low, high = bootstrap(slow)
        print(f"  {label:22s} budget {budget:3d}: {slow.mean():.4f} [{low:.4f}, {high:.4f}]  max {slow.max():.3f}  "
              f"used {runs['budget_used'].mean():5.1f}  ({time.perf_counter() - started:.0f} s)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--lap-reps", type=int, default=200)
    parser.add_argument("--skip-page", action="store_true")
    parser.add_argument("--skip-strategy", action="store_true")
    parser.add_argument("--skip-laplacian", action="store_true")
    args = parser.parse_args()
    from engine.surrogates.difftune.measure import cpu_identity

    identity = cpu_identity()
    print(f"CPU: {identity.model_name} ({identity.short_id}), {args.jobs} processes")
    seeds = [1000 + i for i in range(args.seeds)]
    print(f"seeds {seeds[0]}..{seeds[-1]}")
    if not args.skip_page:
        report_page(run_all(page_loop, seeds, args.jobs))
    if not args.skip_strategy:
        report_strategy(run_all(strategy_runs, seeds, args.jobs))
    if not args.skip_laplacian:
        report_laplacian(args.lap_reps, args.jobs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
