"""A workspace of the test's own on a module's shared service, as the fixture ``own``: with the
pack corpus (``own_with_corpus``) or with one member per role (``own_with_members``); a module
imports the one it needs, and ``alice_reading`` or ``agent_reading`` for its read-only
credential (the fixture ``alice`` or ``agent``)."""

from __future__ import annotations

import pytest

from tests.api.agent.packs_corpus import seed_corpus_of
from tests.api.agent.packs_support import Agent
from tests.api.conftest import Api
from tests.api.namespaced import Namespaced, namespaced
from tests.api.sets_namespaced import seed_workspace, token


@pytest.fixture(name="own")
def own_with_corpus(api: Api) -> Namespaced:
    """A workspace of the test's own with the pack corpus."""
    workspace = namespaced(api, "acme")
    seed_corpus_of(workspace)
    return workspace


@pytest.fixture(name="own")
def own_with_members(api: Api) -> Namespaced:
    """A workspace of the test's own with one member per role."""
    workspace = namespaced(api, "acme")
    seed_workspace(workspace)
    return workspace


@pytest.fixture(name="alice")
def alice_reading(own: Namespaced) -> Agent:
    """A read-only credential of the workspace."""
    return Agent(own, token(own))


@pytest.fixture(name="agent")
def agent_reading(own: Namespaced) -> Agent:
    """A read-only credential of the workspace."""
    return Agent(own, token(own))
