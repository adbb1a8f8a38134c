"""The agent API fixtures of conftest.py for a workspace of the test's own (``api.ns``), for
modules sharing one service: the same members and credentials, under other paths."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.agent import conftest as agent
from tests.api.conftest import Api
from tests.api.namespaced import Namespaced, namespaced
from tests.support.api_helpers import add_member


@pytest.fixture
def owner(agent_api: Api) -> Namespaced:
    """A workspace of the test's own with alice (owner), adam (admin), mia (member), vic
    (viewer), as conftest.py's ``owner`` builds ``acme``."""
    own = namespaced(agent_api, "acme")
    add_member(own, "user:alice", "owner", ws=own.ns)
    for subject, role in (("user:adam", "admin"), ("user:mia", "member"),
                          ("user:vic", "viewer")):
        add_member(own, subject, role, caller="user:alice", ws=own.ns)
    return own


def create(api: Namespaced, caller: str = "user:alice", ws: str = "", **body: Any) -> Any:
    """``conftest.create`` in ``api``'s workspace unless ``ws`` names another."""
    return agent.create(api, caller, ws or api.ns, **body)


def token_of(api: Namespaced, caller: str = "user:alice", ws: str = "", **body: Any) -> str:
    """``conftest.token_of`` in ``api``'s workspace unless ``ws`` names another."""
    return agent.token_of(api, caller, ws or api.ns, **body)
