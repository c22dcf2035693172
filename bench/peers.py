"""Tunelab's strategies beside its peers (issue 19): Kernel Tuner 1.5's strategies in simulation mode and Optuna's
TPE driven directly, on the exhaustively measured Kernel Tuner caches of the data folder, with one accounting.

* **A measurement** is one distinct configuration of the cache, in the order a method first asks for it. A failed
  configuration (``RuntimeFailedConfig``...) is charged like any other; a configuration the kernel's restrictions
  exclude (absent from the cache) is free; asking again for a measured one is free.
* **Kernel Tuner** gets the cache's own parameters and ``max_fevals`` = the budget, in simulation mode, with the
  cache's configurations as its restrictions (the caches do not carry the kernels' restriction strings); its
  ``results`` give the order of evaluation.
* **Optuna TPE, directly**: as a user would write it, one ``suggest_categorical`` per parameter over its values,
  a failed or restricted configuration raises ``TrialPruned``.
* **Tunelab**: ``engine.compare.run_benchmark`` with each strategy's defaults, run separately at every budget (its
  strategies plan with the budget). Peers and Optuna run once at the largest budget; a smaller budget reads their
  trace's prefix (they are anytime: the budget only stops them).

Per method, space and budget: the mean slowdown of the best configuration measured (÷ the cache's best), the share
of runs within 5% of the best, the measurements charged; at the largest budget, the measurements to the first
configuration within 5% (a run that never gets there counts budget + 1). Then per budget the geometric mean over
spaces, the ranking, and DLMT against random search on every space and budget.

**Common random numbers:** repetition i of every method, peers included, runs with the same seed, so variants of a
strategy are compared run by run. Each Tunelab method's geometric mean ÷ the best peer's (the peer with the lowest
geometric mean at that budget) comes with a 95% bootstrap interval, repetitions resampled within each space.

**A protocol that cannot overfit (issue 32):** ``--select`` names candidate settings of one strategy (``AUTO``,
``AUTO:then=tpe``, ``AUTO:patience=2``: a variant is ``NAME:option=value:...``). For each space held out, the
candidate with the lowest mean log slowdown over the *other* spaces and every budget is chosen, and its runs on the
held-out space form the method "Tunelab held-out choice"; the report names each fold's choice. Its figures are the
ones to quote: no space's figure comes from settings chosen with that space.

Needs the ``peers`` extra (``pip install -e .[peers]``: Kernel Tuner 1.5). Usage:

    python bench/peers.py [--reps 30] [--budgets 20,40,60,100,200] [--spaces convolution_milo_A4000,...]
                          [--tunelab RS,BO,TPE,GA,DLMT,AUTO] [--kt all] [--no-optuna] [--jobs 2] [--out runs.json]
                          [--select AUTO,AUTO:then=tpe]
    python bench/peers.py --load peers.json tunelab.json [--select ...]   # one report of runs made apart
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import random
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from engine.compare.intervals import geo_mean_ratio_interval
from engine.compare.peers import at_budget, read_peer_rows
from engine.compare.replay import load_table
from engine.compare.run import run_benchmark, run_seed
from engine.errors import UserError
from engine.io.paths import data_dir

#: Kernel Tuner 1.5's search strategies that run on a cache (brute force left out: it is the cache).
KT_STRATEGIES = ("random_sample", "basinhopping", "bayes_opt", "diff_evo", "dual_annealing", "firefly_algorithm",
                 "genetic_algorithm", "greedy_ils", "greedy_mls", "minimize", "mls", "ordered_greedy_mls", "pso",
                 "simulated_annealing")
TUNELAB = ("RS", "BO", "TPE", "GA", "DLMT", "AUTO")
BUDGETS = (20, 40, 60, 100, 200)
WITHIN = 1.05
#: Optuna asks at most this many times the budget before a run is declared stuck (repeats and restricted ones).
OPTUNA_ASKS = 50


class Cache:
    """A Kernel Tuner cache: its document, key order, and per configuration key the time (None: failed)."""

    def __init__(self, path: Path) -> None:
        opener = gzip.open if path.name.endswith(".gz") else open
        with opener(path, "rt") as handle:
            self.doc = json.load(handle)
        self.name = path.name.removesuffix(".gz").removesuffix(".json")
        self.path = path
        self.keys: list[str] = list(self.doc["tune_params_keys"])
        self.params: dict[str, list[Any]] = {k: list(self.doc["tune_params"][k]) for k in self.keys}
        self.times = {key: (float(r["time"]) if isinstance(r["time"], (int, float)) else None) for key, r in self.doc["cache"].items()}
        self.best = min(t for t in self.times.values() if t is not None)

    def key(self, config: dict[str, Any]) -> str:
        return ",".join(str(config[k]) for k in self.keys)

    def trace(self, keys: Sequence[str], budget: int) -> list[float]:
        """Best-so-far slowdown after each charged measurement of a method that asked for ``keys`` in this order
        (restricted and repeated ones free), at most ``budget`` long."""
        seen: set[str] = set()
        best, out = math.inf, []
        for key in keys:
            if key in seen or key not in self.times:
                continue
            seen.add(key)
            value = self.times[key]
            if value is not None:
                best = min(best, value / self.best)
            out.append(best)
            if len(out) == budget:
                break
        return out


def kt_run(cache: Cache, plain_json: Path, strategy: str, budget: int, seed: int) -> list[float]:
    """One Kernel Tuner run in simulation mode; its trace."""
    import kernel_tuner

    random.seed(seed)
    np.random.seed(seed % (1 << 32))
    cached = set(cache.times)

    def in_cache(config: dict[str, Any]) -> bool:  # a def: Kernel Tuner tries to parse a lambda's source
        return cache.key(config) in cached

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results, _ = kernel_tuner.tune_kernel(
            cache.doc["kernel_name"], "", cache.doc["problem_size"], [], cache.params, strategy=strategy,
            strategy_options={"max_fevals": budget}, cache=str(plain_json), simulation_mode=True,
            restrictions=in_cache, quiet=True, verbose=False)
    return cache.trace([cache.key(r) for r in results], budget)


def optuna_run(cache: Cache, budget: int, seed: int) -> list[float]:
    """Optuna's TPE as a user drives it on a Kernel Tuner space: categorical parameters, pruned failures."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=seed))
    asked: list[str] = []
    charged: set[str] = set()

    def objective(trial: optuna.Trial) -> float:
        config = {k: trial.suggest_categorical(k, v) for k, v in cache.params.items()}
        key = cache.key(config)
        asked.append(key)
        if key in cache.times:
            charged.add(key)
        value = cache.times.get(key)
        if value is None:
            raise optuna.TrialPruned
        return value

    def enough(study: optuna.Study, trial: Any) -> None:
        if len(charged) >= budget or len(asked) >= OPTUNA_ASKS * budget:
            study.stop()

    study.optimize(objective, callbacks=[enough])
    return cache.trace(asked, budget)


