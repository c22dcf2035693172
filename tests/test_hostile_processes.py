"""Hostile processes (issue 18): kills, timeouts, escapes and floods leave nothing running and
nothing wrong stored.

Real processes and real DuckDB files, no mocks. Every process a test starts carries an environment
marker (inherited by all its descendants, whatever session or group they move to); after a
generously polled grace period no live process may still carry it.
"""

from __future__ import annotations

import gc
import ipaddress
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from multiprocessing import forkserver, resource_tracker
from pathlib import Path

import pytest

from engine.execution import Campaign, InlineExecutor, LocalExecutor
from engine.io.paths import REPO_ROOT
from engine.runners.command import CommandRunner
from engine.runners.process import OUTPUT_KEEP, marked, run_process
from engine.runners.python_runner import PythonRunner
from engine.space.configs import config_keys
from engine.space.factors import Factor, Space
from engine.study import StudySpec
from storage import Store
from tests.conftest import free_port, run_cli, wait_healthy

# Starts Dask clusters: after make test's parallel phase, alone (spawned workers hung inside a test worker).
pytestmark = pytest.mark.serial

PY = sys.executable
TUNELAB = str(Path(sys.executable).with_name("tunelab"))
MARK = "TUNELAB_TEST_MARK"
# a benchmark program slow enough for a signal to land while measurements run
BENCH = "import sys, time; time.sleep(0.1); a, b = int(sys.argv[1]), int(sys.argv[2]); print('time:', a * 10 + b)"
SPACE = Space([Factor("a", "ordinal", tuple(range(6))), Factor("b", "ordinal", tuple(range(5)))])


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def leftovers(mark: str, grace: float = 20.0) -> list[str]:
    """Command lines of live processes still carrying ``mark`` once they had ``grace`` seconds to go."""
    deadline = time.monotonic() + grace
    pids = marked(mark, var=MARK)
    while pids and time.monotonic() < deadline:
        time.sleep(0.2)
        pids = marked(mark, var=MARK)
    return [f"{pid}: {_cmdline(pid)}" for pid in pids]


@pytest.fixture
def mark():
    """A fresh marker; whatever still carries it at the end is killed, so a failure leaves no mess."""
    value = uuid.uuid4().hex
    yield value
    for pid in marked(value, var=MARK):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _committed(line: str) -> tuple[str, int] | None:
    if not line.startswith("committed "):
        return None
    parts = line.split()
    return parts[1], int(parts[3].rstrip(":"))


# -- a campaign killed from outside -------------------------------------------------------------------
@pytest.mark.parametrize("executor", ["local", "dask"])
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "sigterm"])
def test_a_killed_campaign_leaves_no_process_and_resumes_without_loss_or_duplicates(db_path, mark, sig, executor):
    runner = {"kind": "command", "command": [PY, "-c", BENCH, "{a}", "{b}"], "metric": {"regex": r"time: (\S+)"},
              "repeats": 2}
    with Store(db_path) as store:
        study = store.create_study(StudySpec("cmd", SPACE, objective="time", runner=runner))
        design_id = store.save_design(study, SPACE.sample(12, seed=4), name="random", kind="random")
    proc = subprocess.Popen([TUNELAB, "--db", str(db_path), "run", "--study", "cmd", "--executor", executor,
                             "--workers", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, MARK: mark, "PYTHONUNBUFFERED": "1"}, start_new_session=True)
    committed = []
    for line in proc.stdout:
        if (item := _committed(line)) is not None:
            committed.append(item)
        if len(committed) == 4:
            break
    os.kill(proc.pid, sig)  # the command alone, not its process group: its workers must follow by themselves
    rest, err = proc.communicate(timeout=120)
    committed += [item for line in rest.splitlines() if (item := _committed(line)) is not None]
    if sig == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL
    else:
        assert proc.returncode == 128 + signal.SIGTERM, err
        assert "tunelab: stopped by SIGTERM" in err and "Traceback" not in err
    assert leftovers(mark) == []  # workers, fork server, resource tracker and measured commands all gone

    with Store(db_path) as store:
        before = store.measurements("cmd")
    stored = set(zip(config_keys(SPACE, before), before["repeat"]))
    assert set(committed) <= stored  # lost: 0
    assert len(before) < 24
    run_cli("run", "--study", "cmd", "--design", str(design_id), "--executor", "local", db=db_path, check=True)
    with Store(db_path) as store:
        after = store.measurements("cmd")
    assert len(after) == 24 and (after["status"] == "ok").all()
    assert not after.duplicated(subset=["a", "b", "repeat"]).any()  # duplicated: 0
    kept = before.merge(after, on=["a", "b", "repeat"], suffixes=("_before", "_after"))
    assert len(kept) == len(before)
    assert (kept["measurement_id_before"] == kept["measurement_id_after"]).all()  # re-measured: 0


# a benchmark program that holds the 5th configuration's second repeat (the 10th call) for a kill
HOLD = """
import sys, time
from pathlib import Path
a, b, calls, held = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4])
with calls.open("a") as log:
    log.write(f"{a} {b}\\n")
if len(calls.read_text().splitlines()) == 10 and not held.exists():
    held.write_text("first repeat done, second one running")
    time.sleep(1000)
print("time:", a * 10 + b)
"""


