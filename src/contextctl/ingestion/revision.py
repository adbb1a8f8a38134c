"""The revision of an ingestion, content-addressed as the service's producers address theirs
(context-service-api §4.2): one SHA-256 over the context type, the chunking parameters and, for
each file by name, its name, the SHA-256 of its bytes and its size. The same files with the same
parameters always give the same id; any changed byte or parameter gives another."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

PRODUCER = "contextctl"
OPERATION = "ingest"
CHUNKER = "contextctl-ingest/6"  # names the rules of parsing, splitting and ids


@dataclass(frozen=True, slots=True)
class FileEntry:
    name: str
    sha256: str
    size: int


def entry(name: str, data: bytes) -> FileEntry:
    return FileEntry(name, hashlib.sha256(data).hexdigest(), len(data))


def digest(context_type: str, parameters: Mapping[str, str], files: Sequence[FileEntry]) -> str:
    hasher = hashlib.sha256()
    hasher.update(b"type\x00" + context_type.encode() + b"\x00")
    for key in sorted(parameters):
        hasher.update(f"{key}\x00{parameters[key]}\x00".encode())
    for file in sorted(files, key=lambda f: f.name.encode()):
        hasher.update(f"{file.name}\x00{file.sha256}\x00{file.size}\x00".encode())
    return hasher.hexdigest()


def provenance(revision: str, parameters: Mapping[str, str], files: Sequence[FileEntry],
               now: datetime | None = None) -> dict[str, Any]:
    """The body of ``POST .../revisions``."""
    created = (now or datetime.now(UTC)).astimezone(UTC).replace(microsecond=0)
    return {"id": revision, "createdAt": created.isoformat().replace("+00:00", "Z"),
            "operation": OPERATION, "producer": PRODUCER, "parameters": dict(parameters),
            "files": len(files), "bytes": sum(f.size for f in files)}
