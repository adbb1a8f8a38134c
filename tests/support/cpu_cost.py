"""A piece of work's cost in CPU time, for the cost tests' ratios (never wall-clock limits)."""

from __future__ import annotations

import time
from collections.abc import Callable


def least_cpu(work: Callable[[], object], runs: int = 3) -> float:
    """The least CPU time of ``runs`` calls on this thread (background threads not counted)."""
    best = float("inf")
    for _ in range(runs):
        started = time.thread_time()
        work()
        best = min(best, time.thread_time() - started)
    return best
