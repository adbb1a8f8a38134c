"""The live contexts of a namespace as the context_catalog view lists them, kept in memory for
the agent routes, whose access checks (agent-context-api §3.4) read them once when a request
starts and again at its release check.

Fed like the access directory: while this process's projection runner maintains the catalog, a
namespace's listing is read from the view once and kept until a committed batch holds an event
of any context. The runner tells the listing before waiters see the batch's position, so a read
that waited for the catalog never gets a listing older than the view. A read of the view that
overlapped such a batch is not kept (it may predate the batch). When another process maintains
the catalog, every call reads the view.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Protocol

from context_service.domain.context.state import ContextState
from context_service.domain.events import Subject
from context_service.domain.stream import Recorded

CONTEXT = "context"  # the stream kind whose events change the catalog


class CatalogListReads(Protocol):
    def list(self, namespace: str, subject: Subject | None) -> Sequence[ContextState]: ...


class CatalogListing:
    def __init__(self, reads: CatalogListReads, live: Callable[[], bool],
                 size: int = 1024) -> None:
        self.reads = reads
        self.live = live  # True while the local runner keeps the catalog (and this) current
        self._size = size
        self._lock = threading.Lock()
        self._generation = 0
        self._namespaces: OrderedDict[str, tuple[ContextState, ...]] = OrderedDict()

    def live_contexts(self, namespace: str) -> tuple[ContextState, ...]:
        """Every live context of the namespace, by name (``ContextReads.list`` without a
        subject)."""
        if not self.live():
            return tuple(self.reads.list(namespace, None))
        with self._lock:
            found = self._namespaces.get(namespace)
            generation = self._generation
            if found is not None:
                self._namespaces.move_to_end(namespace)
                return found
        loaded = tuple(self.reads.list(namespace, None))
        with self._lock:
            if generation == self._generation:
                self._namespaces[namespace] = loaded
                while len(self._namespaces) > self._size:
                    self._namespaces.popitem(last=False)
        return loaded

    # --- fed by the projection runner -----------------------------------------------------------

    def reset(self) -> None:
        """Forget everything (the runner re-read its positions: others may have moved them)."""
        with self._lock:
            self._generation += 1
            self._namespaces.clear()

    def applied(self, batch: Sequence[Recorded]) -> None:
        """A batch the runner committed: any event of a context forgets every listing."""
        if any(r.stream.kind == CONTEXT for r in batch):
            self.reset()
