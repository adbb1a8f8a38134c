"""Shared pytest configuration: service fixtures live in tests/support and load as plugins; a
test's server markers follow from the fixtures it uses."""

import atexit
import os
import shutil
import tempfile

import pytest

# The embedded PostgreSQL wheel wants a private runtime directory; give the suite its own (the
# workers inherit it), removed as the process that made it ends: not one left per run.
if not os.environ.get("XDG_RUNTIME_DIR"):
    os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="cs-test-run-")
    atexit.register(shutil.rmtree, os.environ["XDG_RUNTIME_DIR"], ignore_errors=True)

pytest_plugins = [
    "tests.support.hypothesis_profiles",  # registers and loads the profiles before any test
    "tests.support.services",
    "tests.support.kube_fixtures",
    "tests.support.pool_fixtures",
    "tests.support.nats_fixtures",
]

# the session fixture that starts each server, and the marker a test using it carries
SERVER_FIXTURES = {
    "pg_admin_url": "postgres",
    "container": "postgres",  # asks for its database at run time (``shares_service``)
    "kube_bin_dir": "k8s",
    "nats_server": "nats",
    "private_nats_server": "nats",
}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "shared_service: the module's tests share one database, container and "
        "application (tests/support/services.py) and isolate by the names they create")


# the order modules run in, costliest kind first: pytest-xdist hands out whole modules
# (``--dist loadfile``) in collection order, a quarter of them round-robin at the start, so the
# long process and cluster modules spread over the workers first and the many quick pure ones
# fill in at the end instead of one long module finishing alone
COST_ORDER = ("e2e", "slow", "browser", "k8s", "nats", "postgres")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test by the servers its fixtures start, so ``-m "not postgres"`` (and
    ``make test-fast``) leaves out exactly the tests that need one; then order the modules by
    the costliest kind of test each holds, keeping each module's tests together and in order."""
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        for fixture, marker in SERVER_FIXTURES.items():
            if fixture in used:
                item.add_marker(marker)
        module = getattr(item, "module", None)
        if module is not None and hasattr(module, "ServerProcess"):  # serves a process
            item.add_marker("e2e")
    items[:] = by_module_cost(items)


def _cost(item: pytest.Item) -> int:
    return next((rank for rank, name in enumerate(COST_ORDER) if item.get_closest_marker(name)),
                len(COST_ORDER))


def by_module_cost(items: list[pytest.Item]) -> list[pytest.Item]:
    """The items grouped by module, modules ordered by their costliest test (ties keep the
    collection order), each module's tests in their own order."""
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    ranked = sorted(modules.values(), key=lambda group: min(_cost(item) for item in group))
    return [item for group in ranked for item in group]
