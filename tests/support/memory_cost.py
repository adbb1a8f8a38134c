"""A piece of work's cost in memory, for the cost tests' ratios (a peak at N against 10N)."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable


def peak_memory(work: Callable[[], object]) -> int:
    """The most memory ``work`` had allocated at once beyond what it started with (Python
    allocations of every thread, traced)."""
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        work()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - before
