"""Which events publish an index (spec 1.7; docs/query-index-uploads.md).

Every event stays below NATS's default 1 MB payload: a single body whose records encode above
``SPLIT_BYTES`` is recorded as staged parts plus the publication, in one append; a part of a
client's upload is one event, refused when it would not fit. A client's upload becomes the
current index when its last missing part arrives (that part and the publication are appended
together); until then nothing of it shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import msgspec

from context_service.domain.context.events import (
    QueryIndexPartStaged,
    QueryIndexPublished,
    QueryRecord,
)
from context_service.domain.echoed import quoted
from context_service.domain.errors import ContextInvalidError
from context_service.domain.events import Event
from context_service.domain.values import quote

SPLIT_BYTES = 512 * 1024  # a single body above this is stored as parts of about this size
MAX_EVENT_BYTES = 960 * 1024  # any index event; the NATS envelope adds well under 64 KiB
MAX_PARTS = 10_000
MAX_REPLACED = 100  # replaced upload ids remembered per revision (their late parts are refused)
BODY_UPLOAD = "~body"  # the upload of a split single body (clients' ids cannot start with ~)

_encoder = msgspec.json.Encoder()


class IndexUpload(msgspec.Struct, frozen=True):
    """The context's open upload: its staged part numbers and the field types they hold."""

    revision: str
    upload_id: str
    parts: int
    staged: tuple[int, ...] = ()  # ascending
    field_types: tuple[tuple[str, str], ...] = ()  # (name, type), by name

    def types(self) -> dict[str, str]:
        return dict(self.field_types)


class UploadPart(msgspec.Struct, frozen=True):
    upload_id: str
    part: int
    parts: int


def open_upload(upload: IndexUpload | None, revision: str,
                upload_id: str) -> IndexUpload | None:
    """The open upload when a part of (revision, upload_id) continues it."""
    if upload is not None and (upload.revision, upload.upload_id) == (revision, upload_id):
        return upload
    return None


def staged(upload: IndexUpload | None, event: QueryIndexPartStaged) -> IndexUpload:
    """The open upload after ``event`` (a new one when the event opens another upload)."""
    current = open_upload(upload, event.revision, event.upload_id)
    numbers = set(current.staged) if current is not None else set()
    numbers.add(event.part)
    types = current.types() if current is not None else {}
    for record in event.records:
        for field in record.fields:
            types.setdefault(field.name, field.type)
    return IndexUpload(event.revision, event.upload_id, event.parts, tuple(sorted(numbers)),
                       tuple(sorted(types.items())))


def part_events(now: datetime, actor: str, revision: str, records: tuple[QueryRecord, ...],
                part: UploadPart, upload: IndexUpload | None) -> list[Event]:
    """A client's part: refused when its event would not fit; completes the upload when it is
    the last missing part."""
    current = open_upload(upload, revision, part.upload_id)
    if current is not None and current.parts != part.parts:
        raise ContextInvalidError(
            f"query index upload {quote(part.upload_id)} has {current.parts} parts,"
            f" not {part.parts}")
    event = QueryIndexPartStaged(at=now, actor=actor, revision=revision,
                                 upload_id=part.upload_id, part=part.part, parts=part.parts,
                                 records=records)
    if len(_encoder.encode(event)) > MAX_EVENT_BYTES:
        raise ContextInvalidError(
            f"query index part is too large to store (at most {MAX_EVENT_BYTES} bytes"
            " encoded); send fewer records per part")
    have = set(current.staged) if current is not None else set()
    have.add(part.part)
    if len(have) < part.parts:
        return [event]
    return [event, QueryIndexPublished(at=now, actor=actor, revision=revision, records=(),
                                       upload_id=part.upload_id, parts=part.parts)]


def body_events(now: datetime, actor: str, revision: str,
                records: tuple[QueryRecord, ...]) -> list[Event]:
    """A whole index in one body: one event, or staged parts and the publication."""
    if len(_encoder.encode(records)) <= SPLIT_BYTES:
        return [QueryIndexPublished(at=now, actor=actor, revision=revision, records=records)]
    sizes = [len(_encoder.encode(r)) + 1 for r in records]
    # what a part event holds besides its records (timestamp, names, numbers), bounded
    overhead = len(_encoder.encode(actor)) + len(_encoder.encode(revision)) + 512
    for record, size in zip(records, sizes, strict=True):
        if size + overhead > MAX_EVENT_BYTES:
            raise ContextInvalidError(
                f"query record {quoted(record.id)} is too large to store"
                f" (at most {MAX_EVENT_BYTES} bytes encoded)")
    chunks = split(records, sizes)
    events: list[Event] = [
        QueryIndexPartStaged(at=now, actor=actor, revision=revision, upload_id=BODY_UPLOAD,
                             part=number, parts=len(chunks), records=chunk)
        for number, chunk in enumerate(chunks, 1)]
    events.append(QueryIndexPublished(at=now, actor=actor, revision=revision, records=(),
                                      upload_id=BODY_UPLOAD, parts=len(chunks)))
    return events


def split(records: Sequence[QueryRecord],
          sizes: Sequence[int] | None = None) -> list[tuple[QueryRecord, ...]]:
    """Consecutive runs of records whose encoding stays within ``SPLIT_BYTES`` (a record
    larger than that is a run of its own). ``sizes``: each record's encoded length plus one."""
    if sizes is None:
        sizes = [len(_encoder.encode(r)) + 1 for r in records]
    chunks: list[tuple[QueryRecord, ...]] = []
    run: list[QueryRecord] = []
    size = 0
    for record, length in zip(records, sizes, strict=True):
        if run and size + length > SPLIT_BYTES:
            chunks.append(tuple(run))
            run, size = [], 0
        run.append(record)
        size += length
    if run:
        chunks.append(tuple(run))
    return chunks


def replaced(known: tuple[str, ...], upload_id: str) -> tuple[str, ...]:
    """``known`` with ``upload_id`` added (the oldest forgotten past ``MAX_REPLACED``)."""
    if not upload_id or upload_id == BODY_UPLOAD or upload_id in known:
        return known
    return (*known, upload_id)[-MAX_REPLACED:]
