"""Helpers shared by CLI commands: opening the store, the ``--json`` flag."""

from __future__ import annotations

import argparse
from contextlib import contextmanager


def add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON document")


@contextmanager
def open_store(args: argparse.Namespace):
    """The store named by ``--db``; imported lazily so commands without a database stay fast."""
    from storage import Store

    store = Store(args.db)
    try:
        yield store
    finally:
        store.close()
