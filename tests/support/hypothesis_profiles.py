"""Hypothesis profiles for the whole suite, and example counts relative to the loaded profile.

``dev`` (the default) explores a fresh random sample each run; ``ci`` (loaded when ``CI=true``) is
deterministic so a red build can be reproduced exactly; ``thorough`` runs twenty times the
examples for a deliberate hunt (``HYPOTHESIS_PROFILE=thorough``).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

BASE_EXAMPLES = 100  # the dev and ci profiles' count; ``scaled`` is relative to it

_QUIET = [HealthCheck.too_slow]

settings.register_profile("dev", max_examples=BASE_EXAMPLES, deadline=None,
                          suppress_health_check=_QUIET)
settings.register_profile("ci", max_examples=BASE_EXAMPLES, deadline=None,
                          suppress_health_check=_QUIET, derandomize=True, database=None,
                          print_blob=True)
settings.register_profile("thorough", max_examples=20 * BASE_EXAMPLES, deadline=None,
                          suppress_health_check=_QUIET)

if os.environ.get("CI") == "true":
    settings.load_profile("ci")
else:
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def scaled(examples: int) -> int:
    """``examples`` under the dev and ci profiles, proportionally more (or fewer) under another:
    a test whose examples are costly (a database per example, a burst of requests) states its
    share of the profile rather than a fixed count."""
    loaded = settings.default
    assert loaded is not None  # a profile is loaded above
    return max(1, round(examples * loaded.max_examples / BASE_EXAMPLES))
