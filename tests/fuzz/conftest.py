"""Hypothesis profiles for the parser fuzz suite.

``make test`` runs each target for a bounded number of examples (profile ``ci``); ``make fuzz`` runs the
same targets long (profile ``fuzz``, ``FUZZ_EXAMPLES`` examples per target, 100,000 by default).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=int(os.environ.get("FUZZ_EXAMPLES", "300")), deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
settings.register_profile(
    "fuzz", max_examples=int(os.environ.get("FUZZ_EXAMPLES", "100000")), deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
