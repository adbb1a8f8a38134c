"""Hypothesis profiles for the unit suite.

``dev`` (the default) explores a fresh random sample each run; ``ci`` (chosen when ``CI=true``) is
deterministic so a red build can be reproduced exactly; ``thorough`` runs many more examples, for a
deliberate hunt (``HYPOTHESIS_PROFILE=thorough``).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_COMMON = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}

settings.register_profile("dev", max_examples=100, **_COMMON)
settings.register_profile("ci", max_examples=100, derandomize=True, database=None,
                          print_blob=True, **_COMMON)
settings.register_profile("thorough", max_examples=2000, **_COMMON)

if os.environ.get("CI") == "true":
    settings.load_profile("ci")
else:
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
