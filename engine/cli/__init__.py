"""``tunelab`` command line: one sub-command module per area, each with a ``register`` function.

Every command returns an exit code; a :class:`~engine.errors.UserError` (or any ``ValueError`` from
bad input) becomes one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

#: Sub-command modules, in the order they appear in ``tunelab --help``.
COMMAND_MODULES = ("study", "imports", "export", "serve", "design", "analyze", "run", "measure", "bench", "tune", "decide")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tunelab", description="Budget-aware performance tuning.")
    parser.add_argument(
        "--db",
        default=os.environ.get("TUNELAB_DB", "tunelab.duckdb"),
        help="DuckDB file (default: $TUNELAB_DB or ./tunelab.duckdb)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"engine.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"engine.cli.{name}":
                continue  # an area not built yet
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, OSError) as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"tunelab: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tunelab: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
