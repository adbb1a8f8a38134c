"""The corpus loader computes one load at a time, whoever leads it: a load is Python holding
the interpreter's lock, so two side by side finish no sooner and make every other request of
the process wait longer. Loads take their turns in the order they came, those someone waits
for before the warmer's; an asker leading a load with a deadline does not wait for its turn
past it. And the service gives the interpreter's lock up sooner than Python's default."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable

import pytest

from context_service import cli
from context_service.adapters.pack.corpus import CorpusLoader, Ticket, Turns
from context_service.domain.pack.model import CollectionAt


def index(name: str, publication: int) -> CollectionAt:
    return CollectionAt(name=name, live=True, type="knowledge", current_revision="r",
                        index_revision="r", publication=publication)


class Loads:
    """A loader whose reads return at once and whose computations are recorded, the first
    one held until ``release``; every load then fails (nothing needs a real corpus)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.loader = CorpusLoader(None, len)  # type: ignore[arg-type]  # reads no database
        self.order: list[str] = []
        self.computing = 0
        self.most = 0
        self.first_in, self.release = threading.Event(), threading.Event()
        self.threads: list[threading.Thread] = []
        monkeypatch.setattr(self.loader, "_load", lambda collection: None)
        monkeypatch.setattr(self.loader, "_build", self.build)

    def build(self, collection: CollectionAt, _: object) -> object:
        self.order.append(collection.name)
        self.computing += 1
        self.most = max(self.most, self.computing)
        try:
            if len(self.order) == 1:
                self.first_in.set()
                self.release.wait(30)
            raise LookupError(collection.name)
        finally:
            self.computing -= 1

    def ask(self, name: str, publication: int, warming: bool = False,
            until: Callable[[], float | None] = lambda: None) -> None:
        def run() -> None:
            with contextlib.suppress(LookupError):
                self.loader.cached(index(name, publication), until(), warming=warming)
        thread = threading.Thread(target=run)
        thread.start()
        self.threads.append(thread)

    def waiting(self, count: int) -> None:
        """Until ``count`` loads wait for their turn."""
        for _ in range(1000):
            if len(self.loader._computing._waiting) == count:
                return
            time.sleep(0.005)
        raise AssertionError(f"{len(self.loader._computing._waiting)} waiting, not {count}")

    def finish(self) -> list[str]:
        self.release.set()
        for thread in self.threads:
            thread.join(10)
        assert not self.loader._flights and not self.loader._tickets
        return self.order


def test_two_loads_of_different_indexes_compute_one_after_the_other(
        monkeypatch: pytest.MonkeyPatch) -> None:
    loads = Loads(monkeypatch)
    loads.ask("a", 10)
    assert loads.first_in.wait(10)
    loads.ask("b", 20)  # a different publication (its own flight), yet it waits
    loads.waiting(1)
    assert loads.order == ["a"]
    assert loads.finish() == ["a", "b"] and loads.most == 1


