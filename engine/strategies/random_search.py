"""RS: uniform random sampling of valid configurations (docs/dlmt.md §4.3).

It measures as many distinct valid configurations as the budget allows (the paper drew 120 under
its cap of 125: give it a budget of 120). The answer is the best one measured. No options.
"""

from __future__ import annotations

from engine.strategies.base import Search, Strategy


class RandomSearch(Strategy):
    name = "RS"
    summary = "uniform random sampling of distinct valid configurations"

    def _search(self) -> Search:
        yield self.domain.random_valid(self.budget, self.rng)
