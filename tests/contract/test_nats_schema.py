"""docs/event-envelope.schema.json and what the relay publishes agree: every message validates,
its subject follows the documented rule, and schema, struct and payload list the same keys."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest
from jsonschema import Draft202012Validator

from context_service.adapters.nats.envelope import Envelope, decode, namespace_token, unescape_token
from context_service.adapters.nats.relay import Relay, RelaySettings
from context_service.adapters.nats.stream import StreamSpec
from context_service.projections.outbox import MemoryFeed, MemoryPositionStore
from tests.support.nats_fixtures import NatsServerHandle, make_events, read_stream, wait_until

pytestmark = pytest.mark.nats

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "docs" / "event-envelope.schema.json"


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SCHEMA_PATH.read_text())
    Draft202012Validator.check_schema(loaded)
    return loaded


def test_schema_struct_and_payload_list_the_same_keys(schema: dict[str, Any]) -> None:
    wire_names = [field.encode_name for field in msgspec.structs.fields(Envelope)]
    assert list(schema["properties"]) == wire_names
    assert schema["required"] == wire_names
    for example in schema["examples"]:
        Draft202012Validator(schema).validate(example)
        assert list(example) == wire_names
        assert msgspec.to_builtins(decode(json.dumps(example).encode())) == example


def test_published_messages_match_the_schema_and_subject_rule(
    schema: dict[str, Any], nats_server: NatsServerHandle, nats_stream: StreamSpec
) -> None:
    feed = MemoryFeed(make_events(120, step=3))  # gaps in positions are fine
    relay = Relay(
        feed, MemoryPositionStore(), RelaySettings(url=nats_server.url, stream=nats_stream)
    )
    relay.start()
    try:
        wait_until(lambda: relay.stats.last_position == 1 + 119 * 3)
    finally:
        relay.stop()
    messages = read_stream(nats_server.url, nats_stream)
    assert len(messages) == 120
    validator = Draft202012Validator(schema)
    token = r"[^.*>\s]+"
    rule = re.compile(
        rf"^{re.escape(nats_stream.subject_prefix)}\.({token})\.({token})\.({token})$"
    )
    for message in messages:
        body = message.json
        validator.validate(body)
        assert list(body) == list(schema["properties"])
        assert message.headers["Nats-Msg-Id"] == str(body["position"])
        assert message.headers["Cs-Envelope-Version"] == "1"
        match = rule.match(message.subject)
        assert match, message.subject
        namespace, aggregate, name = match.groups()
        assert namespace == namespace_token(body["namespace"])
        assert (unescape_token(aggregate), unescape_token(name)) == (
            body["aggregate"],
            body["name"],
        )
    assert {m.json["namespace"] for m in messages} >= {None, "team.b *x"}
