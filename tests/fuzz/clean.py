"""What a parser may do with arbitrary input: succeed, or refuse with one clean line."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st


def parses_or_refuses(parse: Callable[[], Any], refusals: tuple[type[BaseException], ...] = (ValueError,)) -> Any:
    """Call ``parse``; a refusal must be one of ``refusals`` with a non-empty one-line message.

    Any other exception (RecursionError, OverflowError, IndexError, AttributeError, zlib.error, ...) is a
    crash and propagates, so Hypothesis shrinks and reports it.
    """
    try:
        return parse()
    except RecursionError:
        raise
    except refusals as exc:
        message = str(exc)
        assert message.strip(), f"{type(exc).__name__} with an empty message"
        assert "\n" not in message.strip(), f"multi-line message: {message!r}"
        assert "Traceback" not in message
        return None


def damage(draw: st.DrawFn, data: bytes, how: str) -> bytes:
    """``data`` cut short (``how == "cut"``), with one byte flipped (``"flip"``), or as it is: a file copied in
    part, or corrupted on its way."""
    if how == "cut":
        return data[: draw(st.integers(0, len(data)))]
    if how == "flip" and data:
        at = draw(st.integers(0, len(data) - 1))
        return data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1:]
    return data
