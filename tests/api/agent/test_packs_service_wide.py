"""Context packs over HTTP on a service of the test's own (agent-context-api.md §7): the same
bytes after every view of the service is rebuilt, and the release check against access now with
the pack ports changed for the test. The other pack tests share one service
(test_packs.py)."""

from __future__ import annotations

from dataclasses import replace

import msgspec
import pytest
from litestar.testing import TestClient

from context_service import bootstrap
from context_service.adapters.eventstore.store import EVENTS_TABLE
from context_service.domain.context.commands import RevokeAccess
from context_service.domain.events import ADMIN, Subject
from tests.api.agent.packs_corpus import FACTS, pack_body, seed_corpus
from tests.api.agent.packs_support import PACKS, Agent, HookedRetrieval, pack_services
from tests.api.agent.packs_support import settings as settings  # the fixture
from tests.api.conftest import Api
from tests.api.sets_support import token

pytestmark = pytest.mark.postgres


@pytest.fixture
def alice(api: Api) -> Agent:
    seed_corpus(api)
    return Agent(api, token(api))


def releases(container: bootstrap.Container) -> list[bytes]:
    with container.datastore.transaction(commit=False) as cur:
        cur.execute(f"SELECT state FROM {EVENTS_TABLE} WHERE topic = 'ContextPackReleased'"
                    " ORDER BY notification_id")
        return [bytes(r["state"]) for r in cur.fetchall()]


def test_the_same_bytes_after_every_view_is_rebuilt(alice: Agent,
                                                     container: bootstrap.Container) -> None:
    first = alice.pack(pack_body())
    for runner in container.runners.values():
        runner.stop()
        runner.rebuild()
        runner.start()
    # a new app: new corpus and pack-input caches, everything read again from the views
    with TestClient(app=bootstrap.app(container)) as other:
        again = other.post(PACKS, json=pack_body(),
                           headers={"Authorization": f"Bearer {alice.token}"})
    assert again.status_code == 200, again.text
    assert again.content == first.content
    assert again.headers["X-Context-Position"] == first.headers["X-Context-Position"]
    assert len(releases(container)) == 1


def test_the_release_check_drops_items_of_a_collection_just_ungranted(
        api: Api, container: bootstrap.Container) -> None:
    seed_corpus(api)
    adam = Agent(api, token(api, creator="user:adam"))
    packs = pack_services(api)
    assert packs.ports is not None
    revoked: list[int] = []

    def revoke() -> None:
        if not revoked:
            outcome = container.contexts.execute(
                "acme", FACTS, RevokeAccess(actor=ADMIN, subject=Subject("user", "adam")))
            revoked.append(outcome.position)

    original = packs.ports
    packs.ports = replace(original, retrieval=HookedRetrieval(original.retrieval, revoke))
    try:
        body = adam.pack(pack_body()).json()
    finally:
        packs.ports = original
    assert revoked
    assert body["items"] == [] and body["budget"]["usedTokens"] == 0
    assert body["omitted"]["access"]["count"] > 0
    assert FACTS.encode() not in msgspec.json.encode(
        {k: v for k, v in body.items() if k != "task"})
