"""The pack routes at their edges (agent-context-api.md §3.4, §7.2 step 9): a collection the
bootstrap administrator's credential names must exist, as for any other credential.

One service for the module: every test's workspace is a namespace of its own."""

from __future__ import annotations

import pytest

from tests.api.agent.own_workspace import alice_reading as alice_reading  # the fixtures
from tests.api.agent.own_workspace import own_with_corpus as own_with_corpus
from tests.api.agent.packs_corpus import FACTS, pack_body
from tests.api.agent.packs_support import PACKS, STREAM, Agent, create_context
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.namespaced import Namespaced
from tests.api.sets_namespaced import token

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
ADMIN = "service:context-service-admin"


def not_found(name: str) -> dict[str, str]:
    return {"code": "NOT_FOUND", "message": f'collection "{name}" not found'}


def test_the_administrator_naming_no_collection_gets_404(own: Namespaced) -> None:
    """The administrator reads every collection, not every name: a name no context has (now or
    at P) answers like an absent collection, as it does for a member's credential and in
    fields/*, never a pack reporting it ``index_unavailable``."""
    admin = Agent(own, token(own, creator=ADMIN))
    for names in (["nope"], [FACTS, "nope"]):
        for path in (PACKS, STREAM):
            resp = admin.post(path, pack_body(filters={"collectionIds": names}))
            assert (resp.status_code, resp.json()) == (404, not_found("nope")), resp.text
    assert admin.pack(pack_body(filters={"collectionIds": [FACTS]})).json()["items"]


def test_the_administrator_s_time_travel_keeps_deleted_and_later_collections(
        alice: Agent, own: Namespaced) -> None:
    """What the administrator reads besides live collections stays: one deleted since P is
    packed as at P; one created after P (and alice's, readable now) is ``index_unavailable``."""
    at_p = alice.pack(pack_body()).json()["asOf"]["systemTime"]
    resp = own.as_("user:alice").delete(f"/v1/namespaces/{own.ns}/contexts/{FACTS}")
    assert resp.status_code == 204, resp.text
    create_context(own, "later", ws=own.ns)
    admin = Agent(own, token(own, creator=ADMIN))
    body = pack_body(asOf={"validTime": "2025-01-01T00:00:00Z", "systemTime": at_p},
                     filters={"collectionIds": [FACTS, "later"]})
    for agent in (admin, alice):
        resp = agent.post(PACKS, body)
        if agent is alice:  # alice's deleted collection is not readable now
            assert (resp.status_code, resp.json()) == (404, not_found(FACTS))
            continue
        pack = resp.json()
        assert resp.status_code == 200, resp.text
        assert {i["source"]["collectionId"] for i in pack["items"]} == {FACTS}
        assert pack["missing"] == [{"kind": "collection", "collectionId": "later",
                                    "reason": "index_unavailable"}]
