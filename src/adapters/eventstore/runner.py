"""The batched projection runner: each page of the log is applied to every projection of a
group, and their tracking rows advance in the same transaction (``synchronous_commit = off``),
only from the positions the rows hold (compare and set): a runner whose memory disagrees with
them (another instance moved them, a crash lost batches it had committed) changes nothing and
reads them again. When caught up it sleeps until the log head moves.

Events it cannot handle: an event of a type this version does not know (a newer version's,
during a rolling upgrade) is passed over, its position tracked like any other, and noted with
its type (``projection_passed_over``): a runner of a version that knows the type rebuilds that
projection from position zero as it catches up at start (``recover``). An event a
projection's handler raises on is isolated: the batch is applied again under savepoints, every
projection commits up to the event before the first one its handler fails on, and the failing
ones are held there (logged, counted, ``cs_projection_blocked``) and retried with the loop's
backoff; a known event is never skipped.

A rebuild from position zero (``rebuild``, ``recover``) is one transaction: other processes
reading the views (the API pods) see the old complete views until it commits, never empty or
half-built ones, and a rebuild failing on an event leaves the old views and positions."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

from eventsourcing.persistence import IntegrityError
from eventsourcing.postgres import PostgresTrackingRecorder
from psycopg.errors import LockNotAvailable

from context_service.adapters.eventstore.store import EventStore
from context_service.domain.events import UnknownEvent
from context_service.domain.registry import EVENTS
from context_service.domain.stream import Recorded
from context_service.projections.base import Projection

log = logging.getLogger(__name__)
ViewFactory = Callable[[Any], Any]
Progress = Callable[[int, int], None]
Gauge = tuple[str, str, dict[str, str], float]
RETRY_INITIAL, RETRY_MAX = 0.5, 5.0  # seconds between attempts at a failing batch (as the relay)
CANCEL_WAIT = 5.0  # seconds a stop waits for the server to cancel a stopped batch's statement
PASSED_OVER = "projection_passed_over"  # migration 0022
REBUILD_LOCK_WAIT = 60  # seconds a rebuild waits to lock its views against other writers


@dataclass(frozen=True)
class Held:
    """A projection held at the event its handler failed on."""

    projection: str
    position: int
    event: str  # the event's type
    error: Exception


class PoisonEventError(RuntimeError):
    """A projection's handler failed on an event: what came before it is committed, the
    projection waits at it."""

    def __init__(self, held: Sequence[Held]) -> None:
        super().__init__("; ".join(f"{h.projection} held at {h.position} ({h.event}): "
                                   f"{h.error!r}" for h in held))
        self.held = list(held)


class StoppedError(RuntimeError):
    """The runner was stopped while this batch ran: it is rolled back, not committed."""


class _HandlerError(Exception):
    """A projection's handler raised on its whole share of a batch (the batch is then applied
    again, isolating the event at fault)."""

    def __init__(self, projection: str, error: Exception) -> None:
        super().__init__(projection)
        self.projection, self.error = projection, error


class _ReplayError(Exception):
    """A handler raised during a rebuild's replay, on the page after ``after``."""

    def __init__(self, after: int, error: _HandlerError) -> None:
        super().__init__(error.projection)
        self.after, self.error = after, error


@dataclass
class _Outcome:
    """What a committed batch did: the position each projection reached, and the events of
    unknown types it passed over."""

    reached: dict[str, int] = field(default_factory=dict)
    passed: dict[str, list[Recorded]] = field(default_factory=dict)

    def passed_over(self) -> list[tuple[str, str, int, int, int]]:
        """Per projection and event type: the first and last position passed over, and how
        many (the rows of ``projection_passed_over``)."""
        seen: dict[tuple[str, str], list[int]] = {}
        for name, events in self.passed.items():
            for recorded in events:
                seen.setdefault((name, recorded.name), []).append(recorded.position)
        return [(name, kind, min(at), max(at), len(at)) for (name, kind), at in seen.items()]


