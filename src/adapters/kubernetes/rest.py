"""A thin JSON-over-HTTP layer on the official client's ``ApiClient``.

Every object is handled as the plain JSON the server speaks (camelCase dicts), core kinds and
custom resources alike; failures become the port's ``ClusterError``. Watches stream JSON lines.

An API server that hangs (accepts, never answers) or answers slowly must not stall the HTTP
service. Calls made while serving an HTTP request (the drain marks each request's context, see
``stop_signals``) therefore share one deadline per request, ``budget`` seconds from the
request's first call, instead of ``timeout`` per call; and at most ``slots`` of them wait on
the server at once, so the handler threads (40) never all hang there: past that a call is
refused at once. Background work (reconciler, watches, adoption) keeps the per-call timeout.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import urllib3
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from context_service.domain.cluster import UNAVAILABLE, ClusterError
from context_service.stop_signals import abandonment

JSON = dict[str, Any]
MERGE_PATCH = "application/merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
# One HTTP request's Kubernetes calls together end within this: well inside the patience of a
# client or gateway (30-60 s), and a pool create of a dozen calls stays bounded as a whole. The
# service's default; CS_KUBE_REQUEST_BUDGET_SECONDS sets it (the composition root passes it).
REQUEST_BUDGET = 10.0
# Request-path calls waiting on the server at once: fewer than half the handler threads, far
# more than a healthy server (milliseconds a call) ever has in flight.
REQUEST_SLOTS = 16
# How long a request-path call waits for a free slot: bursts on a healthy server pass, callers
# of a hung one are refused before they pile up on the handler threads.
SLOT_WAIT = 0.5

# when the current request's Kubernetes calls must have ended (time.monotonic); set by the
# first call in the request's context, which each handler thread runs in a copy of
_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "kubernetes_deadline", default=None)
_OUTSIDE_REQUESTS = contextvars.Context().run(abandonment)  # the marker's value off requests


def serving_request() -> bool:
    """Whether the current work answers an HTTP request (the drain marks each one)."""
    return abandonment() is not _OUTSIDE_REQUESTS


@dataclass(frozen=True)
class Resource:
    """An API resource: ``group`` "" is the core group."""

    group: str
    version: str
    plural: str
    namespaced: bool = True

    @property
    def api_path(self) -> str:
        return f"/api/{self.version}" if not self.group else f"/apis/{self.group}/{self.version}"

    @property
    def api_version(self) -> str:
        return self.version if not self.group else f"{self.group}/{self.version}"

    def path(self, namespace: str | None = None, name: str | None = None, sub: str = "") -> str:
        parts = [self.api_path]
        if self.namespaced and namespace is not None:
            parts += ["namespaces", namespace]
        parts.append(self.plural)
        if name is not None:
            parts.append(name)
        if sub:
            parts.append(sub)
        return "/".join(parts)


PVCS = Resource("", "v1", "persistentvolumeclaims")
PODS = Resource("", "v1", "pods")
CONFIG_MAPS = Resource("", "v1", "configmaps")
NAMESPACES = Resource("", "v1", "namespaces", namespaced=False)
STORAGE_CLASSES = Resource("storage.k8s.io", "v1", "storageclasses", namespaced=False)
CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", namespaced=False)


def _error(exc: ApiException | Exception) -> ClusterError:
    if not isinstance(exc, ApiException) or not exc.status:
        return ClusterError(503, UNAVAILABLE, f"Kubernetes API unreachable: {exc}")
    body = exc.body.decode(errors="replace") if isinstance(exc.body, bytes) else str(exc.body)
    try:
        status = json.loads(body)
    except ValueError:
        status = None
    if isinstance(status, dict) and status.get("kind") == "Status":
        return ClusterError(
            int(status.get("code") or exc.status),
            str(status.get("reason") or exc.reason or ""),
            str(status.get("message") or body),
        )
    return ClusterError(int(exc.status), str(exc.reason or ""), body.strip())


class Rest:
    """JSON requests through one ``ApiClient`` (thread-safe; urllib3 pools connections);
    ``budget`` and ``slots`` bound the calls of HTTP requests (module doc)."""

    def __init__(self, api: ApiClient, timeout: float = 30.0, budget: float = REQUEST_BUDGET,
                 slots: int = REQUEST_SLOTS) -> None:
        self.api = api
        self.timeout = timeout
        self.budget = budget
        self._slots = threading.BoundedSemaphore(slots)
        self._slot_count = slots

    def request(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | tuple[float, float] | None = None,
        stream: bool = False,
    ) -> Any:
        """Send one request; answers the decoded JSON body, or the raw response when
        ``stream`` (the caller then reads and releases it)."""
        if stream or not serving_request():
            return self._send(method, path, query, body, content_type, timeout or self.timeout,
                              stream)
        if not self._slots.acquire(timeout=min(SLOT_WAIT, self._remaining())):
            self._refuse_if_late()
            raise ClusterError(503, UNAVAILABLE, f"Kubernetes API busy: {self._slot_count} "
                               "requests already wait on it; retry shortly")
        try:
            self._refuse_if_late()
            return self._send(method, path, query, body, content_type,
                              _cut(timeout or self.timeout, self._remaining()), stream)
        except ClusterError as exc:
            if exc.status == 503:  # a timeout cut by the budget says so
                self._refuse_if_late(exc)
            raise
        finally:
            self._slots.release()

    def _remaining(self) -> float:
        """Seconds left of the current request's budget (started at its first call)."""
        deadline = _deadline.get()
        if deadline is None:
            deadline = time.monotonic() + self.budget
            _deadline.set(deadline)
        return max(0.0, deadline - time.monotonic())

    def _refuse_if_late(self, cause: Exception | None = None) -> None:
        if self._remaining() <= 0:
            raise ClusterError(503, UNAVAILABLE, "Kubernetes API did not answer within the "
                               f"request's {self.budget:g}s") from cause

    def _send(self, method: str, path: str, query: dict[str, str] | None, body: Any,
              content_type: str, timeout: float | tuple[float, float], stream: bool) -> Any:
        headers = {"Accept": "application/json", "Content-Type": content_type}
        method_, url, headers_, body_, post = self.api.param_serialize(
            method=method,
            resource_path=path,
            query_params=list((query or {}).items()),
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        try:
            response = self.api.call_api(
                method_, url, headers_, body_, post, _request_timeout=timeout
            )
        except (ApiException, urllib3.exceptions.HTTPError, OSError) as exc:
            raise _error(exc) from exc
        raw = response.response
        if stream and 200 <= response.status < 300:
            return raw
        try:
            data = raw.data
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise _error(exc) from exc
        finally:
            raw.release_conn()
        if not 200 <= response.status < 300:
            raise _error(ApiException(status=response.status, reason=response.reason, body=data))
        return json.loads(data) if data else {}

    def get(self, path: str, query: dict[str, str] | None = None) -> JSON:
        result: JSON = self.request("GET", path, query=query)
        return result

    def find(self, path: str) -> JSON | None:
        """The object at ``path``, or None when the server answers 404."""
        try:
            return self.get(path)
        except ClusterError as exc:
            if exc.status == 404:
                return None
            raise

    def items(self, path: str, selector: str = "") -> list[JSON]:
        query = {"labelSelector": selector} if selector else None
        found: list[JSON] = self.get(path, query).get("items") or []
        return found

    def create(self, path: str, body: JSON, manager: str) -> JSON:
        result: JSON = self.request("POST", path, query={"fieldManager": manager}, body=body)
        return result

    def patch(self, path: str, body: JSON, manager: str, content_type: str = MERGE_PATCH) -> JSON:
        query = {"fieldManager": manager}
        if content_type == APPLY_PATCH:
            query["force"] = "true"
        result: JSON = self.request(
            "PATCH", path, query=query, body=body, content_type=content_type
        )
        return result

    def delete(self, path: str, propagation: str = "Background", grace: int | None = None) -> JSON:
        options: JSON = {"kind": "DeleteOptions", "apiVersion": "v1"}
        options["propagationPolicy"] = propagation
        if grace is not None:
            options["gracePeriodSeconds"] = grace
        result: JSON = self.request("DELETE", path, body=options)
        return result

    def resources(self, group: str, version: str) -> set[str] | None:
        """Discovery: the resource names served for group/version, None when not served."""
        path = f"/api/{version}" if not group else f"/apis/{group}/{version}"
        try:
            listing = self.get(path)
        except ClusterError as exc:
            if exc.status == 404:
                return None
            raise
        return {str(r.get("name")) for r in listing.get("resources") or []}

    def watch(self, path: str, resource_version: str, selector: str = "") -> WatchStream:
        """Open a watch ({"type", "object"} events); the server ends it within about a minute."""
        query = {"watch": "true", "timeoutSeconds": "55", "allowWatchBookmarks": "true"}
        if resource_version:
            query["resourceVersion"] = resource_version
        if selector:
            query["labelSelector"] = selector
        raw = self.request("GET", path, query=query, timeout=(10.0, 70.0), stream=True)
        return WatchStream(raw)


def _cut(timeout: float | tuple[float, float], left: float) -> float | tuple[float, float]:
    """``timeout`` (seconds, or connect and read) shortened to ``left``."""
    if isinstance(timeout, tuple):
        return min(timeout[0], left), min(timeout[1], left)
    return min(timeout, left)


class WatchStream:
    """One open watch response: iterate (once) for events; ``close`` ends it from any thread."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw
        self._closed = False
        self._finished = False
        self._lock = threading.Lock()

    def __iter__(self) -> Iterator[JSON]:
        clean = False
        try:
            for line in self._raw:
                if self._closed:
                    return
                if line.strip():
                    event: JSON = json.loads(line)
                    yield event
            clean = True
        except (urllib3.exceptions.HTTPError, OSError, ValueError) as exc:
            if not self._closed:
                raise _error(exc) from exc
        finally:
            with self._lock:
                self._finished = True
                if not clean:  # never hand a half-read or shut-down connection back to the pool
                    self._raw.close()
                self._raw.release_conn()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._finished:
                return
            with contextlib.suppress(ValueError, OSError):
                self._raw.shutdown()  # unblocks a reader waiting for the next event
