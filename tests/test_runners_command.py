"""CommandRunner and the process helper, on real processes."""

import sys
import time
from pathlib import Path

import pytest

from engine.errors import UserError
from engine.runners import runner_from_spec
from engine.runners.command import CommandRunner
from engine.runners.process import run_process

PY = sys.executable

# prints the metric from its arguments and environment, and logs each run in the working folder
BENCH = """
import json, os, sys
x, flag = float(sys.argv[1]), sys.argv[2]
with open("runs.log", "a") as log:
    log.write(flag + "\\n")
y = float(os.environ["TL_Y"])
print("warming up")
print(f"time: {x * 2 + y}")
print(json.dumps({"result": {"gflops": x * 10}, "flag": flag}))
"""

# starts a helper process, says its pid, then hangs (as a stuck benchmark script would)
HANGS = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
print(child.pid, flush=True)
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    """Running or sleeping (a zombie waiting for init to reap it is dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def test_timeout_kills_the_whole_process_group_and_leaves_no_orphan():
    outcome = run_process([PY, "-c", HANGS], timeout=1.5)
    assert outcome.timed_out and outcome.returncode is None
    child = int(outcome.stdout.split()[0])
    deadline = time.time() + 5
    while _alive(child) and time.time() < deadline:
        time.sleep(0.05)
    assert not _alive(child), "the helper the command started survived the timeout"
    assert not [pid for pid in _group_members(outcome.pid) if _alive(pid)]


def _group_members(pgid: int) -> list[int]:
    """Processes whose process group is ``pgid`` (field 5 of /proc/PID/stat)."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid:
                members.append(int(entry.name))
    return members


def test_timeout_is_recorded_as_a_timeout_result():
    runner = CommandRunner([PY, "-c", "import time; time.sleep(30)"], {"regex": r"(\d+)"}, timeout=0.5, repeats=3)
    started = time.perf_counter()
    results = runner.measure({})
    assert time.perf_counter() - started < 10
    assert [r.status for r in results] == ["timeout"]
    assert "timeout" in results[0].error and results[0].value is None


@pytest.fixture
def bench(tmp_path) -> str:
    script = tmp_path / "bench.py"
    script.write_text(BENCH)
    return str(script)


def test_placeholders_env_cwd_metric_warmups_and_repeats(tmp_path, bench):
    runner = runner_from_spec({
        "kind": "command", "command": [PY, bench, "{x}", "--flag={b}"], "metric": {"regex": r"time: (\S+)"},
        "env": {"TL_Y": "{y}"}, "cwd": str(tmp_path), "repeats": 3, "warmup": 2,
    })
    results = runner.measure({"x": 1.5, "y": 4, "b": True}, start=5)
    assert [r.status for r in results] == ["ok"] * 3
    assert [r.repeat for r in results] == [5, 6, 7]
    assert all(r.value == pytest.approx(7.0) for r in results)
    assert (tmp_path / "runs.log").read_text().splitlines() == ["--flag=1"] * 5  # 2 warm-ups + 3 repeats


def test_json_metric_by_key_path(tmp_path, bench):
    runner = CommandRunner([PY, bench, "{x}", "plain"], {"json": "result.gflops"}, env={"TL_Y": "0"},
                           cwd=str(tmp_path))
    assert runner.measure({"x": 2})[0].value == pytest.approx(20.0)
    missing = CommandRunner([PY, bench, "{x}", "plain"], {"json": "result.nope"}, env={"TL_Y": "0"}, cwd=str(tmp_path))
    result = missing.measure({"x": 2})[0]
    assert result.status == "failed" and "result.nope" in result.error


def test_values_are_arguments_never_shell_text(tmp_path):
    marker = tmp_path / "pwned"
    runner = CommandRunner([PY, "-c", "import sys; print('n:', len(sys.argv[1]))", "{name}"], {"regex": r"n: (\d+)"})
    nasty = f"x; touch {marker}"
    assert runner.measure({"name": nasty})[0].value == len(nasty)
    assert not marker.exists()


def test_nonzero_exit_is_failed_with_the_tail_of_stderr():
    script = "import sys; print('partial'); sys.stderr.write('line 1\\nboom: bad tile size\\n'); sys.exit(3)"
    result = CommandRunner([PY, "-c", script], "time: (\\S+)").measure({})[0]
    assert result.status == "failed"
    assert "exit status 3" in result.error and "boom: bad tile size" in result.error


def test_metric_missing_and_correctness_check_fail_the_configuration():
    no_metric = CommandRunner([PY, "-c", "print('hello')"], {"regex": r"time: (\S+)"}).measure({})[0]
    assert no_metric.status == "failed" and "not found" in no_metric.error
    checked = CommandRunner([PY, "-c", "print('time: 1.0'); print('FAILED')"], {"regex": r"time: (\S+)"},
                            expect=r"^PASSED$").measure({})[0]
    assert checked.status == "failed" and "correctness" in checked.error


def test_a_failure_ends_the_repeats_and_keeps_those_measured(tmp_path):
    counter = tmp_path / "count"
    script = ("import pathlib, sys; p = pathlib.Path(sys.argv[1]); n = int(p.read_text()) if p.exists() else 0; "
              "p.write_text(str(n + 1)); print('time:', n); sys.exit(1 if n == 2 else 0)")
    results = CommandRunner([PY, "-c", script, str(counter)], r"time: (\S+)", repeats=5).measure({})
    assert [r.status for r in results] == ["ok", "ok", "failed"]
    assert [r.repeat for r in results] == [0, 1, 2]


def test_unknown_placeholder_is_invalid_and_bad_specs_are_one_line_errors():
    assert CommandRunner([PY, "-c", "print(1)", "{nope}"], r"(\d)").measure({"x": 1})[0].status == "invalid"
    with pytest.raises(UserError, match="argument"):
        runner_from_spec({"kind": "command", "command": "python bench.py {x}", "metric": {"regex": "x"}})
    with pytest.raises(UserError, match="unbalanced"):
        runner_from_spec({"kind": "command", "command": ["echo", "{x"], "metric": {"regex": "x"}})
    with pytest.raises(UserError, match="unknown option 'metrc'"):
        runner_from_spec({"kind": "command", "command": ["echo"], "metrc": {"regex": "x"}})
    with pytest.raises(UserError, match="metric"):
        runner_from_spec({"kind": "command", "command": ["echo"], "metric": {"xpath": "x"}})
    with pytest.raises(UserError, match="kind 'nope'"):
        runner_from_spec({"kind": "nope"})
    missing = CommandRunner(["/no/such/program"], r"(\d)").measure({})[0]
    assert missing.status == "failed" and "not found" in missing.error
