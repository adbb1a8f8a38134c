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
from context_service.contextctl.local.errors import LocalStoreError

INDEXED_TYPES = ("knowledge", "memory")  # the types that carry records and a query index
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
    leaves them out, as ``index push`` reads it; a record the service would refuse (spec 1.7) is
    an error naming its line, found before a push publishes anything."""
    try:
        raw = (root / KNOWLEDGE_FILE).read_bytes()
    except FileNotFoundError:
        return None
    identity = {"context": context, "type": context_type, "revision": revision}
    records = []
    for number, line in enumerate(raw.split(b"\n"), start=1):  # as index push reads it
        try:
            record = record_line(number, line, identity, f"{KNOWLEDGE_FILE} ")
        except CommandError as exc:
            raise LocalStoreError(str(exc)) from None
        if record is None:
            continue
        if problem := record_problem(record, identity):
            raise LocalStoreError(f"{KNOWLEDGE_FILE} line {number}: {problem}")
        records.append(record)
    return records


def record_line(number: int, raw: bytes, identity: Mapping[str, Any],
                where: str = "") -> dict[str, Any] | None:
    """One line of a ``records.jsonl``: None when blank, else its record with ``context``,
    ``type`` and ``revision`` filled in from ``identity`` where it leaves them out; a line that
    is no JSON object is a ``CommandError`` naming it (``where`` names the file)."""
    if not raw.strip():
        return None
    try:
        record = json.loads(raw)
    except ValueError as exc:
        raise CommandError(f"{where}line {number} is not JSON: {exc}") from None
    if not isinstance(record, dict):
        raise CommandError(f"{where}line {number} is not a JSON object")
    for key, value in identity.items():
        record.setdefault(key, value)
    return record


def record_problem(record: Mapping[str, Any], identity: Mapping[str, str]) -> str | None:
    """Why the service would refuse ``record`` in the index of ``identity`` (spec 1.7: the
    QueryRecord's field types, then its checks in order), or None. As the service decodes it,
    ``null`` is a field left out."""
    for key in ("id", "context", "type", "revision", "title", "text", "file"):
        if record.get(key) is not None and not isinstance(record[key], str):
            return f"{key} must be a string"
    keywords = record.get("keywords") or []
    if not isinstance(keywords, list) or not all(isinstance(k, str) for k in keywords):
        return "keywords must be an array of strings"
    source = record.get("source") or {}
    if not isinstance(source, dict) or not all(
            v is None or isinstance(v, str) for v in source.values()):
        return "source must be an object of strings"
    if not record.get("id") or not str(record.get("text") or "").strip():
        return "query records require id and text"
    if any(record[key] != value for key, value in identity.items()):
        return (f"record identity does not match its context ({identity['context']}, "
                f"{identity['type']}, this revision)")
    return None
