"""Multi-part index uploads in the write model (pure): what ``decide`` records for parts, how
``evolve`` tracks the open upload, the split of large bodies, and that the one assembly fold
yields exactly the records of the parts that completed the upload."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import msgspec
import pytest

from context_service.domain.context import commands as c
from context_service.domain.context.decide import decide
from context_service.domain.context.events import (
    QueryIndexPartStaged,
    QueryIndexPublished,
    QueryRecord,
)
from context_service.domain.context.index_parts import IncompleteUpload, StagedUpload, assemble
from context_service.domain.context.index_upload import (
    MAX_EVENT_BYTES,
    SPLIT_BYTES,
    UploadPart,
    split,
)
from context_service.domain.context.state import ContextState, evolve, fold
from context_service.domain.errors import ContextInvalidError
from context_service.domain.events import ADMIN, Event

NOW = datetime(2026, 5, 1, tzinfo=UTC)
REV = "ab" * 32


def _state() -> ContextState:
    events = decide(c.CreateContext(actor=ADMIN, name="kb", namespace="ns", type="knowledge",
                                    backend="pvc", size="1Gi", access_mode="ReadWriteOnce"),
                    ContextState(), NOW)
    state = fold(events)
    events = decide(c.PublishRevision(actor=ADMIN, id=REV, created_at=NOW, operation="sync"),
                    state, NOW)
    return fold(events, state)


def rec(id_: str, text: str = "words") -> QueryRecord:
    return QueryRecord(id=id_, context="kb", type="knowledge", revision=REV, text=text)


def send(state: ContextState, upload: str, part: int, parts: int,
         records: tuple[QueryRecord, ...]) -> tuple[ContextState, list[Event]]:
    events = decide(c.PublishQueryIndex(actor=ADMIN, revision=REV, records=records,
                                        upload=UploadPart(upload, part, parts)), state, NOW)
    for event in events:
        state = evolve(state, event)
    return state, events


def test_the_last_missing_part_publishes_and_the_state_follows() -> None:
    state = _state()
    state, events = send(state, "u", 2, 2, (rec("b"),))
    assert [type(e) for e in events] == [QueryIndexPartStaged]
    assert state.upload is not None and state.upload.staged == (2,)
    assert state.index_revision is None
    state, events = send(state, "u", 1, 2, (rec("a"),))
    assert [type(e) for e in events] == [QueryIndexPartStaged, QueryIndexPublished]
    assert state.upload is None and state.index_revision == REV and state.index_upload == "u"
    assert send(state, "u", 1, 2, (rec("a"),))[1] == []


def test_a_single_body_above_the_split_size_becomes_parts_in_one_decision() -> None:
    records = tuple(rec(f"r{i}", "x" * 1000) for i in range(1200))
    events = decide(c.PublishQueryIndex(actor=ADMIN, revision=REV, records=records),
                    _state(), NOW)
    parts = [e for e in events if isinstance(e, QueryIndexPartStaged)]
    assert len(parts) == len(events) - 1 >= 2
    assert all(len(msgspec.json.encode(e)) <= SPLIT_BYTES + 1024 for e in parts)
    publication = events[-1]
    assert isinstance(publication, QueryIndexPublished)
    assert publication.records == () and publication.parts == len(parts)
    assert assemble(parts, publication) == records


def test_split_keeps_order_and_gives_an_oversized_record_its_own_run() -> None:
    records = [rec("a"), rec("big", "x" * (SPLIT_BYTES + 10)), rec("c"), rec("d")]
    assert split(records) == [(records[0],), (records[1],), (records[2], records[3])]
    huge = (rec("huge", "x" * MAX_EVENT_BYTES),)
    with pytest.raises(ContextInvalidError, match='query record "huge" is too large'):
        decide(c.PublishQueryIndex(actor=ADMIN, revision=REV, records=huge), _state(), NOW)


def test_assembly_needs_every_part() -> None:
    staged = StagedUpload()
    staged.apply(QueryIndexPartStaged(at=NOW, actor="a", revision=REV, upload_id="u", part=1,
                                      parts=2, records=(rec("a"),)))
    with pytest.raises(IncompleteUpload):
        staged.apply(QueryIndexPublished(at=NOW, actor="a", revision=REV, records=(),
                                         upload_id="u", parts=2))


def test_the_fold_yields_the_records_of_the_parts_decide_accepted() -> None:
    assert sum(_random_traffic(seed) for seed in range(150)) > 150


def _random_traffic(seed: int) -> int:
    """Random part traffic (re-sent parts, other uploads, replaced uploads, wrong counts): at
    every publication the fold over the log yields, in part order, the last accepted records of
    each part of the upload opened last."""
    rng = random.Random(seed)
    state = _state()
    folded = StagedUpload()
    open_id = ""
    open_parts: dict[int, tuple[QueryRecord, ...]] = {}
    publications = 0
    for step in range(40):
        upload = rng.choice(["u1", "u2", "u3"])
        parts = {"u1": 2, "u2": 3, "u3": rng.choice([1, 3])}[upload]
        part = rng.randint(1, parts)
        records = tuple(rec(f"{upload}-{part}-{step}-{k}") for k in range(rng.randrange(3)))
        try:
            state, events = send(state, upload, part, parts, records)
        except ContextInvalidError:
            continue
        for event in events:
            result = folded.apply(event)
            if isinstance(event, QueryIndexPartStaged):
                if upload != open_id:
                    open_id, open_parts = upload, {}
                open_parts[part] = records
            else:
                assert isinstance(event, QueryIndexPublished)
                assert result == tuple(r for k in sorted(open_parts) for r in open_parts[k])
                assert sorted(open_parts) == list(range(1, event.parts + 1))
                open_id, open_parts = "", {}
                publications += 1
    return publications


def test_a_late_part_of_an_upload_a_newer_one_replaced_is_refused() -> None:
    """A finished upload is replaced by the next publication as an open one is: a retry of its
    part arriving after a newer upload (or a single body) became current is refused, and never
    brings the older index back."""
    state, _ = send(_state(), "v", 1, 1, (rec("a"),))
    state, _ = send(state, "w", 1, 1, (rec("b"),))
    assert state.index_upload == "w"
    with pytest.raises(ContextInvalidError, match='upload "v" was replaced by a newer upload'):
        send(state, "v", 1, 1, (rec("a"),))
    assert send(state, "w", 1, 1, (rec("b"),))[1] == []  # the current one, sent again
    body = decide(c.PublishQueryIndex(actor=ADMIN, revision=REV, records=(rec("c"),)),
                  state, NOW)
    for event in body:
        state = evolve(state, event)
    with pytest.raises(ContextInvalidError, match='upload "w" was replaced by a newer upload'):
        send(state, "w", 1, 1, (rec("b"),))
