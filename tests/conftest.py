"""Hypothesis profiles (ADR 0009).

- ``ci`` (loaded when CI=true): derandomized, so the gate never explores and never flakes.
- ``dev`` (default): randomized, modest budgets.
- ``fuzz``: randomized, large budgets; used by ``make fuzz`` (time-boxed by tests/fuzz/run.py).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

pytest_plugins = ["tests.support.pg_fixtures"]  # PostgreSQL: one cluster per session

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    max_examples=60,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "dev", deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "fuzz",
    deadline=None,
    max_examples=2_000,
    print_blob=True,
    suppress_health_check=list(HealthCheck),
)
_default = "ci" if os.environ.get("CI") == "true" else "dev"
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", _default))
