"""Project-owned msgspec mapper between domain events and stored rows.

A stored row's topic is the stable event name; its state is a small JSON envelope naming the
stream (aggregate kind, namespace, key) and holding the event, so every row is self-describing
for projections, the history API and the NATS relay.

A topic this version does not know (written by a newer version during a rolling upgrade, or a
type since retired) reads back as an ``UnknownEvent`` holding the stored fields as stored: log
readers (projection runners, the relay, history) go on past it; only loading an aggregate
(``strict``) refuses it, since a decision folded without it could be wrong.
"""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
from eventsourcing.persistence import StoredEvent

from context_service.domain.events import Event, UnknownEvent
from context_service.domain.registry import EVENTS, event_name
from context_service.domain.stream import Recorded, StreamRef


class _Stored(msgspec.Struct, frozen=True):
    k: str
    ns: str
    key: str
    e: msgspec.Raw


class UnknownEventTypeError(KeyError):
    """A stored event of a type this version does not know, where it cannot be passed over."""


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_encoder = msgspec.json.Encoder()
_stored_decoder = msgspec.json.Decoder(_Stored)
_decoders: dict[str, msgspec.json.Decoder[Event]] = {}


def to_stored(stream: StreamRef, version: int, event: Event) -> StoredEvent:
    body = _encoder.encode(event)
    state = _encoder.encode(_Stored(stream.kind, stream.namespace, stream.key, msgspec.Raw(body)))
    return StoredEvent(originator_id=stream.id, originator_version=version,
                       topic=event_name(event), state=state)


def decode_event(name: str, body: bytes) -> Event:
    decoder = _decoders.get(name)
    if decoder is None:
        decoder = msgspec.json.Decoder(EVENTS[name])  # type: ignore[arg-type]
        _decoders[name] = decoder
    return decoder.decode(body)


def unknown_event(body: bytes) -> UnknownEvent:
    """The stored body of an event of an unknown type, kept whole. Every event ever written has
    ``at`` and ``actor``; a body without a readable ``at`` gets the epoch rather than stopping
    whoever reads the log."""
    fields = msgspec.json.decode(body)
    if not isinstance(fields, dict):
        fields = {}
    try:
        at = msgspec.convert(fields.get("at"), datetime)
    except msgspec.ValidationError:
        at = _EPOCH
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    actor = fields.get("actor")
    return UnknownEvent(at=at, actor=actor if isinstance(actor, str) else "", fields=fields)


def from_stored(position: int, version: int, topic: str, state: bytes,
                strict: bool = False) -> Recorded:
    """The recorded event of a stored row; an unknown topic gives an ``UnknownEvent``, or with
    ``strict`` raises ``UnknownEventTypeError``."""
    stored = _stored_decoder.decode(state)
    body = bytes(stored.e)
    event: Event
    if topic in EVENTS:
        event = decode_event(topic, body)
    elif strict:
        raise UnknownEventTypeError(f"stored event type {topic!r} is unknown to this version")
    else:
        event = unknown_event(body)
    return Recorded(position, StreamRef(stored.k, stored.ns, stored.key), version, topic, event)


def event_data(event: Event) -> dict[str, object]:
    """The event's own fields as JSON-ready builtins (for envelopes and history); those of an
    unknown event as stored."""
    data = dict(event.fields) if isinstance(event, UnknownEvent) else msgspec.to_builtins(event)
    assert isinstance(data, dict)
    data.pop("event", None)
    return data
