"""Shared pytest configuration: service fixtures live in tests/support and load as plugins."""

import os
import tempfile

# The embedded PostgreSQL wheel wants a private runtime directory; give the suite its own.
if not os.environ.get("XDG_RUNTIME_DIR"):
    os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="cs-test-run-")

pytest_plugins = [
    "tests.support.services",
    "tests.support.kube_fixtures",
    "tests.support.pool_fixtures",
    "tests.support.nats_fixtures",
]
