"""Search strategies with an Optuna-like ask/tell interface and the paper's budget accounting.

``make_strategy("DLMT", space_or_domain, budget=60, seed=0)`` then ``ask()``/``tell()``, or
``drive(strategy, evaluate)`` for an offline objective. See :mod:`engine.strategies.base`.

Names are imported on first use (:mod:`engine.lazy`): the registry imports every strategy (scipy's
optimisers, Optuna, the GP), a second of CPU that measuring a design or reading one strategy's base
class must not pay (issue 31).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.lazy import lazy_exports
from engine.runners.status import STATUSES as STATUSES

_EXPORTS = {
    "base": ("SKIPPED", "AwaitDecision", "Results", "Strategy", "drive"),
    "domain": ("Domain",),
    "options": ("Option",),
    "registry": ("STRATEGIES", "available", "describe", "form_fields", "from_form", "help_text", "make_strategy",
                 "options_of", "parse_names", "strategy_class", "validate"),
}
if TYPE_CHECKING:  # what mypy sees of the lazy names (_EXPORTS is what runs); keep the two in step
    from engine.strategies.base import SKIPPED as SKIPPED
    from engine.strategies.base import AwaitDecision as AwaitDecision
    from engine.strategies.base import Results as Results
    from engine.strategies.base import Strategy as Strategy
    from engine.strategies.base import drive as drive
    from engine.strategies.domain import Domain as Domain
    from engine.strategies.options import Option as Option
    from engine.strategies.registry import STRATEGIES as STRATEGIES
    from engine.strategies.registry import available as available
    from engine.strategies.registry import describe as describe
    from engine.strategies.registry import form_fields as form_fields
    from engine.strategies.registry import from_form as from_form
    from engine.strategies.registry import help_text as help_text
    from engine.strategies.registry import make_strategy as make_strategy
    from engine.strategies.registry import options_of as options_of
    from engine.strategies.registry import parse_names as parse_names
    from engine.strategies.registry import strategy_class as strategy_class
    from engine.strategies.registry import validate as validate
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals(), eager=("STATUSES",))
