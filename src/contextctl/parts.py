"""Packing an index's encoded records into the parts of a multi-part upload: greedily, in record
order, each part's body within the part size and its records within what one stored part holds
(docs/query-index-uploads.md, "Sizes")."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from context_service.contextctl.client import CommandError

PART_BYTES = 512 * 1024  # the default body of one part, the size the service's docs advise
# The service stores a part as one event whose records encode to at most 960 KiB, filling in the
# fields a record leaves out; this budget and per-record allowance keep every part below that.
STORED_BYTES = 896 * 1024
STORED_SLACK = 96
NUMBER_DIGITS = 5  # "part" and "parts" are at most 10,000


@dataclass(frozen=True, slots=True)
class Limits:
    """``body``: the largest request the path to the service accepts; ``part``: the body size
    parts are packed to (a record larger than that travels alone, within ``body``)."""

    body: int
    part: int


@dataclass(frozen=True, slots=True)
class Part:
    number: int
    start: int  # records[start:end]
    end: int
    size: int  # bytes of the part's body


def part_head(revision: str, upload_id: str, number: int, parts: int) -> bytes:
    return (b'{"revision":' + json.dumps(revision).encode()
            + b',"uploadId":' + json.dumps(upload_id).encode()
            + b',"part":' + str(number).encode() + b',"parts":' + str(parts).encode()
            + b',"records":[')


def pack(records: Sequence[bytes], revision: str, upload_id: str, limits: Limits) -> list[Part]:
    """The parts, or a ``CommandError`` naming the first record no part can hold."""
    # the widest head a part can have, so that a body's size never depends on the part count
    fixed = len(part_head(revision, upload_id, 0, 0)) - 2 + 2 * NUMBER_DIGITS + len(b"]}")
    runs: list[tuple[int, int]] = []
    start, body, stored = 0, fixed, 0
    for index, record in enumerate(records):
        alone = fixed + len(record)
        if alone > limits.body or len(record) + STORED_SLACK > STORED_BYTES:
            raise too_large(records, index, min(limits.body - fixed, STORED_BYTES - STORED_SLACK))
        comma = 1 if index > start else 0
        if index > start and (body + comma + len(record) > limits.part
                              or stored + len(record) + STORED_SLACK > STORED_BYTES):
            runs.append((start, index))
            start, body, stored, comma = index, fixed, 0, 0
        body += comma + len(record)
        stored += len(record) + STORED_SLACK
    if start < len(records):
        runs.append((start, len(records)))
    return [Part(number, begin, end, _body_size(records, begin, end, revision, upload_id,
                                                number, len(runs)))
            for number, (begin, end) in enumerate(runs, 1)]


def _body_size(records: Sequence[bytes], start: int, end: int, revision: str, upload_id: str,
               number: int, parts: int) -> int:
    head = part_head(revision, upload_id, number, parts)
    return len(head) + sum(len(r) for r in records[start:end]) + (end - start - 1) + 2


def too_large(records: Sequence[bytes], index: int, most: int) -> CommandError:
    record_id = json.loads(records[index]).get("id")
    return CommandError(
        f"record {index + 1} (id {json.dumps(record_id, ensure_ascii=False)}) is "
        f"{len(records[index]):,} bytes encoded and one part carries at most {most:,} bytes of "
        "records: nothing was sent")
