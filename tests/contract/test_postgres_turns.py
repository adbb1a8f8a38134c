"""Turns across API replicas (src/adapters/postgres/turns.py) against the suite's PostgreSQL:
two replicas are two ``AdvisoryTurns`` with connections of their own. A clone of a context and
a GC of it wait for each other's turn (spec 6.6 step 4); other contexts' turns do not."""

from __future__ import annotations

import threading

import psycopg

from context_service.adapters.postgres.turns import AdvisoryTurns

WAIT = 10.0  # only so that a turn never given fails the test instead of hanging it


def _second_turn(turns: AdvisoryTurns, namespace: str, context: str,
                 started: list[threading.Thread] | None = None) -> threading.Event:
    """Takes the turn on a thread (added to ``started``); the event is set once it has it."""
    got = threading.Event()

    def take() -> None:
        with turns(namespace, context):
            got.set()

    thread = threading.Thread(target=take, daemon=True)
    thread.start()
    if started is not None:
        started.append(thread)
    return got


def test_a_replica_waits_for_another_replicas_turn_on_the_same_context(database_url: str) -> None:
    one, two = AdvisoryTurns(database_url), AdvisoryTurns(database_url)
    with one("ns", "notes"):
        waiting = _second_turn(two, "ns", "notes")
        assert not waiting.wait(0.5), "two replicas held one context's turn at once"
        other = _second_turn(two, "ns", "other")
        assert other.wait(WAIT), "another context's turn waited too"
    assert waiting.wait(WAIT), "the turn was never handed over"


def test_a_turn_ends_with_its_connection_even_when_its_work_fails(database_url: str) -> None:
    """The work inside a turn raises: the turn is given back (its connection closed), and no
    connection of the turn's is left open."""
    turns = AdvisoryTurns(database_url)
    try:
        with turns("ns", "notes"):
            raise RuntimeError("the clone failed")
    except RuntimeError:
        pass
    started: list[threading.Thread] = []
    assert _second_turn(AdvisoryTurns(database_url), "ns", "notes", started).wait(WAIT)
    started[0].join(WAIT)
    with psycopg.connect(database_url) as conn:
        held = conn.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
                            " AND database = (SELECT oid FROM pg_database"
                            " WHERE datname = current_database())").fetchone()
    assert held == (0,)
