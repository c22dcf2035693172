"""``tunelab blocks measure``: BHive basic blocks' throughputs measured on this CPU, into the database."""

from __future__ import annotations

import argparse
import gzip
import sys

from app.cli._common import MAX_COUNT, add_json, bounded, open_store, output_place, write_output
from app.cli._output import emit


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("blocks", help="basic blocks: measure their throughput on this CPU (DiffTune's ground truth)")
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    m = actions.add_parser("measure", help="measure BHive blocks (anchor sample first, may-alias ones left out); resumable")
    m.add_argument("--limit", type=int, action=bounded(1, 10 * MAX_COUNT), help="at most this many blocks")
    m.add_argument("--source", choices=("anchor", "bhive"), default="bhive",
                   help="anchor: the 2,000-block llvm-mca sample only; bhive: then the rest of BHive (default)")
    m.add_argument("--pass", dest="pass_", type=int, default=1, action=bounded(1, 100),
                   help="pass number: a second pass re-measures the same blocks (the noise figure)")
    m.add_argument("--passes", type=int, default=1, action=bounded(1, 100),
                   help="measure this many passes in a row from --pass (a busy VM needs many: each block's truth is "
                        "then the median of its passes' minima)")
    m.add_argument("--repeats", type=int, default=64, action=bounded(16, 4096), help="timed repetitions per unroll")
    m.add_argument("--cpu", type=int, help="logical CPU to pin the harness to (default: the last one)")
    add_json(m)
    m.set_defaults(func=_measure)
    e = actions.add_parser("export", help="write one CPU's measured blocks as CSV (.csv.gz compresses)")
    e.add_argument("--out", required=True, help="output file")
    e.add_argument("--cpu", dest="cpu_id", help="CPU id (default: this machine's)")
    add_json(e)
    e.set_defaults(func=_export)


def _measure(args: argparse.Namespace) -> int:
    from engine.surrogates.difftune.measure import Settings
    from workflows.difftune import measure_passes

    def progress(done: int, total: int) -> None:
        print(f"\r{done:,}/{total:,} blocks", end="", file=sys.stderr, flush=True)

    with open_store(args) as store:
        runs = measure_passes(store, passes=args.passes, pass_=args.pass_, limit=args.limit, source=args.source,
                              settings=Settings(repeats=args.repeats, cpu=args.cpu),
                              progress=None if args.json or not sys.stderr.isatty() else progress)
    if not args.json and sys.stderr.isatty():
        print(file=sys.stderr)
    texts = []
    for done in runs:
        statuses = ", ".join(f"{n:,} {status}" for status, n in sorted(done.by_status.items())) or "nothing new"
        text = (f"CPU {done.cpu_id} (llvm-mca -mcpu={done.mcpu}), pass {done.pass_number}: {done.selected:,} blocks "
                f"selected, {done.already_stored:,} already stored, {done.measured:,} measured ({statuses}) in "
                f"{done.seconds:.1f} s")
        if done.noise is not None:
            text += "\n" + done.noise.summary()
            if done.noise.busy and args.json:  # the JSON holds the verdict; a person reading stderr gets the warning
                print(f"warning: pass {done.pass_number}: the machine was too busy to trust these timings "
                      f"({'; '.join(done.noise.reasons)})", file=sys.stderr)
        texts.append(text)
    document = runs[0].to_dict() if len(runs) == 1 else {"passes": [done.to_dict() for done in runs]}
    emit(document, args.json, "\n".join(texts))
    return 0


def _export(args: argparse.Namespace) -> int:
    from engine.io.export import csv_text
    from workflows.difftune import measurements_table

    with open_store(args) as store:
        table = measurements_table(store, args.cpu_id)
    data = csv_text(table, float_format="%.6g").encode()  # safe to open in a spreadsheet
    if args.out.endswith(".gz"):
        data = gzip.compress(data, mtime=0)  # the same table compresses to the same bytes
    write_output(args, data, *output_place(args.out))
    emit({"out": args.out, "blocks": len(table), "ok": int((table["status"] == "ok").sum())}, args.json,
         f"wrote {len(table):,} blocks ({int((table['status'] == 'ok').sum()):,} ok) to {args.out}")
    return 0
