"""Widgets for a strategy's options, drawn from its options table (engine.strategies.options), so
the Compare form offers exactly what ``tunelab tune --options`` and ``tunelab bench --options`` accept."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any, TypeVar

import streamlit as st

from app.escape import escape_md
from engine.strategies import form_fields

_N = TypeVar("_N", int, float)


def _numbers(field: Mapping[str, Any], number: Callable[[Any], _N]) -> tuple[_N | None, _N | None, _N | None]:
    """(low, high, default) of a numeric option as one numeric type (what Streamlit wants across value
    and bounds); an exclusive bound is not offered."""
    low = None if field["exclusive"] or field["low"] is None else number(field["low"])
    high = None if field["exclusive"] or field["high"] is None else number(field["high"])
    default = None if field["default"] is None else number(field["default"])
    return low, high, default


def _initial(field: Mapping[str, Any]) -> Any:
    """The value a field's widget starts from, typed as the widget returns it (and so as :func:`from_form` reads an
    untouched one)."""
    if field["kind"] == "bool":
        return bool(field["default"])
    if field["kind"] == "choice":
        return field["default"]
    if field["kind"] == "int":
        return _numbers(field, int)[2]
    if field["kind"] == "float":
        return _numbers(field, float)[2]
    return str(field["default"] or "")


def _fields(strategy: str, start: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{**f, "default": start.get(f["name"], f["default"])} for f in form_fields(strategy)]


def option_widgets(strategy: str, key: str, suggested: Mapping[str, Any] | None = None,
                   exclude: Collection[str] = ()) -> dict[str, Any]:
    """One widget per option (but those in ``exclude``, which the page asks for its own way), pre-filled with
    ``suggested`` or else its default; returns the values by option name (turn them into options with
    :func:`engine.strategies.from_form`, which checks them)."""
    values: dict[str, Any] = {}
    fields = [f for f in _fields(strategy, suggested or {}) if f["name"] not in exclude]
    if not fields:
        st.caption(f"{escape_md(strategy)} has no options.")
        return values
    columns = st.columns(3)
    for i, field in enumerate(fields):
        where, name = columns[i % 3], field["name"]
        label, help_text, widget_key = name, f"{field['description']} ({field['accepts']})", f"{key}_{strategy}_{name}"
        initial = _initial(field)
        if field["kind"] == "bool":
            values[name] = where.checkbox(label, value=initial, help=help_text, key=widget_key)
        elif field["kind"] == "choice":
            choices = list(field["choices"])
            values[name] = where.selectbox(label, choices, index=choices.index(initial), help=help_text, key=widget_key)
        elif field["kind"] == "int":
            low, high, _ = _numbers(field, int)
            values[name] = where.number_input(label, min_value=low, max_value=high, value=initial, step=1, format=None,
                                              help=help_text, key=widget_key)
        elif field["kind"] == "float":
            low_f, high_f, _ = _numbers(field, float)
            values[name] = where.number_input(label, min_value=low_f, max_value=high_f, value=initial, step=None,
                                              format="%g", help=help_text, key=widget_key)
        else:
            values[name] = where.text_input(label, value=initial, help=help_text, key=widget_key)
    return values


def option_editor(key: str, prefixes: Mapping[str, str],
                  suggested: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The options of one strategy at a time, chosen in a list (drawing every strategy's hundred widgets took the
    browser a second on each rerun); what was edited for the others is kept in the session. ``prefixes``: each
    strategy's widget-key prefix. Returns every strategy's values by option name, an untouched strategy's as its
    widgets would start (``suggested``, else the defaults)."""
    strategies = list(prefixes)
    edited: dict[str, dict[str, Any]] = st.session_state.setdefault(f"{key}_edited", {})
    first = next((s for s in suggested if s in prefixes), strategies[0])
    shown = st.selectbox("Options of", strategies, index=strategies.index(first), key=f"{key}_shown")
    place = f"{prefixes[shown]}:{shown}"
    edited[place] = option_widgets(shown, prefixes[shown], {**suggested.get(shown, {}), **edited.get(place, {})})
    return {strategy: edited.get(f"{prefixes[strategy]}:{strategy}")
            or {f["name"]: _initial(f) for f in _fields(strategy, suggested.get(strategy, {}))}
            for strategy in strategies}
