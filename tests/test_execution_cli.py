"""``tunelab run`` and ``tunelab measure`` as real processes: a campaign killed with SIGKILL and
resumed loses and duplicates nothing; C kernels measured from the command line."""

import json
import os
import shutil
import sys

import pytest

from engine.space.configs import config_keys
from engine.space.factors import Factor, Space
from engine.study import StudySpec
from storage import Store
from tests.conftest import cli, kill_after, run_cli

# a benchmark program: value from the factors, a little sleep so a kill lands mid-campaign
SCRIPT = "import sys, time; time.sleep(0.05); a, b = int(sys.argv[1]), int(sys.argv[2]); print('time:', a * 10 + b)"
SPACE = Space([Factor("a", "ordinal", tuple(range(6))), Factor("b", "ordinal", tuple(range(5)))])


def command_spec(name="cmd") -> StudySpec:
    runner = {"kind": "command", "command": [sys.executable, "-c", SCRIPT, "{a}", "{b}"],
              "metric": {"regex": r"time: (\S+)"}, "repeats": 2}
    return StudySpec(name, SPACE, objective="time", runner=runner)


def test_run_killed_mid_campaign_then_resumed_loses_and_duplicates_nothing(db_path):
    with Store(db_path) as store:
        study = store.create_study(command_spec())
        design_id = store.save_design(study, SPACE.sample(24, seed=4), name="random", kind="random")
    command = [os.path.join(os.path.dirname(sys.executable), "tunelab"), "--db", str(db_path),
               "run", "--study", "cmd", "--executor", "local", "--workers", "2"]
    committed = kill_after(command, 9, lambda line: (line.split()[1], int(line.split()[3].rstrip(":")))
                           if line.startswith("committed ") else None)
    with Store(db_path) as store:
        before = store.measurements("cmd")
    stored = set(zip(config_keys(SPACE, before), before["repeat"]))
    assert set(committed) <= stored and len(before) < 48
    resumed = run_cli("run", "--study", "cmd", "--design", str(design_id), "--executor", "local", "--json",
                      db=db_path, check=True)
    summary = json.loads(resumed.stdout)
    with Store(db_path) as store:
        after = store.measurements("cmd")
        assert store.designs("cmd").iloc[0]["pending"] == 0
    assert len(after) == 48 and (after["status"] == "ok").all()
    assert not after.duplicated(subset=["a", "b", "repeat"]).any()
    assert after.groupby(["a", "b"])["repeat"].agg(lambda r: sorted(r) == [0, 1]).all()
    assert (after["value"] == after["a"] * 10 + after["b"]).all()
    kept = before.merge(after, on=["a", "b", "repeat"], suffixes=("_before", "_after"))
    assert len(kept) == len(before)
    assert (kept["measurement_id_before"] == kept["measurement_id_after"]).all()  # nothing re-measured
    assert summary["results"] == 48 - len(before)
    assert (after["design_id"] == design_id).all() and (after["strategy"] == "design").all()


def test_run_without_a_design_or_with_bad_flags_is_one_line(db_path):
    with Store(db_path) as store:
        store.create_study(command_spec())
    result = cli("run", "--study", "cmd", db=db_path)
    assert result.returncode == 2 and "no design" in result.stderr and "Traceback" not in result.stderr
    result = cli("run", "--study", "cmd", "--executor", "local", "--scheduler", "tcp://x:1", db=db_path)
    assert result.returncode == 2 and "--scheduler" in result.stderr
    assert cli("run", "--study", "nope", db=db_path).returncode == 2


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
def test_run_a_c_kernel_study_in_timing_mode(db_path, tmp_path):
    space = Space([Factor("T_J", "ordinal", (1, 8)), Factor("VEC", "boolean", (False, True))])
    runner = {"kind": "ckernel", "kernel": "mm", "n": 24, "repeats": 2, "cache": str(tmp_path)}
    with Store(db_path) as store:
        study = store.create_study(StudySpec("mm", space, objective="time", runner=runner))
        store.save_design(study, space.enumerate(), name="full", kind="factorial")
    result = run_cli("run", "--study", "mm", "--executor", "timing", "--json", db=db_path, check=True)
    assert json.loads(result.stdout)["ok"] == 8
    with Store(db_path) as store:
        rows = store.measurements("mm")
    assert len(rows) == 8 and (rows["status"] == "ok").all() and (rows["value"] > 0).all()


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
def test_measure_one_kernel_configuration(tmp_path, monkeypatch):
    monkeypatch.setenv("TUNELAB_CACHE", str(tmp_path))
    result = run_cli("measure", "--kernel", "gesummv", "--size", "48", "--set", "T_I=8", "--set", "SCR=true",
                     "--set", "OPT=O2", "--repeats", "2", "--executor", "inline", "--json", check=True)
    data = json.loads(result.stdout)
    assert [r["status"] for r in data["results"]] == ["ok", "ok"]
    assert data["config"] == {"T_I": 8, "SCR": True, "OPT": "O2"} and "-O2" in data["flags"]
    assert data["speedup"] == pytest.approx(data["baseline_s"] / data["median_s"])
    text = run_cli("measure", "--kernel", "jacobi2d", "--size", "16", "--repeats", "1", check=True).stdout
    assert "speed-up" in text
    bad = cli("measure", "--kernel", "mm", "--set", "T_X=4")
    assert bad.returncode == 2 and "no such factor" in bad.stderr
    bad = cli("measure", "--kernel", "fft")
    assert bad.returncode == 2 and "kernel 'fft'" in bad.stderr
    invalid = cli("measure", "--kernel", "mm", "--size", "16", "--set", "THREADS=2", "--executor", "inline")
    assert invalid.returncode == 1 and "needs OMP on" in invalid.stdout
