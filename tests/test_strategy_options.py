"""Strategy options tables: one per strategy, and the validation, help text and form fields they give."""

from __future__ import annotations

import math

import pytest

from app.cli._options import check_strategy_options
from engine.errors import UserError
from engine.strategies import STRATEGIES, Option, form_fields, from_form, help_text, make_strategy, options_of, validate
from tests.strategies_support import small_table

#: A value of the wrong type for each kind of option.
WRONG_TYPE = {"int": "3", "float": "high", "bool": "yes", "choice": "no such rule", "text": 3, "list": "one"}


def bad_values(option: Option) -> list:
    """A value of the wrong type, and ones out of range where the option has bounds."""
    values = [WRONG_TYPE[option.kind]]
    values += [bound + step for bound, step in ((option.low, -1), (option.high, 1)) if bound is not None]
    return values + ([math.nan] if option.kind == "float" else [])


def every_option():
    return [(name, option) for name, cls in STRATEGIES.items() for option in cls.OPTIONS]


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_every_strategy_has_a_table_of_distinct_documented_options(name):
    table = STRATEGIES[name].OPTIONS
    assert isinstance(table, tuple) and all(isinstance(o, Option) for o in table)
    assert len({o.name for o in table}) == len(table)
    assert all(o.description and o.accepts for o in table)
    assert validate(name, {}) == options_of(name) == {o.name: o.default for o in table}


@pytest.mark.parametrize(("strategy", "option"), every_option(), ids=lambda x: getattr(x, "name", x))
def test_each_default_passes_its_own_check(strategy, option):
    assert option.problem(option.default) is None
    option.check(strategy, option.default)


@pytest.mark.parametrize(("strategy", "option"), every_option(), ids=lambda x: getattr(x, "name", x))
def test_wrong_type_and_out_of_range_are_refused_in_one_line(strategy, option):
    for value in bad_values(option):
        with pytest.raises(UserError) as refused:
            validate(strategy, {option.name: value})
        message = str(refused.value)
        assert "\n" not in message
        assert message.startswith(f"{strategy} option {option.name!r} ") and "must be" in message, message


def test_messages_name_strategy_option_and_value():
    cases = [("DLMT", {"threshold": 2.0}, "DLMT option 'threshold' 2.0: must be a float between 0 and 1 (exclusive)"),
             ("dlmt", {"threshold": "x"}, "DLMT option 'threshold' \"x\": must be a float"),
             ("GA", {"population": 1}, "GA option 'population' 1: must be an int >= 2"),
             ("GA", {"mutation": 1.5}, "GA option 'mutation' 1.5: must be a float between 0 and 1"),
             ("DLMT", {"inverse": 1}, "DLMT option 'inverse' 1: must be a bool"),
             ("DLMT", {"anova_type": True}, "DLMT option 'anova_type' true: must be one of 1, 2"),
             ("DLMT", {"size": 0}, "DLMT option 'size' 0: must be one of 2k, orio or a float > 0"),
             ("DLMT", {"response": "1y"}, "DLMT option 'response' \"1y\": must be an identifier"),
             ("GS", {"ignore": ["a", 1]}, "GS option 'ignore' [\"a\", 1]: must be a list of texts"),
             ("LM", {"schedule": [[0, ["a"], ["a"]]]}, "LM option 'schedule' [[0, [\"a\"], [\"a\"]]]: must be a list of steps"),
             ("DOPT", {"transform": "sqrt"}, "DOPT option 'transform' \"sqrt\": must be one of none, log"),
             ("LHS", {"points": 0}, "LHS option 'points' 0: must be an int >= 1 or null")]
    for strategy, options, start in cases:
        with pytest.raises(UserError) as refused:
            validate(strategy, options)
        assert str(refused.value).startswith(start), str(refused.value)


def test_unknown_options_are_listed_with_the_known_ones():
    with pytest.raises(UserError, match=r"^GA option 'size' 3: not an option of GA \(options: population, generations, "
                                        r"mutation, tries, selection, tournament\)$"):
        validate("GA", {"size": 3})
    with pytest.raises(UserError, match=r"RS option 'points' 5: not an option of RS \(options: none\)"):
        validate("RS", {"points": 5})
    with pytest.raises(UserError, match="expected a mapping"):
        validate("GA", ["population"])


def test_accepted_values_are_kept_and_defaults_filled():
    options = validate("DLMT", {"size": 2.5, "transform": 0.5, "formula": ["a", "b"], "anova_type": 2, "extra": -1})
    assert options["size"] == 2.5 and options["transform"] == 0.5 and options["formula"] == ["a", "b"]
    assert options["threshold"] == 0.05 and options["refine"] == 3
    assert validate("LM", {"schedule": [(5, ("a",), ("a",))]})["schedule"] == [(5, ("a",), ("a",))]
    assert validate("GA", {"generations": None, "mutation": 1})["generations"] is None


def test_construction_validates_and_keeps_the_filled_options():
    table = small_table()
    with pytest.raises(UserError, match="^DLMT option 'threshold' 2.0: "):
        make_strategy("DLMT", table.domain, 20, options={"threshold": 2.0})
    with pytest.raises(UserError, match="^GA option 'budget' 5: not an option of GA"):
        make_strategy("GA", table.domain, 20, options={"budget": 5})
    with pytest.raises(UserError, match="DLMT option 'response' \"a\": must not be a factor's name"):
        make_strategy("DLMT", table.domain, 20, options={"response": "a"})
    strategy = make_strategy("GA", table.domain, 20, options={"population": 4})
    assert strategy.options == {**options_of("GA"), "population": 4} and strategy.population == 4


def test_the_cli_check_returns_the_options_as_given():
    """A tuning run's key hashes the options the CLI passes on: no defaults may be added to them."""
    given = {"refine": 4}
    assert check_strategy_options("dlmt", given) == {"refine": 4}
    with pytest.raises(UserError, match="expected a JSON object"):
        check_strategy_options("DLMT", [1])


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_help_text_lists_every_option(name):
    text = help_text(name)
    for option in STRATEGIES[name].OPTIONS:
        assert f"  {option.name}  " in text and option.description in text
    assert name in text.splitlines()[0]


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_form_fields_round_trip_the_defaults(name):
    fields = form_fields(name)
    assert [f["name"] for f in fields] == list(options_of(name))
    assert all(f["kind"] in ("int", "float", "bool", "choice", "text") for f in fields)
    untouched = {f["name"]: f["default"] for f in fields}
    assert from_form(name, untouched) == {}  # an untouched form adds nothing to a run's options
    assert validate(name, from_form(name, untouched)) == options_of(name)


def test_form_text_fields_are_parsed_and_checked():
    assert from_form("DLMT", {"size": "2.5", "formula": "y ~ a + b", "threshold": 0.01, "refine": 3}) == {
        "size": 2.5, "formula": "y ~ a + b", "threshold": 0.01}
    assert from_form("GS", {"ignore": '["a"]', "apriori": "[]"}) == {"ignore": ["a"]}
    with pytest.raises(UserError, match="GS option 'ignore' \"a, b\": must be a list"):
        from_form("GS", {"ignore": "a, b"})
