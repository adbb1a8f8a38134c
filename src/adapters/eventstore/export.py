"""Export the log as hash-chained JSON lines, and verify such a file.

Each line is one event (the envelope fields) plus ``prevHash`` (the hash of the previous line,
64 zeros for the first) and ``hash`` = SHA-256 over ``prevHash`` and the line's canonical JSON
without ``hash``. Changing any byte of a line breaks that line's own hash (or its JSON), so
verification names the first changed line; removing or reordering lines breaks the chain.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import msgspec

from context_service.adapters.eventstore.outbox import logged
from context_service.adapters.eventstore.store import EventStore

GENESIS = "0" * 64
_enc = msgspec.json.Encoder(order="sorted")


def _chain_hash(prev: str, entry: dict[str, Any]) -> str:
    return hashlib.sha256(prev.encode() + _enc.encode(entry)).hexdigest()


def lines(store: EventStore, namespace: str | None = None,
          progress: Callable[[int, int], None] | None = None) -> Iterator[bytes]:
    head = store.head()
    prev = GENESIS
    position = 0
    while position < head:
        batch = store.read(position, 2000)
        if not batch:
            break
        for recorded in batch:
            if namespace is not None and recorded.stream.namespace != namespace:
                continue
            entry = {**logged(recorded).as_json(), "prevHash": prev}
            entry["hash"] = prev = _chain_hash(entry["prevHash"], entry)
            yield msgspec.json.encode(entry)
        position = batch[-1].position
        if progress is not None:
            progress(position, head)


def export(store: EventStore, out: IO[bytes], namespace: str | None = None,
           progress: Callable[[int, int], None] | None = None) -> int:
    count = 0
    for line in lines(store, namespace, progress):
        out.write(line + b"\n")
        count += 1
    return count


def verify(rows: Iterable[bytes]) -> tuple[int, int | None, str]:
    """Check a file's lines; return (lines checked, first broken line number or None, why)."""
    prev = GENESIS
    number = 0
    for number, raw in enumerate(rows, start=1):
        try:
            entry = msgspec.json.decode(raw)
        except msgspec.DecodeError:
            return number, number, "not valid JSON"
        if not isinstance(entry, dict) or not isinstance(entry.get("hash"), str):
            return number, number, "no hash"
        claimed = entry.pop("hash")
        if entry.get("prevHash") != prev:
            return number, number, "prevHash does not match the previous line"
        if _chain_hash(prev, entry) != claimed:
            return number, number, "hash does not match the line's content"
        prev = claimed
    return number, None, "ok"


def verify_file(path: Path) -> tuple[int, int | None, str]:
    with path.open("rb") as f:
        return verify(line.rstrip(b"\n") for line in f if line.strip())
