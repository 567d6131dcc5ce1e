"""Hypothesis profiles: ``ci`` (the default under CI=true) explores more, ``dev`` (the default
elsewhere) keeps the fast loop fast. Choose one with HYPOTHESIS_PROFILE=ci|dev. Tests that set
``max_examples`` themselves scale it with :func:`examples`."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=100, deadline=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PROFILE = os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
settings.load_profile(PROFILE)


def examples(ci: int) -> int:
    """``ci`` examples under the ci profile, a quarter of them (at least 5) under dev."""
    return ci if PROFILE == "ci" else max(5, ci // 4)
