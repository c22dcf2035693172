"""Analyze page in a real browser: seconds to render it (cold server, then warm) and the latency of one
prune (untick a model term until the refitted ANOVA table is drawn and the page is idle).

Issue 17 asks for < 1 s per prune on the demo studies. Runs ``tunelab serve`` on a fresh database
with the demo studies (the toy study's 12-run screening is measured) and Debian chromium.

    .venv/bin/python bench/analyze_page.py [--prunes 10]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.conftest import CHROMIUM, CHROMIUM_ARGS, free_port, wait_healthy  # noqa: E402

TARGET_S = 1.0
IDLE = "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"


def cpu() -> str:
    """The CPU model this was measured on (machines differ by generation)."""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def term_rows(page: Page, term: str) -> int:
    return page.locator("[role='gridcell']", has_text=term).count()


def drawn(page: Page, term: str, present: bool) -> float:
    """Seconds until the ANOVA table has (or lacks) ``term`` and the page is idle."""
    t0 = time.perf_counter()
    condition = "" if present else "!"
    page.wait_for_function(f"() => {condition}[...document.querySelectorAll(\"[role='gridcell']\")]"
                           f".some(c => c.innerText.trim() === '{term}')", timeout=60_000)
    page.wait_for_function(IDLE, timeout=60_000)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prunes", type=int, default=10)
    args = parser.parse_args()
    db = Path(tempfile.mkdtemp(prefix="tunelab-bench-")) / "bench.duckdb"
    port = free_port()
    server = subprocess.Popen([str(Path(sys.executable).with_name("tunelab")), "--db", str(db), "serve", "--port",
                               str(port)], cwd=ROOT, start_new_session=True, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        wait_healthy(server, port)
        url = f"http://127.0.0.1:{port}/analyze"
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            renders = []
            for _ in range(3):  # the first is a cold server (imports), the others warm
                t0 = time.perf_counter()
                page.goto(url)
                page.wait_for_selector("text=ANOVA (Type I)", timeout=120_000)
                page.wait_for_function(IDLE, timeout=60_000)
                renders.append(time.perf_counter() - t0)
            box = page.get_by_label("linear x3")
            prunes = []
            for _ in range(args.prunes):
                box.uncheck(force=True)
                prunes.append(drawn(page, "x3", present=False))
                box.check(force=True)
                prunes.append(drawn(page, "x3", present=True))
            browser.close()
    finally:
        os.killpg(server.pid, 15)
        server.wait(timeout=30)
    median = statistics.median(prunes)
    print(f"CPU: {cpu()}, {os.cpu_count()} cores, OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'unset')}")
    print(f"Analyze render: cold server {renders[0]:.2f} s, warm {statistics.median(renders[1:]):.2f} s")
    print(f"prune (untick or tick one term, table redrawn, page idle), {len(prunes)} times: median {median:.2f} s, "
          f"max {max(prunes):.2f} s; median / {TARGET_S:g} s target = {median / TARGET_S:.2f}")


if __name__ == "__main__":
    main()
