"""bench/peers.py's accounting (one measurement = one distinct configuration of the cache, failures charged,
restricted and repeated ones free) and its Kernel Tuner and Optuna drivers on a tiny cache."""

from __future__ import annotations

import gzip
import itertools
import json
import math

import numpy as np
import pytest

from bench.peers import Cache, held_out_choice, kt_run, main, optuna_run, per_budget, report, variant


def _cache(tmp_path, name="tiny.json.gz"):
    """a × b, (8, 3) restricted (absent), (4, 2) failed; the best is (2, 2) at 1 ms."""
    params = {"a": [1, 2, 4, 8], "b": [1, 2, 3]}
    records = {}
    for a, b in itertools.product(params["a"], params["b"]):
        if (a, b) == (8, 3):
            continue
        time = "RuntimeFailedConfig" if (a, b) == (4, 2) else 1.0 + abs(math.log2(a) - 1) + abs(b - 2)
        records[f"{a},{b}"] = {"a": a, "b": b, "time": time, "times": [time] * 3 if not isinstance(time, str) else time,
                               "compile_time": 1.0, "verification_time": 0, "benchmark_time": 1.0}
    doc = {"device_name": "Tiny GPU", "kernel_name": "tiny_kernel", "problem_size": [64], "tune_params_keys": ["a", "b"],
           "tune_params": params, "objective": "time", "cache": records}
    path = tmp_path / name
    with gzip.open(path, "wt") as handle:
        json.dump(doc, handle)
    return Cache(path)


def test_a_trace_charges_distinct_configurations_of_the_cache_failures_included(tmp_path):
    cache = _cache(tmp_path)
    assert cache.name == "tiny" and cache.best == 1.0 and cache.times["4,2"] is None
    asked = ["8,1", "8,3", "8,1", "4,2", "2,2", "1,1"]  # (8, 3) restricted: free; the repeat: free; (4, 2) failed: charged
    assert cache.trace(asked, 10) == [4.0, 4.0, 1.0, 1.0]
    assert cache.trace(asked, 2) == [4.0, 4.0]


def test_per_budget_reads_prefixes_and_report_ranks_methods(tmp_path):
    rows = [{"space": "s", "method": "KT x", "rep": r, "trace": [2.0, 1.5, 1.0]} for r in range(2)]
    rows += [{"space": "s", "method": "Tunelab DLMT", "rep": 0, "budget": b, "trace": [1.2, 1.0][:b], "used": b} for b in (1, 3)]
    rows += [{"space": "s", "method": "Tunelab RS", "rep": 0, "budget": b, "trace": [3.0], "used": 1} for b in (1, 3)]
    rows += [{"space": "s", "method": "KT stuck", "rep": 0, "trace": [math.inf, math.inf]}]  # only failures measured
    frame = per_budget(rows, [1, 3])
    kt = frame[frame["method"] == "KT x"].set_index(["budget", "rep"])
    assert kt.loc[(1, 0), "slowdown"] == 2.0 and kt.loc[(3, 0), "slowdown"] == 1.0 and kt.loc[(3, 0), "to_within"] == 3
    text = report(frame)
    assert "First per budget: 1: Tunelab DLMT (1.200), 3: KT x (1.000)" in text
    assert "Tunelab DLMT ÷ Tunelab RS" in text
    assert "Runs that measured no working configuration in 3 (slowdown inf): KT stuck on s (1)" in text


def test_runs_made_apart_are_reported_together(tmp_path, monkeypatch, capsys):
    peers = [{"space": "s", "method": "KT x", "rep": 0, "trace": [2.0, 1.5, 1.0]}]
    ours = [{"space": "s", "method": "Tunelab DLMT", "rep": 0, "budget": b, "trace": [1.0] * b, "used": b} for b in (1, 3)]
    files = [tmp_path / "peers.json", tmp_path / "ours.json"]
    for path, rows in zip(files, (peers, ours)):
        path.write_text(json.dumps(rows))
    monkeypatch.setattr("sys.argv", ["peers.py", "--budgets", "1,3", "--load", *map(str, files)])
    assert main() == 0
    out = capsys.readouterr().out
    assert "3 runs from" in out and "First per budget: 1: Tunelab DLMT (1.000), 3: KT x (1.000)" in out


@pytest.mark.parametrize("strategy", ["random_sample", "genetic_algorithm"])
def test_kernel_tuner_runs_on_the_cache_in_simulation_mode(tmp_path, strategy):
    pytest.importorskip("kernel_tuner")
    cache = _cache(tmp_path)
    plain = tmp_path / "tiny.json"
    plain.write_text(json.dumps(cache.doc))
    trace = kt_run(cache, plain, strategy, 6, seed=1)
    assert 1 <= len(trace) <= 6 and np.all(np.diff(trace) <= 0) and trace[-1] >= 1.0


def test_optuna_directly_spends_the_budget_on_distinct_configurations(tmp_path):
    pytest.importorskip("optuna")
    cache = _cache(tmp_path)
    trace = optuna_run(cache, 11, seed=0)  # all 11 cached configurations
    assert len(trace) == 11 and trace[-1] == 1.0


