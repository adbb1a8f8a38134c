"""An agent credential whose creation was on its way to the log when ``serve`` died (its append
waiting for the event table's lock): its token, shown once in the answer, was never shown. A
credential nobody holds the token of must not appear later: the dead process's append used to
commit once the lock went, after the process was gone, leaving an active credential that counts
against the workspace's limit and that no one can use or knows to revoke. Asked again once the
service is back, the creation gives one credential, whose token works."""

from __future__ import annotations

import threading
import time

import httpx
import psycopg
import pytest

from tests.e2e.server import ServerProcess
from tests.support.event_table import waiting_for_the_lock

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]
ADMIN = {"X-Context-Subject": "service:context-service-admin"}
ALICE = {"X-Context-Subject": "user:alice"}
WS = "crash-credentials"
CREDENTIALS = f"/api/w/{WS}/agent-credentials"
BODY = {"name": "nightly", "scopes": ["context:read"], "expiresInDays": 1}


def _active(url: str) -> list[str]:
    with httpx.Client(base_url=url, timeout=30) as http:
        listed = http.get(CREDENTIALS, headers=ALICE)
    assert listed.status_code == 200, listed.text
    return [c["id"] for c in listed.json()["items"] if c["status"] == "active"]


def test_a_credential_created_as_the_service_died_never_appears_without_its_token(
        serve: ServerProcess, database_url: str) -> None:
    serve.start()
    with httpx.Client(base_url=serve.url, timeout=30) as http:
        assert http.put(f"/v1/namespaces/{WS}/members", headers=ADMIN, json={
            "subject": {"kind": "user", "name": "alice"}, "role": "owner"}).status_code == 200

    cut: list[httpx.Response | None] = []

    def create() -> None:
        try:
            with httpx.Client(base_url=serve.url, timeout=30) as http:
                cut.append(http.post(CREDENTIALS, headers=ALICE, json=BODY))
        except httpx.HTTPError:
            cut.append(None)

    with psycopg.connect(database_url) as blocker:
        blocker.execute("LOCK TABLE stored_events IN EXCLUSIVE MODE")
        creating = threading.Thread(target=create)
        creating.start()
        while not waiting_for_the_lock(database_url) and creating.is_alive():
            creating.join(0.02)
        serve.kill()  # the token was made and its hash is on its way; nobody will see it
        creating.join(30)
        time.sleep(1.0)  # the lock is held a moment past the death, as a slow commit is
    assert cut == [None]

    serve.start()
    assert _active(serve.url) == [], "a credential whose token was never shown is active"
    with httpx.Client(base_url=serve.url, timeout=30) as http:
        made = http.post(CREDENTIALS, headers=ALICE, json=BODY)
        assert made.status_code == 201, made.text
        bearer = {"Authorization": f"Bearer {made.json()['token']}"}
        # the token is known (an unknown one answers 401): the replay asked for is not
        unknown = http.post("/api/agent/v1/replays/" + "0" * 64, headers=bearer,
                            json={"mode": "verify"})
        assert unknown.status_code == 404, unknown.text
    assert _active(serve.url) == [made.json()["id"]]
