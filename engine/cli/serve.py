"""``tunelab serve``: the dashboard on a local DuckDB file (127.0.0.1 unless told otherwise)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from engine.paths import REPO_ROOT


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="start the dashboard")
    p.add_argument("--port", type=int, default=8501)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--no-demo", action="store_true", help="do not seed demo studies into a new database")
    p.set_defaults(func=_serve)


def _serve(args) -> int:
    if not 1 <= args.port <= 65535:
        raise ValueError(f"--port {args.port}: must be between 1 and 65535")
    db = str(Path(args.db).expanduser().resolve())
    from storage import Store
    from storage.demo import seed_demo_studies

    fresh = not Path(db).exists()
    with Store(db) as store:  # fails early, in one line, if the file is locked or unwritable
        if fresh and not args.no_demo:
            for name in seed_demo_studies(store):
                print(f"seeded demo study '{name}'")
    env = {**os.environ, "TUNELAB_DB": db}
    command = [
        sys.executable, "-m", "streamlit", "run", str(REPO_ROOT / "app" / "main.py"),
        "--server.port", str(args.port), "--server.address", args.host, "--server.headless", "true",
        "--browser.gatherUsageStats", "false",
    ]
    print(f"Tunelab dashboard on http://{args.host}:{args.port} (database {db})", flush=True)
    try:
        return subprocess.call(command, env=env, cwd=str(REPO_ROOT))
    except KeyboardInterrupt:
        return 0
