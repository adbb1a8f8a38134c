"""A turn across replicas (src/adapters/postgres/turns.py) is a lock another session holds, like
the event table's: its wait is bounded by ``CS_LOCK_WAIT_SECONDS`` (docs/operations.md, Hung
dependencies; decision 0056). A replica frozen inside its turn (a paused container, a partition
that leaves its session open on the server for the TCP keep-alive's two hours) or a forgotten
session holding the key held every clone and GC of that context on every other replica, each
with its handler thread and its connection, for as long as that session lived."""

from __future__ import annotations

import time

import psycopg
import pytest

from context_service.adapters.postgres.database import LOCK_TIMEOUT_SECONDS
from context_service.adapters.postgres.lock import lock_key
from context_service.adapters.postgres.turns import AdvisoryTurns
from tests.support.turns import take_turn

pytestmark = pytest.mark.postgres
MARGIN = 10.0  # beyond the bound: a slow machine, never a turn that waits for good


def test_a_turn_held_by_a_stuck_session_gives_up_within_the_lock_wait(
        database_url: str) -> None:
    key = lock_key("lifecycle-source/ns/notes")
    with psycopg.connect(database_url, autocommit=True) as stuck:
        stuck.execute("SELECT pg_advisory_lock(%s)", (key,))  # and never gives it back
        thread, outcome = take_turn(AdvisoryTurns(database_url), "ns", "notes")
        thread.join(LOCK_TIMEOUT_SECONDS + MARGIN)
        waited_on = thread.is_alive()
    thread.join(MARGIN)  # the stuck session is gone: a turn still waiting has it now
    assert not waited_on, "the turn waited for the stuck session for as long as it lived"
    assert isinstance(outcome.get("error"), psycopg.errors.LockNotAvailable), outcome
    assert outcome["seconds"] >= LOCK_TIMEOUT_SECONDS - 0.5  # it did wait its bound


def test_a_turn_waits_only_for_its_own_context_and_is_given_after_a_short_hold(
        database_url: str) -> None:
    """The bound only ends a wait that lasts: a turn held a moment is handed over."""
    with AdvisoryTurns(database_url)("ns", "notes"):
        thread, outcome = take_turn(AdvisoryTurns(database_url), "ns", "notes")
        time.sleep(0.5)
        assert "got" not in outcome
    thread.join(MARGIN)
    assert outcome.get("got") is True, outcome