def _peer_task(task: tuple[str, str, str, int, int]) -> dict[str, Any]:
    kind, path, strategy, budget, rep = task
    cache = _CACHES.get(path) or _CACHES.setdefault(path, Cache(Path(path)))
    seed = run_seed(0, "", rep)  # common random numbers: the seed of repetition rep, whatever the method
    started = time.process_time()
    if kind == "KT":
        plain = _plain_json(cache)
        trace = kt_run(cache, plain, strategy, budget, seed)
    else:
        trace = optuna_run(cache, budget, seed)
    return {"space": cache.name, "method": f"{kind} {strategy}", "rep": rep, "trace": trace, "cpu_s": time.process_time() - started}


_CACHES: dict[str, Cache] = {}
_PLAIN: dict[str, Path] = {}


def _plain_json(cache: Cache) -> Path:
    """Kernel Tuner reads an uncompressed cache file: one per process."""
    if cache.name not in _PLAIN:
        folder = Path(tempfile.mkdtemp(prefix="peers-"))
        target = folder / f"{cache.name}.json"
        target.write_text(json.dumps(cache.doc))
        _PLAIN[cache.name] = target
    return _PLAIN[cache.name]


def peer_runs(paths: Sequence[Path], kt: Sequence[str], optuna: bool, budget: int, reps: int, jobs: int,
              say: Callable[[str], None]) -> list[dict[str, Any]]:
    tasks = [("KT", str(p), s, budget, r) for p in paths for s in kt for r in range(reps)]
    tasks += [("Optuna", str(p), "TPE", budget, r) for p in paths for r in range(reps)] if optuna else []
    rows: list[dict[str, Any]] = []
    if jobs == 1:
        for i, task in enumerate(tasks):
            rows.append(_peer_task(task))
            if i % 50 == 0:
                say(f"peers: {i + 1}/{len(tasks)}")
        return rows
    with ProcessPoolExecutor(jobs) as pool:
        for i, row in enumerate(pool.map(_peer_task, tasks, chunksize=5)):
            rows.append(row)
            if i % 50 == 0:
                say(f"peers: {i + 1}/{len(tasks)}")
    return rows


