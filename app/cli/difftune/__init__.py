"""``tunelab difftune``: the llvm-mca-like simulator's parameter tables, and its evaluation against llvm-mca-19
or the blocks measured on this CPU."""

from __future__ import annotations

import argparse

from app.cli._common import MAX_COUNT, add_json, bounded, open_store, output_place, write_output
from app.cli._output import emit
from app.cli.difftune.dataset import register_dataset
from app.cli.difftune.learn import register_learning


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("difftune", help="the llvm-mca-like simulator: parameter tables and evaluation")
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True

    table = actions.add_parser("table", help="parameter tables: build llvm-mca-19's defaults, list, diff, export")
    tables = table.add_subparsers(dest="table_action", metavar="TABLE_ACTION")
    tables.required = True
    build = tables.add_parser("build", help="llvm-mca-19's default table for an arch, stored in the database")
    build.add_argument("--arch", required=True, help="llvm-mca -mcpu (haswell, skylake, ivybridge, znver3, ...)")
    build.add_argument("--name", help="stored name (default: ARCH-default)")
    build.add_argument("--source", choices=("anchor", "measured"), default="anchor",
                       help="opcodes of the anchor blocks, or of this CPU's measured blocks too")
    build.add_argument("--limit", type=int, action=bounded(1, 10 * MAX_COUNT), help="opcodes of at most this many blocks")
    add_json(build)
    build.set_defaults(func=_build)
    listing = tables.add_parser("list", help="stored tables")
    add_json(listing)
    listing.set_defaults(func=_list)
    diff = tables.add_parser("diff", help="the fields that differ between two tables (stored names or .json/.parquet/.txt files)")
    diff.add_argument("a")
    diff.add_argument("b")
    add_json(diff)
    diff.set_defaults(func=_diff)
    learn = tables.add_parser("learn", help="learn a table for measured blocks (greedy from llvm-mca-19's defaults, "
                              "memory forwarding on, on the training part; evaluate --held-out scores the rest)")
    learn.add_argument("--name", required=True, help="stored name")
    learn.add_argument("--measured", help="a tunelab blocks export CSV, e.g. data/difftune/amd-25-1-1.csv.gz "
                       "(default: this CPU's stored blocks)")
    learn.add_argument("--arch", help="-mcpu of the start table (default: this CPU's nearest)")
    learn.add_argument("--budget", type=int, action=bounded(1, 10**9), help="simulator calls (default: 20 per training block)")
    learn.add_argument("--sample", type=int, action=bounded(1, 10**6), default=100,
                       help="each parameter decided on at most this many of the blocks holding it (default 100)")
    learn.add_argument("--seed", type=int, action=bounded(0, 2**31 - 1), default=0)
    add_json(learn)
    learn.set_defaults(func=_learn)
    export = tables.add_parser("export", help="write a table as .json, .parquet or DiffTune's key-value .txt")
    export.add_argument("name", help="stored name (or a table file)")
    export.add_argument("--out", required=True, help="output file: .json, .parquet or .txt (DiffTune's key value lines)")
    export.set_defaults(func=_export)

    evaluate = actions.add_parser("evaluate", help="the simulator (and llvm-mca-19) against llvm-mca-19 or measured blocks")
    evaluate.add_argument("--truth", choices=("mca", "measured"), default="mca",
                          help="mca: llvm-mca-19's cycles on the anchor blocks; measured: this CPU's measured blocks")
    evaluate.add_argument("--arch", help="-mcpu (default: haswell for mca, this CPU's nearest for measured)")
    evaluate.add_argument("--limit", type=int, action=bounded(1, 10 * MAX_COUNT), help="at most this many blocks")
    evaluate.add_argument("--table", help="also score this table (stored name or file)")
    evaluate.add_argument("--measured", help="measured truth: a tunelab blocks export CSV, e.g. data/difftune/"
                                             "amd-25-1-1.csv.gz (default: this CPU's stored blocks)")
    evaluate.add_argument("--held-out", action="store_true",
                          help="only the test part of the blocks, which no learning run trains on (a hash of each block)")
    add_json(evaluate)
    evaluate.set_defaults(func=_evaluate)
    register_dataset(actions)
    register_learning(actions)


