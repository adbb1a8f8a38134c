"""Replays at the HTTP edge, reviewed (agent-context-api.md §7.9, §8): a replay ends with the
release check's look at the credential, as a pack does: a recompute answers a whole pack, texts
included, and neither mode records a run for a credential revoked meanwhile.

One service for the module: every test's workspace is a namespace of its own."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from context_service import bootstrap
from tests.api.agent.own_workspace import own_with_corpus as own_with_corpus  # the fixture
from tests.api.agent.packs_corpus import TASK, pack_body
from tests.api.agent.packs_support import REPLAYS, Agent, HookedRetrieval, pack_services
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.namespaced import Namespaced
from tests.api.sets_namespaced import credentials, token

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]


def recompute_with_hook(own: Namespaced, agent: Agent, replay_id: str,
                        before: Callable[[], None]) -> Any:
    """A recompute whose retrieval runs ``before`` first (once per list)."""
    packs = pack_services(own)
    original = packs.ports
    assert original is not None
    packs.ports = replace(original, retrieval=HookedRetrieval(original.retrieval, before))
    try:
        return agent.post(f"{REPLAYS}/{replay_id}", {"mode": "recompute", "task": TASK})
    finally:
        packs.ports = original


class HookedCorpus:
    """The corpus reads, with a hook run before each load (a verify's only wait)."""

    def __init__(self, inner: Any, before: Callable[[], None]) -> None:
        self.inner = inner
        self.before = before

    def corpus(self, collections: Any, until: float | None = None) -> Any:
        self.before()
        return self.inner.corpus(collections, until=until)


def runs_since(container: bootstrap.Container, head: int) -> list[str]:
    return [r.name for r in container.store.read(head, 1000) if r.name == "ContextPackReplayed"]


def revoking(own: Namespaced, value: str, revoked: list[bool]) -> Callable[[], None]:
    """A hook that revokes the credential ``value`` the first time it is called."""
    def revoke() -> None:
        if not revoked:
            path = f"{credentials(own)}/{value.split('_')[1]}"
            assert own.as_("user:alice").delete(path).status_code == 204
            revoked.append(True)
    return revoke


def test_a_credential_revoked_during_a_recompute_is_refused_and_nothing_recorded(
        own: Namespaced, container: bootstrap.Container) -> None:
    """The recomputed pack carries the items' texts: a credential revoked while it was built
    gets the answer of §1.5 step 2, as a pack's release check gives it (§7.9), not the texts."""
    value = token(own)
    agent = Agent(own, value)
    pack = agent.pack(pack_body()).json()
    assert pack["items"]
    head = container.store.head()
    revoked: list[bool] = []
    revoke = revoking(own, value, revoked)

    resp = recompute_with_hook(own, agent, pack["replayId"], revoke)
    assert revoked
    assert (resp.status_code, resp.json()) == (401, {"code": "UNAUTHORIZED",
                                                     "message": "agent credential is not valid"})
    assert runs_since(container, head) == []


def test_a_creator_removed_during_a_recompute_loses_the_answer(
        own: Namespaced, container: bootstrap.Container) -> None:
    """The creator's authority is read again at the end too (§1.5 step 4)."""
    adam = Agent(own, token(own, creator="user:adam"))
    pack = adam.pack(pack_body()).json()
    assert pack["items"]
    head = container.store.head()
    removed: list[bool] = []

    def remove() -> None:
        if not removed:
            resp = own.as_("user:alice").delete(f"/v1/namespaces/{own.ns}/members/user:adam")
            assert resp.status_code == 204, resp.text
            removed.append(True)

    resp = recompute_with_hook(own, adam, pack["replayId"], remove)
    assert removed
    assert resp.status_code == 403, resp.text
    assert resp.json() == {"code": "AGENT_CREDENTIAL_AUTHORITY_LOST",
                           "message": "the credential's creator is no longer a member of "
                                      f'workspace "{own.ns}"'}
    assert runs_since(container, head) == []


def test_a_credential_revoked_during_a_verify_is_refused_and_nothing_recorded(
        own: Namespaced, container: bootstrap.Container) -> None:
    """"Access in a replay is always the calling credential's access now" (§8), up to the
    answer: a verify that waited for its corpus while the credential was revoked records no
    run in the revoked credential's name."""
    value = token(own)
    agent = Agent(own, value)
    pack = agent.pack(pack_body()).json()
    head = container.store.head()
    revoked: list[bool] = []
    revoke = revoking(own, value, revoked)

    packs = pack_services(own)
    original = packs.ports
    assert original is not None
    packs.ports = replace(original, corpus=HookedCorpus(original.corpus, revoke))
    try:
        resp = agent.post(f"{REPLAYS}/{pack['replayId']}", {"mode": "verify"})
    finally:
        packs.ports = original
    assert revoked
    assert (resp.status_code, resp.json()) == (401, {"code": "UNAUTHORIZED",
                                                     "message": "agent credential is not valid"})
    assert runs_since(container, head) == []