def variant(text: str) -> tuple[str, dict[str, Any]]:
    """``NAME:option=value:...`` → (NAME, options); a value is read as JSON when it parses (2, true, 0.5), else as
    text (``then=tpe``)."""
    name, *pairs = text.split(":")
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise argparse.ArgumentTypeError(f"{text!r}: expected NAME:option=value:..., got {pair!r}")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return name, options


def tunelab_runs(paths: Sequence[Path], methods: Sequence[str], budgets: Sequence[int], reps: int, jobs: int,
                 say: Callable[[str], None]) -> list[dict[str, Any]]:
    """Each method (a strategy or a variant, ``AUTO:then=tpe``) on every space and budget, seeds paired by
    repetition."""
    rows = []
    for path in paths:
        table = load_table(path)
        name = path.name.removesuffix(".gz").removesuffix(".json")
        for method in methods:
            strategy, options = variant(method)
            for budget in budgets:
                started = time.perf_counter()
                comparison = run_benchmark(table, [strategy], reps=reps, budget=budget, jobs=jobs, seed=0,
                                           options={strategy: options}, paired=True)
                say(f"Tunelab {method} on {name}, budget {budget}: {time.perf_counter() - started:.0f} s")
                for run in comparison.runs.itertuples():
                    rows.append({"space": name, "method": f"Tunelab {method}", "rep": run.rep, "budget": budget,
                                 "trace": list(run.trace), "used": int(run.budget_used)})
    return rows


def per_budget(rows: Sequence[dict[str, Any]], budgets: Sequence[int]) -> pd.DataFrame:
    """One row per (space, method, budget, rep): the best slowdown and the measurements charged."""
    out = []
    for row in rows:
        for budget in [row["budget"]] if "budget" in row else budgets:
            trace, best, used = at_budget(row, budget)
            reached = next((i + 1 for i, v in enumerate(trace) if v <= WITHIN), budget + 1)
            out.append({"space": row["space"], "method": row["method"], "budget": budget, "rep": row["rep"],
                        "slowdown": best, "within": best <= WITHIN, "used": used, "to_within": reached})
    return pd.DataFrame(out)


def report(frame: pd.DataFrame) -> str:
    """The issue's tables: geo-mean per budget and ranking, DLMT vs RS, DLMT's charged measurements, time to 5%."""
    lines = []
    mean = space_means(frame)
    geo = geo_means(mean)
    within = frame.groupby(["method", "budget"])["within"].mean().unstack("budget")
    lines.append("Geo-mean over spaces of the mean slowdown (best measured ÷ cache best):")
    lines.append(geo.sort_values(geo.columns[-1]).to_string(float_format=lambda v: f"{v:.3f}"))
    lines.append("\nShare of runs within 5% of the best:")
    lines.append(within.loc[geo.sort_values(geo.columns[-1]).index].to_string(float_format=lambda v: f"{v:.2f}"))
    top = frame["budget"].max()
    broken = frame[(frame["budget"] == top) & ~np.isfinite(frame["slowdown"])].groupby(["method", "space"]).size()
    if len(broken):
        lines.append(f"\nRuns that measured no working configuration in {top} (slowdown inf): " + ", ".join(
            f"{method} on {space} ({count})" for (method, space), count in broken.items()))
    lines.append("\nFirst per budget: " + ", ".join(f"{b}: {geo[b].idxmin()} ({geo[b].min():.3f})" for b in geo.columns))
    lines += versus_best_peer(frame)
    families = frame["space"].map(family)
    if families.nunique() > 1:  # issue 32 §2: each kernel family against its own best peer
        for name in sorted(families.unique()):
            part = frame[families == name]
            count = part["space"].nunique()
            lines += versus_best_peer(part, f"{name} ({count} space{'s' if count > 1 else ''})")
    reach = frame[frame["budget"] == top].groupby(["method", "space"])["to_within"].median().unstack("space")
    lines.append(f"\nMedian measurements to the first configuration within 5% (budget {top}; {top + 1} = never):")
    lines.append(reach.to_string(float_format=lambda v: f"{v:.0f}"))
    spaces = mean.unstack("space")
    for dlmt in [m for m in spaces.index.get_level_values(0).unique() if m.endswith("DLMT")]:
        rs = dlmt.replace("DLMT", "RS")
        if rs in spaces.index.get_level_values(0):
            ratio = spaces.loc[dlmt] / spaces.loc[rs]
            lines.append(f"\n{dlmt} ÷ {rs} mean slowdown per space and budget (> 1: DLMT worse):")
            lines.append(ratio.to_string(float_format=lambda v: f"{v:.3f}"))
        used = frame[frame["method"] == dlmt].groupby(["space", "budget"])["used"].mean().unstack("budget")
        lines.append(f"\n{dlmt}: mean measurements charged:")
        lines.append(used.to_string(float_format=lambda v: f"{v:.0f}"))
    return "\n".join(lines)


