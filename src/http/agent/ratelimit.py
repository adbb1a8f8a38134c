"""Per-credential token buckets held in this process's memory (agent-context-api.md §1.6):
capacity ``burst``, refilled continuously at ``rate`` per second, full when first used. A refused
request takes nothing; ``rate == 0`` turns the limit off."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable


class RateLimiter:
    def __init__(self, rate: float, burst: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.burst = burst
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, at)
        self._lock = threading.Lock()

    def take(self, key: str) -> int:
        """Take one token for ``key``; 0 when granted, else the seconds to wait (at least 1)."""
        if self.rate <= 0:
            return 0
        now = self.clock()
        with self._lock:
            tokens, at = self._buckets.get(key, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - at) * self.rate)
            if tokens >= 1.0:
                self._buckets[key] = (tokens - 1.0, now)
                return 0
            self._buckets[key] = (tokens, now)
        return max(1, math.ceil((1.0 - tokens) / self.rate))
