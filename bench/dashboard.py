"""Dashboard start-up: seconds from ``tunelab serve`` on a fresh database to the Studies page rendered.

Runs the real server on a loopback port and Debian chromium through Playwright. Prints the server
start (demo seeding included), the first render and a warm reload.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main() -> None:
    port = free_port()
    db = Path(tempfile.mkdtemp(prefix="tunelab-bench-")) / "bench.duckdb"
    tunelab = Path(sys.executable).with_name("tunelab")
    started = time.perf_counter()
    server = subprocess.Popen([str(tunelab), "--db", str(db), "serve", "--port", str(port)], cwd=ROOT,
                              start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1)
                break
            except OSError:
                if time.perf_counter() - started > 120:
                    raise SystemExit("server did not start in 120 s") from None
                time.sleep(0.05)
        healthy = time.perf_counter() - started
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            page = browser.new_page()
            cell = page.locator("[role='gridcell']", has_text="Paper toy problem").first
            t0 = time.perf_counter()
            page.goto(f"http://127.0.0.1:{port}/")
            cell.wait_for(state="attached", timeout=120_000)
            first = time.perf_counter() - t0
            t0 = time.perf_counter()
            page.reload()
            cell.wait_for(state="attached", timeout=120_000)
            warm = time.perf_counter() - t0
            browser.close()
    finally:
        os.killpg(server.pid, 15)
        server.wait(timeout=30)
    print(f"server up (demo seeding included): {healthy:6.2f} s")
    print(f"first render of Studies:           {first:6.2f} s")
    print(f"warm reload:                       {warm:6.2f} s  (first/warm = {first / warm:.1f}x)")


if __name__ == "__main__":
    main()
