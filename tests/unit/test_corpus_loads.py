"""The corpus loader computes one load at a time, whoever leads it: a load is Python holding
the interpreter's lock, so two side by side finish no sooner and make every other request of
the process wait longer. And the service gives that lock up sooner than Python's default."""

from __future__ import annotations

import contextlib
import sys
import threading
import time

import pytest

from context_service import cli
from context_service.adapters.pack.corpus import CorpusLoader, Turns
from context_service.domain.pack.model import CollectionAt


def index(name: str, publication: int) -> CollectionAt:
    return CollectionAt(name=name, live=True, type="knowledge", current_revision="r",
                        index_revision="r", publication=publication)


def test_two_loads_of_different_indexes_compute_one_after_the_other(
        monkeypatch: pytest.MonkeyPatch) -> None:
    loader = CorpusLoader(None, len)  # type: ignore[arg-type]  # no load reaches the database
    entered: dict[str, threading.Event] = {"a": threading.Event(), "b": threading.Event()}
    release = threading.Event()

    def load(collection: CollectionAt) -> object:
        entered[collection.name].set()
        release.wait(30)
        raise LookupError(collection.name)

    monkeypatch.setattr(loader, "_load", load)
    errors: list[BaseException] = []

    def ask(collection: CollectionAt) -> None:
        try:
            loader.cached(collection)
        except LookupError as exc:
            errors.append(exc)

    first = threading.Thread(target=ask, args=(index("a", 10),))
    first.start()
    assert entered["a"].wait(10)
    second = threading.Thread(target=ask, args=(index("b", 20),))
    second.start()
    # the second load is a different publication (its own flight), yet it does not start
    # computing while the first one does
    assert not entered["b"].wait(0.3)
    release.set()
    first.join(10)
    assert entered["b"].wait(10)
    second.join(10)
    assert [str(e) for e in errors] == ["a", "b"] and not loader._flights


def test_the_service_hands_the_interpreter_on_within_a_millisecond() -> None:
    before = sys.getswitchinterval()
    try:
        cli._share_the_interpreter()
        assert sys.getswitchinterval() == pytest.approx(0.001)
        assert before > cli.SWITCH_INTERVAL  # Python's default is 5 ms
    finally:
        sys.setswitchinterval(before)


def test_a_load_someone_waits_for_goes_before_the_warmers_next(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """While one load computes, the warmer's next load and an asker's load wait: the asker's
    goes first, though it came last (else a pack after a start would wait for every current
    index the warmer has still to load)."""
    loader = CorpusLoader(None, len)  # type: ignore[arg-type]
    order: list[str] = []
    first_in, release = threading.Event(), threading.Event()

    def load(collection: CollectionAt) -> object:
        order.append(collection.name)
        if collection.name == "first":
            first_in.set()
            release.wait(30)
        raise LookupError(collection.name)

    monkeypatch.setattr(loader, "_load", load)

    def ask(name: str, publication: int, warming: bool) -> threading.Thread:
        def run() -> None:
            with contextlib.suppress(LookupError):
                loader.cached(index(name, publication), warming=warming)
        thread = threading.Thread(target=run)
        thread.start()
        return thread

    threads = [ask("first", 1, True)]
    assert first_in.wait(10)
    # warmer loads wait for their turn before and after the asker's (however the waiters
    # are woken, first or last come, the asker's is neither)
    for name, publication, warming in (("warming 1", 2, True), ("warming 2", 3, True),
                                       ("asked", 4, False), ("warming 3", 5, True)):
        threads.append(ask(name, publication, warming))
        time.sleep(0.1)
    release.set()
    for thread in threads:
        thread.join(10)
    assert order[:2] == ["first", "asked"] and len(order) == 5


def test_turns_hand_over_one_at_a_time_and_urgent_first() -> None:
    turns = Turns()
    inside: list[int] = []
    most = [0]
    lock = threading.Lock()

    def hold(urgent: bool) -> None:
        with turns.turn(urgent):
            with lock:
                inside.append(1)
                most[0] = max(most[0], len(inside))
            time.sleep(0.002)
            with lock:
                inside.pop()

    threads = [threading.Thread(target=hold, args=(i % 3 == 0,)) for i in range(30)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert most[0] == 1 and not inside