@pytest.mark.parametrize(("content", "fragment"), [
    (json.dumps([{"space": "s", "method": "KT x", "rep": 0, "trace": [math.nan, 1.0]}]), "run 0 (KT x on s): trace[0] is nan"),
    (json.dumps([{"space": "s", "method": "KT x", "rep": 0, "trace": [-2.0]}]), "trace[0] is -2.0"),
    ("[" * 100_000 + "]" * 100_000, "lists or objects nested too deep to read"),
    ("[]", "holds no runs"),
], ids=["nan trace", "negative trace", "deep", "empty"])
def test_load_refuses_a_bad_run_in_one_line(tmp_path, monkeypatch, capsys, content, fragment):
    path = tmp_path / "bad.json"
    path.write_text(content)
    monkeypatch.setattr("sys.argv", ["peers.py", "--budgets", "1,2", "--load", str(path)])
    assert main() == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and fragment in captured.err, captured.err
    assert captured.err.startswith("error: peer run bad.json: ")


@pytest.mark.parametrize("budgets", ["0", "-1,20", "x", "20,"])
def test_load_refuses_budgets_that_cut_no_trace(tmp_path, monkeypatch, capsys, budgets):
    """A budget ≤ 0 read a trace's prefix as trace[:-1] or nothing; text gave a traceback."""
    path = tmp_path / "runs.json"
    path.write_text(json.dumps([{"space": "s", "method": "KT x", "rep": 0, "trace": [1.0]}]))
    monkeypatch.setattr("sys.argv", ["peers.py", f"--budgets={budgets}", "--load", str(path)])
    with pytest.raises(SystemExit) as caught:
        main()
    assert caught.value.code == 2 and "--budgets" in capsys.readouterr().err


def test_the_held_out_choice_never_scores_a_space_with_settings_chosen_on_it():
    """A is best on s1 and s2 but poor on s3; B is steady. Held out s3, the choice (made on s1, s2) is A, and s3's
    figure is A's poor one: the protocol reports what the choice would have done on a space it never saw."""
    slow = {"A": {"s1": 1.0, "s2": 1.0, "s3": 2.0}, "B": {"s1": 1.1, "s2": 1.1, "s3": 1.1}}
    rows = [{"space": space, "method": f"Tunelab {m}", "rep": r, "budget": b, "trace": [value] * b, "used": b}
            for m, by_space in slow.items() for space, value in by_space.items() for r in range(3) for b in (1, 2)]
    rows += [{"space": space, "method": "KT x", "rep": r, "trace": [1.2, 1.2]} for space in slow["A"] for r in range(3)]
    frame, lines = held_out_choice(per_budget(rows, [1, 2]), ["A", "B"])
    held = frame[frame["method"] == "Tunelab held-out choice"].groupby("space")["slowdown"].mean()
    assert held.to_dict() == pytest.approx({"s1": 1.1, "s2": 1.1, "s3": 2.0})
    assert [line.split(" (")[0] for line in lines[1:]] == ["held out s1: B", "held out s2: B", "held out s3: A"]
    text = report(frame)
    assert "best peer: 1: KT x, 2: KT x" in text
    ratio = (1.0 * 1.0 * 2.0) ** (1 / 3) / 1.2  # A's geo-mean ÷ the peer's: identical runs, so no interval width
    assert f"Tunelab A: 1: {ratio:.3f} [{ratio:.3f}, {ratio:.3f}]" in text
    with pytest.raises(Exception, match="no runs of 'Tunelab C'"):
        held_out_choice(frame, ["A", "C"])


def test_each_kernel_family_is_set_against_its_own_best_peer():
    """T leads over every space together (its gemm lead outweighs its convolution lag), yet on convolution a peer
    is ahead: the family lines say so, each against the peer best on that family."""
    slow = {"Tunelab T": {"convolution_a": 1.2, "convolution_b": 1.2, "gemm_c": 1.0},
            "KT x": {"convolution_a": 1.1, "convolution_b": 1.1, "gemm_c": 1.5},
            "KT y": {"convolution_a": 1.3, "convolution_b": 1.3, "gemm_c": 1.4}}
    rows = [{"space": space, "method": m, "rep": r, "trace": [value]} for m, by_space in slow.items()
            for space, value in by_space.items() for r in range(2)]
    text = report(per_budget(rows, [1]))
    overall = (1.2 * 1.2 * 1.0) ** (1 / 3) / (1.1 * 1.1 * 1.5) ** (1 / 3)
    assert overall < 1 and f"Tunelab T: 1: {overall:.3f}" in text
    convolution = text.split("over convolution (2 spaces)")[1].split("\n\n")[0]
    assert "best peer: 1: KT x" in convolution and f"Tunelab T: 1: {1.2 / 1.1:.3f}" in convolution
    gemm = text.split("over gemm (1 space)")[1].split("\n\n")[0]
    assert "best peer: 1: KT y" in gemm and f"Tunelab T: 1: {1.0 / 1.4:.3f}" in gemm


def test_a_variant_names_a_strategy_and_its_options():
    assert variant("AUTO") == ("AUTO", {})
    assert variant("AUTO:then=tpe:patience=2:x=true") == ("AUTO", {"then": "tpe", "patience": 2, "x": True})
    with pytest.raises(Exception, match="expected NAME:option=value"):
        variant("AUTO:then")