def test_a_load_someone_waits_for_goes_before_the_warmers_next(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The warmer's loads wait before and after an asker's; the asker's goes first, and the
    warmer's keep their order (else a pack after a start would wait for every current index
    the warmer has still to load)."""
    loads = Loads(monkeypatch)
    loads.ask("first", 1, warming=True)
    assert loads.first_in.wait(10)
    for n, (name, warming) in enumerate((("warming 1", True), ("warming 2", True),
                                         ("asked", False), ("warming 3", True))):
        loads.ask(name, n + 2, warming)
        loads.waiting(n + 1)
    assert loads.finish() == ["first", "asked", "warming 1", "warming 2", "warming 3"]


def test_loads_asked_for_take_their_turns_in_the_order_they_came(
        monkeypatch: pytest.MonkeyPatch) -> None:
    loads = Loads(monkeypatch)
    loads.ask("first", 1)
    assert loads.first_in.wait(10)
    for n, name in enumerate(("q", "r", "s")):
        loads.ask(name, n + 2)
        loads.waiting(n + 1)
    assert loads.finish() == ["first", "q", "r", "s"]


def test_an_asker_joining_the_warmers_load_makes_it_urgent(
        monkeypatch: pytest.MonkeyPatch) -> None:
    loads = Loads(monkeypatch)
    loads.ask("first", 1)
    assert loads.first_in.wait(10)
    loads.ask("warmed", 2, warming=True)
    loads.waiting(1)
    loads.ask("asked", 3)
    loads.waiting(2)
    loads.ask("warmed", 2)  # a pack needing the index the warmer is about to load
    for _ in range(1000):  # it joins that load and makes it urgent
        if loads.loader._tickets[2].urgent:
            break
        time.sleep(0.005)
    assert loads.finish() == ["first", "warmed", "asked"]


def test_an_asker_leading_a_load_itself_waits_for_its_turn_no_longer_than_its_deadline(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An older position's index (or one too large to keep) is loaded by its asker: with a
    deadline, it computes once the deadline has passed, turn or not (it would otherwise wait
    for a load of a minute; refused, it would be refused at every try)."""
    loads = Loads(monkeypatch)
    loads.loader.retain([], seen=100)  # position 50, not listed: not current
    loads.ask("warming", 200, warming=True)
    assert loads.first_in.wait(10)
    started = time.monotonic()
    with pytest.raises(LookupError):
        loads.loader.cached(index("old", 50), until=time.monotonic() + 0.2)
    assert time.monotonic() - started < 5 and loads.order == ["warming", "old"]
    assert loads.most == 2  # beside the load holding the turn
    loads.finish()


def test_turns_hand_over_one_at_a_time() -> None:
    turns = Turns()
    inside: list[int] = []
    most = [0]
    lock = threading.Lock()

    def hold(urgent: bool) -> None:
        with turns.turn(Ticket(urgent)) as held:
            assert held
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
    assert most[0] == 1 and not inside and not turns._waiting and not turns._busy


def test_a_turn_given_up_at_its_deadline_is_not_held() -> None:
    turns = Turns()
    with turns.turn(Ticket(True)) as first, \
            turns.turn(Ticket(True), until=time.monotonic() + 0.05) as second:
        assert first and not second
    assert not turns._busy and not turns._waiting
    with turns.turn(Ticket(False), until=time.monotonic()) as free:
        assert free  # nobody holds it: a deadline already past still gets it


def test_the_service_hands_the_interpreter_on_within_a_millisecond() -> None:
    before = sys.getswitchinterval()
    try:
        cli._share_the_interpreter()
        assert sys.getswitchinterval() == pytest.approx(0.001)
        assert before > cli.SWITCH_INTERVAL  # Python's default is 5 ms
    finally:
        sys.setswitchinterval(before)


def test_loads_behind_callers_run_on_one_kept_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not a thread per load: those spread the loads' allocations over the allocator's
    per-thread arenas, and the process grew with every round of publications."""
    loader = CorpusLoader(None, len)  # type: ignore[arg-type]
    loader.retain([], seen=0)  # every index published after the warmer's list: current
    threads: list[int] = []

    def build(collection: CollectionAt, _: object) -> object:
        threads.append(threading.get_ident())
        raise LookupError(collection.name)

    monkeypatch.setattr(loader, "_load", lambda collection: None)
    monkeypatch.setattr(loader, "_build", build)
    for publication in (1, 2, 3):
        with pytest.raises(LookupError):  # loaded behind the asker, its failure shared
            loader.cached(index(f"i{publication}", publication), until=time.monotonic() + 10)
    assert len(threads) == 3 and len(set(threads)) == 1
    assert threading.get_ident() not in threads
    for _ in range(1000):
        if not loader._background:
            break
        time.sleep(0.005)
    assert loader._background == 0 and not loader._flights and not loader._tickets
