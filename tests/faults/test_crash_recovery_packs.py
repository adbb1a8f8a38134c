"""A context pack whose release record was on its way to the log when ``serve`` died (its append
waiting for the event table's lock): the agent got no answer and asks again once the service is
back. The spec makes the retry idempotent (agent-context-api, design point 7: the replay id is
the content address of credential, request and pack, a duplicate release a no-op), so the retry
answers the same pack under the same replay id, the log holds that release once, and the replay
verifies."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import psycopg
import pytest

from context_service import bootstrap
from tests.e2e.server import ServerProcess
from tests.faults.conftest import Rebuild, caught_up
from tests.support.event_table import mentions, waiting_for_the_lock
from tests.support.views import differences, snapshot

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]
ADMIN = {"X-Context-Subject": "service:context-service-admin"}
ALICE = {"X-Context-Subject": "user:alice"}
WS = "crash-packs"
NAME = "notes"
REV = "3" * 64
PACKS = "/api/agent/v1/context-packs"


def _seed(http: httpx.Client) -> dict[str, str]:
    """A member's memory with a published index, and a credential of hers: its bearer."""
    assert http.put(f"/v1/namespaces/{WS}/members", headers=ADMIN, json={
        "subject": {"kind": "user", "name": "alice"}, "role": "owner"}).status_code == 200
    assert http.post("/v1/contexts", headers=ALICE, json={
        "name": NAME, "namespace": WS, "type": "memory",
        "storage": {"backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteOnce"}}
    ).status_code == 201
    base = f"/v1/namespaces/{WS}/contexts/{NAME}"
    assert http.post(f"{base}/revisions", headers=ALICE, json={
        "id": REV, "createdAt": "2026-05-01T10:00:00Z", "operation": "sync"}).status_code == 201
    records = [{"id": f"m{i}", "context": NAME, "type": "memory", "revision": REV,
                "text": text} for i, text in enumerate((
                    "The release train leaves on Fridays.", "Alice owns the budget review.",
                    "The office moved to Lisbon in March."))]
    assert http.put(f"{base}/query-index", headers=ALICE,
                    json={"revision": REV, "records": records}).status_code == 204
    made = http.post(f"/api/w/{WS}/agent-credentials", headers=ALICE, json={
        "name": "crash", "scopes": ["context:read"], "expiresInDays": 1})
    assert made.status_code == 201, made.text
    return {"Authorization": f"Bearer {made.json()['token']}"}


def _pack(url: str, bearer: dict[str, str], body: dict[str, Any]) -> httpx.Response:
    """The pack, once the index's features are there (503 until then)."""
    deadline = time.monotonic() + 60
    with httpx.Client(base_url=url, timeout=30) as http:
        while True:
            answer = http.post(PACKS, headers=bearer, json=body)
            if answer.status_code != 503 or time.monotonic() > deadline:
                return answer
            time.sleep(0.05)


def test_a_pack_released_as_the_service_died_is_answered_alike_when_asked_again(
        serve: ServerProcess, inspector: bootstrap.Container, database_url: str,
        rebuilt: Rebuild) -> None:
    serve.env["CS_AGENT_RATE_PER_SECOND"] = "0"
    serve.start()
    with httpx.Client(base_url=serve.url, timeout=30) as http:
        bearer = _seed(http)
    warm = _pack(serve.url, bearer, {"task": "Who owns the budget?"})
    assert warm.status_code == 200, warm.text  # features computed, caches loaded
    body = {"task": "When does the release train leave?", "budget": {"maxTokens": 500},
            "asOf": {"validTime": "2026-06-01T00:00:00Z"}}

    cut: list[httpx.Response | None] = []

    def ask() -> None:
        try:
            cut.append(_pack(serve.url, bearer, body))
        except httpx.HTTPError:
            cut.append(None)

    with psycopg.connect(database_url) as blocker:
        blocker.execute("LOCK TABLE stored_events IN EXCLUSIVE MODE")
        asking = threading.Thread(target=ask)
        asking.start()
        while not waiting_for_the_lock(database_url) and asking.is_alive():
            asking.join(0.02)
        serve.kill()  # the release record is on its way: pack built, not yet recorded
        asking.join(30)
        time.sleep(1.0)  # the lock is held a moment past the death, as a slow commit is
    assert cut == [None]

    serve.start()
    again = _pack(serve.url, bearer, body)
    assert again.status_code == 200, again.text
    replay_id = again.json()["replayId"]
    assert mentions(database_url, replay_id) == 1  # recorded once
    retried = _pack(serve.url, bearer, body)  # and asked once more: the same release
    assert retried.status_code == 200 and retried.json()["replayId"] == replay_id
    assert retried.json()["items"] == again.json()["items"]
    assert mentions(database_url, replay_id) == 1
    with httpx.Client(base_url=serve.url, timeout=30) as http:
        verified = http.post(f"/api/agent/v1/replays/{replay_id}", headers=bearer,
                             json={"mode": "verify"})
    assert verified.status_code == 200, verified.text
    caught_up(inspector)
    assert differences(snapshot(inspector), rebuilt(inspector)) == {}
