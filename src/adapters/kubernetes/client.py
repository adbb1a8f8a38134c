"""Connect to Kubernetes as ``Settings.kube_mode`` says (CS_KUBE).

- ``in-cluster``: the Pod's service account;
- ``kubeconfig``: the client's default rules (``KUBECONFIG``, then ``~/.kube/config``);
- ``local``: the local development control plane's ``<CS_DATA_DIR>/kube/kubeconfig``;
- ``auto``: in-cluster when available, else a default kubeconfig, else a running local plane.
Each call builds its own ``Configuration``, so several clusters can be used side by side.
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self

import urllib3
from kubernetes import config
from kubernetes.client import ApiClient, Configuration
from kubernetes.config.config_exception import ConfigException
from urllib3.connectionpool import ConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError, ReadTimeoutError
from urllib3.response import BaseHTTPResponse

from context_service.config import Settings

Mode = Literal["in-cluster", "kubeconfig", "local"]
kube_config: Any = config  # the loaders are untyped


class NoRetryOnTimeout(urllib3.Retry):
    """urllib3's retries, except after a timeout: a server that did not answer within the
    timeout is not asked again (by default a read is sent four times, so one call to a hung API
    server took four timeouts); the caller's own retry or the request's deadline decides.
    Refused connections and closed pooled connections are still retried."""

    def increment(self, method: str | None = None, url: str | None = None,
                  response: BaseHTTPResponse | None = None, error: Exception | None = None,
                  _pool: ConnectionPool | None = None,
                  _stacktrace: TracebackType | None = None) -> Self:
        if _timed_out(error):
            assert error is not None
            raise error
        return super().increment(method, url, response, error, _pool, _stacktrace)


def _timed_out(error: Exception | None) -> bool:
    """A read or connect that timed out (a refused connection is no timeout, though urllib3
    derives its error from the connect timeout's)."""
    return isinstance(error, ReadTimeoutError) or (
        isinstance(error, ConnectTimeoutError) and not isinstance(error, NewConnectionError))


# connections kept open to the API server: one for each of the HTTP requests' calls at once
# (rest.REQUEST_SLOTS, 16), each watch (5 resources, watched by the context reconciler and by
# the snapshot reconciler: 10), the reconciler's parallel passes (4) and the loops of the
# reconciler, the snapshot reconciler and the query mirror (33 in a process running every
# worker), with room. The client's default is 5 a core: with more callers at once than that,
# each connection beyond it was closed after its call (a new one for the next call) and
# logged "Connection pool is full, discarding connection" as a warning.
POOL_CONNECTIONS = 48


def _client(configuration: Configuration) -> ApiClient:
    configuration.connection_pool_maxsize = POOL_CONNECTIONS
    # a 503's Retry-After (10 s and more from a starting kube-apiserver) is not slept inside the
    # call, where neither its timeout nor the request's budget bounds it: the caller's own retry
    # or the request's deadline decides
    configuration.retries = NoRetryOnTimeout(3, respect_retry_after_header=False)
    return ApiClient(configuration)


def close(api: Any) -> None:
    """Close an ``ApiClient`` (its pool threads and connections)."""
    api.close()


class KubeConfigError(RuntimeError):
    """No usable Kubernetes configuration for the requested mode."""


def local_kubeconfig(settings: Settings) -> Path:
    return settings.data_dir / "kube" / "kubeconfig"


def from_kubeconfig(path: Path | None = None) -> ApiClient:
    """A client for ``path``, or for the default kubeconfig rules when None."""
    configuration = Configuration()
    try:
        kube_config.load_kube_config(
            config_file=str(path) if path is not None else None,
            client_configuration=configuration,
            persist_config=False,
        )
    except (ConfigException, OSError) as exc:
        raise KubeConfigError(f"cannot load kubeconfig {path or '(default)'}: {exc}") from exc
    return _client(configuration)


def in_cluster() -> ApiClient:
    configuration = Configuration()
    try:
        kube_config.load_incluster_config(client_configuration=configuration)
    except ConfigException as exc:
        raise KubeConfigError(f"not running in a cluster: {exc}") from exc
    return _client(configuration)


def resolve_mode(settings: Settings) -> Mode:
    """The concrete mode for ``settings`` (``auto`` probes in the order of the module doc)."""
    mode = settings.kube_mode
    if mode == "off":
        raise KubeConfigError("Kubernetes access is disabled (CS_KUBE=off)")
    if mode in ("in-cluster", "kubeconfig", "local"):
        return mode  # type: ignore[return-value]
    try:
        close(in_cluster())
        return "in-cluster"
    except KubeConfigError:
        pass
    try:
        close(from_kubeconfig())
        return "kubeconfig"
    except KubeConfigError:
        pass
    if local_kubeconfig(settings).is_file():
        return "local"
    raise KubeConfigError(
        "no Kubernetes configuration found: not in a cluster, no kubeconfig, and no local "
        "control plane (set CS_KUBE=local to start one)"
    )


def api_client(settings: Settings, mode: Mode | None = None) -> ApiClient:
    """An ``ApiClient`` for ``settings``; close it when done."""
    chosen = mode or resolve_mode(settings)
    if chosen == "in-cluster":
        return in_cluster()
    if chosen == "local":
        path = local_kubeconfig(settings)
        if not path.is_file():
            raise KubeConfigError(f"local control plane not started: {path} is missing")
        return from_kubeconfig(path)
    return from_kubeconfig(None)
