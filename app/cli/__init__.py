"""``tunelab`` command line: one sub-command module per area, each with a ``register`` function.

Every command returns an exit code. Whatever goes wrong becomes one line on stderr and a non-zero
exit status, never a traceback (:mod:`app.cli._errors`); a bad argument is one line too.
SIGTERM and SIGHUP stop a command like Ctrl-C (:mod:`app.cli._signals`).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from app.cli._errors import report
from app.cli._signals import Terminated, stop_on_signals

#: Sub-command modules, in the order they appear in ``tunelab --help``.
COMMAND_MODULES = ("study", "imports", "export", "serve", "design", "analyze", "run", "measure", "bench", "tune", "decide",
                   "blocks", "difftune", "costmodel")


class Parser(argparse.ArgumentParser):
    """An argument parser whose refusals are one line (argparse prints the usage block as well), and
    whose epilog may be written only when help is shown (``epilog_from``): tables such as the
    strategies' options import what every other command should not pay for at start-up."""

    def __init__(self, *args: Any, epilog_from: Callable[[], str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.epilog_from = epilog_from

    def format_help(self) -> str:
        if self.epilog_from is not None:
            self.epilog = self.epilog_from()
        return super().format_help()

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="tunelab", description="Budget-aware performance tuning.")
    parser.add_argument(
        "--db",
        default=os.environ.get("TUNELAB_DB", "tunelab.duckdb"),
        help="DuckDB file (default: $TUNELAB_DB or ./tunelab.duckdb)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"app.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"app.cli.{name}":
                continue  # an area not built yet
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    args.db_given = any(a == "--db" or a.startswith("--db=") for a in argv)  # a default database is not a choice
    try:
        with stop_on_signals():
            return int(args.func(args) or 0)
    except Terminated as exc:
        print(f"tunelab: stopped by {exc.name}", file=sys.stderr)
        return 128 + exc.signum
    except KeyboardInterrupt:
        print("tunelab: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - the one place every failure becomes one line
        return report(exc, getattr(args, "db", None))


if __name__ == "__main__":
    sys.exit(main())
