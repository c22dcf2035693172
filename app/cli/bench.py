"""``tunelab bench``: replay search strategies on an exhaustive table and print the paper's table.

``--table`` is a CSV (with ``--objective``), a Kernel Tuner cache, or the name of a stored table
study. Results go to the DuckDB file when ``--db`` is given explicitly or a study is named.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from app.cli._common import MAX_COUNT, MAX_SEED, MAX_WORKERS, add_json, bounded
from app.cli._output import emit


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("bench", help="compare search strategies offline on an exhaustive table (slowdown vs budget)")
    p.add_argument("--table", required=True, metavar="FILE_OR_STUDY",
                   help="CSV table, Kernel Tuner cache (.json/.json.gz) or the name of a stored table study")
    p.add_argument("--objective", help="the CSV column to optimise (CSV tables only)")
    p.add_argument("--strategies", default="RS,LHS,GS,GSR,GA,LM,DLMT", help="comma-separated (default %(default)s)")
    p.add_argument("--reps", type=int, default=100, action=bounded(1, MAX_COUNT), help="repetitions per strategy (default %(default)s)")
    p.add_argument("--budget", type=int, default=125, action=bounded(1, MAX_COUNT), help="measurements per run (default %(default)s)")
    p.add_argument("--jobs", type=int, default=2, action=bounded(1, MAX_WORKERS), help="worker processes (default %(default)s)")
    p.add_argument("--seed", type=int, default=0, action=bounded(0, MAX_SEED), help="benchmark seed (default %(default)s)")
    p.add_argument("--preset", default="paper", choices=("paper", "none"),
                   help="per-strategy settings: the paper's (default) or every strategy's defaults with the full budget")
    p.add_argument("--options", metavar="JSON", help='strategy options, e.g. \'{"DLMT": {"refine": 4}}\' (over the preset)')
    p.add_argument("--name", help="name of the stored comparison (default: the table and the strategies that ran)")
    p.add_argument("--no-store", action="store_true", help="do not store the comparison even with --db")
    add_json(p)
    p.set_defaults(func=run)


def _options(text: str | None) -> dict[str, dict[str, Any]]:
    """``{"STRATEGY": {"option": value}}``, each strategy's options checked by name and type."""
    from app.cli._options import check_strategy_options, parse_json
    from engine.errors import UserError

    value = parse_json(text)
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise UserError('--options: expected {"STRATEGY": {"option": value, ...}, ...}')
    return {name: check_strategy_options(name, options) for name, options in value.items()}


def run(args: argparse.Namespace) -> int:
    from engine.compare.summary import PAPER_LAPLACIAN, summary_records, with_paper
    from engine.strategies import parse_names
    from storage import Store
    from workflows.compare import compare, table_from

    names = parse_names(args.strategies)
    extra = _options(args.options)
    is_file = Path(args.table).is_file()
    keep = not args.no_store and (not is_file or args.db_given)
    store = Store(args.db) if keep or not is_file else None
    try:
        table, study = table_from(args.table, args.objective, store)
        progress = None if args.json or not sys.stderr.isatty() else _progress
        done = compare(table, names, reps=args.reps, budget=args.budget, jobs=args.jobs, seed=args.seed,
                       preset_name=args.preset, options=extra, progress=progress, store=store if keep else None,
                       name=args.name, study=study)
        if progress:
            print(file=sys.stderr)
    finally:
        if store is not None:
            store.close()
    data = {
        "table": table.source,
        "objective": table.objective,
        "optimum": table.optimum,
        "reps": args.reps,
        "budget": args.budget,
        "seed": args.seed,
        "preset": args.preset,
        "seconds": round(done.seconds, 2),
        "comparison_id": done.stored_id,
        "strategies": summary_records(done.summary),
    }
    laplacian = set(PAPER_LAPLACIAN["strategy"]) >= set(names) and table.objective == "time_per_pixel"
    shown = with_paper(done.summary) if laplacian else done.summary
    text = shown.to_string(index=False, float_format=lambda v: f"{v:.4f}")
    text += ("\nmean_low-mean_high: the mean's 95% bootstrap interval; vs_best: within noise when the interval of its "
             "difference from the best mean holds 0")
    text += f"\n{args.reps} repetitions, budget {args.budget}, seed {args.seed}, {done.seconds:.1f} s"
    if done.stored_id is not None:
        text += f"; stored as comparison {done.stored_id}"
    emit(data, args.json, text)
    return 0


def _progress(done: int, total: int, strategy: str) -> None:
    print(f"\r{done}/{total} runs ({strategy})", end="", file=sys.stderr, flush=True)
