"""SIGKILL of ``serve`` in the middle of a multi-part index upload (one part in flight): after
the restart the client sends only the parts it has no answer for, and the index assembles from
every part acknowledged before the kill; an incomplete upload never showed, and the views equal
a rebuild of the log."""

from __future__ import annotations

import hashlib
import os
import random
import threading
import time
from typing import Any

import httpx
import pytest

from context_service import bootstrap
from tests.e2e.server import ServerProcess
from tests.faults.burst import NAMESPACE, SUBJECT, context_body
from tests.faults.conftest import Rebuild, caught_up
from tests.support.views import differences, snapshot

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]
NAME = "uploads"
PARTS = 6
# a part's size only has to make the index's record count and each part's first and last record
# checkable: the assembly and its rebuild from the log cost in proportion to it
PER_PART = 200
PATH = f"/v1/namespaces/{NAMESPACE}/contexts/{NAME}"


def _records(revision: str, number: int) -> list[dict[str, Any]]:
    return [{"id": f"p{number}-{i:04d}", "context": NAME, "type": "knowledge",
             "revision": revision, "text": f"part {number} record {i} shared words " * 3}
            for i in range(PER_PART)]


def _part(http: httpx.Client, revision: str, number: int) -> httpx.Response:
    return http.put(PATH + "/query-index", json={
        "revision": revision, "records": _records(revision, number), "uploadId": "nightly",
        "part": number, "parts": PARTS}, timeout=30)


def _query(http: httpx.Client, body: dict[str, Any]) -> dict[str, Any]:
    answer = http.post(f"/v1/namespaces/{NAMESPACE}/query", json={"contexts": [NAME], **body})
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def test_a_restart_mid_upload_loses_no_acknowledged_part(
        serve: ServerProcess, inspector: bootstrap.Container, rebuilt: Rebuild) -> None:
    seed = int(os.environ.get("CS_FAULT_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    revision = hashlib.sha256(b"uploads").hexdigest()
    serve.start()
    acknowledged: set[int] = set()
    with httpx.Client(base_url=serve.url, headers=SUBJECT) as http:
        assert http.post("/v1/contexts", json=context_body(NAME) | {
            "type": "knowledge"}).status_code == 201
        assert http.post(PATH + "/revisions", json={
            "id": revision, "createdAt": "2026-05-01T10:00:00Z",
            "operation": "sync"}).status_code == 201
        for number in (1, 2, 3):
            sent = time.monotonic()
            assert _part(http, revision, number).status_code == 204
            acknowledged.add(number)
            took = time.monotonic() - sent
        assert _query(http, {"query": "shared"}).get("unavailable") == [NAME]

    # part 4 in flight when the process dies
    outcome: list[int] = []

    def send() -> None:
        try:
            with httpx.Client(base_url=serve.url, headers=SUBJECT) as client:
                outcome.append(_part(client, revision, 4).status_code)
        except httpx.HTTPError:
            outcome.append(0)

    sender = threading.Thread(target=send)
    sender.start()
    # a moment while part 4 is likely on its way or just answered (as long as part 3 took, twice)
    time.sleep(rng.uniform(0.0, 2 * took))
    serve.kill()
    sender.join(timeout=30)
    if outcome == [204]:
        acknowledged.add(4)

    serve.start()
    caught_up(inspector)
    with httpx.Client(base_url=serve.url, headers=SUBJECT) as http:
        assert _query(http, {"query": "shared"}).get("unavailable") == [NAME], seed
        for number in range(1, PARTS + 1):
            if number not in acknowledged:
                assert _part(http, revision, number).status_code == 204
        assert "unavailable" not in _query(http, {"query": "shared", "limit": 1})
        sample = [f"p{n}-{i:04d}" for n in range(1, PARTS + 1) for i in (0, PER_PART - 1)]
        found = _query(http, {"ids": sample, "limit": 100})
        assert sorted(i["record"]["id"] for i in found["items"]) == sorted(sample), seed
    caught_up(inspector)
    with inspector.datastore.transaction(commit=False) as cur:
        cur.execute("SELECT records FROM query_contexts WHERE name = %s", (NAME,))
        row = cur.fetchone()
    assert row is not None and row["records"] == PARTS * PER_PART, seed
    assert differences(snapshot(inspector), rebuilt(inspector)) == {}, seed