def test_a_tune_killed_between_two_repeats_resumes_to_full_repeats_and_says_what_it_measured(tmp_path, db_path, mark):
    script, calls, held = tmp_path / "hold.py", tmp_path / "calls.log", tmp_path / "held"
    script.write_text(HOLD)
    runner = {"kind": "command", "command": [PY, str(script), "{a}", "{b}", str(calls), str(held)],
              "metric": {"regex": r"time: (\S+)"}, "repeats": 2}
    with Store(db_path) as store:
        store.create_study(StudySpec("cmd", SPACE, objective="time", runner=runner))
    # one configuration at a time (inline): the counts below assume nothing else was measuring at the kill
    tune = ("tune", "--study", "cmd", "--strategy", "RS", "--budget", "8", "--seed", "3", "--executor", "inline")
    proc = subprocess.Popen([TUNELAB, "--db", str(db_path), *tune], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, MARK: mark}, start_new_session=True)
    deadline = time.monotonic() + 120
    while not held.exists():
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline, "the 5th configuration's second repeat never started"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # tune's whole group; the held command dies with it (its own group)
    proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL
    assert leftovers(mark) == []

    with Store(db_path) as store:
        before = store.measurements("cmd")
    assert 0 < len(before) < 16
    text = run_cli(*tune, db=db_path, check=True).stdout  # the same command again
    with Store(db_path) as store:
        after = store.measurements("cmd")
    assert not after.duplicated(subset=["a", "b", "repeat"]).any()  # duplicated: 0
    repeats = after.groupby(["a", "b"])["repeat"].apply(sorted)
    assert len(repeats) == 8 and all(r == [0, 1] for r in repeats) and (after["status"] == "ok").all()
    kept = before.merge(after, on=["a", "b", "repeat"], suffixes=("_before", "_after"))
    assert len(kept) == len(before) and (kept["measurement_id_before"] == kept["measurement_id_after"]).all()
    assert len(calls.read_text().splitlines()) == 10 + 16 - len(before)  # re-measured: 0
    assert (f"budget used 8 of 8 configurations (16 measurements: {16 - len(before)} new, "
            f"{len(before)} stored before") in text, text


def test_a_worker_killed_with_kill_9_takes_its_measured_command_with_it(mark):
    holder = ("import sys; from engine.runners.process import run_process; "
              "run_process([sys.executable, '-c', 'import time; time.sleep(1000)'], timeout=None)")
    proc = subprocess.Popen([PY, "-c", holder], env={**os.environ, MARK: mark}, cwd=REPO_ROOT)
    deadline = time.monotonic() + 60
    while len(marked(mark, var=MARK)) < 2 and time.monotonic() < deadline:  # the holder and its command
        time.sleep(0.05)
    assert len(marked(mark, var=MARK)) == 2
    proc.kill()
    proc.wait(30)
    assert leftovers(mark) == []


# -- the dashboard -----------------------------------------------------------------------------------
def _listening(port: int) -> list[str]:
    """Local addresses with a socket listening on ``port`` (from /proc/net/tcp and tcp6)."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, _, hex_port = local.partition(":")
            if state == "0A" and int(hex_port, 16) == port:
                raw = bytes.fromhex(address)
                words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
                found.append(str(ipaddress.ip_address(words)))
    return found


def _server_command(how: str, db: Path, port: int) -> list[str]:
    if how == "tunelab serve":
        return [TUNELAB, "--db", str(db), "serve", "--port", str(port), "--no-demo"]
    return [PY, "-m", "streamlit", "run", str(REPO_ROOT / "app" / "main.py"), "--server.port", str(port)]


@pytest.mark.parametrize("how", ["tunelab serve", "streamlit run"])
def test_a_dashboard_started_from_another_folder_binds_loopback_and_sigterm_leaves_nothing(tmp_path, mark, how):
    db, port = tmp_path / "serve.duckdb", free_port()
    proc = subprocess.Popen(_server_command(how, db, port), cwd=tmp_path,
                            env={**os.environ, MARK: mark, "TUNELAB_DB": str(db), "TUNELAB_DEMO": "0"},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_healthy(proc, port)
        assert _listening(port) == ["127.0.0.1"]  # .streamlit/config.toml is not in this folder
        assert "streamlit" in _cmdline(proc.pid)  # the command became the server: no child to orphan
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert leftovers(mark) == []
    with Store(db) as store:  # the lock is released
        assert store.list_studies().empty


@pytest.fixture
def server_address():
    """Set Streamlit's ``server.address`` for an AppTest; the previous value is restored."""
    from streamlit import config

    previous = config.get_option("server.address")
    yield lambda value: config.set_option("server.address", value)
    config.set_option("server.address", previous)


