"""A PostgreSQL that accepts connections and never answers (frozen, or a proxy in front of a dead
one): the connection a clone or GC opens for its turn across replicas gives up within the
pool's own connect bound (10 s, ``connect_timeout``) instead of holding the handler thread,
and this process's turn for that context with it, until the TCP stack gives up, or for ever
(libpq waits without a bound when none is given)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import psycopg
import pytest

from context_service.adapters.postgres.turns import AdvisoryTurns
from tests.support.turns import take_turn

pytestmark = pytest.mark.slow  # waits out the connect bound
CONNECT_BOUND = 10.0  # the database pool's connect_timeout (src/adapters/postgres/database.py)
MARGIN = 10.0


@pytest.fixture
def frozen() -> Iterator[int]:
    """A port whose listener completes TCP handshakes (the kernel does) and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()


def test_a_turn_on_a_frozen_database_gives_up_within_the_connect_bound(frozen: int) -> None:
    turns = AdvisoryTurns(f"postgresql://cs:secret@127.0.0.1:{frozen}/cs")
    thread, outcome = take_turn(turns, "ns", "notes")
    thread.join(CONNECT_BOUND + MARGIN)
    assert not thread.is_alive(), "the turn waited on a frozen database without a bound"
    assert isinstance(outcome.get("error"), psycopg.OperationalError), outcome
