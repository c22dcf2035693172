"""Real-browser flows: Playwright driving Debian's chromium against ``tunelab serve`` on loopback."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from engine.paths import REPO_ROOT
from tests.conftest import free_port

pytestmark = pytest.mark.browser
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """``tunelab serve`` on a free loopback port over a fresh database (demo studies seeded)."""
    db = tmp_path_factory.mktemp("browser") / "tunelab.duckdb"
    port = free_port()
    exe = Path(sys.executable).with_name("tunelab")
    proc = subprocess.Popen([str(exe), "--db", str(db), "serve", "--port", str(port)], cwd=REPO_ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    break
        except OSError:
            time.sleep(0.5)
        if proc.poll() is not None:
            raise RuntimeError(f"tunelab serve exited: {proc.stdout.read()}")
    else:
        proc.kill()
        raise RuntimeError("tunelab serve did not become healthy in 90 s")
    yield url
    os.killpg(proc.pid, 15)
    proc.wait(timeout=30)


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian chromium is not installed (make test installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        instance = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield instance
        instance.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield page
    context.close()


def wait_ready(page) -> None:
    """Wait until Streamlit has finished running the script."""
    page.wait_for_selector("[data-testid='stApp']")
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=60_000
    )


def grid_cell(page, text: str):
    """A cell of an ``st.dataframe`` (drawn on a canvas; its accessible cells are in the DOM)."""
    return page.locator("[role='gridcell']", has_text=text).first


def test_create_a_study_from_a_template_and_see_it_listed(server, page):
    page.goto(server + "/")  # Studies is the default page
    wait_ready(page)
    grid_cell(page, "Paper toy problem").wait_for(state="attached")  # a seeded demo study is listed
    page.get_by_label("Study name").first.fill("Browser toy")
    page.get_by_role("button", name="Create study").click()
    page.get_by_text("Created study 'Browser toy'").wait_for()
    wait_ready(page)
    grid_cell(page, "Browser toy").wait_for(state="attached")
    # the study is really stored: the Space page shows its factors
    page.goto(server + "/space")
    wait_ready(page)
    page.get_by_text("Configurations (factorial)").wait_for()
