"""Shared fixtures: temporary database files, the shared data folder, the Laplacian space."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from engine.io.paths import REPO_ROOT, data_dir, reference_dir

#: How long a browser test waits for an element: a fresh server's first page run imports the numerics, and a
#: loaded 2-core machine (CI, a parallel test phase) takes several times longer than an idle one.
BROWSER_TIMEOUT_MS = 60_000

# Pages hide exception details from users (.streamlit/config.toml); tests want to read them.
os.environ.setdefault("STREAMLIT_CLIENT_SHOW_ERROR_DETAILS", "full")

# torch (a test extra) loaded as Tunelab loads it, before any test module imports it: its OpenMP threads then
# sleep instead of spinning against the other test worker (engine/surrogates/_torch.py says why).
with contextlib.suppress(ImportError):
    import engine.surrogates._torch  # noqa: F401


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "tunelab.duckdb"


@pytest.fixture(scope="session")
def data() -> Path:
    folder = data_dir()
    if folder is None:
        pytest.skip("shared data folder is absent")
    return folder


@pytest.fixture(scope="session")
def reference() -> Path:
    folder = reference_dir()
    if folder is None:
        pytest.skip("shared reference folder is absent")
    return folder


#: Debian's chromium, driven by Playwright in the browser tests (never a downloaded browser).
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking"]


@pytest.fixture(scope="session")
def browser():
    """One chromium per test process; each test file opens its own context in it."""
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian chromium is not installed (make test installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        instance = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


#: Every test page runs this first. No CSS animations or transitions: without a GPU, chromium composites every frame
#: of the app's spinners and fades in software, about a core-second per rerun that tests nothing. And the moments
#: the page last asked the server for a script run, last saw a script run end and last saw the run state
#: change, which tell ``browser_support.wait_ready`` that the run an action asked for is over, without a fixed sleep.
STILL_PAGE = """(() => {
    window.__tunelabSent = 0;
    window.__tunelabFinished = -1;
    window.__tunelabChanged = 0;
    let state = null;
    const send = WebSocket.prototype.send;
    WebSocket.prototype.send = function (data) {
        // A BackMsg whose first byte is 0x5A (field 11, rerun_script) asks for a script run; a heartbeat or any
        // other message starts none, so waiting for its run would wait for nothing.
        const first = data instanceof ArrayBuffer ? new Uint8Array(data)[0]
            : ArrayBuffer.isView(data) ? new Uint8Array(data.buffer, data.byteOffset, 1)[0] : 0x5A;
        if (first === 0x5A) window.__tunelabSent = performance.now();
        return send.call(this, data);
    };
    const watchRuns = new MutationObserver(() => {
        const app = document.querySelector("[data-testid='stApp']");
        const now = app && app.getAttribute("data-test-script-state");
        if (now !== state) {
            state = now;
            window.__tunelabChanged = performance.now();
            if (now === "notRunning") window.__tunelabFinished = window.__tunelabChanged;
        }
    });
    document.addEventListener("DOMContentLoaded", () => {
        const style = document.createElement("style");
        style.textContent = "*, *::before, *::after { animation: none !important; transition: none !important; }";
        document.head.appendChild(style);
        watchRuns.observe(document.body, {subtree: true, childList: true, attributes: true,
                                          attributeFilter: ["data-test-script-state"]});
    });
})();"""


def still_context(browser, **options):
    """A browser context whose pages do not animate (``STILL_PAGE``), 1400 × 1000 unless ``options`` say."""
    context = browser.new_context(**{"viewport": {"width": 1400, "height": 1000}, "reduced_motion": "reduce",
                                     **options})
    context.add_init_script(STILL_PAGE)
    return context


@pytest.fixture(scope="module")
def module_page(browser):
    """One tab for a test file. A page load in a new context costs about 7 CPU-s on 2 cores (a new renderer
    compiling Streamlit's frontend); a ``goto`` in a tab that already ran it about 3, and it still starts a new
    server session, so each test begins from a fresh app as before."""
    context = still_context(browser, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(BROWSER_TIMEOUT_MS)
    yield page
    context.close()


@pytest.fixture
def page(module_page):
    """The file's tab (``module_page``); every test opens its first page with ``goto``."""
    return module_page


def run_cli(*args: str, db: Path | None = None, check: bool = False, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run the real ``tunelab`` console script in a fresh process."""
    exe = Path(sys.executable).with_name("tunelab")
    command = [str(exe)] + (["--db", str(db)] if db else []) + list(args)
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=REPO_ROOT,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    if check and result.returncode != 0:
        raise AssertionError(f"{command} failed ({result.returncode}): {result.stderr}")
    return result


def one_line_error(result: subprocess.CompletedProcess, *needles: str, status: int | None = None) -> str:
    """A refused command's only stderr line, after checking a non-zero exit (``status`` when given), that no
    traceback was printed, and that the line names every one of ``needles``."""
    lines = result.stderr.strip().splitlines()
    assert result.returncode != 0 and status in (None, result.returncode), (result.returncode, result.stderr)
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_healthy(proc: subprocess.Popen, port: int, seconds: float = 120) -> None:
    """Return once the dashboard ``proc`` serves on ``port``; fail with its output if it exits first."""
    import time
    import urllib.request

    deadline = time.monotonic() + seconds
    while True:
        assert proc.poll() is None, f"the dashboard exited: {proc.stdout.read() if proc.stdout else ''}"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        assert time.monotonic() < deadline, f"the dashboard did not become healthy in {seconds:g} s"
        time.sleep(0.5)


def pytest_sessionfinish(session, exitstatus):
    """Drop the stores AppTest pages cached, so no DuckDB connection outlives the test session."""
    import gc
    import sys

    st = sys.modules.get("streamlit")  # only a session that imported it has stores to drop
    if st is not None:
        st.cache_resource.clear()
        gc.collect()


def kill_after(command: list[str], lines: int, parse) -> list:
    """Start ``command``, collect ``parse(line)`` for each stdout line that yields something, and
    SIGKILL its whole process group once ``lines`` were collected. Returns what was collected."""
    import signal

    writer = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT,
                              start_new_session=True)
    collected = []
    for line in writer.stdout:
        item = parse(line)
        if item is not None:
            collected.append(item)
        if len(collected) == lines:
            os.killpg(writer.pid, signal.SIGKILL)
            break
    writer.wait(timeout=30)
    assert writer.returncode == -signal.SIGKILL, "the writer finished before it could be killed"
    return collected


def cli(*args: str, db: Path | None = None, check: bool = False) -> subprocess.CompletedProcess:
    """``tunelab`` run in this process (the same ``main``, minus the interpreter start-up and imports): for
    the many refusals and follow-up commands a test checks once a real command has run. ``check``: fail unless
    it exited 0."""
    from app.cli import main

    argv = (["--db", str(db)] if db else []) + list(args)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(argv)
        except SystemExit as exc:  # argparse refusals
            status = exc.code
    if check and status != 0:
        raise AssertionError(f"{argv} failed ({status}): {err.getvalue()}")
    return subprocess.CompletedProcess(argv, status, out.getvalue(), err.getvalue())


def rerun_until(at, finished, tries: int = 120, pause: float = 0.5) -> None:
    """Re-run an AppTest whose page polls a background job until ``finished(at)`` (at most ``tries`` times)."""
    import time

    for _ in range(tries):
        if finished(at):
            return
        time.sleep(pause)
        at.run()
