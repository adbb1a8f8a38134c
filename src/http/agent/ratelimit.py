"""Token buckets held in this process's memory: one per credential (agent-context-api.md §1.6)
and one per client address for failed authentications. Capacity ``burst``, refilled at ``rate``
per second, full when first used; a refused request takes nothing; ``rate == 0`` turns a limit
off. Both tables are bounded in count: the least recently used bucket is dropped first."""

from __future__ import annotations

import ipaddress
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

Gauge = tuple[str, str, dict[str, str], float]


class TokenBuckets:
    """Buckets by key, at most ``capacity`` of them (LRU). Dropping a bucket forgets its debt;
    one idle for ``burst / rate`` seconds is full again anyway, the same as none."""

    def __init__(self, rate: float, burst: int, capacity: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.burst = burst
        self.capacity = capacity
        self.clock = clock
        self.refused = 0
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # (tokens, at)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._buckets)

    def _tokens(self, key: str, now: float) -> float:
        tokens, at = self._buckets.get(key, (float(self.burst), now))
        return min(float(self.burst), tokens + (now - at) * self.rate)

    def _store(self, key: str, tokens: float, now: float) -> None:
        self._buckets[key] = (tokens, now)
        self._buckets.move_to_end(key)
        while len(self._buckets) > self.capacity:
            self._buckets.popitem(last=False)

    def _wait(self, tokens: float) -> int:
        return max(1, math.ceil((1.0 - tokens) / self.rate))

    def take(self, key: str) -> int:
        """Take one token for ``key``; 0 when granted, else the seconds to wait (at least 1)."""
        if self.rate <= 0:
            return 0
        now = self.clock()
        with self._lock:
            tokens = self._tokens(key, now)
            if tokens >= 1.0:
                self._store(key, tokens - 1.0, now)
                return 0
            self._store(key, tokens, now)
            self.refused += 1
        return self._wait(tokens)

    def wait(self, key: str) -> int:
        """0 when ``key`` holds at least one token, else the seconds to wait; takes nothing and
        keeps no bucket for a key that has none."""
        if self.rate <= 0:
            return 0
        now = self.clock()
        with self._lock:
            if key not in self._buckets:
                return 0
            tokens = self._tokens(key, now)
            if tokens >= 1.0:
                return 0
            self.refused += 1
        return self._wait(tokens)


class RateLimiter(TokenBuckets):
    """The per-credential limit of §1.6 (``CS_AGENT_RATE_PER_SECOND``, ``CS_AGENT_RATE_BURST``);
    keyed by credentials that passed authentication, so bounded by the credentials there are."""

    def __init__(self, rate: float, burst: int,
                 clock: Callable[[], float] = time.monotonic, capacity: int = 65536) -> None:
        super().__init__(rate, burst, capacity, clock)

    def gauges(self) -> list[Gauge]:
        return [("cs_agent_rate_buckets", "Credentials with a rate-limit bucket in memory.", {},
                 len(self)),
                ("cs_agent_rate_refusals_total", "Agent requests refused by the per-credential"
                 " rate limit.", {}, self.refused)]


class AuthFailures(TokenBuckets):
    """Failed authentications per client address (``CS_AUTH_FAILURE_BURST``, refilled at
    ``CS_AUTH_FAILURE_PER_SECOND``): each failure takes a token; an address without one is
    refused before its credential is looked at. Only addresses that failed hold a bucket."""

    def __init__(self, rate: float, burst: int,
                 clock: Callable[[], float] = time.monotonic, capacity: int = 16384) -> None:
        super().__init__(rate, burst, capacity, clock)

    def refusal(self, address: str) -> int:
        """0 when ``address`` may try to authenticate, else the seconds to wait."""
        return self.wait(address_key(address))

    def failed(self, address: str) -> None:
        self.take(address_key(address))

    def gauges(self) -> list[Gauge]:
        return [("cs_auth_failure_buckets", "Client addresses with a failed-authentication"
                 " bucket in memory.", {}, len(self)),
                ("cs_auth_failure_refusals_total", "Agent requests refused because their client"
                 " address failed to authenticate too often.", {}, self.refused)]


def address_key(host: str) -> str:
    """The bucket of a client address: an IPv6 address counts as its /64 (one host usually
    holds the whole prefix), anything else as itself."""
    try:
        parsed = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.IPv6Network((parsed, 64), strict=False))
    return str(parsed)
