"""Group commit: concurrent appends share transactions; a conflict fails only its own writer."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import pytest
from eventsourcing.persistence import IntegrityError, StoredEvent

from context_service.adapters.eventstore.groupcommit import GroupCommit


class Log:
    """An in-memory insert with the store's rules: one (stream, version) once, positions in
    commit order, every insert of a transaction or none."""

    def __init__(self, delay: float = 0.0) -> None:
        self.rows: list[tuple[uuid.UUID, int]] = []
        self.transactions: list[int] = []
        self.delay = delay
        self.gate = threading.Event()
        self.gate.set()

    def insert(self, events: Sequence[StoredEvent]) -> list[int]:
        self.gate.wait(5)
        keys = [(e.originator_id, e.originator_version) for e in events]
        if len(set(keys)) != len(keys) or set(keys) & set(self.rows):
            raise IntegrityError("duplicate")
        self.rows.extend(keys)
        self.transactions.append(len(events))
        return list(range(len(self.rows) - len(keys) + 1, len(self.rows) + 1))


def event(stream: uuid.UUID, version: int) -> StoredEvent:
    return StoredEvent(originator_id=stream, originator_version=version, topic="t", state=b"{}")


def test_positions_follow_the_log_and_belong_to_each_writer() -> None:
    log = Log()
    group = GroupCommit(log.insert)
    a, b = uuid.uuid4(), uuid.uuid4()
    assert group.append([event(a, 1), event(a, 2)]) == [1, 2]
    assert group.append([event(b, 1)]) == [3]
    group.close()


def test_writers_that_arrive_while_a_transaction_runs_share_the_next_one() -> None:
    log = Log()
    group = GroupCommit(log.insert)
    log.gate.clear()  # hold the first transaction open
    first = group.submit([event(uuid.uuid4(), 1)])
    waiting = [group.submit([event(uuid.uuid4(), 1)]) for _ in range(10)]
    log.gate.set()
    positions = sorted(p for f in [first, *waiting] for p in f.result(5))
    assert positions == list(range(1, 12))
    assert sum(log.transactions) == 11
    assert len(log.transactions) <= 2  # the held one, then everything queued behind it
    group.close()


def test_a_conflict_in_a_shared_batch_fails_only_the_conflicting_writer() -> None:
    log = Log()
    group = GroupCommit(log.insert)
    taken = uuid.uuid4()
    group.append([event(taken, 1)])
    log.gate.clear()
    blocker = group.submit([event(uuid.uuid4(), 1)])
    good = [group.submit([event(uuid.uuid4(), 1)]) for _ in range(5)]
    bad = group.submit([event(taken, 1)])
    log.gate.set()
    blocker.result(5)
    assert all(len(f.result(5)) == 1 for f in good)
    with pytest.raises(IntegrityError):
        bad.result(5)
    assert len(log.rows) == 7
    group.close()


def test_a_failed_transaction_reaches_every_writer_of_it() -> None:
    def broken(events: Sequence[StoredEvent]) -> list[int]:
        raise ConnectionError("database away")

    group = GroupCommit(broken)
    with pytest.raises(ConnectionError):
        group.append([event(uuid.uuid4(), 1)])
    group.close()


def test_many_threads_lose_nothing() -> None:
    log = Log()
    group = GroupCommit(log.insert)
    streams = [uuid.uuid4() for _ in range(16)]

    def write(i: int) -> list[int]:
        return group.append([event(streams[i % 16], i // 16 + 1)])

    with ThreadPoolExecutor(16) as pool:
        positions = [p for ps in pool.map(write, range(400)) for p in ps]
    assert sorted(positions) == list(range(1, 401))
    assert group.requests == 400 and group.batches <= 400
    group.close()


def test_an_event_loop_awaits_without_a_thread_of_its_own() -> None:
    log = Log()
    group = GroupCommit(log.insert)

    async def main() -> list[list[int]]:
        futures = [asyncio.wrap_future(group.submit([event(uuid.uuid4(), 1)]))
                   for _ in range(20)]
        return list(await asyncio.gather(*futures))

    results = asyncio.run(main())
    assert sorted(p for r in results for p in r) == list(range(1, 21))
    group.close()


def test_close_commits_what_is_queued_and_refuses_more() -> None:
    log = Log()
    group = GroupCommit(log.insert)
    log.gate.clear()
    queued = [group.submit([event(uuid.uuid4(), 1)]) for _ in range(3)]
    closing = threading.Thread(target=group.close)
    closing.start()
    log.gate.set()
    closing.join(5)
    assert all(f.result(1) for f in queued)
    with pytest.raises(RuntimeError, match="closed"):
        group.submit([event(uuid.uuid4(), 1)])
