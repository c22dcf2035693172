"""``tunelab analyze`` in a real process: tables, λ, ncvTest, predicted minimum; one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from engine.io.paths import data_dir
from tests.analysis_support import r_case
from tests.conftest import cli, run_cli


@pytest.fixture(scope="module")
def lap_csv(tmp_path_factory):
    case = r_case("laplacian_step1")
    path = tmp_path_factory.mktemp("analyze") / "lap24.csv"
    frame = pd.DataFrame(case["data"]).drop(columns="row")
    for column in ("load_overlap", "vector_recompute"):
        frame[column] = frame[column].map({True: "true", False: "false"})
    frame.to_csv(path, index=False)
    return case, path


def test_json_output_matches_r_with_prediction_over_the_space(lap_csv):
    case, path = lap_csv
    folder = data_dir()
    if folder is None:
        pytest.skip("shared data folder is absent")
    space = folder / "laplacian" / "search_space.csv"
    result = cli("analyze", "--csv", str(path), "--formula", case["formula"], "--transform", "boxcox-round",
                    "--anova-type", "1", "--predict-over", str(space), "--json", check=True)
    out = json.loads(result.stdout)
    assert out["transform"] == "log"
    f_values = [r["F value"] for r in out["anova"]][:-1]
    np.testing.assert_allclose(f_values, [r["F value"] for r in case["boxcox_fit"]["anova_type1"]][:-1], rtol=1e-9)
    assert out["power_transform"]["lambda_rounded"] == 0
    assert out["power_transform"]["lambda"] == pytest.approx(case["powerTransform"]["lambda"], abs=1e-6)
    assert out["ncv_test_untransformed"]["statistic"] == pytest.approx(case["ncvTest"]["ChiSquare"], rel=1e-9)
    assert out["coefficients"][6]["term"] == "load_overlapTRUE"
    best = out["predicted_minimum"]
    assert isinstance(best["row"], int) and best["predicted"] > 0  # log model: a positive time
    frame = pd.read_csv(space)
    assert {k: frame.iloc[best["row"]][k] for k in ("lws_y", "threads_number")} == {
        k: best["point"][k] for k in ("lws_y", "threads_number")
    }


def test_text_output_has_every_section(lap_csv):
    case, path = lap_csv
    result = run_cli("analyze", "--csv", str(path), "--formula", case["formula"], "--anova-type", "3", check=True)
    text = result.stdout
    for expected in ("Analysis of Variance Table (Type III)", "(Intercept)", "Coefficients:", "load_overlapTRUE",
                     "lambda = -0.12685", "rounded lambda = 0", "ncvTest (untransformed fit): Chisquare = 5.40816"):
        assert expected in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--formula", "time_per_pixel ~ lws_y + warp_size"], "unknown name 'warp_size'"),
        (["--formula", "time_per_pixel ~ lws_y", "--transform", "cube"], "--transform 'cube'"),
        (["--formula", "time_per_pixel ~ lws_y", "--predict-over", "/nonexistent.csv"], "no such file"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(lap_csv, args, message):
    _, path = lap_csv
    result = cli("analyze", "--csv", str(path), *args)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_mean_of_repeats_from_the_command_line(tmp_path):
    rng = np.random.default_rng(4)
    x = np.repeat(np.arange(1.0, 7.0), 3)
    frame = pd.DataFrame({"x": x, "t": 2 + 0.5 * x + 0.1 * rng.standard_normal(len(x))})
    frame.loc[4, "t"] = np.nan
    path = tmp_path / "repeats.csv"
    frame.to_csv(path, index=False)
    every = json.loads(cli("analyze", "--csv", str(path), "--formula", "t ~ x", "--json", check=True).stdout)
    means = json.loads(cli("analyze", "--csv", str(path), "--formula", "t ~ x", "--repeats", "mean", "--json", check=True).stdout)
    assert (every["fit"]["n"], every["fit"]["n_excluded"]) == (17, 1)
    assert (means["fit"]["n"], means["fit"]["n_excluded"]) == (6, 0)
    slope = np.polyfit(np.arange(1.0, 7.0), frame.groupby("x")["t"].mean(), 1)[0]
    assert means["coefficients"][1]["Estimate"] == pytest.approx(slope, rel=1e-9)


@pytest.fixture
def repeats_csv(tmp_path):
    path = tmp_path / "repeats.csv"
    pd.DataFrame({"x": [1.0, 1.0, 2.0, 2.0, 3.0, 3.0], "z": [0, 0, 1, 1, 0, 0],
                  "t": [2.1, 2.3, 2.9, 3.1, 3.6, 3.4]}).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("repeats", ["all", "mean"])
def test_an_unknown_by_column_is_refused_naming_the_valid_ones(repeats_csv, repeats):
    result = cli("analyze", "--csv", str(repeats_csv), "--formula", "t ~ x", "--repeats", repeats,
                 "--by", "x, nope,zz")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        "tunelab: error: --by: unknown columns 'nope', 'zz'; the columns are x, z, t"]


def test_by_without_mean_of_repeats_is_refused(repeats_csv):
    """``--by`` groups repeats for their mean; with every repeat fitted it would do nothing, silently."""
    result = cli("analyze", "--csv", str(repeats_csv), "--formula", "t ~ x", "--by", "x")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "tunelab: error: by ['x']: groups repeats for their mean, so it needs repeats 'mean'"]
    means = json.loads(cli("analyze", "--csv", str(repeats_csv), "--formula", "t ~ x", "--repeats", "mean",
                           "--by", "x", "--json").stdout)
    assert means["fit"]["n"] == 3
