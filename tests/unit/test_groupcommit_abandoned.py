"""The thread group commit and writers whose request the drain abandoned (answered ``503 ...
retry against another instance``) while their transaction ran: a transaction every writer of which
was abandoned is cancelled on the server (they are told ``RequestAbandoned``, nothing written);
one a writer still waits for commits, for all of its writers; and a cancel never reaches the
pooled connection's next statement."""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence

import pytest
from eventsourcing.persistence import OperationalError, StoredEvent

from context_service.adapters.eventstore.groupcommit import GroupCommit
from context_service.stop_signals import RequestAbandoned

BOUND = 30.0  # how long a test waits for a thread before it calls it stuck


class Backend:
    """A pooled connection's server side, with PostgreSQL's rule for a cancel request: it
    cancels the statement running when it arrives, and is dropped when none runs."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self.running: str | None = None
        self.finished: set[str] = set()  # statements allowed to end (their lock went)
        self.cancelled: list[str] = []  # statements a cancel reached
        self.done: list[str] = []  # statements that completed
        self.ending = False  # every statement may end (the test is over)

    def execute(self, statement: str) -> None:
        with self._changed:
            self.running = statement
            self._changed.notify_all()
            ended = self._changed.wait_for(
                lambda: self.ending or statement in self.finished or statement in self.cancelled,
                BOUND)
            self.running = None
            self._changed.notify_all()
            if statement in self.cancelled:
                raise OperationalError("canceling statement due to user request")
            assert ended, f"{statement} never allowed to end"
            self.done.append(statement)

    def cancel_safe(self, *, timeout: float = 30.0) -> None:
        with self._changed:
            if self.running is not None:
                self.cancelled.append(self.running)
                self._changed.notify_all()

    def finish(self, statement: str) -> None:
        with self._changed:
            self.finished.add(statement)
            self._changed.notify_all()

    def end_all(self) -> None:
        with self._changed:
            self.ending = True
            self._changed.notify_all()

    def until_running(self, statement: str) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: self.running == statement, BOUND)


class Pool:
    """One connection, lent to one user at a time."""

    def __init__(self) -> None:
        self.backend = Backend()
        self._free = threading.Lock()

    @contextlib.contextmanager
    def connection(self) -> Iterator[Backend]:
        with self._free:
            yield self.backend


class Log:
    """The store's insert over the pool, as the event store makes it: the statement runs on a
    connection the group commit knows (``running_on``), so it can cancel it. ``after`` runs once
    the connection is back in the pool, before the insert returns."""

    def __init__(self, pool: Pool) -> None:
        self.pool = pool
        self.group = GroupCommit(self.insert)
        self.rows: list[str] = []
        self.before: Callable[[], None] = lambda: None
        self.after: Callable[[], None] = lambda: None

    def insert(self, events: Sequence[StoredEvent]) -> list[int]:
        statement = statement_of(events)
        self.before()
        with self.group.running_on(self.pool.connection()) as connection:
            connection.execute(statement)
        self.rows.extend(e.topic for e in events)
        self.after()
        return list(range(len(self.rows) - len(events) + 1, len(self.rows) + 1))


def event(name: str) -> StoredEvent:
    return StoredEvent(originator_id=uuid.uuid4(), originator_version=1, topic=name, state=b"{}")


def statement_of(events: Sequence[StoredEvent]) -> str:
    return "+".join(e.topic for e in events)


class Writer:
    """A handler thread appending; ``abandon()`` is the drain answering its request."""

    def __init__(self, group: GroupCommit, name: str) -> None:
        self._abandoned = False
        self._looked = threading.Condition()
        self.looks = 0  # how often the append asked, once abandoned
        self.outcome: list[object] = []
        self.thread = threading.Thread(target=self._run, args=(group, name), daemon=True)
        self.thread.start()

    def _run(self, group: GroupCommit, name: str) -> None:
        try:
            self.outcome.append(group.append([event(name)], self._is_abandoned))
        except Exception as exc:
            self.outcome.append(exc)

    def _is_abandoned(self) -> bool:
        with self._looked:
            self.looks += self._abandoned
            self._looked.notify_all()
            return self._abandoned

    def abandon(self) -> None:
        with self._looked:
            self._abandoned = True

    def until_looked(self, times: int) -> None:
        """Until the append asked ``times`` times whether its request was abandoned (and got
        yes): what it does about it between two looks is done by then."""
        with self._looked:
            assert self._looked.wait_for(lambda: self.looks >= times, BOUND)

    def result(self) -> object:
        self.thread.join(BOUND)
        assert not self.thread.is_alive(), "the writer still waits"
        [outcome] = self.outcome
        return outcome


@pytest.fixture
def log() -> Iterator[Log]:
    built = Log(Pool())
    yield built
    built.pool.backend.end_all()  # a failed test leaves nothing waiting
    built.group.close()


def test_a_transaction_whose_only_writer_was_abandoned_is_cancelled(log: Log) -> None:
    """Its statement waits (for the table lock, say) when the drain abandons the request: the
    writer stops waiting, the statement is cancelled, nothing is written."""
    writer = Writer(log.group, "abandoned")
    log.pool.backend.until_running("abandoned")
    writer.abandon()
    assert isinstance(writer.result(), RequestAbandoned)
    assert set(log.pool.backend.cancelled) == {"abandoned"}
    log.group.close()
    assert (log.pool.backend.done, log.rows) == ([], [])


def test_a_transaction_a_writer_still_waits_for_commits(log: Log) -> None:
    """Two writers share the transaction; one is abandoned: the transaction is not cancelled
    under the other, and both are told what it did (their positions)."""
    backend = log.pool.backend
    first = Writer(log.group, "first")
    backend.until_running("first")  # holds the committer: the next two share a transaction
    queued, pause = lambda: len(log.group._queue), threading.Event()
    abandoned = Writer(log.group, "abandoned")
    while queued() < 1:  # queued first: the shared statement is "abandoned+waiting" (two
        pause.wait(0.005)  # threads started at once may queue in either order on a busy machine)
    waiting = Writer(log.group, "waiting")
    while queued() < 2:  # both wait behind "first", to be taken at once
        pause.wait(0.005)
    backend.finish("first")
    backend.until_running("abandoned+waiting")
    abandoned.abandon()
    abandoned.until_looked(3)
    backend.finish("abandoned+waiting")
    assert (abandoned.result(), waiting.result()) == ([2], [3])
    assert first.result() == [1]
    assert backend.cancelled == []
    assert log.rows == ["first", "abandoned", "waiting"]


def test_a_writer_abandoned_before_its_statement_starts_is_never_sent(log: Log) -> None:
    """Abandoned after its transaction was taken from the queue, before its statement was
    sent: there is nothing to cancel yet, and the statement is never sent."""
    taken, go = threading.Event(), threading.Event()

    def hold() -> None:
        taken.set()
        assert go.wait(BOUND)

    log.before = hold
    writer = Writer(log.group, "abandoned")
    assert taken.wait(BOUND)
    writer.abandon()
    writer.until_looked(3)
    go.set()
    assert isinstance(writer.result(), RequestAbandoned)
    log.group.close()
    assert (log.pool.backend.done, log.pool.backend.cancelled, log.rows) == ([], [], [])


def test_a_cancel_never_reaches_the_next_statement_on_the_connection(log: Log) -> None:
    """The writer is abandoned once its statement ended and the connection went back to the
    pool, where another user already runs a statement on it: that statement is not cancelled,
    and the writer is told its positions (its transaction committed)."""
    backend = log.pool.backend
    returned, go = threading.Event(), threading.Event()

    def hold() -> None:
        returned.set()
        assert go.wait(BOUND)

    log.after = hold
    writer = Writer(log.group, "written")
    backend.finish("written")
    assert returned.wait(BOUND)
    with log.pool.connection() as connection:  # the pool's next user
        other = threading.Thread(target=connection.execute, args=("next",), daemon=True)
        other.start()
        backend.until_running("next")
        writer.abandon()
        writer.until_looked(3)
        backend.finish("next")
        other.join(BOUND)
    go.set()
    assert writer.result() == [1]
    assert backend.cancelled == []
    assert backend.done == ["written", "next"]
