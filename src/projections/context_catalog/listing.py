"""The live contexts of a namespace as the context_catalog view lists them, kept in memory for
the agent routes, whose access checks (agent-context-api §3.4) read them once when a request
starts and again at its release check.

Fed like the access directory: while this process's projection runner maintains the catalog, a
namespace's listing is read from the view once and kept until a committed batch holds an event
of any context. The runner tells the listing before waiters see the batch's position, so a read
that waited for the catalog never gets a listing older than the view. A read of the view that
overlapped such a batch is not kept (it may predate the batch). When another process maintains
the catalog, every call reads the view. The listings are bounded in estimated bytes (and in
namespaces), least recently used out first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import NamedTuple, Protocol

import msgspec

from context_service.domain.bounded import BoundedCache, Gauge, MiB
from context_service.domain.context.state import ContextState
from context_service.domain.events import Subject
from context_service.domain.stream import Recorded

CONTEXT = "context"  # the stream kind whose events change the catalog
LIMIT_BYTES = 64 * MiB
# a listed state's Python objects beyond twice its encoded length (measured, rounded up)
STATE_OVERHEAD = 600
_encode = msgspec.json.Encoder().encode


class Listed(NamedTuple):
    """A namespace's live contexts agents may read, and the names of those they may not."""

    states: tuple[ContextState, ...]
    refused: frozenset[str]


def listing_bytes(_: str, listed: Listed) -> int:
    """An estimate of what a namespace's listing holds."""
    return 64 + sum(STATE_OVERHEAD + 2 * len(_encode(s)) for s in listed.states) \
        + sum(64 + len(name) for name in listed.refused)


class CatalogListReads(Protocol):
    def list(self, namespace: str, subject: Subject | None) -> Sequence[ContextState]: ...

    def refused(self, namespace: str) -> frozenset[str]: ...


class CatalogListing:
    def __init__(self, reads: CatalogListReads, live: Callable[[], bool],
                 size: int = 1024, limit_bytes: int = LIMIT_BYTES) -> None:
        self.reads = reads
        self.live = live  # True while the local runner keeps the catalog (and this) current
        self._lock = threading.Lock()
        self._generation = 0
        self._namespaces: BoundedCache[str, Listed] = BoundedCache(
            "catalog_listing", limit_bytes, listing_bytes, max_entries=size)

    def live_contexts(self, namespace: str) -> tuple[ContextState, ...]:
        """Every live context of the namespace that agents may read, by name."""
        return self.listed(namespace).states

    def listed(self, namespace: str) -> Listed:
        """The namespace's live contexts agents may read and the names of those they may not."""
        if not self.live():
            return self._read(namespace)
        with self._lock:
            found = self._namespaces.get(namespace)
            generation = self._generation
            if found is not None:
                return found
        loaded = self._read(namespace)
        with self._lock:
            if generation == self._generation:
                self._namespaces.keep(namespace, loaded)
        return loaded

    def _read(self, namespace: str) -> Listed:
        return Listed(tuple(self.reads.list(namespace, None)), self.reads.refused(namespace))

    def gauges(self) -> list[Gauge]:
        return self._namespaces.gauges()

    # --- fed by the projection runner -----------------------------------------------------------

    def reset(self) -> None:
        """Forget everything (the runner re-read its positions: others may have moved them)."""
        with self._lock:
            self._generation += 1
            self._namespaces.clear()

    def applied(self, batch: Sequence[Recorded]) -> None:
        """A batch the runner committed: any event of a context forgets every listing, and so
        does any of a context set (a set version admits collections, §3.4 rule 5)."""
        if any(r.stream.kind in (CONTEXT, "context_set") for r in batch):
            self.reset()
