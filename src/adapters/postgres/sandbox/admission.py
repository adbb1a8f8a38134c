"""Admission of template runs (issue 24): runs never occupy the service. At most ``service_wide``
runs hold a request thread at once, at most ``per_workspace`` of them for one workspace; a run
beyond either is refused at once (``503`` with ``Retry-After``) instead of queueing in a thread,
and an admitted run waits for a session only ``wait_seconds``.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass

# the request handlers' thread pool (``http/common.py``); runs may hold a quarter of it
HANDLER_THREADS = 40
THREAD_SHARE = 4


@dataclass(frozen=True)
class RunLimits:
    sessions: int  # CS_AGENT_QUERY_CONNECTIONS
    wait_seconds: float  # CS_AGENT_QUERY_WAIT_SECONDS
    per_workspace: int  # CS_AGENT_QUERY_PER_WORKSPACE

    @property
    def service_wide(self) -> int:
        """Runs at once: no more than the sessions, nor than a fixed share of the threads."""
        return max(1, min(self.sessions, HANDLER_THREADS // THREAD_SHARE))


class Admission:
    """Counters of the runs under way, service-wide and per workspace."""

    def __init__(self, limits: RunLimits) -> None:
        self.limits = limits
        self._lock = threading.Lock()
        self._total = 0
        self._by_workspace: Counter[str] = Counter()

    def enter(self, workspace: str) -> bool:
        """Admit a run of ``workspace`` now, or refuse it (never waits)."""
        with self._lock:
            if self._total >= self.limits.service_wide \
                    or self._by_workspace[workspace] >= self.limits.per_workspace:
                return False
            self._total += 1
            self._by_workspace[workspace] += 1
            return True

    def leave(self, workspace: str) -> None:
        with self._lock:
            self._total -= 1
            self._by_workspace[workspace] -= 1
            if self._by_workspace[workspace] <= 0:
                del self._by_workspace[workspace]  # nothing kept for an idle workspace

    @property
    def running(self) -> int:
        with self._lock:
            return self._total
