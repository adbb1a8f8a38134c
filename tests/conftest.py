"""Shared pytest configuration: service fixtures live in tests/support and load as plugins."""

pytest_plugins = [
    "tests.support.services",
    "tests.support.kube_fixtures",
    "tests.support.nats_fixtures",
]
