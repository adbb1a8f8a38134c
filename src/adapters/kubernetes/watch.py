"""Watch threads that turn Kubernetes watch events into the port's ``Change`` notices.

One daemon thread per resource: list for a resourceVersion, then watch; relist on 410 Gone,
back off on errors (a wait doubling from ``retry_seconds`` to 30 s, as the reconciler's), and
poll discovery slowly while a custom resource is not installed. Every relist after a watch broke
off (410 or any other failure) is followed by a notice without a name: changes in the gap were
never streamed, so the reconciler resyncs what the watch covers.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping

from context_service.adapters.kubernetes.rest import JSON, Resource, Rest, WatchStream
from context_service.domain.cluster import Change, ClusterError

log = logging.getLogger(__name__)
MAX_RETRY_SECONDS = 30.0  # the longest wait between failed attempts (it doubles up to it)


class ClusterWatch:
    """Started watches over some resources; ``stop`` ends them all promptly.

    Every resource is watched in ``namespace`` (None: all namespaces) unless ``namespaces``
    names another for its plural (the pool kinds live only in the service's own namespace)."""

    def __init__(
        self,
        rest: Rest,
        resources: Iterable[Resource],
        namespace: str | None,
        on_change: Callable[[Change], None],
        retry_seconds: float = 1.0,
        missing_api_seconds: float = 10.0,
        namespaces: Mapping[str, str | None] | None = None,
    ) -> None:
        self.rest = rest
        self.resources = tuple(resources)
        self.namespace = namespace
        self.namespaces = dict(namespaces or {})
        self.on_change = on_change
        self.retry_seconds = retry_seconds
        self.missing_api_seconds = missing_api_seconds
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._streams: set[WatchStream] = set()
        self._threads: list[threading.Thread] = []

    def start(self) -> ClusterWatch:
        for res in self.resources:
            thread = threading.Thread(
                target=self._run, args=(res,), name=f"kube-watch-{res.plural}", daemon=True
            )
            self._threads.append(thread)
            thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            streams = list(self._streams)
        for stream in streams:
            stream.close()
        for thread in self._threads:
            thread.join(timeout=5)

    def _namespace_of(self, res: Resource) -> str | None:
        return self.namespaces.get(res.plural, self.namespace)

    def _run(self, res: Resource) -> None:
        version = ""
        broken = False  # a watch broke off: what changed until the relist was never streamed
        failures = 0  # in a row: the wait doubles (a starting API server is not asked every second)
        while not self._stop.is_set():
            try:
                if not version:
                    version = self._list_version(res)
                    if not version:  # API not installed (yet)
                        self._stop.wait(self.missing_api_seconds)
                        continue
                    if broken:  # notified once the relist succeeded, so nothing is missed after
                        broken = False
                        self._notify(Change(kind=res.plural,
                                            namespace=self._namespace_of(res) or "", name=""))
                version = self._follow(res, version)
                failures = 0
            except ClusterError as exc:
                broken = broken or bool(version)
                version = ""
                if exc.status == 410:
                    continue  # too old: relist at once
                log.warning("watch of %s failed: %s", res.plural, exc)
                failures += 1
                self._stop.wait(min(MAX_RETRY_SECONDS,
                                    self.retry_seconds * 2 ** min(failures - 1, 16)))

    def _list_version(self, res: Resource) -> str:
        try:
            listing = self.rest.get(res.path(self._namespace_of(res)), {"limit": "1"})
        except ClusterError as exc:
            if exc.status == 404:
                return ""
            raise
        return str(listing.get("metadata", {}).get("resourceVersion") or "")

    def _follow(self, res: Resource, version: str) -> str:
        """Stream one watch; answers the last resourceVersion seen."""
        stream = self.rest.watch(res.path(self._namespace_of(res)), version)
        with self._lock:
            self._streams.add(stream)
        if self._stop.is_set():
            stream.close()  # stop() may have missed it; iterating below then ends at once
        try:
            for event in stream:
                version = self._handle(res, event, version)
        finally:
            with self._lock:
                self._streams.discard(stream)
        return version

    def _handle(self, res: Resource, event: JSON, version: str) -> str:
        kind, item = event.get("type"), event.get("object") or {}
        metadata = item.get("metadata") or {}
        if kind == "ERROR":
            raise ClusterError(int(item.get("code") or 500), "WatchError", str(item.get("message")))
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            self._notify(
                Change(
                    kind=res.plural,
                    namespace=str(metadata.get("namespace") or ""),
                    name=str(metadata.get("name") or ""),
                    deleted=kind == "DELETED",
                )
            )
        return str(metadata.get("resourceVersion") or version)

    def _notify(self, change: Change) -> None:
        try:
            self.on_change(change)
        except Exception:  # a failing callback must not kill the watch
            log.exception("watch callback failed for %s", change)
