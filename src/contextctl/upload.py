"""Sending a query index: the records are encoded once, then sent as request bodies the service
accepts. An index that fits one body is one ``PUT .../query-index``; a larger one is a multi-part
upload (docs/query-index-uploads.md) of parts sent in order, each retried on a transient error."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import httpx

from context_service.contextctl.client import Client, ServiceError, context_path
from context_service.contextctl.parts import PART_BYTES, Limits, Part, pack, part_head

MAX_BODY = 1 << 20  # the service's request body limit
CHUNK = 64 * 1024
TOO_LARGE = "request body too large"
TRANSIENT_STATUS = frozenset({502, 503, 504})
RETRY_DELAYS = (0.5, 1.0, 2.0, 4.0)  # seconds before each further attempt of a part
DEFAULT_LIMITS = Limits(body=MAX_BODY, part=PART_BYTES)
Advance = Callable[[int], None]


@dataclass(frozen=True, slots=True)
class IndexUpload:
    namespace: str
    context: str
    revision: str
    records: Sequence[bytes]  # each one compact JSON object

    def head(self) -> bytes:
        return b'{"revision":' + json.dumps(self.revision).encode() + b',"records":['

    def body_size(self) -> int:
        """Bytes of the single body ``{"revision":…,"records":[…]}``."""
        commas = max(len(self.records) - 1, 0)
        return len(self.head()) + sum(len(r) for r in self.records) + commas + 2

    def path(self) -> str:
        return context_path(self.namespace, self.context, "query-index")


class Sender(Protocol):
    def total(self) -> int:
        """Bytes the upload sends (the progress bar's total)."""
        ...

    def send(self, client: Client, advance: Advance) -> None: ...


def _chunks(head: bytes, records: Sequence[bytes], advance: Advance) -> Iterator[bytes]:
    """The body in pieces of about ``CHUNK`` bytes, reporting each piece as it is sent."""
    pending = [head]
    size = len(head)
    for i, record in enumerate(records):
        pending.append(b"," + record if i else record)
        size += len(pending[-1])
        if size >= CHUNK:
            yield b"".join(pending)
            advance(size)
            pending, size = [], 0
    pending.append(b"]}")
    size += 2
    yield b"".join(pending)
    advance(size)


@dataclass(frozen=True, slots=True)
class SingleBody:
    """One ``PUT .../query-index`` with the whole index (replaces the previous index)."""

    upload: IndexUpload
    limit: int = MAX_BODY

    def total(self) -> int:
        return self.upload.body_size()

    def send(self, client: Client, advance: Advance) -> None:
        upload, size = self.upload, self.upload.body_size()
        try:
            client.request("PUT", upload.path(), content=_chunks(
                upload.head(), upload.records, advance), headers={
                "Content-Type": "application/json", "Content-Length": str(size)})
        except ServiceError as exc:
            if exc.message == TOO_LARGE:
                raise ServiceError(
                    f"{TOO_LARGE}: the index of {len(upload.records)} records is {size:,} bytes "
                    f"and one request carries at most {self.limit:,} bytes") from exc
            raise


def transient(exc: ServiceError) -> bool:
    """The request may not have reached the service, or it was briefly unable to answer."""
    return exc.status in TRANSIENT_STATUS or isinstance(exc.__cause__, httpx.TransportError)


@dataclass(slots=True)
class MultiPart:
    """The parts of one upload under a fresh, unguessable upload id, in order. Re-sending a part
    replaces the one staged before (and is a no-op once the upload is current), so a part is
    retried on a transient error; any other refusal stops the upload, and the previous index
    stays current."""

    upload: IndexUpload
    limits: Limits = DEFAULT_LIMITS
    upload_id: str = field(default_factory=lambda: secrets.token_urlsafe(18))
    sleep: Callable[[float], None] = time.sleep
    parts: list[Part] = field(init=False)

    def __post_init__(self) -> None:
        self.parts = pack(self.upload.records, self.upload.revision, self.upload_id, self.limits)

    def total(self) -> int:
        return sum(part.size for part in self.parts)

    def send(self, client: Client, advance: Advance) -> None:
        for part in self.parts:
            self._send_part(client, part, advance)

    def _send_part(self, client: Client, part: Part, advance: Advance) -> None:
        head = part_head(self.upload.revision, self.upload_id, part.number, len(self.parts))
        records = self.upload.records[part.start:part.end]
        for attempt in range(len(RETRY_DELAYS) + 1):
            sent = 0

            def counted(n: int) -> None:
                nonlocal sent
                sent += n
                advance(n)

            try:
                client.request("PUT", self.upload.path(), content=_chunks(head, records, counted),
                               headers={"Content-Type": "application/json",
                                        "Content-Length": str(part.size)})
                return
            except ServiceError as exc:
                advance(-sent)  # the part is sent again from its start, or not at all
                if not transient(exc) or attempt == len(RETRY_DELAYS):
                    raise self._stopped(part, exc) from exc
                self.sleep(RETRY_DELAYS[attempt])

    def _stopped(self, part: Part, exc: ServiceError) -> ServiceError:
        return ServiceError(
            f"upload stopped at part {part.number} of {len(self.parts)} (records "
            f"{part.start + 1}-{part.end}): {exc.message}; the previous index stays current",
            exc.details, exc.status)


def sender_for(upload: IndexUpload, part_size: int | None = None) -> Sender:
    """One body when the index fits one request, else a multi-part upload. ``part_size``: the
    largest body to send (for a proxy with a smaller limit than the service's)."""
    limits = DEFAULT_LIMITS if part_size is None else Limits(body=part_size, part=part_size)
    if upload.body_size() <= limits.body:
        return SingleBody(upload, limits.body)
    return MultiPart(upload, limits)
