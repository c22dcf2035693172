"""``tunelab export study|best|report``: a study as JSON/CSV, its best configuration in six formats,
or a self-contained HTML report.

Files are written by :class:`workflows.StudySession`: atomically, never onto the database or its
log, a device, a FIFO or through a symbolic link, and logged in the store; replacing a file is said
on stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from app.cli._common import add_json, open_store, output_place
from app.cli._output import emit

if TYPE_CHECKING:
    from workflows.session import Written


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    exp = sub.add_parser("export", help="export studies and results as files")
    what = exp.add_subparsers(dest="what", metavar="WHAT")
    what.required = True
    p = what.add_parser("study", help="spec and measurements of one study")
    p.add_argument("name")
    p.add_argument("--format", choices=("json", "csv"), default="json")
    p.add_argument("--out", required=True, help="output file")
    add_json(p)
    p.set_defaults(func=_study)

    p = what.add_parser("best", help="the best configuration, measured or predicted (json, yaml, csv, C header, env, T4)")
    p.add_argument("--study", required=True)
    p.add_argument("--source", choices=("measured", "predicted"), default="measured",
                   help="the best measured configuration, or the one the latest stored model predicts (with its "
                        "95%% prediction interval)")
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


def _said(written: Written) -> str:
    """The written file's path; replacing an existing file is said on stderr."""
    if written.replaced:
        print(f"tunelab: replaced the existing file {written.path}", file=sys.stderr)
    return str(written.path)


def _study(args: argparse.Namespace) -> int:
    from workflows import StudySession

    with open_store(args) as store:
        session = StudySession(store, args.name)
        rows = len(session.results())
        path = _said(session.write_study(args.format, *output_place(args.out)))
    emit({"study": args.name, "format": args.format, "path": path, "rows": rows}, args.json,
         f"wrote {rows:,} rows of '{args.name}' to {path}")
    return 0


def _best(args: argparse.Namespace) -> int:
    from engine.io.best import best_filename
    from workflows import StudySession

    with open_store(args) as store:
        session = StudySession(store, args.study)
        best = session.best(args.source)
        warnings = [session.implausible_best(best), *best.warnings] if args.source == "predicted" else []
        for warning in filter(None, warnings):
            print(f"warning: {warning}", file=sys.stderr)
        path = _said(session.write_best(best, args.format, *_target(args.out, best_filename(best, args.format))))
    which = " (predicted)" if args.source == "predicted" else ""
    emit({"study": args.study, "format": args.format, "path": path, **best.to_dict()}, args.json,
         f"best of '{args.study}'{which}: {best.objective} = {best.value:.6g} at {best.config}; wrote {path}")
    return 0


def _report(args: argparse.Namespace) -> int:
    from engine.io.files import safe_filename
    from workflows import StudySession

    with open_store(args) as store:
        session = StudySession(store, args.study)
        path = _said(session.write_report(*_target(args.out, safe_filename(f"{session.name}-report.html"))))
    size = Path(path).stat().st_size
    emit({"study": args.study, "format": "html", "path": path, "bytes": size}, args.json,
         f"wrote the report of '{args.study}' to {path}")
    return 0
