"""Widgets for a strategy's options, drawn from its options table (engine.strategies.options), so
the Compare form offers exactly what ``tunelab tune --options`` and ``tunelab bench --options`` accept."""

from __future__ import annotations

from collections.abc import Callable, Mapping
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


def option_widgets(strategy: str, key: str, suggested: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One widget per option, pre-filled with ``suggested`` or else its default; returns the values by option
    name (turn them into options with :func:`engine.strategies.from_form`, which checks them)."""
    values: dict[str, Any] = {}
    fields = [{**f, "default": (suggested or {}).get(f["name"], f["default"])} for f in form_fields(strategy)]
    if not fields:
        st.caption(f"{escape_md(strategy)} has no options.")
        return values
    columns = st.columns(3)
    for i, field in enumerate(fields):
        where, name = columns[i % 3], field["name"]
        label, help_text, widget_key = name, f"{field['description']} ({field['accepts']})", f"{key}_{strategy}_{name}"
        if field["kind"] == "bool":
            values[name] = where.checkbox(label, value=bool(field["default"]), help=help_text, key=widget_key)
        elif field["kind"] == "choice":
            choices = list(field["choices"])
            values[name] = where.selectbox(label, choices, index=choices.index(field["default"]), help=help_text,
                                           key=widget_key)
        elif field["kind"] == "int":
            low, high, default = _numbers(field, int)
            values[name] = where.number_input(label, min_value=low, max_value=high, value=default, step=1, format=None,
                                              help=help_text, key=widget_key)
        elif field["kind"] == "float":
            low_f, high_f, default_f = _numbers(field, float)
            values[name] = where.number_input(label, min_value=low_f, max_value=high_f, value=default_f, step=None,
                                              format="%g", help=help_text, key=widget_key)
        else:
            values[name] = where.text_input(label, value=str(field["default"] or ""), help=help_text, key=widget_key)
    return values
