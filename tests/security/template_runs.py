"""The fixtures of the suites that attack template runs on a service of their own: settings
without the per-credential rate limit (each test runs many templates as one credential) and the
seeded corpus. A module imports them by name (``from ... import corpus as corpus``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from context_service.config import Settings
from tests.api.agent.templates_support import seeded
from tests.api.conftest import Api
from tests.support.services import suite_settings


@pytest.fixture(scope="module")
def module_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """Without the per-credential rate limit: the tests run templates as a credential."""
    return replace(suite_settings(tmp_path_factory.mktemp("template-runs")),
                   agent_rate_per_second=0)


@pytest.fixture(scope="module")
def corpus(module_api: Api) -> Iterator[Api]:
    seeded(module_api)
    yield module_api
