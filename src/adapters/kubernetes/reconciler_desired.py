"""Desired state for the reconciler: every recorded context and pool, folded from the log.

Start-up reads the ``context_catalog`` and ``pool_status`` documents (the same folded states)
together with each view's tracking position in one snapshot, then follows the log from there, so
desired state never waits for the projections and a rebuild in progress only means reading more
of the log. Deleted contexts and released pools stay: they may still own cluster objects.
"""

from __future__ import annotations

import msgspec

from context_service.adapters.eventstore.store import EventStore
from context_service.domain.context.events import ClaimObserved, PodConsumersObserved
from context_service.domain.context.state import ContextState
from context_service.domain.context.state import evolve as context_evolve
from context_service.domain.pool.events import SandboxPoolObserved
from context_service.domain.pool.state import PoolState
from context_service.domain.pool.state import evolve as pool_evolve
from context_service.domain.stream import Recorded

TRACKING_TABLE = "projection_tracking"
CATALOG, POOLS = "context_catalog", "pool_status"
OBSERVATIONS = (ClaimObserved, PodConsumersObserved, SandboxPoolObserved)
Key = tuple[str, ...]  # ("pool", name) or ("context", namespace, name)

_context = msgspec.json.Decoder(ContextState)
_pool = msgspec.json.Decoder(PoolState)


class LogDesired:
    """Folded context and pool states, advanced from the log on demand (one thread)."""

    def __init__(self, store: EventStore, page: int = 2000) -> None:
        self.store = store
        self.page = page
        self.contexts: dict[tuple[str, str], ContextState] = {}
        self.pools: dict[str, PoolState] = {}
        self.position = 0  # everything up to here is folded in
        self._from = {"context": 0, "pool": 0}  # the snapshot already holds events up to these

    def load(self) -> None:
        """Take the views' snapshot (consistent with their tracking positions)."""
        with self.store.datastore.transaction(commit=False) as cur:
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            cur.execute(f"SELECT application_name AS name, max(notification_id) AS position"
                        f" FROM {TRACKING_TABLE} WHERE application_name IN (%s, %s)"
                        f" GROUP BY application_name", (CATALOG, POOLS))
            tracked = {r["name"]: r["position"] or 0 for r in cur.fetchall()}
            cur.execute("SELECT doc::text AS doc FROM context_catalog")
            contexts = [_context.decode(r["doc"]) for r in cur.fetchall()]
            cur.execute("SELECT doc::text AS doc FROM pool_status")
            pools = [_pool.decode(r["doc"]) for r in cur.fetchall()]
        self.contexts = {(c.namespace, c.name): c for c in contexts}
        self.pools = {p.name: p for p in pools}
        self._from = {"context": tracked.get(CATALOG, 0), "pool": tracked.get(POOLS, 0)}
        if not tracked.get(CATALOG):
            self.contexts = {}
        if not tracked.get(POOLS):
            self.pools = {}
        self.position = min(self._from.values())

    def advance(self) -> set[Key]:
        """Fold in what the log gained; answers the items whose desired state may have changed
        (observations recorded by the reconciler itself change nothing it wants)."""
        changed: set[Key] = set()
        while True:
            batch = self.store.read(self.position, self.page)
            for recorded in batch:
                key = self._apply(recorded)
                if key is not None:
                    changed.add(key)
            if not batch:
                return changed
            self.position = batch[-1].position

    def _apply(self, recorded: Recorded) -> Key | None:
        stream, event = recorded.stream, recorded.event
        if stream.kind not in self._from or recorded.position <= self._from[stream.kind]:
            return None
        wanted = not isinstance(event, OBSERVATIONS)
        if stream.kind == "pool":
            self.pools[stream.key] = pool_evolve(self.pools.get(stream.key, PoolState()), event)
            return ("pool", stream.key) if wanted else None
        key = (stream.namespace, stream.key)
        self.contexts[key] = context_evolve(self.contexts.get(key, ContextState()), event)
        return ("context", stream.namespace, stream.key) if wanted else None

    def namespaces(self, default: str) -> set[str]:
        """Every namespace holding a recorded context or pool."""
        found = {ns for ns, _ in self.contexts}
        found |= {p.namespace or default for p in self.pools.values()}
        return found
