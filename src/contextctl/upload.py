"""Sending a query index: the records are encoded once, then sent as request bodies the service
accepts. Today that is one ``PUT .../query-index`` (at most ``MAX_BODY`` bytes); a multi-part
upload adds another ``Sender`` without changing how records are read or encoded."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from context_service.contextctl.client import Client, ServiceError, context_path

MAX_BODY = 1 << 20  # the service's request body limit
CHUNK = 64 * 1024
TOO_LARGE = "request body too large"
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


class Sender(Protocol):
    def send(self, client: Client, upload: IndexUpload, advance: Advance) -> None: ...


def _chunks(upload: IndexUpload, advance: Advance) -> Iterator[bytes]:
    """The body in pieces of about ``CHUNK`` bytes, reporting each piece as it is sent."""
    pending = [upload.head()]
    size = len(pending[0])
    for i, record in enumerate(upload.records):
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


class SingleBody:
    """One ``PUT .../query-index`` with the whole index (replaces the previous index)."""

    def send(self, client: Client, upload: IndexUpload, advance: Advance) -> None:
        size = upload.body_size()
        path = context_path(upload.namespace, upload.context, "query-index")
        try:
            client.request("PUT", path, content=_chunks(upload, advance), headers={
                "Content-Type": "application/json", "Content-Length": str(size)})
        except ServiceError as exc:
            if exc.message == TOO_LARGE:
                raise ServiceError(
                    f"{TOO_LARGE}: the index of {len(upload.records)} records is {size:,} bytes "
                    f"and one request carries at most {MAX_BODY:,} bytes") from exc
            raise


def sender_for(upload: IndexUpload) -> Sender:
    """Where a multi-part route exists, an index larger than ``MAX_BODY`` goes there."""
    return SingleBody()
