"""Export the log as hash-chained JSON lines, and verify such a file.

Each line is one event (the envelope fields) plus ``prevHash`` (the hash of the previous line,
64 zeros for the first) and ``hash`` = SHA-256 over ``prevHash`` and the line's canonical JSON
without ``hash``. Changing any byte of a line breaks that line's own hash, its JSON or its
spelling (each line must be what export wrote, up to the order of its keys), so verification
names the first changed line; removing, repeating or reordering lines breaks the chain.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import msgspec

from context_service.adapters.eventstore.outbox import logged
from context_service.adapters.eventstore.store import EVENTS_TABLE, EventStore

GENESIS = "0" * 64
_BATCH_EVENTS = 2000
_BATCH_BYTES = 16 * 1024 * 1024  # stored bytes read from the log at a time
_enc = msgspec.json.Encoder(order="sorted")


def _chain_hash(prev: str, entry: dict[str, Any]) -> str:
    return hashlib.sha256(prev.encode() + _enc.encode(entry)).hexdigest()


def lines(store: EventStore, namespace: str | None = None,
          progress: Callable[[int, int], None] | None = None) -> Iterator[tuple[bytes, str]]:
    """The log up to its head as of now, a bounded batch at a time: each line and its hash."""
    head = store.head()
    prev = GENESIS
    position = 0
    while position < head:
        end = _batch_end(store, position, head)
        batch = store.read(position, _BATCH_EVENTS, end)
        if not batch:
            break
        for recorded in batch:
            if namespace is not None and recorded.stream.namespace != namespace:
                continue
            entry = {**logged(recorded).as_json(), "prevHash": prev}
            entry["hash"] = prev = _chain_hash(entry["prevHash"], entry)
            yield msgspec.json.encode(entry), prev
        position = batch[-1].position
        if progress is not None:
            progress(position, head)


def _batch_end(store: EventStore, after: int, head: int) -> int:
    """The last position of the next batch: up to ``_BATCH_EVENTS`` events after ``after``
    holding at most ``_BATCH_BYTES`` stored bytes (at least one event), none past ``head``.
    An event can be about 1 MB: a batch counted in events alone could be gigabytes. The sizes
    come from the row headers (``octet_length`` does not read a stored value)."""
    sql = ("SELECT coalesce(max(notification_id) FILTER (WHERE total <= %s),"
           " min(notification_id)) AS last FROM ("
           " SELECT notification_id, sum(octet_length(state)) OVER (ORDER BY notification_id)"
           f" AS total FROM {EVENTS_TABLE} WHERE notification_id > %s AND notification_id <= %s"
           " ORDER BY notification_id LIMIT %s) AS batch")
    with store.datastore.transaction(commit=False) as cur:
        cur.execute(sql, (_BATCH_BYTES, after, head, _BATCH_EVENTS))
        row = cur.fetchone()
    last = row["last"] if row is not None else None
    return head if last is None else int(last)


def export(store: EventStore, out: IO[bytes], namespace: str | None = None,
           progress: Callable[[int, int], None] | None = None) -> tuple[int, str]:
    """Write the lines; return how many and the last line's hash (``GENESIS`` for none): kept
    beside the file, it shows a file cut between two lines or with lines added at its end."""
    count, last = 0, GENESIS
    for line, chained in lines(store, namespace, progress):
        out.write(line + b"\n")
        count, last = count + 1, chained
    return count, last


def verify(rows: Iterable[bytes], terminated: bool = False,
           last: str | None = None) -> tuple[int, int | None, str]:
    """Check a file's lines; return (lines checked, first broken line number or None, why).
    With ``terminated`` each row still ends with its newline, as read from a file. With
    ``last`` (the hash the export ended with) the file must end at that line."""
    prev = GENESIS
    number = 0
    ended = 0 if last == GENESIS else None  # the line whose hash is ``last``
    for number, raw in enumerate(rows, start=1):
        if ended is not None:
            return number, number, f"a line after the export's last (line {ended})"
        if terminated:
            if not raw.endswith(b"\n"):  # export ends every line with one
                return number, number, "no newline at the end: the file was cut short"
            raw = raw[:-1]
        claimed, why = _check(raw, prev)
        if claimed is None:
            return number, number, why
        prev = claimed
        if claimed == last:
            ended = number
    if last is not None and ended is None:
        return number, number + 1, ("the file ends before the export's last line (cut short, "
                                    "or not the export that ended with this hash)")
    return number, None, "ok"


def _check(raw: bytes, prev: str) -> tuple[str | None, str]:
    """The line's hash when it is intact and follows ``prev``; else None and why not."""
    if not raw:
        return None, "empty line"
    try:
        entry = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return None, "not valid JSON"
    if not isinstance(entry, dict) or not isinstance(entry.get("hash"), str):
        return None, "no hash"
    # the hash covers the values; the bytes must be the export's own spelling too, or a key
    # given twice (tools disagree on which one counts) or a respelled value would pass
    spelled = msgspec.json.encode(entry) == raw
    claimed = entry.pop("hash")
    if entry.get("prevHash") != prev:
        return None, "prevHash does not match the previous line"
    if _chain_hash(prev, entry) != claimed:
        return None, "hash does not match the line's content"
    if not spelled:
        return None, "not spelled as exported (spacing, escapes or a repeated key)"
    return claimed, ""


def verify_file(path: Path, last: str | None = None) -> tuple[int, int | None, str]:
    """Line numbers are the file's own: a blank line counts (and is broken)."""
    with path.open("rb") as f:
        return verify(f, terminated=True, last=last)

