"""A connection pool that hands out the session put back last (issue 12): a backend that has
just served a run is still warm (its process scheduled, its caches hot), while the least
recently used one of a rotating pool costs ~0.4 ms more per run. Everything else, the return
step included, is ``psycopg_pool``'s own: a session enters the stack only after its reset.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from psycopg_pool import ConnectionPool


class _Stack(deque[Any]):
    """The pool's store of ready sessions, taken from the end they were put back at (the pool
    takes with ``popleft`` and puts back with ``append``; the closing of idle sessions, which
    also takes with ``popleft``, then closes the newest one, which is just as idle)."""

    def popleft(self) -> Any:
        return self.pop()


class LifoPool(ConnectionPool[Any]):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # psycopg_pool keeps its ready sessions in a deque: without one the pool stays FIFO,
        # slower but correct (``tests/security/test_template_pool_order.py`` notices)
        if type(self._pool) is deque:
            self._pool = _Stack(self._pool)
