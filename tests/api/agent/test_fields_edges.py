"""Edges of the studied-field routes (agent-context-api §10): a collection id no collection can
have (PostgreSQL text cannot hold a NUL) is absent like any other, never a failure. One service
for the module: each test reads a workspace of its own."""

from __future__ import annotations

import pytest

from tests.api.agent.fields_support import LIST, QUERY, C
from tests.api.agent.fields_support import agent as agent  # the fixture
from tests.api.agent.fields_support import own as own  # the fixture
from tests.api.agent.packs_support import Agent
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture

# one service for the module: every test's workspace is a namespace of its own
pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]


def test_a_collection_id_with_nul_is_not_found(agent: Agent) -> None:
    for path, rest in ((LIST, b""), (QUERY, b',"fields":["region"]'),
                       (QUERY, b',"aggregate":{"functions":[{"op":"count"}]}')):
        for name in (b"contracts\\u0000", b"a\\u0000b"):
            resp = agent.post(path, raw=b'{"collectionId":"' + name + b'"' + rest + b"}")
            assert resp.status_code == 404, resp.text
            shown = name.decode().replace("\\u0000", "\\\\u0000")
            assert resp.text == ('{"code":"NOT_FOUND","message":"collection \\"'
                                 + shown + '\\" not found"}')
    # the collection itself still answers
    assert agent.post(LIST, {"collectionId": C}).json()["documents"] == 4
