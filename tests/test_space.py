import numpy as np
import pandas as pd
import pytest

from engine.errors import UserError
from engine.space.factors import MAX_ENUMERATE, Factor, Space
from engine.space.text import factor_table, format_levels, parse_levels, space_from_table, valid_count

POW2 = lambda lo, hi: [2**e for e in range(lo, hi + 1)]  # noqa: E731


@pytest.fixture
def laplacian_space() -> Space:
    return Space(
        [
            Factor("elements_number", "ordinal", (1, 2, 3, 4, 5, 6, 8, 9, 10, 12, 15, 16, 18, 20, 24)),
            Factor.integer_range("y_component_number", 1, 6),
            Factor("vector_length", "ordinal", (1, 2, 4, 8, 16)),
            Factor("temporary_size", "ordinal", (2, 4)),
            Factor("load_overlap", "boolean", None),
            Factor("threads_number", "ordinal", POW2(5, 10)),
            Factor("lws_y", "ordinal", POW2(0, 10)),
        ],
        [
            "lws_y <= threads_number",
            "elements_number % y_component_number == 0",
            "elements_number / y_component_number <= 4",
        ],
    )


def test_size_and_enumeration_respect_every_constraint(laplacian_space):
    assert laplacian_space.size == 118_800
    valid = laplacian_space.enumerate()
    assert len(valid) == laplacian_space.count_valid() > 0
    assert (valid.lws_y <= valid.threads_number).all()
    assert (valid.elements_number % valid.y_component_number == 0).all()
    assert (valid.elements_number / valid.y_component_number <= 4).all()
    assert not valid.duplicated().any()
    # brute-force check on a slice: every rejected factorial point violates a constraint
    index = laplacian_space._grid_index()
    everything = laplacian_space.from_level_index(index)
    manual = ((everything.lws_y <= everything.threads_number)
              & (everything.elements_number % everything.y_component_number == 0)
              & (everything.elements_number / everything.y_component_number <= 4))
    assert manual.sum() == len(valid)


def test_the_laplacian_table_is_inside_the_constrained_space(laplacian_space, data):
    table = pd.read_csv(data / "laplacian" / "search_space.csv")
    assert laplacian_space.valid_mask(table).all()


def test_level_index_and_coded_encodings_round_trip(laplacian_space):
    sample = laplacian_space.sample(200, seed=3)
    index = laplacian_space.to_level_index(sample)
    pd.testing.assert_frame_equal(laplacian_space.from_level_index(index), sample)
    coded = laplacian_space.to_coded(sample)
    assert coded.min() >= -1 and coded.max() <= 1
    pd.testing.assert_frame_equal(laplacian_space.from_coded(coded), sample)
    # the lowest level codes as -1, the highest as +1
    assert laplacian_space.to_coded(laplacian_space.from_level_index(np.zeros((1, 7), int)))[0].tolist() == [-1] * 7


def test_sampling_is_distinct_valid_and_reproducible(laplacian_space):
    a = laplacian_space.sample(500, seed=11)
    b = laplacian_space.sample(500, seed=11)
    c = laplacian_space.sample(500, seed=12)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)
    assert not a.duplicated().any()
    assert laplacian_space.valid_mask(a).all()


def test_sampling_excludes_given_rows(laplacian_space):
    first = laplacian_space.sample(100, seed=1)
    second = laplacian_space.sample(100, seed=1, exclude=first)
    merged = pd.concat([first, second])
    assert not merged.duplicated().any()


def test_huge_space_is_sampled_without_enumeration():
    space = Space([Factor(f"T{i}", "ordinal", POW2(0, 11)) for i in range(8)], ["T0 <= T1", "T2 % T3 == 0"])
    assert space.size > MAX_ENUMERATE and not space.enumerable
    with pytest.raises(UserError, match="sample instead"):
        space.enumerate()
    sample = space.sample(300, seed=0)
    assert len(sample) == 300 and not sample.duplicated().any() and space.valid_mask(sample).all()
    count, exact = valid_count(space)
    assert not exact and 0 < count < space.size


def test_sampling_fails_clearly_when_valid_fraction_is_tiny():
    space = Space([Factor(f"x{i}", "integer", tuple(range(40))) for i in range(5)],
                  ["x0 == 7 and x1 == 3 and x2 == 1 and x3 == 39 and x4 == 2"])
    with pytest.raises(UserError, match="valid"):
        space.sample(2, seed=0)


