"""Waits that a shutdown must end (real PostgreSQL). A read waiting for an in-process projection
runner to reach its position is woken when the runner stops, and answers as a read that cannot
catch up does (``503``, retry shortly) instead of sleeping out its whole read wait, which kept the
process alive after ``shutdown complete``. A blocking write whose transaction waits for the event
table's lock when the drain abandons its request is cancelled on the server: it never commits
after the request was answered ``503``, in process or served."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, cast

import httpx
import psycopg
import pytest

from context_service import bootstrap
from context_service.adapters.eventstore.consistency import LogConsistency
from context_service.adapters.eventstore.runner import ProjectionRunner
from context_service.domain.context.commands import CreateContext
from context_service.domain.events import Subject
from context_service.domain.stream import context_stream
from context_service.http.common import wait_for_views
from context_service.http.errors import HttpError
from context_service.stop_signals import RequestAbandoned, abandonable
from tests.e2e.server import ServerProcess
from tests.support.event_table import mentions, waiting_for_the_lock

OWNER = Subject("user", "owner")
FOREVER = 3600.0  # a read wait no test outlives: only the runner's stop can end it
BOUND = 30.0  # how long a test waits for the waiter before it calls it stuck


def create(container: bootstrap.Container, name: str) -> int:
    return container.contexts.execute("team", name, CreateContext(
        actor=OWNER, name=name, namespace="team", type="memory", backend="pvc", size="1Gi",
        access_mode="ReadWriteOnce", storage_class="")).position


def started(container: bootstrap.Container) -> ProjectionRunner:
    """The runner of the views most reads wait for, caught up and running."""
    runner = container.runners["projections"]
    runner.catch_up()
    runner.start()
    return runner


def in_background(call: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    """``call`` in a thread; its outcome (result or exception) lands in the list."""
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(call())
        except Exception as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def waiting(runner: ProjectionRunner, *threads: threading.Thread) -> None:
    """Until each of ``threads`` waits on the runner's condition (it found the runner running),
    or one of them already returned (the assertions that follow tell)."""
    condition = cast(Any, runner._changed)
    pause = threading.Event()
    while len(condition._waiters) < len(threads) and all(t.is_alive() for t in threads):
        pause.wait(0.005)


def test_a_read_waiting_for_a_runner_is_woken_when_it_stops(
        idle_container: bootstrap.Container) -> None:
    """A read waits for a position the view has not reached (a write the view will never see
    applied here); the runner stops, as at shutdown: the read gives up at once with the answer
    of a view that cannot catch up."""
    runner = started(idle_container)
    consistency = LogConsistency(idle_container.store, idle_container.tracking,
                                 idle_container.view_runners())
    beyond = idle_container.store.head() + 1
    thread, outcome = in_background(lambda: consistency.wait(runner.names, FOREVER, beyond))
    waiting(runner, thread)
    runner.stop()
    thread.join(BOUND)
    assert outcome == [False]


def test_the_read_answers_503_retry_shortly(idle_container: bootstrap.Container) -> None:
    """The HTTP side of a woken read: the documented answer of a read that cannot catch up."""
    runner = started(idle_container)
    consistency = LogConsistency(idle_container.store, idle_container.tracking,
                                 idle_container.view_runners())
    request = SimpleNamespace(app=SimpleNamespace(state=SimpleNamespace(services=SimpleNamespace(
        consistency=consistency, read_wait_seconds=FOREVER))))
    beyond = idle_container.store.head() + 1
    thread, outcome = in_background(
        lambda: wait_for_views(cast(Any, request), runner.names, beyond))
    waiting(runner, thread)
    runner.stop()
    thread.join(BOUND)
    [error] = outcome
    assert isinstance(error, HttpError)
    assert (error.status, error.code, error.message) == (
        503, "unavailable", "the read model has not caught up with the event log; retry shortly")


def test_every_waiter_is_woken_and_a_restarted_runner_is_waited_on_again(
        idle_container: bootstrap.Container) -> None:
    """Two reads wait; one stop wakes both. The runner started again (its worker regained the
    lock) is waited on as before: a read waiting for the next write sees it applied."""
    runner = started(idle_container)
    beyond = idle_container.store.head() + 1
    waiters = [in_background(lambda: runner.wait_for(beyond, FOREVER)) for _ in range(2)]
    waiting(runner, *(thread for thread, _ in waiters))
    runner.stop()
    for thread, _ in waiters:
        thread.join(BOUND)
    assert [outcome for _, outcome in waiters] == [[False], [False]]

    runner.start()
    try:
        head = idle_container.store.head()
        thread, outcome = in_background(lambda: runner.wait_for(head + 1, FOREVER))
        waiting(runner, thread)
        position = create(idle_container, "after-restart")
        thread.join(BOUND)
        assert outcome == [True]
        assert runner.position >= position
    finally:
        runner.stop()


@pytest.fixture(autouse=True)
def _runners_stopped(idle_container: bootstrap.Container) -> Any:
    """A test that fails half-way leaves no runner loop behind."""
    yield
    for runner in idle_container.runners.values():
        runner.stop()


@pytest.fixture
def appends_blocked(database_url: str) -> Any:
    """A transaction holding the event table's append lock (the mode ``cs_append_events``
    takes): appends wait for it, reads of the log do not, until the test rolls it back."""
    with psycopg.connect(database_url) as blocker:
        blocker.execute("LOCK TABLE stored_events IN EXCLUSIVE MODE")
        yield blocker
        blocker.rollback()


def logged(container: bootstrap.Container, name: str) -> int:
    return len(container.store.load(context_stream("team", name)))


def test_a_blocking_write_abandoned_while_its_transaction_waits_is_cancelled(
        idle_container: bootstrap.Container, database_url: str,
        appends_blocked: psycopg.Connection[object]) -> None:
    """A handler thread's create waits in its append transaction for the table lock; the drain
    answers its request 503 and abandons it: the transaction is cancelled (the thread is told
    so at once), nothing of it is in the log once the lock goes, and the next write on the
    pool commits as usual (the cancel reached no other statement)."""
    answered = threading.Event()

    def handler() -> object:
        with abandonable(answered.is_set):
            return create(idle_container, "abandoned")

    thread, outcome = in_background(handler)
    pause = threading.Event()
    while not waiting_for_the_lock(database_url) and thread.is_alive():
        pause.wait(0.01)
    answered.set()  # the drain's 503
    thread.join(BOUND)
    [refused] = outcome
    assert isinstance(refused, RequestAbandoned)
    appends_blocked.rollback()  # the lock goes: a transaction still running would commit now
    create(idle_container, "after")
    assert (logged(idle_container, "abandoned"), logged(idle_container, "after")) == (0, 1)


@pytest.mark.e2e
def test_a_served_write_answered_503_at_shutdown_is_cancelled_not_committed(
        serve: ServerProcess, database_url: str,
        appends_blocked: psycopg.Connection[object]) -> None:
    """SIGTERM while a member change (a handler thread's write) waits in its transaction for the
    table lock: past the grace it is answered 503, its transaction stops waiting (cancelled on
    the server) before the lock goes, and it is never in the log."""
    appends_blocked.rollback()  # free while the service starts and alice becomes owner
    serve.env["CS_SHUTDOWN_GRACE"] = "1"
    serve.start()
    admin = {"X-Context-Subject": "service:context-service-admin"}
    with serve.client() as http:
        assert http.put("/v1/namespaces/e2e/members", headers=admin, json={
            "subject": {"kind": "user", "name": "alice"}, "role": "owner"}).status_code == 200
    appends_blocked.execute("LOCK TABLE stored_events IN EXCLUSIVE MODE")

    def change() -> httpx.Response:
        with httpx.Client(base_url=serve.url, timeout=60) as http:
            return http.put("/v1/namespaces/e2e/members", headers=admin, json={
                "subject": {"kind": "user", "name": "abandoned-bob"}, "role": "owner"})

    thread, outcome = in_background(change)
    pause = threading.Event()
    while not waiting_for_the_lock(database_url) and thread.is_alive():
        pause.wait(0.02)
    assert serve.proc is not None
    serve.proc.send_signal(signal.SIGTERM)
    thread.join(BOUND)
    [answer] = outcome
    assert isinstance(answer, httpx.Response) and answer.status_code == 503, answer
    # a cancelled transaction stops waiting at once; one that is not waits until the lock goes
    # (and keeps the process alive): after a bound the test goes on and the log tells
    gives_up = time.monotonic() + 5.0
    while waiting_for_the_lock(database_url) and time.monotonic() < gives_up:
        pause.wait(0.02)
    appends_blocked.rollback()  # the lock goes: a transaction still waiting would commit now
    assert serve.proc.wait(BOUND) == 0, serve.log_text()[-3000:]
    assert (mentions(database_url, "alice"), mentions(database_url, "abandoned-bob")) == (1, 0)
