"""``tunelab import table|kt-cache``: measured search spaces as exhaustive table studies."""

from __future__ import annotations

import argparse
import time

from app.cli._common import add_json, open_store
from app.cli._output import emit


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    imp = sub.add_parser("import", help="import a measured table (CSV) or a Kernel Tuner cache as a study")
    kinds = imp.add_subparsers(dest="kind", metavar="KIND")
    kinds.required = True

    p = kinds.add_parser("table", help="a CSV of measured configurations")
    p.add_argument("file")
    p.add_argument("--objective", required=True, help="the column to optimise")
    direction = p.add_mutually_exclusive_group()
    direction.add_argument("--minimize", dest="direction", action="store_const", const="minimize")
    direction.add_argument("--maximize", dest="direction", action="store_const", const="maximize")
    p.add_argument("--name", help="study name (default: the file name)")
    add_json(p)
    p.set_defaults(func=_import, direction="minimize")

    p = kinds.add_parser("kt-cache", help="a Kernel Tuner cache file (.json or .json.gz)")
    p.add_argument("file")
    p.add_argument("--name", help="study name (default: the file name)")
    add_json(p)
    p.set_defaults(func=_import, objective="", direction="minimize")


def _import(args: argparse.Namespace) -> int:
    from workflows.session import import_measured

    started = time.perf_counter()
    with open_store(args) as store:
        imported = import_measured(store, args.file, args.kind, name=args.name, objective=args.objective,
                                   direction=args.direction)
    report = {"study": imported.spec.name, **imported.report, "seconds": round(time.perf_counter() - started, 3)}
    text = (
        f"imported '{imported.spec.name}': {report['rows']:,} rows, {report['valid_rows']:,} valid, "
        f"{report['invalid_rows']:,} invalid, {report.get('failed_rows', 0):,} failed; "
        + (f"optimum {report['optimum']:.7g} at {report['optimum_config']}" if report.get("optimum") is not None
           else "no successful row, so no optimum yet")
    )
    emit(report, args.json, text)
    return 0
