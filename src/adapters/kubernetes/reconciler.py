"""The Kubernetes reconciler worker: level-triggered convergence of the cluster on the log.

It is active only while it holds the PostgreSQL advisory lock ``worker:reconciler`` (a standby
instance takes over when the holder dies). While active it folds desired state from the log and
runs passes (``reconciler_pass``) for what changed: items whose recorded state changed, items a
watch notice points at, and everything on each periodic resync. A pass that fails is retried
with exponential backoff; watches are hints, the resync is what guarantees convergence.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Protocol

import psycopg

from context_service.adapters.eventstore.application import (
    ContextApplication,
    PoolApplication,
    utc_now,
)
from context_service.adapters.eventstore.store import EventStore
from context_service.adapters.kubernetes.reconciler_desired import LogDesired
from context_service.adapters.kubernetes.reconciler_pass import NamespacePass, PassResult
from context_service.adapters.kubernetes.reconciler_scopes import (
    DirtySet,
    keys_for_change,
    scopes_for,
)
from context_service.adapters.postgres.lock import LeaderLock
from context_service.config import Settings
from context_service.domain.cluster import Change, Cluster, Watch

log = logging.getLogger(__name__)
LOCK_NAME = "worker:reconciler"


class Leadership(Protocol):
    def try_acquire(self) -> bool: ...
    def confirm(self) -> bool: ...
    def release(self) -> None: ...


class ReconcilerLock(LeaderLock):
    """The advisory lock, plus a liveness check: a lock whose connection died is lost."""

    def confirm(self) -> bool:
        conn = self._conn
        if conn is None:
            return False
        try:
            conn.execute("SELECT 1")
        except psycopg.Error:
            self.release()
            return False
        return True


class Reconciler:
    """``start()`` runs the worker in daemon threads; ``stop()`` ends it and frees the lock."""

    def __init__(self, cluster: Cluster, store: EventStore, contexts: ContextApplication,
                 pools: PoolApplication, *, namespace: str, lock: Leadership | None = None,
                 resync_seconds: float = 30.0, standby_seconds: float = 2.0,
                 backoff: tuple[float, float] = (0.5, 30.0), parallel: int = 4,
                 debounce_seconds: float = 0.01,
                 clock: Callable[[], datetime] = utc_now) -> None:
        self.cluster = cluster
        self.store = store
        self.namespace = namespace
        self.lock = lock
        self.resync_seconds = resync_seconds
        self.standby_seconds = standby_seconds
        self.debounce_seconds = debounce_seconds
        self.desired = LogDesired(store)
        self.dirty = DirtySet(*backoff)
        self.executor = ThreadPoolExecutor(parallel, thread_name_prefix="reconcile")
        self.passes = NamespacePass(cluster, contexts, pools, self.executor, clock)
        self.stats = {"passes": 0, "actions": 0, "recorded": 0, "errors": 0, "resyncs": 0,
                      "conflicts": 0}
        self.active = threading.Event()
        self._changes: deque[Change] = deque()
        self._wake = threading.Event()
        self._log_grew = threading.Event()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._watch: Watch | None = None
        self._loaded = False

    # --- lifecycle ----------------------------------------------------------------------------

    def start(self) -> Reconciler:
        self.store.start_listener()
        for target, name in ((self._run, "reconciler"), (self._follow_log, "reconciler-log")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            self._threads.append(thread)
            thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self.store.wake()
        for thread in self._threads:
            thread.join(timeout=30)
        self._threads.clear()
        self.executor.shutdown(wait=True)

    def gauges(self) -> list[tuple[str, str, dict[str, str], float]]:
        active = 1.0 if self.active.is_set() else 0.0
        out: list[tuple[str, str, dict[str, str], float]] = [
            ("cs_reconciler_active", "1 while this instance holds the lock.", {}, active)]
        out += [("cs_reconciler_total", "Reconciler passes, cluster changes, recorded "
                 "observations, failures, resyncs and conflicts warned of.",
                 {"what": k}, float(v))
                for k, v in self.stats.items()]
        return out

    # --- leadership ---------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            if self.lock is not None and not self.lock.try_acquire():
                self._stop.wait(self.standby_seconds)
                continue
            log.info("reconciler active")
            try:
                self._lead()
            except Exception:
                log.exception("reconciler failed; restarting")
                self._stop.wait(self.dirty.base)
            finally:
                self._step_down()

    def _step_down(self) -> None:
        self.active.clear()
        if self._watch is not None:
            self._watch.stop()
            self._watch = None
        if self.lock is not None and self._stop.is_set():
            self.lock.release()

    def _lead(self) -> None:
        self.desired.load()
        self._loaded = True
        self._watch = self.cluster.watch(None, self._on_change)
        self.dirty.mark_all(self.desired.namespaces(self.namespace), time.monotonic())
        next_resync = time.monotonic() + self.resync_seconds
        self.active.set()
        while not self._stop.is_set():
            # a holder whose session died learns it here, before acting again: the overlap
            # with a standby that took over is at most one pass (whose actions are idempotent)
            if self.lock is not None and not self.lock.confirm():
                log.warning("reconciler lock lost; standing by")
                return
            now = time.monotonic()
            if now >= next_resync:
                self.stats["resyncs"] += 1
                self.dirty.resync(self.desired.namespaces(self.namespace), now)
                next_resync = now + self.resync_seconds
            self.cycle()
            wait = min(next_resync, self.dirty.next_due()) - time.monotonic()
            if wait > 0:
                self._wake.wait(min(wait, 1.0))
                if not self._log_grew.is_set():  # a request is acted on at once; a burst of
                    self._stop.wait(self.debounce_seconds)  # notices is gathered first
            self._wake.clear()
            self._log_grew.clear()

    # --- passes -------------------------------------------------------------------------------

    def sync(self) -> list[PassResult]:
        """One full resync now, in the caller's thread (tests and benchmarks drive a
        reconciler that was not started this way)."""
        if not self._loaded:
            self.desired.load()
            self._loaded = True
        self.desired.advance()
        self.dirty.mark_all(self.desired.namespaces(self.namespace), time.monotonic())
        return self.cycle()

    def cycle(self) -> list[PassResult]:
        """Fold in new log entries and notices, then run the passes that are due."""
        now = time.monotonic()
        changed = self.desired.advance()
        fresh = [k for k in changed if k[0] == "pool" and self._unobserved(k[1])]
        for _, scope in scopes_for(fresh, self.desired, self.namespace):
            self._count(self.passes.create_new(scope))  # a failure is the next pass's to retry
        for key in changed:
            self.dirty.mark(key, now)
        while self._changes:
            for key in keys_for_change(self._changes.popleft(), self.desired, self.namespace):
                self.dirty.mark(key, now)
        results = []
        for keys, scope in scopes_for(self.dirty.take_due(now), self.desired, self.namespace):
            result = self.passes.run(scope)
            self._count(result)
            if result.errors:
                delay = self.dirty.retry(scope.namespace, keys, time.monotonic())
                for error in result.errors:
                    log.warning("reconcile failed (retry in %.1fs): %s", delay, error)
            else:
                self.dirty.succeeded(scope.namespace)
            results.append(result)
        return results

    def _unobserved(self, name: str) -> bool:
        """Requested through the API and not observed yet: nothing of it should exist."""
        pool = self.desired.pools.get(name)
        return (pool is not None and pool.live and not pool.adopted and not pool.resources
                and pool.observed_workspace is None)

    def _count(self, result: PassResult) -> None:
        self.stats["passes"] += 1
        self.stats["actions"] += result.changed
        self.stats["recorded"] += result.recorded
        self.stats["errors"] += len(result.errors)
        self.stats["conflicts"] = self.passes.reported

    # --- triggers -----------------------------------------------------------------------------

    def _on_change(self, change: Change) -> None:
        self._changes.append(change)
        self._wake.set()

    def _follow_log(self) -> None:
        """Wake the loop whenever the log grows (a local append or another process's)."""
        seen = 0
        while not self._stop.is_set():
            self.store.wait_head(seen, 1.0)
            try:
                head = self.store.head()
            except Exception:  # the database is unreachable: the main loop reports it
                self._stop.wait(1.0)
                continue
            if head > seen:
                seen = head
                self._log_grew.set()
                self._wake.set()


class Wiring(Protocol):
    """What the composition root hands over (the bootstrap ``Container``)."""

    url: str
    store: EventStore
    contexts: ContextApplication
    pools: PoolApplication
    settings: Settings

    @property
    def cluster(self) -> Cluster | None: ...


def reconciler_for(wiring: Wiring) -> Reconciler:
    """The reconciler of a service process (call only when a cluster is connected)."""
    assert wiring.cluster is not None
    return Reconciler(wiring.cluster, wiring.store, wiring.contexts, wiring.pools,
                      namespace=wiring.settings.namespace,
                      lock=ReconcilerLock(wiring.url, LOCK_NAME))
