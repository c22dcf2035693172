"""``tunelab export study``: a study's spec and measurements as one JSON or CSV file."""

from __future__ import annotations

import argparse
from pathlib import Path

from engine.cli._common import add_json, open_store
from engine.cli._output import emit


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


def _study(args) -> int:
    from engine.io.export import study_to_csv, study_to_json, write_export

    out = Path(args.out)
    with open_store(args) as store:
        study = store.get_study(args.name)
        measurements = store.measurements(args.name)
        if study.spec.runner.get("kind") == "table" and measurements.empty:
            measurements = store.study_table(args.name)
        text = study_to_json(study.spec, measurements) if args.format == "json" else study_to_csv(study.spec, measurements)
        path = write_export(text, out.parent if str(out.parent) else Path("."), out.name)
        store.log_export(study, args.format, str(path), path.stat().st_size)
    emit({"study": args.name, "format": args.format, "path": str(path), "rows": len(measurements)}, args.json,
         f"wrote {len(measurements):,} rows of '{args.name}' to {path}")
    return 0