def _is_peer(method: str) -> bool:
    return not method.startswith("Tunelab ")


def _slowdowns(frame: pd.DataFrame, method: str, budget: int) -> dict[str, np.ndarray]:
    """Per space, the slowdowns of ``method``'s runs at ``budget``, in repetition order."""
    rows = frame[(frame["method"] == method) & (frame["budget"] == budget)].sort_values("rep")
    return {str(space): group["slowdown"].to_numpy(dtype=float) for space, group in rows.groupby("space")}


def family(space: str) -> str:
    """A cache's kernel family: the first word of its name (``convolution_milo_A4000`` → ``convolution``)."""
    return space.split("_", 1)[0]


def space_means(frame: pd.DataFrame) -> pd.Series:
    """Each (method, budget, space)'s mean slowdown over its runs."""
    return frame.groupby(["method", "budget", "space"])["slowdown"].mean()


def geo_means(mean: pd.Series) -> pd.DataFrame:
    """Method × budget: the geometric mean over spaces of ``space_means``."""
    return np.exp(np.log(mean).groupby(["method", "budget"]).mean()).unstack("budget")


def versus_best_peer(frame: pd.DataFrame, over: str = "every space") -> list[str]:
    """Each Tunelab method's geometric mean over ``frame``'s spaces ÷ the best peer's there, at each budget, with a
    95% bootstrap interval (paired by repetition where both ran the same repetitions on a space: the seeds are
    common)."""
    geo = geo_means(space_means(frame))
    peers = [m for m in geo.index if _is_peer(m)]
    ours = [m for m in geo.index if not _is_peer(m)]
    if not peers or not ours:
        return []
    lines = [f"\nGeo-mean over {over} ÷ the best peer's at the same budget, [95% bootstrap interval] (< 1: ahead of "
             f"every peer):"]
    best = {b: geo.loc[peers, b].idxmin() for b in geo.columns}
    lines.append("best peer: " + ", ".join(f"{b}: {best[b]}" for b in geo.columns))
    for method in sorted(ours, key=lambda m: geo.loc[m].iloc[-1]):
        cells = []
        for budget in geo.columns:
            a, b = _slowdowns(frame, method, budget), _slowdowns(frame, best[budget], budget)
            common = {space: a[space] for space in a if space in b}
            if not common:
                cells.append("-")
                continue
            paired = all(len(common[space]) == len(b[space]) for space in common)
            ratio, low, high = geo_mean_ratio_interval(common, {s: b[s] for s in common}, paired=paired)
            cells.append(f"{ratio:.3f} [{low:.3f}, {high:.3f}]")
        lines.append(f"{method}: " + "; ".join(f"{b}: {c}" for b, c in zip(geo.columns, cells)))
    return lines


