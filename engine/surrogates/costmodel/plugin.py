"""The cost model's plug-in (entry point ``costmodel`` of group ``tunelab.plugins``, pyproject.toml): the strategy
``PF`` (:class:`engine.surrogates.costmodel.prefilter.CostModelPrefilter`), imported when it is first named or the
strategies are described.

Importing this module imports no strategy (:mod:`engine.strategies.plugins`): the core loads it whenever a runner
kind or a strategy is missing, or their names are listed.
"""

from __future__ import annotations

from engine.strategies.plugins import register_strategy

register_strategy("PF", "engine.surrogates.costmodel.prefilter", "CostModelPrefilter")
