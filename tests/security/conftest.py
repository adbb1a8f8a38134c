"""The security suites drive the service through its HTTP API like the API tests."""

from tests.api.conftest import api as api  # the fixture