@dataclass(frozen=True)
class PassedOver:
    """Events of one type a projection passed over while this version (or an older one) did
    not know the type."""

    projection: str
    event: str
    first: int
    last: int
    events: int


# applies a projection's share of a batch; returns where it stopped short (None: it did not)
Applier = Callable[[Any, Projection, Any, Sequence[Recorded]], "int | None"]


def _apply_all(cur: Any, projection: Projection, view: Any,
               todo: Sequence[Recorded]) -> int | None:
    try:
        projection.apply(view, todo)
    except LockNotAvailable:
        raise  # the batch waited past lock_timeout (a rebuild, a stuck session): not the event's
    except Exception as exc:
        raise _HandlerError(projection.name, exc) from exc
    return None


def _held_at(projection: Projection, bad: Recorded,
             error: Exception) -> tuple[int, Held]:
    """Where a projection stops (just before the event at fault) and why."""
    return bad.position - 1, Held(projection.name, bad.position, bad.name, error)


def _attempt(cur: Any, projection: Projection, view: Any,
             events: Sequence[Recorded]) -> Exception | None:
    """Apply ``events`` under a savepoint: kept when the handler succeeds, rolled back (and its
    error returned) when it raises."""
    cur.execute("SAVEPOINT isolate")
    try:
        projection.apply(view, events)
    except LockNotAvailable:
        raise  # no event is at fault: the whole batch is retried later
    except Exception as exc:
        cur.execute("ROLLBACK TO SAVEPOINT isolate")
        return exc
    cur.execute("RELEASE SAVEPOINT isolate")
    return None


def _fold(cur: Any, batch: Sequence[Recorded], apply: Applier,
          projections: Sequence[tuple[Projection, ViewFactory]],
          positions: dict[str, int]) -> _Outcome:
    """Each projection's share of the batch (after its own position, of known types only)
    given to ``apply``, which returns the position short of the batch's end the projection
    stops at, if any; what each reached, and the events of unknown types it passed over."""
    start, last = min(positions[p.name] for p, _ in projections), batch[-1].position
    outcome = _Outcome()
    for projection, view in projections:
        done = positions[projection.name]
        todo = batch if done <= start else [r for r in batch if r.position > done]
        if not todo:
            continue
        known = [r for r in todo if not isinstance(r.event, UnknownEvent)]
        stopped = apply(cur, projection, view(cur), known) if known else None
        reached = last if stopped is None else stopped
        outcome.reached[projection.name] = reached
        passed = [r for r in todo
                  if r.position <= reached and isinstance(r.event, UnknownEvent)]
        if passed:
            outcome.passed[projection.name] = passed
    return outcome


class Listener(Protocol):
    """An in-memory read model fed by the runner: ``applied`` after each committed batch
    (before waiters see the new position), ``reset`` whenever the runner re-reads its positions
    (another instance may have applied events it never saw)."""

    def applied(self, batch: Sequence[Recorded]) -> None: ...

    def reset(self) -> None: ...


