"""The JetStream stream the relay publishes into (``CONTEXT_EVENTS`` on ``context.events.>``).

``ensure_stream`` is create-or-update and safe to run from every relay start: it creates the
stream when missing and brings subjects, duplicate window, age limit, retention (limits) and acks
in line with the spec, keeping every other setting an operator chose, except where that setting
would make the stream lose events silently (a per-subject limit with discard policy new drops the
subject's oldest message unless discard applies per subject too). A stream the relay cannot
publish every event into, in order, is refused (``StreamMismatchError``, one clear sentence).
``last_envelope`` tells where the stream ends, for the relay to resume there.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from nats.js import JetStreamContext, api
from nats.js.errors import APIError, NotFoundError

from context_service.adapters.nats.envelope import SUBJECT_PREFIX, Envelope, decode

STREAM_NAME = "CONTEXT_EVENTS"
LOOK_BACK = 64  # messages searched, from the stream's end, for the relay's last one
# The smallest max_msg_size a stream may have: an event above it goes out as its stand-in (the
# envelope without its data), which must itself fit, or the relay would retry it for ever.
MIN_MSG_SIZE = 4096


class StreamMismatchError(RuntimeError):
    """The stream exists with a setting the relay cannot publish every event under, in order,
    and that it does not change for the operator: its storage type, work-queue retention, a seal,
    a mirror or sources, or a max_msg_size too small for an event's stand-in."""


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


@dataclass(frozen=True)
class StreamDrift:
    """What bringing the stream in line found: ``created`` when it was missing (never made, or
    deleted), else ``changes``, each owned setting that differed, as ``(found, restored)``."""

    created: bool = False
    changes: dict[str, tuple[Any, Any]] = dataclasses.field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.created or bool(self.changes)

    def describe(self) -> str:
        """One phrase for a log line: ``missing`` or ``retention interest -> limits, ...``."""
        if self.created:
            return "missing"
        return ", ".join(f"{key} {found} -> {wanted}"
                         for key, (found, wanted) in self.changes.items())


async def ensure_stream(js: JetStreamContext, spec: StreamSpec) -> api.StreamInfo:
    """Create the stream, or bring the settings the service owns in line with ``spec``.

    The service owns its subjects (covered, not exclusive), duplicate window, age limit,
    retention and acks; everything else (replicas, byte and message limits, discard policy,
    placement, compression, subjects an operator added...) is the operator's and is kept, but
    for discard new applying per subject too where a per-subject limit is set. A stream the
    relay cannot publish into (sealed, a mirror...) or bring in line (its subjects taken by
    another stream) raises ``StreamMismatchError`` saying why.
    """
    info, _ = await bring_in_line(js, spec)
    return info


async def bring_in_line(js: JetStreamContext, spec: StreamSpec) -> tuple[api.StreamInfo,
                                                                         StreamDrift]:
    """``ensure_stream``, also saying what it found out of line: the relay runs it at every
    connection and again whenever the stream may have been edited under it, and an edit undone
    is the operator's to hear about (with what it was)."""
    try:
        info = await js.stream_info(spec.name)
    except NotFoundError:
        return await js.add_stream(spec.config()), StreamDrift(created=True)
    current = info.config
    refusal = _refusal(current)
    if refusal is not None:
        raise StreamMismatchError(f"stream {spec.name} {refusal}")
    changes = _owned_changes(current, spec)
    if not changes:
        return info, StreamDrift()
    drift = StreamDrift(changes={key: (_shown(getattr(current, key)), _shown(value))
                                 for key, value in changes.items()})
    # the whole current config goes back: an update resets every field it leaves out
    try:
        return await js.update_stream(dataclasses.replace(current, **changes)), drift
    except APIError as exc:  # e.g. our subjects overlap another stream's
        wanted = ", ".join(f"{key} {value}" for key, value in changes.items())
        raise StreamMismatchError(
            f"stream {spec.name} cannot be brought in line ({wanted}): "
            f"{exc.description or exc}") from exc


def _shown(value: Any) -> Any:
    """A setting as an operator writes it (``interest``, not ``RetentionPolicy.INTEREST``)."""
    return getattr(value, "value", value)


_RECREATE = "delete or rename the stream to let the relay recreate it"


