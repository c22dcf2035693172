"""``tunelab export study|best|report``: a study as JSON/CSV, its best configuration in six formats,
or a self-contained HTML report.

Files are written by :func:`app.cli._common.write_output`: atomically, never onto the database
or its log, a device, a FIFO or through a symbolic link; replacing a file is said on stderr.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from app.cli._common import add_json, open_store, output_place, write_output
from app.cli._output import emit


def register(sub: argparse._SubParsersAction) -> None:
    exp = sub.add_parser("export", help="export studies and results as files")
    what = exp.add_subparsers(dest="what", metavar="WHAT")
    what.required = True
    p = what.add_parser("study", help="spec and measurements of one study")
    p.add_argument("name")
    p.add_argument("--format", choices=("json", "csv"), default="json")
    p.add_argument("--out", required=True, help="output file")
    add_json(p)
    p.set_defaults(func=_study)

    p = what.add_parser("best", help="the best measured configuration (json, yaml, csv, C header, env file, T4)")
    p.add_argument("--study", required=True)
    p.add_argument("--format", choices=("json", "yaml", "csv", "header", "env", "t4"), default="json")
    p.add_argument("--out", required=True, help="output file, or an existing folder for a default file name")
    add_json(p)
    p.set_defaults(func=_best)

    p = what.add_parser("report", help="a self-contained HTML report of one study")
    p.add_argument("--study", required=True)
    p.add_argument("--out", required=True, help="output .html file, or an existing folder")
    add_json(p)
    p.set_defaults(func=_report)


def _target(out: str, default_name: str) -> tuple[Path, str]:
    """Folder and plain file name for ``--out`` (an existing folder gets ``default_name``)."""
    path = Path(out)
    if path.is_dir() and not path.is_symlink():
        return path, default_name
    return output_place(out)


def _study(args) -> int:
    from engine.io.export import study_to_csv, study_to_json
    from storage.reporting import results_frame

    with open_store(args) as store:
        study = store.get_study(args.name)
        measurements = results_frame(store, study)
        text = study_to_json(study.spec, measurements) if args.format == "json" else study_to_csv(study.spec, measurements)
        path = write_output(args, text, *output_place(args.out))
        store.log_export(study, args.format, str(path), path.stat().st_size)
    emit({"study": args.name, "format": args.format, "path": str(path), "rows": len(measurements)}, args.json,
         f"wrote {len(measurements):,} rows of '{args.name}' to {path}")
    return 0


def _best(args) -> int:
    from engine.io.best import best_filename, best_measured, export_best
    from storage.reporting import results_frame

    with open_store(args) as store:
        study = store.get_study(args.study)
        best = best_measured(study.spec, results_frame(store, study))
        path = write_output(args, export_best(best, args.format), *_target(args.out, best_filename(best, args.format)))
        store.log_export(study, f"best-{args.format}", str(path), path.stat().st_size)
    emit({"study": args.study, "format": args.format, "path": str(path), **best.to_dict()}, args.json,
         f"best of '{args.study}': {best.objective} = {best.value:.6g} at {best.config}; wrote {path}")
    return 0


def _report(args) -> int:
    from engine.io.export import safe_filename
    from storage.reporting import report_html

    with open_store(args) as store:
        study = store.get_study(args.study)
        folder, name = _target(args.out, safe_filename(f"{study.name}-report.html"))
        path = write_output(args, report_html(store, args.study), folder, name)
        store.log_export(study, "report-html", str(path), path.stat().st_size)
    emit({"study": args.study, "format": "html", "path": str(path), "bytes": path.stat().st_size}, args.json,
         f"wrote the report of '{args.study}' to {path}")
    return 0
