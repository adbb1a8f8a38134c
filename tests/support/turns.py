"""A clone's or GC's turn across replicas taken on a thread, for tests of how long it waits."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg

from context_service.adapters.postgres.turns import AdvisoryTurns


def take_turn(turns: AdvisoryTurns, namespace: str, context: str
              ) -> tuple[threading.Thread, dict[str, Any]]:
    """Takes the turn on a thread (started); ``outcome`` says how it ended (``got``, or the
    ``error`` raised) and after how many ``seconds``."""
    outcome: dict[str, Any] = {}

    def take() -> None:
        started = time.monotonic()
        try:
            with turns(namespace, context):
                outcome["got"] = True
        except psycopg.Error as exc:
            outcome["error"] = exc
        outcome["seconds"] = time.monotonic() - started

    thread = threading.Thread(target=take, daemon=True)
    thread.start()
    return thread, outcome