def _refusal(current: api.StreamConfig) -> str | None:
    """Why the relay cannot publish into a stream so configured, or ``None``."""
    if current.storage != api.StorageType.FILE:
        return f"uses {current.storage} storage; file storage is required ({_RECREATE})"
    if current.retention == api.RetentionPolicy.WORK_QUEUE:
        return ("is a work queue; limits retention is required (a work queue deletes each event "
                f"once one consumer acknowledged it; {_RECREATE})")
    if current.sealed:
        return f"is sealed: it stores no message any more and cannot be unsealed ({_RECREATE})"
    if current.mirror is not None:
        return (f"is a mirror of stream {current.mirror.name}: a mirror takes no publishes "
                f"({_RECREATE})")
    if current.sources:
        names = ", ".join(source.name for source in current.sources)
        return (f"has sources ({names}): their messages would land between the events, breaking "
                "the order JetStream checks for the relay and showing subscribers another "
                "stream's messages as events (remove the sources)")
    size = current.max_msg_size
    if size is not None and 0 < size < MIN_MSG_SIZE:
        return (f"has a max_msg_size of {size} bytes: at least {MIN_MSG_SIZE} is required, so "
                "that an event above it can go out without its data (raise it, or set -1)")
    return None


def _owned_changes(current: api.StreamConfig, spec: StreamSpec) -> dict[str, Any]:
    """The fields the service owns that differ from ``spec``, with their wanted values."""
    changes: dict[str, Any] = {}
    subjects = subjects_covering(current.subjects or [], spec.subjects)
    if subjects != (current.subjects or []):
        changes["subjects"] = subjects
    if not _same_seconds(current.duplicate_window, spec.duplicate_window):
        changes["duplicate_window"] = spec.duplicate_window
    if not _same_seconds(current.max_age, spec.max_age):
        changes["max_age"] = spec.max_age or 0.0
    # interest retention drops what no consumer is bound to; without acks the relay, which
    # checkpoints acknowledged events only, never gets past its first message
    if current.retention != api.RetentionPolicy.LIMITS:
        changes["retention"] = api.RetentionPolicy.LIMITS
    if current.no_ack:
        changes["no_ack"] = False
    # discard new covers max_msgs and max_bytes only: at max_msgs_per_subject JetStream drops
    # the subject's oldest message, silently, unless discard applies per subject as well
    per_subject = current.max_msgs_per_subject is not None and current.max_msgs_per_subject > 0
    if (per_subject and current.discard == api.DiscardPolicy.NEW
            and not current.discard_new_per_subject):
        changes["discard_new_per_subject"] = True
    return changes


def subjects_covering(current: list[str], ours: list[str]) -> list[str]:
    """``current`` when it already covers ``ours``; else ``current`` with ``ours`` added and
    the subjects they cover dropped (the server refuses overlapping subjects in one stream)."""
    missing = [subject for subject in ours if not any(covers(p, subject) for p in current)]
    if not missing:
        return list(current)
    kept = [p for p in current if not any(covers(subject, p) for subject in missing)]
    return kept + missing


def covers(pattern: str, subject: str) -> bool:
    """Whether every subject matching ``subject`` also matches the subject ``pattern``."""
    wanted = subject.split(".")
    for index, token in enumerate(pattern.split(".")):
        if token == ">":
            return len(wanted) > index
        if index >= len(wanted) or wanted[index] == ">":
            return False
        if token != "*" and wanted[index] != token:
            return False
    return len(wanted) == len(pattern.split("."))


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


# What a stream refuses a message with when it has no room left: with discard policy "new" its
# own limits, and whatever the policy the server's or the account's JetStream storage.
_FULL = (
    ("maximum messages per subject exceeded", "max_msgs_per_subject"),
    ("maximum messages exceeded", "max_msgs"),
    ("maximum bytes exceeded", "max_bytes"),
    ("insufficient", "storage"),
    ("resource limits exceeded", "storage"),
)


def full_limit(exc: BaseException) -> str | None:
    """The limit a refused publish ran into when the stream is full (a stream setting, or
    ``storage`` for the server's or the account's JetStream storage); ``None`` for any other
    error."""
    if not isinstance(exc, APIError):
        return None
    description = (exc.description or "").lower()
    return next((limit for cause, limit in _FULL if cause in description), None)


def _same_seconds(a: float | None, b: float | None) -> bool:
    return abs((a or 0.0) - (b or 0.0)) < 1e-3
