"""The JetStream stream the relay publishes into (``CONTEXT_EVENTS`` on ``context.events.>``).

``ensure_stream`` is create-or-update and safe to run from every relay start: it creates the
stream when missing and brings subjects, duplicate window, age limit, retention (limits) and acks
in line with the spec.
``last_envelope`` tells where the stream ends, for the relay to resume there.
"""

from __future__ import annotations

from dataclasses import dataclass

from nats.js import JetStreamContext, api
from nats.js.errors import NotFoundError

from context_service.adapters.nats.envelope import SUBJECT_PREFIX, Envelope, decode

STREAM_NAME = "CONTEXT_EVENTS"
LOOK_BACK = 64  # messages searched, from the stream's end, for the relay's last one


class StreamMismatchError(RuntimeError):
    """The stream exists with a setting that cannot be changed in place (its storage type, or
    work-queue retention)."""


@dataclass(frozen=True)
class StreamSpec:
    """Where events go. ``duplicate_window`` bounds how late a republish is still deduplicated;
    ``max_age`` (seconds, ``None`` for ever) is how long subscribers can replay."""

    name: str = STREAM_NAME
    subject_prefix: str = SUBJECT_PREFIX
    duplicate_window: float = 120.0
    max_age: float | None = None

    @property
    def subjects(self) -> list[str]:
        return [f"{self.subject_prefix}.>"]

    def config(self) -> api.StreamConfig:
        return api.StreamConfig(
            name=self.name,
            description="Context Service event log, one message per stored event",
            subjects=self.subjects,
            retention=api.RetentionPolicy.LIMITS,
            storage=api.StorageType.FILE,
            duplicate_window=self.duplicate_window,
            max_age=self.max_age or 0.0,
            allow_direct=True,
        )


async def ensure_stream(js: JetStreamContext, spec: StreamSpec) -> api.StreamInfo:
    """Create the stream, or update it when its subjects or limits differ from ``spec``."""
    wanted = spec.config()
    try:
        info = await js.stream_info(spec.name)
    except NotFoundError:
        return await js.add_stream(wanted)
    current = info.config
    if current.storage != api.StorageType.FILE:
        raise StreamMismatchError(
            f"stream {spec.name} uses {current.storage} storage; file storage is required "
            "(delete or rename the stream to let the relay recreate it)"
        )
    if current.retention == api.RetentionPolicy.WORK_QUEUE:
        raise StreamMismatchError(
            f"stream {spec.name} is a work queue; limits retention is required (a work queue "
            "deletes each event once one consumer acknowledged it; delete or rename the stream "
            "to let the relay recreate it)"
        )
    if (
        sorted(current.subjects or []) != sorted(spec.subjects)
        or not _same_seconds(current.duplicate_window, spec.duplicate_window)
        or not _same_seconds(current.max_age or 0.0, spec.max_age or 0.0)
        # interest retention drops what no consumer is bound to; without acks the relay,
        # which checkpoints acknowledged events only, never gets past its first message
        or current.retention != api.RetentionPolicy.LIMITS
        or current.no_ack
    ):
        return await js.update_stream(wanted)
    return info


async def last_envelope(js: JetStreamContext, name: str) -> Envelope | None:
    """The envelope of the stream's last relayed message; ``None`` if empty or purged.

    Messages that are not envelopes (another publisher's, on the stream's subjects) and deleted
    ones are passed over, up to ``LOOK_BACK`` of them: the relay would otherwise go back to its
    checkpoint and republish what the stream holds, duplicates once past the dedup window.
    """
    state = (await js.stream_info(name)).state
    oldest = max(state.first_seq or 1, state.last_seq - LOOK_BACK + 1, 1)
    for seq in range(state.last_seq, oldest - 1, -1):
        try:
            message = await js.get_msg(name, seq)
            return decode(message.data or b"")
        except (NotFoundError, ValueError):
            continue
    return None


def _same_seconds(a: float | None, b: float | None) -> bool:
    return abs((a or 0.0) - (b or 0.0)) < 1e-3
