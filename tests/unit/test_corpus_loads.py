"""The corpus loader computes one load at a time, whoever leads it: a load is Python holding
the interpreter's lock, so two side by side finish no sooner and make every other request of
the process wait longer. And the service gives that lock up sooner than Python's default."""

from __future__ import annotations

import sys
import threading

import pytest

from context_service import cli
from context_service.adapters.pack.corpus import CorpusLoader
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
