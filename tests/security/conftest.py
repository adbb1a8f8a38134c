"""The security suites drive the service through its HTTP API like the API tests."""

from tests.api.conftest import api as api  # the fixture
from tests.api.conftest import module_api as module_api  # the fixture
