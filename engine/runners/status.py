"""The status of one measurement: the single list the runners, strategies, table imports and the store share.

A :class:`enum.StrEnum` so a member *is* its text: ``Status.OK == "ok"``, and ``str``/f-strings and
the store see ``"ok"`` (a plain ``(str, Enum)`` would print ``Status.OK``).
"""

from __future__ import annotations

import enum


class Status(enum.StrEnum):
    """How a measurement ended."""

    OK = "ok"
    #: It ran and went wrong (an error, a non-finite value, a failed check).
    FAILED = "failed"
    #: It ran out of time.
    TIMEOUT = "timeout"
    #: It never ran (outside the constraints, or a table row with no finite value).
    INVALID = "invalid"


#: Every status's text, in declaration order (what messages list and membership checks use).
STATUSES: tuple[str, ...] = tuple(s.value for s in Status)
