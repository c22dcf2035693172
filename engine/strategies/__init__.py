"""Search strategies with an Optuna-like ask/tell interface and the paper's budget accounting.

``make_strategy("DLMT", space_or_domain, budget=60, seed=0)`` then ``ask()``/``tell()``, or
``drive(strategy, evaluate)`` for an offline objective. See :mod:`engine.strategies.base`.
"""

from engine.runners.status import STATUSES
from engine.strategies.base import (
    SKIPPED,
    AwaitDecision,
    Results,
    Strategy,
    drive,
)
from engine.strategies.domain import Domain
from engine.strategies.options import Option
from engine.strategies.registry import (
    STRATEGIES,
    available,
    describe,
    form_fields,
    from_form,
    help_text,
    make_strategy,
    options_of,
    parse_names,
    strategy_class,
    validate,
)

__all__ = [
    "SKIPPED",
    "STATUSES",
    "STRATEGIES",
    "AwaitDecision",
    "Domain",
    "Option",
    "Results",
    "Strategy",
    "available",
    "describe",
    "drive",
    "form_fields",
    "from_form",
    "help_text",
    "make_strategy",
    "options_of",
    "parse_names",
    "strategy_class",
    "validate",
]
