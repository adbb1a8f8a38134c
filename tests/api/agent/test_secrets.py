"""Credential secrets never leave the service (agent-context-api.md §4.4, §12.4): after
creating and using credentials, neither a token nor its secret is in the event log, the NATS
stream, the history export or the logs; the keyed hash is in the log only."""

from __future__ import annotations

import io
import json
import logging

import pytest

from context_service import bootstrap
from context_service.adapters.eventstore.export import export
from context_service.adapters.eventstore.store import EVENTS_TABLE
from context_service.adapters.nats.stream import StreamSpec
from tests.api.agent.conftest import CREDENTIALS, create, probe
from tests.api.conftest import Api
from tests.support.nats_fixtures import NatsServerHandle, relay_log

pytestmark = [pytest.mark.nats, pytest.mark.postgres]


def test_secrets_reach_no_event_stream_export_or_log(
        owner: Api, container: bootstrap.Container, nats_server: NatsServerHandle,
        nats_stream: StreamSpec, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    tokens, hashes = [], []
    for i in range(3):
        body = create(owner, name=f"agent {i}", scopes=["context:read", "queries:run"]).json()
        tokens.append(body["token"])
        assert probe(owner, body["token"]).status_code == 200
        assert probe(owner, body["token"] + "x").status_code == 401  # a malformed attempt
        assert probe(owner, body["token"][:-2] + "AA").status_code in (200, 401)
    assert owner.as_("user:alice").delete(
        f"{CREDENTIALS}/{tokens[0].split('_')[1]}").status_code == 204
    secrets = [t.split("_", 2)[2] for t in tokens]
    needles = [*tokens, *secrets]

    with container.datastore.transaction(commit=False) as cur:
        cur.execute(f"SELECT topic, state FROM {EVENTS_TABLE} ORDER BY notification_id")
        rows = [(r["topic"], bytes(r["state"])) for r in cur.fetchall()]
    log_text = b"\n".join(state for _, state in rows)
    for needle in needles:
        assert needle.encode() not in log_text
    for topic, state in rows:  # the keyed hash is kept in the log (a rebuild needs it)
        if topic == "AgentCredentialCreated":
            hashes.append(json.loads(state)["e"]["secret_hash"])
    assert len(hashes) == 3

    out = io.BytesIO()
    export(container.store, out)
    exported = out.getvalue()
    assert b"AgentCredentialCreated" in exported
    for needle in [*needles, *hashes]:
        assert needle.encode() not in exported
    assert b"secret_hash" not in exported

    messages = relay_log(container.store, nats_server.url, nats_stream)
    created = [m for m in messages if m.subject.endswith(".AgentCredentialCreated")]
    assert len(created) == 3
    assert created[0].subject == (f"{nats_stream.subject_prefix}.acme.agent_credentials."
                                  "AgentCredentialCreated")
    data = json.loads(created[0].payload)["data"]
    assert list(data) == ["credential_id", "name", "scopes", "context_set_id", "created_by",
                          "expires_at"]
    published = b"\n".join(m.payload for m in messages)
    for needle in [*needles, *hashes]:
        assert needle.encode() not in published

    logged = caplog.text + "".join(json.dumps(r.__dict__, default=str) for r in caplog.records)
    for needle in [*needles, *hashes]:
        assert needle not in logged
