"""A local context's revision history (spec 4.2 "Publishing locally", 4.3): the documents, in the
service's revision shape, that ``ctx sync push`` later posts as they are."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from context_service.contextctl.local.content import Content
from context_service.contextctl.local.disk import json_lines, write_atomic
from context_service.contextctl.local.errors import LocalStoreError

_DIGEST = re.compile(r"[0-9a-f]{64}")


def now_text() -> str:
    """Now in UTC, to the second, with ``Z`` (the service's timestamp form)."""
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def read(path: Path) -> list[dict[str, Any]]:
    """The history, oldest first; none yet when the file does not exist."""
    try:
        lines = path.read_bytes().splitlines()
    except FileNotFoundError:
        return []
    entries = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            entry = None
        if not isinstance(entry, dict):
            raise LocalStoreError(f"{path} line {number} is not a revision")
        entries.append(entry)
    return entries


def append(path: Path, history: Sequence[Mapping[str, Any]], entry: Mapping[str, Any]) -> None:
    # rewritten whole: an appended line could be cut short by a crash, a replaced file cannot
    write_atomic(path, json_lines([*history, entry]))


def entry(content: Content, operation: str, producer: str, parameters: Mapping[str, str],
          sources: Sequence[Mapping[str, str]]) -> dict[str, Any]:
    """A revision of ``content`` in the service's key order, empty optional fields left out."""
    if not operation.strip():
        raise LocalStoreError("revision operation is required")
    document: dict[str, Any] = {"id": content.revision, "createdAt": now_text(),
                                "operation": operation}
    if producer:
        document["producer"] = producer
    if parameters:
        document["parameters"] = {str(k): str(v) for k, v in parameters.items()}
    if sources:
        document["sources"] = sorted((_source(s) for s in sources),
                                     key=lambda s: (s["context"], s["revision"]))
    document["files"] = len(content.files)
    document["bytes"] = content.bytes
    return document


def _source(source: Mapping[str, str]) -> dict[str, str]:
    """A source as the service accepts it (spec 2.5), checked here so a push cannot fail later."""
    context, type_, revision = (source.get("context", ""), source.get("type", ""),
                                source.get("revision", ""))
    if not context or not type_:
        raise LocalStoreError("revision sources require context and type")
    if not _DIGEST.fullmatch(revision):
        raise LocalStoreError("source revision must be a lowercase SHA-256 digest")
    return {"context": context, "type": type_, "revision": revision}