@pytest.mark.parametrize("address, allow, refused", [
    (None, None, True), ("0.0.0.0", None, True), ("::", None, True), ("0.0.0.0", "1", False),
    ("127.0.0.1", None, False), ("::1", None, False), ("localhost", None, False),
])
def test_the_dashboard_shows_nothing_when_bound_beyond_loopback_unless_allowed(db_path, monkeypatch, server_address,
                                                                               address, allow, refused):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("TUNELAB_DB", str(db_path))
    monkeypatch.delenv("TUNELAB_ALLOW_REMOTE", raising=False)
    if allow:
        monkeypatch.setenv("TUNELAB_ALLOW_REMOTE", allow)
    server_address(address)
    at = AppTest.from_file(str(REPO_ROOT / "app" / "main.py"), default_timeout=60).run()
    assert not at.exception
    if refused:
        assert len(at.error) == 1 and "server.address" in at.error[0].value and not at.title
        assert not db_path.exists()  # the store was never opened
    else:
        assert not at.error and at.title[0].value == "Studies"


# -- measured commands and callables -------------------------------------------------------------------
@pytest.mark.skipif(shutil.which("setsid") is None, reason="setsid is not installed")
def test_a_command_escaping_its_group_with_setsid_is_killed_at_its_timeout(mark):
    result = CommandRunner(["setsid", "sleep", "1000"], r"time: (\S+)", env={MARK: mark}, timeout=1).measure({})[0]
    assert result.status == "timeout"
    assert leftovers(mark) == []


def test_a_daemon_left_by_a_successful_command_is_killed_too(mark):
    daemon = ("import subprocess, sys; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(1000)'], "
              "start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
              "print('time: 1.5')")
    result = CommandRunner([PY, "-c", daemon], r"time: (\S+)", env={MARK: mark}).measure({})[0]
    assert result.status == "ok" and result.value == 1.5
    assert leftovers(mark) == []


SPIN = '''
def spin(config):
    if config["spin"]:
        sum(range(10**12))  # hours inside one C loop that never checks for signals (SIGALRM cannot stop it)
    return 1.0
'''


@pytest.mark.timeout(300)
@pytest.mark.parametrize("executor", ["inline", "local"])
def test_a_callable_spinning_in_c_is_stopped_at_its_timeout(tmp_path, monkeypatch, mark, executor):
    (tmp_path / "spinning.py").write_text(SPIN)
    forkserver.ensure_running()  # this test process's own helpers live on: start them unmarked
    resource_tracker.ensure_running()
    monkeypatch.setenv(MARK, mark)  # the sandboxes (and the pool's workers) carry it
    runner = PythonRunner("spinning:spin", path=str(tmp_path), timeout=1.0)
    got = []
    with InlineExecutor() if executor == "inline" else LocalExecutor(workers=1) as pool:
        Campaign(runner, pool).run([{"spin": True}, {"spin": False}], lambda config, result: got.append(result))
    assert [r.status for r in got] == ["timeout", "ok"]  # the next call gets a fresh sandbox
    assert "timeout" in got[0].error
    runner = pool = None  # a sandbox lives as long as its runner, and ends when it is dropped
    gc.collect()
    assert leftovers(mark) == []


FLOOD = "import sys\nprint('time: 2.5')\nfor _ in range(100):\n    sys.stdout.write('y' * 1_000_000)\nprint('\\nend')\n"


def test_a_100_mb_output_is_captured_bounded(tmp_path):
    script = tmp_path / "flood.py"
    script.write_text(FLOOD)
    outcome = run_process([PY, str(script)], timeout=120)
    assert outcome.returncode == 0
    assert len(outcome.stdout) <= 2 * OUTPUT_KEEP + 100 and outcome.dropped >= 100_000_000 - 2 * OUTPUT_KEEP
    assert outcome.stdout.startswith("time: 2.5") and outcome.stdout.rstrip().endswith("end")
    assert CommandRunner([PY, str(script)], r"time: (\S+)").measure({})[0].value == 2.5
    # the capturing process never holds the flood: its peak memory stays far below 100 MB
    probe = ("import re, sys; from engine.runners.process import run_process; "
             f"run_process([sys.executable, {str(script)!r}], timeout=120); "
             "print(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1))")  # peak RSS, KiB
    peak_kib = int(subprocess.run([PY, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO_ROOT).stdout)
    assert peak_kib < 90_000


@pytest.mark.parametrize("printed", ["nan", "inf", "-inf", "1e999", "NaN"])
def test_non_finite_outputs_are_failures(printed):
    results = CommandRunner([PY, "-c", f"print('time: {printed}')"], r"time: (\S+)", repeats=2).measure({})
    assert [r.status for r in results] == ["failed"]
    assert results[0].value is None and "not a finite number" in results[0].error


def test_huge_callable_metadata_is_bounded(tmp_path):
    (tmp_path / "chatty.py").write_text("def chatty(config):\n    return {'value': 1.0, 'blob': 'x' * 50_000_000}\n")
    result = PythonRunner("chatty:chatty", path=str(tmp_path)).measure({})[0]
    assert result.ok and result.value == 1.0
    assert len(result.metadata["blob"]) < 200 and "not kept" in result.metadata["blob"]
