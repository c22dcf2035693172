"""Campaigns through the inline, local-pool and pinned timing executors: streaming, resume,
cancel, worker death."""

import os
import threading

import pandas as pd
import pytest

from engine.execution import (
    Campaign,
    InlineExecutor,
    LocalExecutor,
    TimingExecutor,
    executor_from_name,
    stored_repeats,
)
from engine.runners import runner_from_spec
from engine.space.configs import config_keys
from engine.space.factors import Factor, Space
from engine.study import StudySpec
from storage import Store
from workflows.recording import store_recorder

# Starts process pools: after make test's parallel phase, alone (a spawned pool worker hung inside a test worker).
pytestmark = pytest.mark.serial

FUNCS = "tests.helpers.measure_funcs"
LEVELS = tuple(round(-1 + 0.5 * i, 1) for i in range(5))
SPACE = Space([Factor(f"x{i}", "ordinal", LEVELS) for i in range(1, 9)])
TOY = {"kind": "synthetic", "name": "toy", "repeats": 2}


def collect(campaign, configs, **kwargs):
    got = []
    progress = campaign.run(configs, lambda config, result: got.append((dict(config), result)), **kwargs)
    return got, progress


def as_table(got):
    return {(tuple(c.values()), r.repeat): (r.status, r.value) for c, r in got}


@pytest.fixture(scope="module")
def pool():
    with LocalExecutor(workers=2) as executor:
        yield executor


def test_every_executor_gives_the_same_results_streamed_in_the_calling_thread(pool):
    runner = runner_from_spec(TOY, space=SPACE)
    configs = SPACE.sample(12, seed=3)
    reference, progress = collect(Campaign(runner, InlineExecutor()), configs)
    assert progress.finished and progress.results == 24 and progress.ok == 24 and progress.workers == 1
    with TimingExecutor() as timing:
        for executor in (pool, timing):
            threads: set[int] = set()
            seen: list = []

            def on_result(config, result, threads=threads, seen=seen):
                threads.add(threading.get_ident())
                seen.append((dict(config), result))

            final = Campaign(runner, executor).run(configs, on_result,
                                                   on_progress=lambda p, threads=threads: threads.add(threading.get_ident()))
            assert threads == {threading.get_ident()}
            assert as_table(seen) == as_table(reference)
            assert final.completed == 12 and not final.cancelled
            assert final.workers == executor.slots()  # what the Run page shows beside the count


def test_timing_mode_pins_its_one_worker_to_one_core(pool):
    runner = runner_from_spec({"kind": "python", "callable": f"{FUNCS}:with_metadata"})
    configs = [{"x": i} for i in range(3)]
    with TimingExecutor() as timing:
        pinned, _ = collect(Campaign(runner, timing), configs)
    assert {r.metadata["cores"] for _, r in pinned} == {1}
    assert len({r.metadata["pid"] for _, r in pinned}) == 1
    free, _ = collect(Campaign(runner, pool), configs)
    assert {r.metadata["cores"] for _, r in free} == {len(os.sched_getaffinity(0))}


def test_resume_skips_complete_configurations_and_continues_repeat_numbers(db_path):
    spec = StudySpec("resume", SPACE, objective="y", runner=TOY)
    configs = SPACE.sample(6, seed=11)
    with Store(db_path) as store:
        study = store.create_study(spec)
        runner = runner_from_spec(spec.runner, space=SPACE)
        first = configs.iloc[:3]
        Campaign(runner, repeats=1, space=SPACE).run(first, store_recorder(store, study))
        # configuration 0 has 1 of 3 repeats; 1 failed (complete); 2 has 1 of 3; 3..5 have none
        store.record_measurement(study, configs.iloc[1].to_dict(), None, "failed", error="crashed", repeat=1)
        done = stored_repeats(SPACE, store.measurements("resume"))
        campaign = Campaign(runner, repeats=3, space=SPACE)
        got, progress = collect(campaign, configs, done=done)
        for config, result in got:
            store.record_measurement(study, config, result.value, result.status, repeat=result.repeat)
        final = store.measurements("resume")
    assert progress.skipped == 1 and progress.completed == 6
    keys = config_keys(SPACE, configs)
    measured = {(config_keys(SPACE, pd.DataFrame([c]))[0], r.repeat) for c, r in got}
    assert {(keys[0], 0), (keys[2], 0)}.isdisjoint(measured)  # stored repeats are not re-measured
    assert {(keys[0], 1), (keys[0], 2), (keys[5], 0)} <= measured
    assert not final.duplicated(subset=[*SPACE.names, "repeat"]).any()
    counts = final.groupby(SPACE.names).size()
    assert sorted(counts.tolist()) == [2, 3, 3, 3, 3, 3]


def test_cancel_stops_submitting_and_delivers_what_is_running(pool):
    runner = runner_from_spec({"kind": "python", "callable": f"{FUNCS}:stamped"})
    campaign = Campaign(runner, pool)
    got = []

    def on_result(config, result):
        got.append(result)
        if len(got) == 2:
            threading.Thread(target=campaign.cancel).start()

    progress = campaign.run([{"sleep": 0.2}] * 20, on_result)
    assert progress.cancelled and progress.completed < 20
    assert progress.results == len(got) >= 2 and all(r.ok for r in got)


def test_a_dead_worker_fails_its_measurement_and_the_campaign_goes_on():
    runner = runner_from_spec({"kind": "python", "callable": f"{FUNCS}:crash"})
    with LocalExecutor(workers=1) as executor:
        got, progress = collect(Campaign(runner, executor), [{"x": 0}, {"x": 1}, {"x": 2}, {"x": 3}, {"x": 4}])
    by_x = {c["x"]: r for c, r in got}
    assert by_x[0].status == "failed" and "worker process died" in by_x[0].error
    assert by_x[4].ok and by_x[4].value == 4.0
    assert progress.completed == 5


def test_a_failing_callback_stops_the_campaign_and_propagates():
    runner = runner_from_spec(TOY, space=SPACE)

    def explode(config, result):
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        Campaign(runner).run(SPACE.sample(3, seed=1), explode)


def test_executor_names_and_bad_arguments():
    assert isinstance(executor_from_name("inline"), InlineExecutor)
    with pytest.raises(ValueError, match="executor 'gpu'"):
        executor_from_name("gpu")
    with pytest.raises(ValueError, match="workers"):
        LocalExecutor(workers=0)
    with pytest.raises(ValueError, match="space"):
        Campaign(runner_from_spec(TOY, space=SPACE)).run([{"x1": 0}], print, done={"k": 1})


def test_auto_measures_a_synthetic_or_table_runner_in_process_and_anything_else_on_the_pool():
    """Issue 31 §3: 8 synthetic evaluations took 12 s on the process pool, nearly all of it its start-up."""
    from engine.execution.executors import LocalExecutor
    from engine.execution.registry import resolved
    from engine.runners.command import CommandRunner

    synthetic = runner_from_spec(TOY, space=SPACE)
    assert resolved("auto", synthetic) == "inline" and isinstance(executor_from_name("auto", runner=synthetic),
                                                                  InlineExecutor)
    command = CommandRunner.from_spec({"kind": "command", "command": ["true"], "metric": {"regex": "(.*)"}}, space=SPACE)
    assert not command.in_process and resolved("auto", command) == "local"
    assert resolved("local", synthetic) == "local" and resolved("auto", None) == "local"
    with executor_from_name("auto", workers=2, runner=synthetic) as pool:  # workers ask for the pool
        assert isinstance(pool, LocalExecutor)
