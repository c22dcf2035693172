"""``tunelab serve``: the dashboard on a local DuckDB file (127.0.0.1 unless told otherwise).

The command *becomes* the Streamlit server (``os.execve``): one process, so ``kill`` and Ctrl-C
reach the server itself and stopping it releases the DuckDB file (a child server used to outlive a
killed ``tunelab serve``, still serving and holding the lock). The bind address is always passed
explicitly, whatever folder the command runs from; a non-loopback ``--host`` is the person's
explicit request, passed on as ``TUNELAB_ALLOW_REMOTE=1`` (app/main.py refuses to show anything on
a non-loopback address without it).
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
from pathlib import Path

from app.cli._common import bounded

ALLOW_REMOTE = "TUNELAB_ALLOW_REMOTE"
#: The dashboard script, beside this package in a checkout or an installed wheel alike.
MAIN_SCRIPT = Path(__file__).resolve().parents[1] / "main.py"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="start the dashboard")
    p.add_argument("--port", type=int, default=8501, action=bounded(1, 65535))
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; anything else exposes "
                                                       "the dashboard and its database to the network)")
    p.add_argument("--no-demo", action="store_true", help="do not seed demo studies into a new database")
    p.set_defaults(func=_serve)


def is_loopback(address: str | None) -> bool:
    """Whether binding ``address`` keeps the server on this machine (unset means every interface)."""
    if not address:
        return False
    if address.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:
        return False


def streamlit_command(host: str, port: int) -> list[str]:
    return [
        sys.executable, "-m", "streamlit", "run", str(MAIN_SCRIPT),
        "--server.port", str(port), "--server.address", host, "--server.headless", "true",
        "--browser.gatherUsageStats", "false",
    ]


def _serve(args) -> int:
    db = str(Path(args.db).expanduser().resolve())
    from storage import Store
    from workflows.demo import seed_demo_studies

    fresh = not Path(db).exists()
    with Store(db) as store:  # fails early, in one line, if the file is locked, unwritable or not DuckDB
        if fresh and not args.no_demo:
            for name in seed_demo_studies(store):
                print(f"seeded demo study '{name}'")
    env = {**os.environ, "TUNELAB_DB": db}
    if is_loopback(args.host):
        env.pop(ALLOW_REMOTE, None)
    else:
        env[ALLOW_REMOTE] = "1"
        print(f"tunelab: warning: --host {args.host} exposes the dashboard and its database to the network",
              file=sys.stderr)
    print(f"Tunelab dashboard on http://{args.host}:{args.port} (database {db})", flush=True)
    sys.stderr.flush()
    os.execve(sys.executable, streamlit_command(args.host, args.port), env)
    return 1  # not reached: execve replaced this process
