"""The envelope and subject rules on their own: key order, timestamps, token escaping."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_service.adapters.nats.envelope import (
    Envelope,
    decode,
    encode,
    envelope_of,
    namespace_token,
    subject_for,
    subject_token,
    unescape_token,
)
from tests.support.nats_fixtures import make_event

pytestmark = pytest.mark.nats

KEYS = [
    "position", "eventId", "name", "aggregate", "aggregateId",
    "version", "timestamp", "namespace", "actor", "data",
]  # fmt: skip


def test_keys_are_camel_case_in_the_documented_order() -> None:
    payload = encode(make_event(5))
    assert list(json.loads(payload)) == KEYS
    assert decode(payload) == make_event(5)


@dataclass(frozen=True)
class StoredEvent:  # any object with the OutboxEvent attributes will do
    position: int
    event_id: str
    name: str
    aggregate: str
    aggregate_id: str
    version: int
    timestamp: datetime
    namespace: str | None
    actor: str | None
    data: object


def test_feed_events_become_envelopes_with_utc_timestamps() -> None:
    naive = StoredEvent(7, "e", "ContextCreated", "context", "c", 1, datetime(2025, 1, 2, 3), None,
                        "user:bob", {"name": "x"})  # fmt: skip
    envelope = envelope_of(naive)
    assert envelope.timestamp == datetime(2025, 1, 2, 3, tzinfo=UTC)
    assert json.loads(encode(envelope))["timestamp"] == "2025-01-02T03:00:00Z"
    assert envelope_of(envelope) is envelope
    assert isinstance(envelope, Envelope)


def test_subjects() -> None:
    assert subject_for("team-a", "context", "ContextCreated") == (
        "context.events.team-a.context.ContextCreated"
    )
    assert subject_for(None, "context", "AccessGranted") == "context.events._.context.AccessGranted"
    assert subject_for("", "context", "X", "t.events") == "t.events._.context.X"
    assert namespace_token("_") == "%5F"
    assert subject_token("a.b c*>%") == "a%2Eb%20c%2A%3E%25"
    assert subject_token("tab\there") == "tab%09here"
    assert subject_token("nbsp\u00a0x") == "nbsp%C2%A0x"
    with pytest.raises(ValueError):
        subject_token("")


@given(st.text(min_size=1))
def test_tokens_are_valid_and_reversible(value: str) -> None:
    token = subject_token(value)
    assert token and not any(c in ".*>" or c.isspace() for c in token)
    assert unescape_token(token) == value


@given(st.text(min_size=1), st.text(min_size=1))
def test_distinct_values_never_share_a_token(a: str, b: str) -> None:
    assert (subject_token(a) == subject_token(b)) == (a == b)
    assert (namespace_token(a) == namespace_token(b)) == (a == b)
    assert namespace_token(a) != namespace_token(None)
