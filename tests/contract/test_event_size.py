"""No event too large to publish: a request whose event's envelope could exceed 1,000,000 bytes
is refused with 400 before anything is recorded (a revision with huge parameters, a context set
at the spec's own limits, a grant naming a huge subject), the bound the guard uses is never below
the envelope the relay really publishes, and the relay, on a nats-server with the default
``max_payload``, publishes every event that was recorded, a large one included."""

from __future__ import annotations

import json
from typing import Any

import pytest
from litestar.testing import TestClient

from context_service import bootstrap
from context_service.adapters.eventstore.event_size import MAX_RELAYED_BYTES, relayed_bound
from context_service.adapters.eventstore.mapper import to_stored
from context_service.adapters.eventstore.outbox import LogFeed, TrackedPosition, logged
from context_service.adapters.nats.envelope import encode, envelope_of
from context_service.adapters.nats.relay import Relay, RelaySettings
from context_service.adapters.nats.stream import StreamSpec
from context_service.bootstrap import Container
from context_service.domain.stream import Recorded
from tests.projections.history import write_history
from tests.support.nats_fixtures import NatsServerHandle, positions_of, read_stream, wait_until

pytestmark = [pytest.mark.nats, pytest.mark.postgres]
ALICE = {"X-Context-Subject": "user:alice"}
ADMIN = {"X-Context-Subject": "service:context-service-admin"}
TOO_LARGE = {"error": "invalid_request",
             "message": "request would record an event larger than 1000000 bytes"}
MIB = 1024 * 1024
REVISIONS = "/v1/namespaces/ns/contexts/big/revisions"


def _revision(n: int, parameter_bytes: int) -> dict[str, Any]:
    return {"id": f"{n:064x}", "createdAt": "2026-01-01T00:00:00Z", "operation": "sync",
            "parameters": {"blob": "p" * parameter_bytes}}


def _body_size(body: dict[str, Any]) -> int:
    return len(json.dumps(body, separators=(",", ":")).encode())


def _relayed_size(recorded: Recorded) -> int:
    """The envelope's size at the largest position a log can reach (the most digits)."""
    at_end = Recorded(2**63 - 1, recorded.stream, recorded.version, recorded.name,
                      recorded.event)
    return len(encode(envelope_of(logged(at_end))))


def test_the_bound_is_never_below_the_relayed_envelope(idle_container: Container) -> None:
    write_history(idle_container.contexts, seed=7, steps=150)
    events = idle_container.store.read(0, 10_000)
    assert len({r.name for r in events}) >= 5
    for recorded in events:
        stored = to_stored(recorded.stream, recorded.version, recorded.event)
        bound, real = relayed_bound(recorded.stream, stored), _relayed_size(recorded)
        assert real <= bound <= real + 600, recorded.name


def test_an_event_too_large_to_relay_is_refused_and_everything_else_is_published(
        idle_container: Container, nats_server: NatsServerHandle,
        nats_stream: StreamSpec) -> None:
    with TestClient(app=bootstrap.app(idle_container)) as client:
        assert client.put("/v1/namespaces/ns/members", headers=ADMIN, json={
            "subject": {"kind": "user", "name": "alice"}, "role": "owner"}).status_code == 200
        assert client.post("/v1/contexts", headers=ALICE, json={
            "name": "big", "namespace": "ns", "type": "memory",
            "storage": {"backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteOnce"}},
            ).status_code == 201
        head = idle_container.store.head()
        # bodies within the 1 MiB body limit whose events are not
        huge_revision = _revision(1, MIB - 400)
        answers = [{"id": f"a{i}", "question": f"question {i}", "answer": "a" * 5100}
                   for i in range(200)]
        huge_set = {"id": "huge", "name": "huge", "collections": ["big"],
                    "verifiedAnswers": answers}
        huge_grant = {"subject": {"kind": "user", "name": "g" * (MIB - 200)},
                      "permissions": ["read"]}
        for path, body in ((REVISIONS, huge_revision), ("/v1/namespaces/ns/context-sets",
                                                        huge_set),
                           ("/v1/namespaces/ns/contexts/big/grants", huge_grant)):
            assert MAX_RELAYED_BYTES < _body_size(body) <= MIB, path
            method = client.put if path.endswith("/grants") else client.post
            refused = method(path, headers=ALICE, content=json.dumps(body))
            assert (refused.status_code, refused.json()) == (400, TOO_LARGE), path
        assert idle_container.store.head() == head  # nothing recorded
        # just below the limit: recorded, and published like any other event
        large = _revision(2, MAX_RELAYED_BYTES - 2000)
        assert client.post(REVISIONS, headers=ALICE, json=large).status_code == 201
        assert client.post(REVISIONS, headers=ALICE, json=_revision(3, 10)).status_code == 201
        recorded = idle_container.store.read(head, 100)
        assert [(r.name, getattr(getattr(r.event, "revision", None), "id", None))
                for r in recorded] == [
            ("RevisionPublished", f"{2:064x}"), ("RevisionPublished", f"{3:064x}")]
    head = idle_container.store.head()
    relay = Relay(LogFeed(idle_container.store), TrackedPosition(idle_container.tracking, "relay"),
                  RelaySettings(url=nats_server.url, stream=nats_stream))
    relay.start()
    try:
        wait_until(lambda: relay.stats.last_position >= head, what="every event published")
    finally:
        relay.stop()
    assert relay.stats.errors == 0
    messages = read_stream(nats_server.url, nats_stream)
    assert positions_of(messages) == [r.position for r in idle_container.store.read(0, 1000)]
    largest = max(len(m.payload) for m in messages)
    assert MAX_RELAYED_BYTES - 3000 < largest <= MAX_RELAYED_BYTES
