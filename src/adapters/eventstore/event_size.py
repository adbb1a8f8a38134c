"""No event too large to publish: NATS refuses a message above its ``max_payload`` (1 MiB by
default), and the relay would stop at such an event for good. Every append is checked, before
anything is written, against a bound of the envelope the relay will publish for each event.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
from eventsourcing.persistence import StoredEvent

from context_service.domain.errors import EventTooLargeError
from context_service.domain.stream import StreamRef

# Below NATS's default max_payload (1,048,576 bytes) with room for the message's headers.
MAX_RELAYED_BYTES = 1_000_000
# The envelope's own keys and values beyond what the stored row holds: position and version
# (up to 19 digits each), the event id, the timestamp, null for an absent namespace or actor.
_ENVELOPE_OVERHEAD = 512

_encoder = msgspec.json.Encoder()


def relayed_bound(stream: StreamRef, stored: StoredEvent) -> int:
    """At least the size of the envelope the relay publishes for ``stored``.

    The stored row holds the event's fields (``data`` is those fields less ``at``, ``actor`` and
    any secret) plus the stream's kind, namespace and key; the envelope repeats the event name
    and the namespace (``aggregateId`` holds the namespace and the key again)."""
    return (len(stored.state) + len(_encoder.encode(stored.topic))
            + len(_encoder.encode(stream.namespace)) + _ENVELOPE_OVERHEAD)


def check_relayable(stream: StreamRef, stored: Sequence[StoredEvent],
                    limit: int = MAX_RELAYED_BYTES) -> None:
    """Refuse the whole append when one of its events could not be published."""
    for event in stored:
        if relayed_bound(stream, event) > limit:
            raise EventTooLargeError(limit)
