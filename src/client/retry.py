"""When to try a request again: only after 429 and 503, waiting what ``Retry-After`` says or
else an exponential backoff with jitter, a bounded number of times."""

from __future__ import annotations

import random
from dataclasses import dataclass

RETRIED = frozenset({429, 503})


@dataclass(frozen=True, slots=True)
class Retry:
    """``attempts`` in all (1: never retry); a ``Retry-After`` longer than ``max_wait`` is not
    waited for (the error is raised at once)."""

    attempts: int = 4
    backoff: float = 0.25
    max_wait: float = 30.0

    def wait(self, status: int, attempt: int, retry_after: float | None) -> float | None:
        """Seconds to wait before attempt ``attempt + 1`` after an answer ``status``; ``None``
        when the request is not tried again."""
        if status not in RETRIED or attempt + 1 >= self.attempts:
            return None
        if retry_after is not None:
            return retry_after if retry_after <= self.max_wait else None
        return min(self.max_wait, self.backoff * 2.0 ** attempt * (0.5 + random.random() / 2))