def held_out_choice(frame: pd.DataFrame, candidates: Sequence[str],
                    label: str = "Tunelab held-out choice") -> tuple[pd.DataFrame, list[str]]:
    """Leave one space out: for each space, the candidate with the lowest mean log slowdown (mean over the runs,
    then log, averaged over every budget and every *other* space), and that candidate's runs on the held-out space
    relabelled ``label``. Returns the frame with those rows added and a line per fold naming its choice."""
    methods = [f"Tunelab {c}" for c in candidates]
    missing = [m for m in methods if m not in set(frame["method"])]
    if missing:
        raise UserError(f"--select: no runs of {missing[0]!r} to choose from")
    mean = frame[frame["method"].isin(methods)].groupby(["method", "space", "budget"])["slowdown"].mean()
    score = np.log(mean).unstack("space")  # (method, budget) × space
    lines, chosen = [f"\nLeave-one-space-out choice among {', '.join(candidates)} (scored on the other spaces):"], []
    for space in score.columns:
        train = score.drop(columns=space).groupby(level="method").mean().mean(axis=1)
        pick = str(train.idxmin())
        rows = frame[(frame["method"] == pick) & (frame["space"] == space)].assign(method=label)
        chosen.append(rows)
        lines.append(f"held out {space}: {pick.removeprefix('Tunelab ')} (training score "
                     + ", ".join(f"{m.removeprefix('Tunelab ')} {v:.4f}" for m, v in train.sort_values().items()) + ")")
    return pd.concat([frame, *chosen], ignore_index=True), lines


def cache_paths(spaces: str | None) -> list[Path] | None:
    """The Kernel Tuner caches of the data folder, or those ``spaces`` names (comma-separated); None without the
    data folder."""
    data = data_dir()
    if data is None:
        return None
    paths = sorted((data / "kernel_tuner").glob("*.json.gz"))
    if spaces:
        paths = [p for p in paths if p.name.removesuffix(".json.gz") in spaces.split(",")]
    return paths


def budget_list(text: str) -> list[int]:
    """``--budgets``: positive integers (a budget cuts a trace's prefix; 0 or less would cut it from the end)."""
    try:
        budgets = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers") from None
    if min(budgets) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: a budget is at least 1")
    return budgets


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--budgets", type=budget_list, default=list(BUDGETS), help="comma-separated, each ≥ 1")
    parser.add_argument("--spaces", help="cache names (default: every cache of the data folder's kernel_tuner/)")
    parser.add_argument("--tunelab", default=",".join(TUNELAB))
    parser.add_argument("--kt", default="all", help="Kernel Tuner strategies, comma-separated, 'all' or 'none'")
    parser.add_argument("--no-optuna", action="store_true")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", help="write every run (traces included) here as JSON")
    parser.add_argument("--load", nargs="+", metavar="RUNS", help="report on saved runs (--out files, e.g. the peers "
                        "and Tunelab's run apart on two cores) instead of running")
    parser.add_argument("--select", help="candidate settings (comma-separated, among --tunelab's methods) for the "
                        "leave-one-space-out choice")
    args = parser.parse_args()
    budgets: list[int] = args.budgets
    candidates = [c for c in (args.select or "").split(",") if c]

    def reported(rows: Sequence[dict[str, Any]]) -> str:
        frame = per_budget(rows, budgets)
        if not candidates:
            return report(frame)
        frame, lines = held_out_choice(frame, candidates)
        return report(frame) + "\n" + "\n".join(lines)

    if args.load:
        try:
            rows = [row for path in args.load for row in read_peer_rows(path)]
            print(f"{len(rows)} runs from {', '.join(args.load)}")
            print(reported(rows))
        except UserError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        return 0
    paths = cache_paths(args.spaces)
    if paths is None:
        print("the shared data folder is absent", file=sys.stderr)
        return 1
    kt = [] if args.kt == "none" else list(KT_STRATEGIES) if args.kt == "all" else args.kt.split(",")
    names = list(dict.fromkeys([n for n in args.tunelab.split(",") if n] + candidates))

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    from engine.surrogates.difftune.measure import cpu_identity

    identity = cpu_identity()
    print(f"CPU {identity.model_name} ({identity.short_id}); {len(paths)} spaces, {args.reps} repetitions, budgets {budgets}")
    started = time.perf_counter()
    rows = tunelab_runs(paths, names, budgets, args.reps, args.jobs, say) if names else []
    rows += peer_runs(paths, kt, not args.no_optuna, max(budgets), args.reps, args.jobs, say)
    print(f"{len(rows)} runs in {time.perf_counter() - started:.0f} s")
    if args.out:
        Path(args.out).write_text(json.dumps(rows))
    print(reported(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