def test_sampling_more_than_available_is_an_error(laplacian_space):
    with pytest.raises(UserError, match="more than the"):
        laplacian_space.sample(10**6, seed=0)


def test_neighbours_move_one_level_along_one_factor(laplacian_space):
    config = {"elements_number": 6, "y_component_number": 3, "vector_length": 4, "temporary_size": 2,
              "load_overlap": True, "threads_number": 256, "lws_y": 256}
    neighbours = laplacian_space.neighbours(config)
    assert len(neighbours) > 0 and laplacian_space.valid_mask(neighbours).all()
    base = laplacian_space.to_level_index(pd.DataFrame([config]))[0]
    steps = np.abs(laplacian_space.to_level_index(neighbours) - base)
    assert (steps.sum(axis=1) == 1).all()
    # lws_y can't go up: it would exceed threads_number
    assert not (neighbours.lws_y == 512).any()


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: Space([Factor("a", "integer", (1, 2))], ["b < 1"]), "unknown name 'b'"),
        (lambda: Space([Factor("a", "integer", (1, 2))], ["__import__('os')"]), "call to '__import__'"),
        (lambda: Space([Factor("a", "integer", (1, 2))], ["a.real > 0"]), "attribute access '.real'"),
        (lambda: Space([Factor("a", "integer", (1, 2)), Factor("a", "boolean", None)]), "duplicate factor name 'a'"),
        (lambda: Factor("a", "ordinal", ()), "empty level list"),
        (lambda: Factor("a", "ordinal", (1, "fast")), "level 'fast' is not numeric"),
        (lambda: Factor("a", "integer", (1, 2.5)), "not an integer"),
        (lambda: Factor("a", "boolean", ("yes", "maybe")), "not a boolean"),
        (lambda: Factor("a b", "integer", (1,)), "identifier"),
        (lambda: Factor("a", "real", (1,)), "kind 'real'"),
        (lambda: Space([Factor("a", "integer", (1, 2))], ["a > 5"]).enumerate(), "'a > 5' excludes every configuration"),
    ],
)
def test_bad_spaces_fail_with_one_clear_line(build, message):
    with pytest.raises(UserError) as info:
        build()
    assert message in str(info.value) and "\n" not in str(info.value)


def test_level_text_forms():
    assert parse_levels("1..4", "integer", "u") == (1, 2, 3, 4)
    assert parse_levels("0..10 step 5", "integer", "u") == (0, 5, 10)
    assert parse_levels("2^0..2^3", "ordinal", "t") == (1, 2, 4, 8)
    assert parse_levels("", "boolean", "b") == (False, True)
    assert format_levels((1, 2, 4, 8, 16)) == "2^0..2^4"
    assert format_levels((1, 2, 3, 4)) == "1..4"


def test_factor_table_round_trip(laplacian_space):
    rebuilt = space_from_table(factor_table(laplacian_space).to_dict(orient="records"),
                               "\n".join(laplacian_space.constraints))
    assert rebuilt == laplacian_space


def test_space_dict_round_trip(laplacian_space):
    assert Space.from_dict(laplacian_space.to_dict()) == laplacian_space


def test_an_unconstrained_space_counts_exactly_however_large():
    from engine.space.factors import Factor, Space
    from engine.space.text import valid_count

    huge = Space([Factor(f"f{i}", "ordinal", tuple(range(30))) for i in range(8)])
    assert not huge.enumerable
    assert valid_count(huge) == (30**8, True)


def test_level_lookup_and_keys_tell_apart_values_that_python_calls_equal():
    """1, 1.0 and True are one dict key to Python; as a categorical's levels "1" and "1.0" they are not."""
    import json

    from engine.space.configs import config_keys

    space = Space([Factor("c", "categorical", ("1", "1.0", "x")), Factor("b", "boolean", None),
                   Factor("n", "ordinal", (0.5, 2))])
    values = np.array([1, 1.0, True, "1", "x", 2, None, [1]], dtype=object)
    assert space.factor("c").index_of(values).tolist() == [0, 1, -1, 0, 2, -1, -1, -1]
    frame = pd.DataFrame({"c": ["1.0", "x", "1"], "b": [1, "false", True], "n": [2, 0.5, np.float64(2.0)]})
    assert config_keys(space, frame) == [json.dumps(row, separators=(",", ":"))
                                         for row in (["1.0", True, 2], ["x", False, 0.5], ["1", True, 2])]
