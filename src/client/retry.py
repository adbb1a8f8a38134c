"""When to send a request again: only when it was not applied, or applying it again changes
nothing. A ``429`` (refused before anything was done), a ``503`` with ``Retry-After`` (the
service's own: it did nothing), a ``503`` without it to a read, a connection never made;
waiting what ``Retry-After`` says or else an exponential backoff with jitter, a bounded number
of times."""

from __future__ import annotations

import random
from dataclasses import dataclass

# 2 ** 64 times any backoff is past every max_wait: a larger exponent only overflows a float
_MAX_DOUBLINGS = 64


@dataclass(frozen=True, slots=True)
class Retry:
    """``attempts`` in all (1: never retry); a ``Retry-After`` longer than ``max_wait`` is not
    waited for (the error is raised at once)."""

    attempts: int = 4
    backoff: float = 0.25
    max_wait: float = 30.0

    def wait(self, status: int, attempt: int, retry_after: float | None,
             read: bool = False) -> float | None:
        """Seconds to wait before attempt ``attempt + 1`` after an answer ``status``; ``None``
        when the request is not tried again. ``read``: the request changes nothing (a bare
        ``503``, perhaps a proxy's after the service applied the request, is safe for it)."""
        if not _unapplied(status, retry_after, read) or attempt + 1 >= self.attempts:
            return None
        if retry_after is not None:
            return retry_after if retry_after <= self.max_wait else None
        return self._backoff(attempt)

    def unsent(self, attempt: int) -> float | None:
        """Seconds to wait before attempt ``attempt + 1`` after a try that sent nothing (the
        connection was refused); ``None`` once the attempts are spent."""
        return None if attempt + 1 >= self.attempts else self._backoff(attempt)

    def _backoff(self, attempt: int) -> float:
        doubled = self.backoff * 2.0 ** min(attempt, _MAX_DOUBLINGS)
        return min(self.max_wait, doubled * (0.5 + random.random() / 2))


def _unapplied(status: int, retry_after: float | None, read: bool) -> bool:
    if status == 429:
        return True
    return status == 503 and (retry_after is not None or read)
