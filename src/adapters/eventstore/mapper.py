"""Project-owned msgspec mapper between domain events and stored rows.

A stored row's topic is the stable event name; its state is a small JSON envelope naming the
stream (aggregate kind, namespace, key) and holding the event, so every row is self-describing
for projections, the history API and the NATS relay.
"""

from __future__ import annotations

import msgspec
from eventsourcing.persistence import StoredEvent

from context_service.domain.events import Event
from context_service.domain.registry import EVENTS, event_name
from context_service.domain.stream import Recorded, StreamRef


class _Stored(msgspec.Struct, frozen=True):
    k: str
    ns: str
    key: str
    e: msgspec.Raw


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


def from_stored(position: int, version: int, topic: str, state: bytes) -> Recorded:
    stored = _stored_decoder.decode(state)
    event = decode_event(topic, bytes(stored.e))
    return Recorded(position, StreamRef(stored.k, stored.ns, stored.key), version, topic, event)


def event_data(event: Event) -> dict[str, object]:
    """The event's own fields as JSON-ready builtins (for envelopes and history)."""
    data = msgspec.to_builtins(event)
    assert isinstance(data, dict)
    data.pop("event", None)
    return data
