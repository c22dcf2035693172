"""PythonRunner, TableRunner and SyntheticRunner, and the runner registry."""

import time

import numpy as np
import pandas as pd
import pytest

from engine.errors import UserError
from engine.runners import runner_from_spec
from engine.runners.python_runner import PythonRunner
from engine.runners.synthetic import evaluate
from engine.space.configs import config_keys
from engine.space.factors import Factor, Space

FUNCS = "tests.helpers.measure_funcs"


def test_callable_return_value_and_metadata():
    runner = runner_from_spec({"kind": "python", "callable": f"{FUNCS}:quadratic", "repeats": 2, "warmup": 1})
    results = runner.measure({"x": 5, "y": 1})
    assert [(r.status, r.value, r.repeat) for r in results] == [("ok", 5.0, 0), ("ok", 5.0, 1)]
    meta = PythonRunner(f"{FUNCS}:with_metadata").measure({"x": 4})[0]
    assert meta.value == 8.0 and meta.metadata["pid"] > 0


def test_time_mode_times_the_call_and_the_check_can_reject():
    timed = PythonRunner(f"{FUNCS}:sleeper", mode="time", repeats=2).measure({"sleep": 0.05})
    assert all(r.ok and r.value >= 0.05 for r in timed)
    checked = PythonRunner(f"{FUNCS}:quadratic", check=f"{FUNCS}:positive")
    assert checked.measure({"x": 4})[0].ok
    rejected = checked.measure({"x": 3})[0]
    assert rejected.status == "failed" and "correctness check" in rejected.error


def test_reported_failures_non_numbers_and_exceptions_are_results():
    failed = PythonRunner(f"{FUNCS}:reports_failure").measure({"x": 7})[0]
    assert failed.status == "failed" and failed.error == "x=7 is not supported"
    text = PythonRunner(f"{FUNCS}:returns_text").measure({})[0]
    assert text.status == "failed" and "not a number" in text.error
    raised = PythonRunner(f"{FUNCS}:quadratic").measure({"y": 1})[0]
    assert raised.status == "failed" and "KeyError" in raised.error


def test_a_call_over_the_timeout_is_interrupted_in_the_main_thread():
    started = time.perf_counter()
    result = PythonRunner(f"{FUNCS}:sleeper", timeout=0.3, repeats=3).measure({"sleep": 30})
    assert time.perf_counter() - started < 5
    assert [r.status for r in result] == ["timeout"]


def test_import_paths_are_checked_at_once():
    with pytest.raises(UserError, match="cannot import module"):
        PythonRunner("tests.helpers.no_such_module:f")
    with pytest.raises(UserError, match="no attribute"):
        PythonRunner(f"{FUNCS}:nope")
    with pytest.raises(UserError, match="mode"):
        PythonRunner(f"{FUNCS}:quadratic", mode="eval")
    with pytest.raises(UserError, match="needs 'callable'"):
        runner_from_spec({"kind": "python"})


@pytest.fixture
def small_table():
    space = Space([Factor("a", "ordinal", (1, 2, 4)), Factor("b", "boolean", (False, True))])
    table = pd.DataFrame({"a": [1, 2, 4, 1], "b": [False, False, True, True], "value": [1.5, 2.5, np.nan, 0.5],
                          "status": ["ok", "ok", "failed", "ok"], "error": [None, None, "compile error", None]})
    return space, table


def test_table_runner_replays_rows_and_refuses_what_it_lacks(small_table):
    space, table = small_table
    runner = runner_from_spec({"kind": "table", "repeats": 5}, space=space, table=table)
    ok = runner.measure({"a": 2, "b": False})
    assert [(r.status, r.value) for r in ok] == [("ok", 2.5)]  # a table holds one value per configuration
    assert runner.measure({"a": 2, "b": False}, start=1) == []
    assert runner.measure({"a": 4, "b": True})[0].error == "compile error"
    missing = runner.measure({"a": 2, "b": True})[0]
    assert missing.status == "invalid" and "not in the table" in missing.error
    assert runner.measure({"a": 3, "b": True})[0].status == "invalid"
    with pytest.raises(UserError, match="imported table"):
        runner_from_spec({"kind": "table"}, space=space)


def test_synthetic_runner_matches_the_objective_repeat_by_repeat():
    levels = tuple(round(-1 + 0.5 * i, 1) for i in range(5))
    space = Space([Factor(f"x{i}", "ordinal", levels) for i in range(1, 9)])
    runner = runner_from_spec({"kind": "synthetic", "name": "toy", "repeats": 3}, space=space)
    config = {f"x{i}": levels[i % 5] for i in range(1, 9)}
    frame = pd.DataFrame([config])
    expected = [evaluate({"name": "toy"}, frame, config_keys(space, frame), repeat=r)[0] for r in range(3)]
    assert [r.value for r in runner.measure(config)] == pytest.approx(expected)
    assert runner.measure(config, repeats=1, start=2)[0].value == pytest.approx(expected[2])
    with pytest.raises(UserError, match="objective 'nope'"):
        runner_from_spec({"kind": "synthetic", "name": "nope"}, space=space)


def test_a_dropped_runner_ends_its_sandbox_without_the_garbage_collector(tmp_path):
    """Freed by reference counting, a Popen whose child still runs is kept on CPython's zombie list
    with its stdin open, so the sandbox never saw EOF: dropping the runner must end it all the same."""
    import gc
    import time

    (tmp_path / "constant.py").write_text("def one(config):\n    return 1.0\n")
    enabled = gc.isenabled()
    gc.disable()  # only reference counting frees the runner, as in a process whose cycles were collected
    try:
        runner = PythonRunner("constant:one", path=str(tmp_path), timeout=5.0)
        assert runner.measure({}, 1, 0)[0].ok
        pid = next(iter(runner._sandboxes.values())).proc.pid
        del runner
        deadline, state = time.monotonic() + 20, "R"
        while state != "gone" and state != "Z" and time.monotonic() < deadline:
            try:
                state = open(f"/proc/{pid}/status").read().split("State:")[1].split()[0]
            except FileNotFoundError:
                state = "gone"
            time.sleep(0.1)
        assert state in ("gone", "Z"), f"the sandbox {pid} outlived its runner"
    finally:
        if enabled:
            gc.enable()
