"""The one exception type that user-facing layers turn into a one-line message, and how a value is
named in that line."""

from typing import Any


class UserError(ValueError):
    """Bad input from a person: the message names the field and the value, in one line."""


def brief(value: Any, width: int = 80) -> str:
    """``repr(value)`` cut to ``width`` characters, so a 5,000-digit level or a long expression stays a short line."""
    try:
        text = repr(value)
    except ValueError:  # past Python's int-to-text limit (4,300 digits), or a container holding such an int
        return f"<an integer of {value.bit_length():,} bits>" if isinstance(value, int) else f"<a {type(value).__name__}>"
    return text if len(text) <= width else f"{text[: width - 1]}…"