class ProjectionRunner:
    def __init__(self, store: EventStore, tracking: PostgresTrackingRecorder,
                 projections: Sequence[tuple[Projection, ViewFactory]],
                 batch_size: int = 2000, linger: float = 0.008, busy: int = 4,
                 listeners: Sequence[Listener] = ()) -> None:
        self.store = store
        self.listeners = list(listeners)
        self.linger = linger
        self.busy = busy
        self.tracking = tracking
        self.projections = list(projections)
        self.batch_size = batch_size
        self.names = [p.name for p, _ in self.projections]
        self._positions: dict[str, int] = {}
        # a batch failed for a reason other than a handler (the database away, the tracking
        # moved): the positions may be ahead of the views (a crash loses the batches committed
        # asynchronously), so no read is told a position is reached until they are read again
        self._suspect = False
        self._changed = threading.Condition()
        self.refresh()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # held by a batch from its last statement until its connection is back in the pool, and
        # by a stop that timed out: no batch commits once its loop's stop is set
        self._fence = threading.Lock()
        self._batches: dict[threading.Event, Any] = {}  # a loop's stop -> its batch's connection
        self._held: dict[str, Held] = {}  # projection -> the event it waits at
        self._unrecovered: dict[str, Held] = {}  # projection -> the event its recovery failed on
        self._failures: Counter[str] = Counter()  # failed attempts at a held event
        self._unknown: Counter[str] = Counter()  # events of unknown types passed over
        self._unknown_types: set[str] = set()  # logged once each

    def refresh(self) -> None:
        """Read the tracked positions again (another instance may have moved them)."""
        with self._changed:
            self._positions = {n: self.tracking.max_tracking_id(n) or 0 for n in self.names}
            for listener in self.listeners:
                listener.reset()
            self._suspect = False
            self._changed.notify_all()

    @property
    def position(self) -> int:
        """The position every projection of the group has reached."""
        return min(self._positions.values())

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def position_of(self, name: str) -> int:
        return self._positions[name]

    def run_once(self, stop: threading.Event | None = None) -> int:
        """Apply the next page of the log; return the number of events read.
        ``PoisonEventError`` when a projection is held at an event its handler fails on."""
        batch = self.store.read(self.position, self.batch_size)
        if batch:
            self._apply(batch, stop)
        return len(batch)

    def _apply(self, batch: Sequence[Recorded], stop: threading.Event | None = None) -> None:
        """Apply one page (which starts right after ``position``) and advance the tracking:
        in one go or, when a handler raises (or one is held), range by range (``_isolate``)."""
        held: list[Held] = []
        failed: _HandlerError | None = None

        def isolating(cur: Any, projection: Projection, view: Any,
                      todo: Sequence[Recorded]) -> int | None:
            known = failed.error if failed and failed.projection == projection.name else None
            position, failure = self._isolate(cur, projection, view, todo, known)
            if failure is not None:
                held.append(failure)
            return position

        try:
            outcome = self._commit(batch, stop, isolating if self._held else _apply_all)
        except _HandlerError as exc:
            if stop is not None and stop.is_set():  # (the stop may have cancelled its statement)
                raise StoppedError("the runner was stopped: its batch is rolled back") from exc
            failed = exc
            outcome = self._commit(batch, stop, isolating)
        self._advance(batch, outcome, held)
        if held:
            raise PoisonEventError(held)

    def _commit(self, batch: Sequence[Recorded], stop: threading.Event | None,
                apply: Applier) -> _Outcome:
        """One transaction: the batch folded into the views (``_fold``), each projection's
        tracking row moved to where it got."""
        with self._transaction(stop) as cur:
            outcome = _fold(cur, batch, apply, self.projections, self._positions)
            self._note_passed_over(cur, outcome)
            self._track(cur, {n: p for n, p in outcome.reached.items()
                              if p > self._positions[n]})
        return outcome

    @staticmethod
    def _note_passed_over(cur: Any, outcome: _Outcome) -> None:
        """Note, with the positions, the events of unknown types each projection passed over."""
        rows = outcome.passed_over()
        if not rows:
            return
        names, kinds, first, last, count = (list(column) for column in zip(*rows, strict=True))
        cur.execute(
            f"INSERT INTO {PASSED_OVER} AS p (application_name, event_type, first_position,"
            " last_position, events)"
            " SELECT * FROM unnest(%b::text[], %b::text[], %b::int8[], %b::int8[], %b::int8[])"
            " ON CONFLICT (application_name, event_type) DO UPDATE SET"
            "  first_position = least(p.first_position, excluded.first_position),"
            "  last_position = greatest(p.last_position, excluded.last_position),"
            "  events = p.events + excluded.events",
            (names, kinds, first, last, count))

    def _isolate(self, cur: Any, projection: Projection, view: Any, todo: Sequence[Recorded],
                 failed: Exception | None) -> tuple[int | None, Held | None]:
        """Apply ``todo`` in ranges under savepoints, halving a range that fails, to find the
        first event the handler fails on once those before it are applied. Returns where the
        projection stops (just before that event; ``None``: at the batch's end) and why.
        ``failed``: the error of the whole ``todo`` (just seen, not tried again)."""
        done, size = 0, len(todo)
        held = self._held.get(projection.name)
        if held is not None and held.position == todo[0].position:
            size = 1  # the event it is held at, alone first: one call per retry while it fails
        elif failed is not None:
            if len(todo) == 1:
                return _held_at(projection, todo[0], failed)
            size = len(todo) // 2
        while done < len(todo):
            error = _attempt(cur, projection, view, todo[done:done + size])
            if error is None:
                done += size
                size = len(todo) - done  # the rest at once
            elif size > 1:
                size //= 2
            else:
                return _held_at(projection, todo[done], error)
        return None, None

    @contextlib.contextmanager
    def _transaction(self, stop: threading.Event | None) -> Iterator[Any]:
        """A batch's transaction, which commits only if ``stop`` is still clear: checked, and
        committed, under the fence a stop takes, so no batch commits once ``stop`` returned."""
        with contextlib.ExitStack() as fence, \
                self.store.datastore.transaction(commit=True) as cur:
            if stop is not None:
                self._batches[stop] = cur.connection
            try:
                cur.execute("SET LOCAL synchronous_commit = off")
                yield cur
            finally:
                fence.enter_context(self._fence)  # released once the connection is back
                if stop is not None:
                    del self._batches[stop]
            if stop is not None and stop.is_set():
                raise StoppedError("the runner was stopped: its batch is rolled back")

    def _advance(self, batch: Sequence[Recorded], outcome: _Outcome,
                 held: Sequence[Held]) -> None:
        """After a commit: tell the listeners about the events every projection has now
        applied, note who is held and what was passed over, move the positions on."""
        before = self.position
        positions = {n: max(p, outcome.reached.get(n, 0)) for n, p in self._positions.items()}
        after = min(positions.values())
        if after > before:
            applied = [r for r in batch if before < r.position <= after]
            for listener in self.listeners:
                listener.applied(applied)
        for failure in held:
            self._hold(failure)
        self._unknown.update({name: len(events) for name, events in outcome.passed.items()})
        self._note_unknown(batch)
        with self._changed:
            for name, position in positions.items():
                self._positions[name] = max(self._positions[name], position)
                held_at = self._held.get(name)
                if held_at is not None and held_at.position <= position:
                    del self._held[name]  # it applied the event it was held at
            self._changed.notify_all()

    def _hold(self, failure: Held) -> None:
        name = failure.projection
        before = self._held.get(name)
        first = before is None or before.position != failure.position
        self._held[name] = failure
        self._failures[name] += 1
        # the traceback once per event held at; then one line per attempt (the backoff's pace)
        log.error("projection %s is held at position %d (%s): %s", name, failure.position,
                  failure.event, failure.error, exc_info=failure.error if first else None,
                  extra={"projection": name, "position": failure.position,
                         "event_type": failure.event, "failures": self._failures[name]})

    def _note_unknown(self, batch: Sequence[Recorded]) -> None:
        for recorded in batch:
            if isinstance(recorded.event, UnknownEvent) \
                    and recorded.name not in self._unknown_types:
                self._unknown_types.add(recorded.name)
                log.warning("projections pass over events of type %s, unknown to this version "
                            "(first at position %d)", recorded.name, recorded.position,
                            extra={"projections": self.names, "event_type": recorded.name,
                                   "position": recorded.position})

    def _track(self, cur: Any, reached: dict[str, int]) -> None:
        """Advance each named projection's tracking row to the position it reached, in one
        statement, from exactly the position this runner applied it to: a row anywhere else
        (another instance moved it, or the database lost batches this runner remembers
        committing) fails the whole batch, and the runner reads its positions again."""
        if not reached:
            return
        table = self.tracking.tracking_table_name
        names = list(reached)
        expected = [self._positions[n] for n in names]
        cur.execute(
            f"WITH want(n, was, now) AS (SELECT * FROM unnest(%b::text[], %b::int8[],"
            " %b::int8[])),"
            f" moved AS (UPDATE {table} t SET notification_id = want.now FROM want"
            "  WHERE t.application_name = want.n AND t.notification_id = want.was"
            "  RETURNING t.application_name),"
            f" added AS (INSERT INTO {table} (application_name, notification_id)"
            "  SELECT n, now FROM want WHERE was = 0"
            "  ON CONFLICT (application_name) DO NOTHING RETURNING application_name)"
            " SELECT application_name FROM moved UNION ALL SELECT application_name FROM added",
            (names, expected, list(reached.values())))
        if len(cur.fetchall()) != len(names):
            raise IntegrityError(f"tracking of {names} is no longer at {expected}: "
                                 f"batch up to {max(reached.values())} refused")

    def gauges(self) -> list[Gauge]:
        """For /metrics: per projection, the event it is held at (0: none), the failed
        attempts at held events, and the events of unknown types passed over."""
        out: list[Gauge] = []
        for name in self.names:
            labels = {"projection": name}
            out += [
                ("cs_projection_blocked", "Position of the event the view is held at because "
                 "its handler fails on it (0 when none).", labels,
                 self.blocked.get(name, 0)),
                ("cs_projection_failures_total", "Failed attempts to apply an event the view "
                 "is held at.", labels, self._failures[name]),
                ("cs_projection_unknown_events_total", "Events of a type this version does "
                 "not know, passed over by the view.", labels, self._unknown[name])]
        return out

    def catch_up(self, progress: Progress | None = None) -> int:
        """Apply the log up to its current head, after rebuilding from position zero every
        projection that passed over events of a type this version knows (``recover``). The
        next page is read (and decoded) on another connection while this one is applied, so
        reading overlaps writing. Stops early at an event a projection's handler fails on
        (logged and counted; the loop retries it), so a worker still starts; ``blocked`` names
        who is held."""
        self._reread()
        head = self.store.head()
        total = 0
        with ThreadPoolExecutor(1, thread_name_prefix="prefetch") as pool:
            ahead = pool.submit(self.store.read, self.position, self.batch_size)
            while self.position < head:
                batch = ahead.result()
                if not batch:
                    break
                ahead = pool.submit(self.store.read, batch[-1].position, self.batch_size)
                try:
                    self._apply(batch)
                except PoisonEventError:
                    break
                total += len(batch)
                if progress is not None:
                    progress(self.position, head)
        return total

    @property
    def blocked(self) -> dict[str, int]:
        """Each projection held at an event its handler fails on, with that event's position
        (or whose recovery failed on it: its view stays as it was, ``recover``)."""
        held = {name: h.position for name, h in dict(self._unrecovered).items()}
        return held | {name: h.position for name, h in dict(self._held).items()}

    def rebuild(self, progress: Progress | None = None) -> int:
        """Rebuild every view of the runner from position zero, in one transaction: other
        connections read the old views until it commits (``_rebuild``). Returns the events
        replayed; ``PoisonEventError`` (the old views kept) when a handler fails on one."""
        return self._rebuild(self.names, progress)

    def passed_over(self) -> list[PassedOver]:
        """The events of unknown types this runner's projections passed over, per type (noted
        by every version since migration 0022; a rebuild forgets them)."""
        with self.store.datastore.transaction(commit=False) as cur:
            cur.execute(f"SELECT application_name, event_type, first_position, last_position,"
                        f" events FROM {PASSED_OVER} WHERE application_name = ANY(%s)"
                        " ORDER BY application_name, event_type", (self.names,))
            return [PassedOver(r["application_name"], r["event_type"], r["first_position"],
                               r["last_position"], r["events"]) for r in cur.fetchall()]

    def recover(self, stop: threading.Event | None = None) -> list[str]:
        """Rebuild from position zero (``_rebuild``, atomic for other readers) each projection
        that passed over events of a type this version knows (an older version, during a
        rolling upgrade, did not): its view lacks them, and its position is past them. Returns
        their names; ``PoisonEventError`` when a handler fails on an event (the views, their
        positions and notes are left as they were, so the recovery is tried again). Called as
        the runner catches up at start, under its worker's lock."""
        stale = [p for p in self.passed_over() if p.event in EVENTS]
        for p in stale:
            log.warning("projection %s passed over %d events of type %s (positions %d to %d) "
                        "that this version knows: it is rebuilt from position zero", p.projection,
                        p.events, p.event, p.first, p.last,
                        extra={"projection": p.projection, "event_type": p.event,
                               "events": p.events, "first_position": p.first,
                               "last_position": p.last})
        names = sorted({p.projection for p in stale})
        if names:
            self._rebuild(names, stop=stop)
        return names

    def _reread(self, stop: threading.Event | None = None) -> None:
        """Read the positions again, then rebuild what they passed over that this version knows
        (``recover``): another instance (an older version whose lock was just lost) may have
        moved them past such events, noting them in the same transaction, after this runner
        last looked at the notes. A recovery failing on an event leaves those views as they
        were (still going on with the log) and is tried again at the next reading."""
        self.refresh()
        try:
            self.recover(stop)
        except PoisonEventError as exc:
            self._unrecovered.clear()  # what fails now, not what was since done elsewhere
            for failure in exc.held:
                self._unrecovered[failure.projection] = failure
                self._failures[failure.projection] += 1
                log.error("projection %s is not rebuilt: its handler fails at position %d (%s): "
                          "%s; its view stays as it was", failure.projection, failure.position,
                          failure.event, failure.error, exc_info=failure.error,
                          extra={"projection": failure.projection,
                                 "position": failure.position, "event_type": failure.event,
                                 "failures": self._failures[failure.projection]})
        else:  # nothing is left to recover: rebuilt here, or by another instance
            self._unrecovered.clear()

    def _rebuild(self, names: Sequence[str], progress: Progress | None = None,
                 stop: threading.Event | None = None) -> int:
        """Rebuild these projections from position zero in ONE transaction (``_replay``), so
        that other connections (the API pods reading the same tables) see the old complete
        views until it commits, then the new ones, never empty or half-built ones, and wait
        for nothing. This process goes on reading the old views meanwhile: its positions, and
        its listeners, change only once the new views are committed. A handler failing on an
        event rolls everything back: ``PoisonEventError``, naming the event (``_diagnose``)."""
        try:
            total, reached, unknown = self._replay(names, progress, stop)
        except _ReplayError as exc:
            raise PoisonEventError(self._diagnose(names, exc, stop)) from exc.error
        with self._changed:
            self._positions.update(reached)
            for name in names:
                self._held.pop(name, None)
                self._unrecovered.pop(name, None)
            self._unknown.update(unknown)
            for listener in self.listeners:
                listener.reset()
            self._changed.notify_all()
        return total

    def _replay(self, names: Sequence[str], progress: Progress | None,
                stop: threading.Event | None,
                isolate_after: int | None = None) -> tuple[int, dict[str, int], Counter[str]]:
        """One transaction: the views' rows, tracking rows and notes deleted (DELETE, not
        TRUNCATE: readers keep their snapshot of the old rows instead of waiting for the
        transaction), the log up to its head replayed page by page (the next one read on
        another connection meanwhile, never the whole log in memory), the tracking rows put
        back at the end. No savepoint per page: a transaction that long with that many
        subtransactions would slow every other reader's snapshots. So a handler failing
        raises ``_ReplayError`` and the whole rebuild rolls back; ``isolate_after``: the
        position after which that page starts, applied range by range to find the event at
        fault (``_diagnose``), and then never committed. Returns the events replayed, the
        positions reached and the events of unknown types passed over, per projection."""
        chosen = [(p, v) for p, v in self.projections if p.name in names]
        positions = {p.name: 0 for p, _ in chosen}
        unknown: Counter[str] = Counter()
        head, total, position = self.store.head(), 0, 0
        with self._transaction(stop) as cur, \
                ThreadPoolExecutor(1, thread_name_prefix="prefetch") as pool:
            self._forget(cur, chosen)
            ahead = pool.submit(self.store.read, 0, self.batch_size)
            while position < head:
                batch = ahead.result()
                if not batch:
                    break
                ahead = pool.submit(self.store.read, batch[-1].position, self.batch_size)
                if stop is not None and stop.is_set():
                    raise StoppedError("the runner was stopped: its rebuild is rolled back")
                if position == isolate_after:
                    raise PoisonEventError(self._isolated(cur, batch, chosen, positions))
                try:
                    outcome = _fold(cur, batch, _apply_all, chosen, positions)
                except _HandlerError as exc:
                    raise _ReplayError(position, exc) from exc
                self._note_passed_over(cur, outcome)
                positions.update(outcome.reached)
                unknown.update({n: len(events) for n, events in outcome.passed.items()})
                self._note_unknown(batch)
                position = batch[-1].position
                total += len(batch)
                if progress is not None:
                    progress(position, head)
            if isolate_after is not None:  # the page did not fail this time: still no commit
                raise PoisonEventError([])
            self._put_back(cur, positions)
        return total, positions, unknown

    def _diagnose(self, names: Sequence[str], failed: _ReplayError,
                  stop: threading.Event | None) -> list[Held]:
        """The event a rebuild failed on, and who: the replay again up to the page that failed,
        that page range by range, then rolled back. Only a failed rebuild pays for it."""
        try:
            self._replay(names, None, stop, isolate_after=failed.after)
        except PoisonEventError as exc:
            if exc.held:
                return exc.held
        except _ReplayError as exc:  # failing earlier this time (a handler not deterministic)
            failed = exc
        # the page's first event stands for the one at fault, which could not be told apart
        first = failed.after + 1
        return [Held(failed.error.projection, first, "unknown", failed.error.error)]

    def _isolated(self, cur: Any, batch: Sequence[Recorded],
                  chosen: Sequence[tuple[Projection, ViewFactory]],
                  positions: dict[str, int]) -> list[Held]:
        """Apply the page a rebuild failed on range by range (``_isolate``): who is held where."""
        held: list[Held] = []

        def isolating(cur: Any, projection: Projection, view: Any,
                      todo: Sequence[Recorded]) -> int | None:
            position, failure = self._isolate(cur, projection, view, todo, None)
            if failure is not None:
                held.append(failure)
            return position

        _fold(cur, batch, isolating, chosen, positions)
        return held

    def _forget(self, cur: Any, chosen: Sequence[tuple[Projection, ViewFactory]]) -> None:
        """In a rebuild's transaction: delete these views' rows, tracking rows and notes. The
        tables are locked against writes first, all at once (EXCLUSIVE still lets reads in):
        another instance's batch gives up on the lock (its session's lock timeout) and is
        retried until the rebuild has committed, then finds its tracking moved and reads it
        again, instead of adding rows the rebuild's delete did not see."""
        tables = [table for projection, _ in chosen for table in projection.tables]
        if tables:  # a batch holds them for milliseconds; a session stuck holding them fails
            cur.execute(f"SET LOCAL lock_timeout = '{REBUILD_LOCK_WAIT}s'")  # the rebuild
            cur.execute(f"LOCK TABLE {', '.join(tables)} IN EXCLUSIVE MODE")
        for table in tables:
            cur.execute(f"DELETE FROM {table}")
        names = [projection.name for projection, _ in chosen]
        for table in (self.tracking.tracking_table_name, PASSED_OVER):
            cur.execute(f"DELETE FROM {table} WHERE application_name = ANY(%s)", (names,))

    def _put_back(self, cur: Any, positions: dict[str, int]) -> None:
        """In a rebuild's transaction: the tracking rows at the positions the replay reached."""
        reached = {name: position for name, position in positions.items() if position}
        if not reached:
            return
        table = self.tracking.tracking_table_name
        cur.execute(f"INSERT INTO {table} (application_name, notification_id)"
                    " SELECT * FROM unnest(%b::text[], %b::int8[])"
                    " ON CONFLICT (application_name) DO UPDATE"
                    " SET notification_id = excluded.notification_id",
                    (list(reached), list(reached.values())))

    def wait_for(self, position: int, timeout: float) -> bool:
        """Wait until every projection reached ``position``: False past ``timeout``, or as soon
        as the loop stops (at shutdown, or when another instance takes the views over): a
        stopped runner moves nothing, and a read that slept out its wait kept the process
        alive after its shutdown."""
        deadline = time.monotonic() + timeout
        stop = self._stop  # this loop's: a restarted runner is waited on afresh
        with self._changed:
            while self._suspect or self.position < position:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or stop.is_set():
                    return False
                self._changed.wait(remaining)
        return True

    # --- background loop ------------------------------------------------------------------------

    def start(self) -> None:
        # a stop event per loop: a loop that outlived its stop (a batch longer than the stop's
        # time-out) ends after that batch, and is never revived next to this one
        self._stop = stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, args=(stop,), daemon=True,
                                        name="projections-" + "+".join(self.names))
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the loop: wait up to ``timeout`` seconds for the batch under way to commit;
        past that, fence it off. It can no longer commit once this returns (a commit already
        under way is waited for), its statement is cancelled, and it rolls back as it ends;
        until then its transaction may still hold row locks, nothing more. Reads waiting for a
        position (``wait_for``) give up at once."""
        stop, thread = self._stop, self._thread
        stop.set()
        self.store.wake()
        with self._changed:  # reads waiting for a position give up (``wait_for``)
            self._changed.notify_all()
        if thread is None:
            return
        thread.join(timeout=timeout)
        if thread.is_alive():
            with self._fence:  # a commit under way ends first; the batch sees ``stop`` after
                connection = self._batches.get(stop)
                if connection is not None:
                    with contextlib.suppress(Exception):  # the statement may have just ended
                        connection.cancel_safe(timeout=CANCEL_WAIT)
            log.warning("projection batch still running after %.1fs: it is rolled back",
                        timeout, extra={"projections": self.names})
        self._thread = None

    def _loop(self, stop: threading.Event) -> None:
        failures = 0
        while not stop.is_set():
            try:
                read = self.run_once(stop)
                if self._suspect:  # the positions were not read again after the failure
                    self._reread(stop)
                failures = 0
                if read == 0:
                    self.store.wait_head(self.position, timeout=1.0, stop=stop)
                elif self.busy <= read < self.batch_size:
                    # a busy log: let the next batch fill a little (fewer, larger transactions)
                    stop.wait(self.linger)
            except Exception as exc:
                if stop.is_set():  # stopped mid-batch (rolled back), or the pool closed under it
                    return
                # a batch that keeps failing (an event a view cannot take, a database away) is
                # read and logged again after a pause that doubles up to RETRY_MAX, not twice a
                # second for ever
                pause = min(RETRY_INITIAL * 2 ** failures, RETRY_MAX)
                failures += 1
                if isinstance(exc, PoisonEventError):  # logged, with what precedes committed
                    stop.wait(pause)
                    continue
                with self._changed:
                    self._suspect = True
                log.exception("projection batch failed", extra={
                    "projections": self.names, "failures": failures, "retry_seconds": pause})
                stop.wait(pause)
                with contextlib.suppress(Exception):  # the database may still be away
                    self._reread(stop)
