"""What the real-browser tests share: a served dashboard over a prepared database, and page helpers
(the ``browser`` and ``page`` fixtures are in ``conftest.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import expect

from engine.io.paths import REPO_ROOT
from tests.conftest import BROWSER_TIMEOUT_MS, free_port, wait_healthy

expect.set_options(timeout=BROWSER_TIMEOUT_MS)


def prepare_toy(db: Path) -> None:
    """Demo studies, the toy study with 20 measured random configurations (design 1) and a pending
    8-row design (design 2)."""
    from engine.runners.synthetic import evaluate
    from engine.space.configs import config_keys
    from storage import Store
    from workflows.demo import TOY_STUDY, seed_demo_studies

    with Store(db) as store:
        seed_demo_studies(store)
        study = store.get_study(TOY_STUDY)
        measured = study.spec.space.sample(20, seed=4)
        design_id = store.save_design(study, measured, name="screening sample", kind="random")
        values = evaluate(study.spec.runner, measured, config_keys(study.spec.space, measured))
        for (_, row), value in zip(measured.iterrows(), values):
            store.record_measurement(study, row.to_dict(), float(value), design_id=design_id)
        store.save_design(study, study.spec.space.sample(8, seed=5, exclude=measured), name="follow-up",
                          kind="random")


@contextmanager
def serving(db: Path) -> Iterator[str]:
    """``tunelab serve`` on a free loopback port over ``db``; yields its URL."""
    port = free_port()
    exe = Path(sys.executable).with_name("tunelab")
    proc = subprocess.Popen([str(exe), "--db", str(db), "serve", "--port", str(port)], cwd=REPO_ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        wait_healthy(proc, port, seconds=90)
        yield f"http://127.0.0.1:{port}"
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)


def served(prepare: Callable[[Path], None]) -> Callable[..., Iterator[str]]:
    """A module-scoped fixture: a fresh database made by ``prepare``, served while the module runs."""

    @pytest.fixture(scope="module")
    def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
        db = tmp_path_factory.mktemp("browser") / "tunelab.duckdb"
        prepare(db)
        with serving(db) as url:
            yield url

    return server


#: The app has finished the script runs an action asked for: Streamlit marks ``stApp`` "notRunning", that happened
#: after the page's last rerun request (``STILL_PAGE`` records the moments), and it has stayed so for ``QUIET_MS``:
#: a page that calls ``st.rerun()`` is "notRunning" for a few milliseconds between its two runs. A loaded machine
#: can take seconds to start a run, so a request counts as answered without a run seen only after
#: ``UNSEEN_RUN_MS`` (a run too short for the page to mark "running" would otherwise be waited for forever).
QUIET_MS = 200
UNSEEN_RUN_MS = 15_000
READY = f"""() => {{
    const app = document.querySelector("[data-testid='stApp']");
    const now = performance.now();
    return !!app && app.getAttribute("data-test-script-state") === "notRunning"
        && now - window.__tunelabChanged > {QUIET_MS}
        && (window.__tunelabFinished > window.__tunelabSent || now - window.__tunelabSent > {UNSEEN_RUN_MS});
}}"""


def wait_ready(page) -> None:
    """Wait until Streamlit has finished the script runs an interaction or a page load asked for, however soon or
    late the server starts them: no fixed sleep and no guess at when a rerun begins."""
    page.wait_for_function(READY, timeout=60_000, polling=50)


def grid_cell(page, text: str):
    """A cell of an ``st.dataframe`` (drawn on a canvas; its accessible cells are in the DOM)."""
    return page.locator("[role='gridcell']", has_text=text).first


def predicted_export(page, server: str):
    """Open Export, choose the latest model's predicted best, and return the exported file's code block (the
    JSON format first) once it shows a prediction."""
    from playwright.sync_api import expect

    page.goto(server + "/export")
    wait_ready(page)
    page.get_by_text("Predicted by the latest model").click()
    wait_ready(page)
    code = page.locator("[data-testid='stCode']").first
    expect(code).to_contain_text('"source": "predicted"')
    return code
