"""Use cases: the only code that joins the engine (pure domain) and the store (DuckDB).

A page or a CLI command is widgets or argparse plus one call here, so the dashboard and the command
line do the same thing for the same action: :class:`StudySession` for one study (measure, tune,
answer a decision, best configuration, exports), :mod:`workflows.compare` for strategy comparisons,
:mod:`workflows.demo` for the demo studies of a fresh database.
"""

from workflows.session import StudySession

__all__ = ["StudySession"]
