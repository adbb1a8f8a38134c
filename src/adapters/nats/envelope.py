"""The published event envelope (version 1) and the subject each event is published on.

Wire format and subject rules are documented in docs/events.md and pinned by
docs/event-envelope.schema.json; change them only together with both (additive fields keep the
version, anything else is a new version).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

import msgspec

from context_service.projections.outbox import OutboxEvent

ENVELOPE_VERSION = 1
SUBJECT_PREFIX = "context.events"
NO_NAMESPACE = "_"
MSG_ID_HEADER = "Nats-Msg-Id"
VERSION_HEADER = "Cs-Envelope-Version"


class Envelope(msgspec.Struct, frozen=True, rename="camel"):
    """One published event. Field order is the JSON key order; names are camelCase on the wire."""

    position: int
    event_id: str
    name: str
    aggregate: str
    aggregate_id: str
    version: int
    timestamp: datetime
    namespace: str | None
    actor: str | None
    data: Any


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(Envelope)


def envelope_of(event: OutboxEvent) -> Envelope:
    """The envelope of a feed event (returned as is when it already is one).

    A naive timestamp is taken to be UTC, so every published timestamp carries an offset.
    """
    if isinstance(event, Envelope):
        return event
    timestamp = event.timestamp
    if timestamp.tzinfo is None:
        timestamp = timestamp.replace(tzinfo=UTC)
    return Envelope(
        position=event.position,
        event_id=event.event_id,
        name=event.name,
        aggregate=event.aggregate,
        aggregate_id=event.aggregate_id,
        version=event.version,
        timestamp=timestamp,
        namespace=event.namespace,
        actor=event.actor,
        data=event.data,
    )


def encode(envelope: Envelope) -> bytes:
    """The message payload: one compact JSON object."""
    return _encoder.encode(envelope)


def decode(payload: bytes) -> Envelope:
    """Parse a message payload (subscribers and tests); raises ``msgspec.ValidationError``."""
    return _decoder.decode(payload)


# NATS subject tokens are separated by "." and may not contain the wildcards "*" and ">" or
# whitespace. Those characters, control characters and "%" itself are percent-encoded as the
# uppercase hex of their UTF-8 bytes ("a.b" -> "a%2Eb"), so distinct values never share a token.
_UNSAFE = re.compile(r"[.*>%\s\x00-\x1f\x7f]")


def _escape(match: re.Match[str]) -> str:
    return "".join(f"%{byte:02X}" for byte in match.group().encode())


def subject_token(value: str) -> str:
    """``value`` as a single, valid subject token (see the escaping rule above)."""
    if not value:
        raise ValueError("a subject token cannot be empty")
    return _UNSAFE.sub(_escape, value)


def namespace_token(namespace: str | None) -> str:
    """``_`` for no namespace (``None`` or empty); a literal ``_`` namespace becomes ``%5F``."""
    if not namespace:
        return NO_NAMESPACE
    if namespace == NO_NAMESPACE:
        return "%5F"
    return subject_token(namespace)


@lru_cache(maxsize=4096)
def subject_for(
    namespace: str | None, aggregate: str, name: str, prefix: str = SUBJECT_PREFIX
) -> str:
    """``<prefix>.<namespace>.<aggregate>.<EventName>`` with every token escaped."""
    return ".".join(
        (prefix, namespace_token(namespace), subject_token(aggregate), subject_token(name))
    )


def subject_of(envelope: Envelope, prefix: str = SUBJECT_PREFIX) -> str:
    return subject_for(envelope.namespace, envelope.aggregate, envelope.name, prefix)


def unescape_token(token: str) -> str:
    """Inverse of ``subject_token`` (``_`` is returned as is; see ``namespace_token``)."""
    raw = bytearray()
    index = 0
    while index < len(token):
        if token[index] == "%" and _is_hex(token[index + 1 : index + 3]):
            raw.append(int(token[index + 1 : index + 3], 16))
            index += 3
        else:
            raw.extend(token[index].encode())
            index += 1
    return raw.decode()


def _is_hex(text: str) -> bool:
    return len(text) == 2 and all(c in "0123456789ABCDEFabcdef" for c in text)
