"""A non-editable install serves every page: the wheel is built, installed into a fresh venv outside
the repository (dependencies seen through a path entry, never the checkout), and its dashboard and
command run from another folder."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

from app.navigation import PAGE_TABLE
from engine.io.paths import REPO_ROOT
from tests.conftest import free_port, wait_healthy

pytestmark = pytest.mark.slow
SHIPPED = ("engine", "storage", "workflows", "app", "pages", "pyproject.toml", "README.md")


def _copy_sources(target: Path) -> Path:
    """The files a wheel is built from, away from the checkout (the build writes its own folders)."""
    target.mkdir()
    for name in SHIPPED:
        source = REPO_ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(source, target / name)
    return target


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The python of a fresh venv holding only the built wheel (plus a path to the dependencies)."""
    root = tmp_path_factory.mktemp("packaging")
    sources = _copy_sources(root / "src")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                    "-w", str(root / "dist"), str(sources)], check=True, capture_output=True, timeout=300)
    wheel = next((root / "dist").glob("tunelab-*.whl"))
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True, timeout=120)
    python = root / "venv" / "bin" / "python"
    uv = Path(sys.executable).with_name("uv")
    subprocess.run([str(uv), "pip", "install", "--quiet", "--no-deps", "--python", str(python), str(wheel)],
                   check=True, capture_output=True, timeout=300)
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    # the dependencies of this test run, as a plain path entry: its .pth files (the checkout's
    # editable install among them) are not processed there
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def _run(python: Path, code: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TUNELAB_DATA")}
    return subprocess.run([str(python), "-c", textwrap.dedent(code)], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**clean, **env})


def test_the_wheel_ships_the_engine_pages_settings_and_kernels_and_not_the_checkout(installed, tmp_path):
    result = _run(installed, """
        import app, engine, pages, storage, workflows
        from importlib.resources import files
        for package in (app, engine, pages, storage, workflows):
            print(package.__file__)
        print(files("app").joinpath(".streamlit/config.toml").is_file())
        print(len([p for p in files("engine.runners").joinpath("kernels").iterdir() if p.name.endswith(".c")]))
        from engine.io.paths import data_dir
        print(data_dir())
        import sys
        from importlib.metadata import distribution
        from engine.runners import runner_class
        from engine.strategies.registry import strategy_class
        print(sorted(distribution("tunelab").entry_points.select(group="tunelab.plugins").names))
        print(sys.modules[runner_class("simulator").__module__].__file__)
        print(strategy_class("PF").__module__)
    """, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    site = str(installed.parent.parent)
    assert all(line.startswith(site) for line in lines[:5]), lines  # the installed copy, not the checkout
    assert lines[5] == "True" and int(lines[6]) >= 4
    assert lines[7] == "None"  # no data folder beside an installed package unless TUNELAB_DATA names one
    assert lines[8] == "['costmodel', 'difftune']", lines  # the wheel declares its plug-ins, and they are found
    assert lines[9].startswith(site) and lines[9].endswith("runner.py") and lines[10].endswith("costmodel.prefilter"), lines


def test_the_installed_dashboard_serves_every_page(installed, tmp_path):
    result = _run(installed, f"""
        from pathlib import Path
        from streamlit import config
        from streamlit.testing.v1 import AppTest
        import app
        config.set_option("server.address", "127.0.0.1")  # as app/.streamlit/config.toml sets for a server
        main = Path(app.__file__).parent / "main.py"
        for file, title in {[(file, title) for _, file, title, _, _ in PAGE_TABLE]!r}:
            at = AppTest.from_file(str(main), default_timeout=120).run()
            at.switch_page(f"../pages/{{file}}").run()
            assert not at.exception and not at.error, (file, at.exception, at.error)
            assert at.title[0].value == title, (file, [t.value for t in at.title])
            print("served", file)
    """, cwd=tmp_path, TUNELAB_DB=str(tmp_path / "installed.duckdb"), TUNELAB_DEMO="0")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.count("served") == len(PAGE_TABLE)


def test_the_installed_command_serves_the_dashboard_from_another_folder(installed, tmp_path):
    tunelab = installed.with_name("tunelab")
    assert subprocess.run([str(tunelab), "--help"], capture_output=True, timeout=120).returncode == 0
    port = free_port()
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TUNELAB_DATA")}
    proc = subprocess.Popen([str(tunelab), "--db", str(tmp_path / "served.duckdb"), "serve", "--port", str(port),
                             "--no-demo"], cwd=tmp_path, env=clean, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    try:
        wait_healthy(proc, port)
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        assert str(installed.parent.parent) in cmdline and "app/main.py" in cmdline  # the installed script
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
