"""How ``contextctl`` packs an index into upload parts (pure): parts cover the records in order,
each body is exactly the size computed and within the limits, packing is greedy, every part is
one the service can store, and a record no part can hold is named."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_service.contextctl.client import CommandError
from context_service.contextctl.parts import STORED_BYTES, STORED_SLACK, Limits, pack, part_head
from context_service.contextctl.upload import (
    DEFAULT_LIMITS,
    MAX_BODY,
    IndexUpload,
    MultiPart,
    _chunks,
)
from context_service.contract.query import PublishQueryIndexRequest
from context_service.domain.context.index_upload import UploadPart, part_events
from context_service.domain.events import ADMIN
from context_service.http.body import decode
from context_service.http.index_body import publish_command

REV = "cd" * 32


def record(i: int, width: int) -> bytes:
    return json.dumps({"id": f"r{i}", "text": "x" * width, "context": "kb",
                       "type": "knowledge", "revision": REV}, separators=(",", ":")).encode()


def bodies(records: list[bytes], upload_id: str, limits: Limits) -> list[bytes]:
    parts = pack(records, REV, upload_id, limits)
    return [b"".join(_chunks(part_head(REV, upload_id, p.number, len(parts)),
                             records[p.start:p.end], lambda n: None)) for p in parts]


@given(widths=st.lists(st.integers(0, 3000), min_size=1, max_size=300),
       part=st.integers(4096, 40_000))
def test_parts_cover_the_records_in_order_within_the_limit(widths: list[int], part: int) -> None:
    records = [record(i, w) for i, w in enumerate(widths)]
    limits = Limits(body=part, part=part)
    parts = pack(records, REV, "u" * 24, limits)
    assert [(p.start, p.end) for p in parts] == list(zip(
        [0, *(p.end for p in parts[:-1])], [p.end for p in parts], strict=True))
    assert parts[-1].end == len(records) and [p.number for p in parts] == list(
        range(1, len(parts) + 1))
    sent = bodies(records, "u" * 24, limits)
    assert [len(b) for b in sent] == [p.size for p in parts]
    assert all(len(b) <= part for b in sent)
    decoded = [json.loads(b) for b in sent]
    assert [r["id"] for d in decoded for r in d["records"]] == [
        f"r{i}" for i in range(len(widths))]
    for left, right in pairwise(parts):  # greedy: the next one did not fit
        assert left.size + 1 + len(records[right.start]) > part - 8


def test_the_default_parts_are_ones_the_service_stores() -> None:
    """The smallest records grow most when stored (their left-out fields are filled in)."""
    records = [json.dumps({"id": f"{i}", "text": "t", "context": "k", "type": "memory",
                           "revision": "r"}, separators=(",", ":")).encode()
               for i in range(40_000)]
    upload = MultiPart(IndexUpload("ns", "kb", "r", records))
    assert len(upload.parts) > 1
    for body in bodies(records, upload.upload_id, DEFAULT_LIMITS):
        request = decode(body, PublishQueryIndexRequest)
        command = publish_command(ADMIN, request)
        assert command.upload is not None
        part = UploadPart(command.upload.upload_id, command.upload.part, command.upload.parts)
        part_events(datetime.now(UTC), "user:alice", "r", command.records, part, None)


def test_a_record_no_part_can_hold_is_named() -> None:
    records = [record(0, 10), record(1, MAX_BODY)]
    with pytest.raises(CommandError, match=r'^record 2 \(id "r1"\) is 1,048,7\d\d bytes encoded'):
        pack(records, REV, "u", DEFAULT_LIMITS)
    fits_alone = [record(0, 10), record(1, 700_000), record(2, 10)]
    parts = pack(fits_alone, REV, "u", DEFAULT_LIMITS)  # above a part, within a body: alone
    assert [(p.start, p.end) for p in parts] == [(0, 1), (1, 2), (2, 3)]
    with pytest.raises(CommandError, match="at most "):
        pack([record(0, STORED_BYTES - STORED_SLACK)], REV, "u", DEFAULT_LIMITS)
