"""Helpers shared by CLI commands: opening the store, the ``--json`` flag, bounded counts, writing files."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from storage import Store

#: Upper bounds of counts on the command line: beyond them a design or a campaign cannot fit in
#: memory or finish (``design lhs --runs 1000000000`` used to try until the machine gave out).
MAX_RUNS = 10_000
MAX_COUNT = 100_000
MAX_WORKERS = 1024
MAX_SEED = 2**63 - 1


def add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON document")


def bounded(low: int, high: int) -> type[argparse.Action]:
    """An argparse action (with ``type=int``) refusing, in one line naming the option and the value,
    an integer outside ``low``..``high``."""

    class Bounded(argparse.Action):
        def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, value: Any,
                     option_string: str | None = None) -> None:
            if not low <= value <= high:
                parser.error(f"{option_string} {value}: must be from {low:,} to {high:,}")
            setattr(namespace, self.dest, value)

    return Bounded


@contextmanager
def open_store(args: argparse.Namespace) -> Iterator[Store]:
    """The store named by ``--db``; imported lazily so commands without a database stay fast."""
    from storage import Store

    store = Store(args.db)
    try:
        yield store
    finally:
        store.close()


def write_output(args: argparse.Namespace, data: str | bytes, folder: str | Path, name: str) -> Path:
    """Write an output file (atomically, never onto the database, a device or through a symlink),
    saying on stderr when it replaced an existing file."""
    from engine.io.files import export_target, write_export
    from storage import database_files

    keep = database_files(args.db)
    _, existed = export_target(folder, name, keep=keep)
    path = write_export(data, folder, name, keep=keep)
    if existed:
        print(f"tunelab: replaced the existing file {path}", file=sys.stderr)
    return path


def output_place(out: str) -> tuple[Path, str]:
    """Folder and plain file name of an ``--out`` file path."""
    path = Path(out)
    return (path.parent if str(path.parent) else Path(".")), path.name