def _build(args: argparse.Namespace) -> int:
    from workflows.difftune import build_table

    with open_store(args) as store:
        name, table = build_table(store, args.arch, args.name, args.source, args.limit)
    emit({"name": name, "arch": args.arch, "opcodes": len(table.rows), "dispatch_width": table.dispatch_width,
          "rob_size": table.rob_size, "resources": table.resources}, args.json,
         f"stored table '{name}': {len(table.rows):,} opcodes, dispatch width {table.dispatch_width}, ROB "
         f"{table.rob_size}, {len(table.units)} units and {len(table.groups)} groups")
    return 0


def _learn(args: argparse.Namespace) -> int:
    import sys
    import time

    from workflows.difftune import learn_table

    said = [time.monotonic()]

    def progress(calls: int, mape: float) -> None:  # a line every 10 s: the search takes minutes
        if time.monotonic() - said[0] >= 10:
            said[0] = time.monotonic()
            print(f"  {calls:,} simulator calls, training MAPE {mape:.2%}", file=sys.stderr, flush=True)

    with open_store(args) as store:
        done = learn_table(store, args.name, measured=args.measured, arch=args.arch, budget=args.budget,
                           sample=args.sample, seed=args.seed, on_progress=progress)
    source = "".join(f" --{flag} {value}" for flag, value in (("measured", args.measured), ("arch", args.arch)) if value)
    emit({"name": done.name, "cpu_id": done.cpu_id, "blocks": done.blocks, "calls": done.calls,
          "training_mape": done.training_mape}, args.json,
         f"stored table '{done.name}': learnt on {done.blocks:,} training blocks of {done.cpu_id} in {done.calls:,} "
         f"simulator calls, training MAPE {done.training_mape:.2%}; score it with tunelab difftune evaluate --truth "
         f"measured{source} --table {done.name} --held-out")
    return 0


def _list(args: argparse.Namespace) -> int:
    from storage.difftune import param_tables

    with open_store(args) as store:
        frame = param_tables(store)
    emit(frame.to_dict("records"), args.json,
         frame[["id", "name", "arch", "created_at"]].to_string(index=False) if len(frame) else "no tables stored")
    return 0


def _diff(args: argparse.Namespace) -> int:
    from engine.surrogates.difftune.params import diff
    from workflows.difftune import table_from

    with open_store(args) as store:
        changes = diff(table_from(store, args.a), table_from(store, args.b))
    emit(changes.to_dict("records"), args.json,
         changes.to_string(index=False) if len(changes) else f"'{args.a}' and '{args.b}' are the same table")
    return 0


def _export(args: argparse.Namespace) -> int:
    import tempfile
    from pathlib import Path

    from workflows.difftune import table_from

    folder, name = output_place(args.out)
    with open_store(args) as store:
        table = table_from(store, args.name)
    with tempfile.TemporaryDirectory() as scratch:  # ParamTable writes files; the bytes then go through write_output
        path = Path(scratch) / name
        table.save(path)
        written = write_output(args, path.read_bytes(), folder, name)
    print(f"wrote table '{args.name}' ({len(table.rows):,} opcodes) to {written}")
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    from workflows.difftune import evaluate

    with open_store(args) as store:
        result = evaluate(store, truth=args.truth, arch=args.arch, limit=args.limit, table=args.table,
                          measured=args.measured, held_out=args.held_out)
    shown = result.accuracy.assign(mape=result.accuracy["mape"].map("{:.2%}".format),
                                   median_ape=result.accuracy["median_ape"].map("{:.2%}".format),
                                   within_5pct=result.accuracy["within_5pct"].map("{:.1%}".format),
                                   kendall_tau=result.accuracy["kendall_tau"].map("{:.3f}".format))
    truth = f"llvm-mca-19 -mcpu={result.arch}" if result.truth == "mca" else f"measured on {result.cpu_id}"
    blocks = f"{result.predictions['hex'].nunique():,} {'held-out ' if args.held_out else ''}blocks"
    emit({"evaluation": result.id, "arch": result.arch, "truth": result.truth, "cpu_id": result.cpu_id, "held_out": args.held_out,
          "accuracy": result.accuracy, "by_category": result.by_category}, args.json,
         f"evaluation {result.id}: {blocks}, truth = {truth}, simulator -mcpu={result.arch}\n{shown.to_string(index=False)}")
    return 0
