"""Query records of a local context's files as they are now (spec 5.5): what a local query
searches and what ``ctx sync push`` publishes as the index of the pushed revision.

``None`` means the context has no index to offer (its source file does not exist): a query
lists it as unavailable (spec 5.3) rather than finding nothing in it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from context_service.contextctl.client import CommandError
from context_service.contextctl.index import read_records
from context_service.contextctl.local.errors import LocalStoreError

MEMORY_FILE = "memory/MEMORY.md"
KNOWLEDGE_FILE = "knowledge/records.jsonl"
TITLE_LENGTH = 80
_MARKUP = "#-* "  # a heading's or a list item's leading marks are not part of the fact


def memory_records(root: Path, context: str, revision: str,
                   source: Mapping[str, str]) -> list[dict[str, Any]] | None:
    """One record per line of MEMORY.md that holds text once its leading marks are gone."""
    try:
        raw = (root / MEMORY_FILE).read_bytes()
    except FileNotFoundError:
        return None
    try:
        document = raw.decode()
    except UnicodeDecodeError as exc:
        raise LocalStoreError(f"{MEMORY_FILE} is not UTF-8: {exc}") from None
    records = []
    for line in document.split("\n"):
        text = line.removesuffix("\r").lstrip(_MARKUP)
        if not text.strip():  # the service refuses blank text
            continue
        records.append({"id": memory_record_id(context, revision, text), "context": context,
                        "type": "memory", "revision": revision, "title": text[:TITLE_LENGTH],
                        "text": text, "source": dict(source), "file": MEMORY_FILE})
    return records


def memory_record_id(context: str, revision: str, text: str) -> str:
    """The first 16 bytes of SHA-256 over context, revision, file and text, NUL-separated."""
    hashed = hashlib.sha256(f"{context}\0{revision}\0{MEMORY_FILE}\0{text}".encode())
    return hashed.hexdigest()[:32]


def knowledge_records(root: Path, context: str, context_type: str,
                      revision: str) -> list[dict[str, Any]] | None:
    """The generator's records.jsonl, with context, type and revision filled in where a record
    leaves them out, exactly as ``index push`` reads it."""
    path = root / KNOWLEDGE_FILE
    try:
        stream = path.open("rb")
    except FileNotFoundError:
        return None
    with stream:
        try:
            lines = read_records(stream, {"name": context, "type": context_type}, revision,
                                 lambda _: None)
        except CommandError as exc:
            raise LocalStoreError(f"{KNOWLEDGE_FILE} {exc}") from None
    return [json.loads(line) for line in lines]
