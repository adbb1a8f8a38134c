"""The Kubernetes API access the service needs: every (resource, verb) ``KubernetesCluster``
calls, in one table (``GRANTS``), and the RBAC verb of one request (``request_access``).

``deploy/`` grants exactly this table (a test renders the manifests and compares), and a test
runs every port call under those manifests with RBAC enforced, recording what was asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from context_service.adapters.kubernetes.cluster import (
    SANDBOX,
    SANDBOX_CLAIM,
    SANDBOX_TEMPLATE,
    SNAPSHOT,
    SNAPSHOT_CLASS,
    WARM_POOL,
)
from context_service.adapters.kubernetes.rest import (
    APPLY_PATCH,
    CONFIG_MAPS,
    PODS,
    PVCS,
    STORAGE_CLASSES,
    Resource,
)

Scope = Literal["cluster", "service-namespace"]
QUERY_MIRROR = "query-mirror"  # the feature CS_MIRROR_QUERY_INDEX=true turns on


@dataclass(frozen=True)
class Grant:
    """Verbs on one resource. ``scope`` "cluster": in every namespace (contexts live in any);
    "service-namespace": only in ``CS_NAMESPACE`` (pool objects). ``feature``: needed only
    when that optional feature is on ("" always)."""

    resource: Resource
    verbs: tuple[str, ...]
    scope: Scope
    use: str
    feature: str = ""


GRANTS: tuple[Grant, ...] = (
    Grant(PVCS, ("get", "list", "watch", "create", "patch", "delete"), "cluster",
          "context PVCs (labels and annotations kept current by merge patch), pool workspaces "
          "(labels restored by server-side apply), existing claims; adoption lists them in "
          "every namespace"),
    Grant(PODS, ("list", "watch"), "cluster", "observed only: pod consumers, pool readiness"),
    Grant(CONFIG_MAPS, ("get",), "cluster", "adoption imports a query-index mirror"),
    Grant(STORAGE_CLASSES, ("list",), "cluster", "class resolution, GET /v1/storage-classes"),
    Grant(SNAPSHOT, ("get", "list", "watch", "create", "delete"), "cluster",
          "context snapshots, their status, retention GC"),
    Grant(SNAPSHOT_CLASS, ("list",), "cluster", "snapshot class resolution"),
    Grant(SANDBOX, ("get", "list", "watch", "create", "patch", "delete"), "service-namespace",
          "pool compute (edited fields restored by server-side apply)"),
    Grant(SANDBOX_CLAIM, ("get", "list", "watch", "create", "patch", "delete"),
          "service-namespace", "warm-pool compute (deleted in the foreground, edited fields "
          "restored by server-side apply)"),
    Grant(WARM_POOL, ("get",), "service-namespace", "warmPoolRef check"),
    Grant(SANDBOX_TEMPLATE, ("get",), "service-namespace", "sandbox profiles"),
    Grant(CONFIG_MAPS, ("create", "patch", "delete"), "cluster",
          "the query-index mirror (server-side apply, removed with its context)", QUERY_MIRROR),
)


@dataclass(frozen=True, order=True)
class Access:
    """What RBAC authorizes for one request: a verb on a resource, in a namespace ("" for
    cluster-scoped resources or every namespace)."""

    verb: str
    group: str
    resource: str
    namespace: str = ""


def request_access(method: str, path: str, query: dict[str, str] | None = None,
                   content_type: str = "") -> tuple[Access, ...]:
    """The RBAC checks ``method path?query`` meets: none for discovery (non-resource paths
    every authenticated client may read); a server-side apply is checked as ``patch`` and, as
    it may create the object, as ``create``."""
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    if parts[:1] == ["api"]:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"]:
        group, rest = parts[1], parts[3:]
    else:
        return ()
    if not rest:
        return ()
    namespace = ""
    if rest[0] == "namespaces" and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    resource, named = rest[0], len(rest) > 1
    if len(rest) > 2:
        resource = f"{resource}/{rest[2]}"
    verb = _verb(method.upper(), named, (query or {}).get("watch") in ("true", "1"))
    checks = [Access(verb, group, resource, namespace)]
    if verb == "patch" and content_type == APPLY_PATCH:
        checks.append(Access("create", group, resource, namespace))
    return tuple(checks)


def _verb(method: str, named: bool, watch: bool) -> str:
    if method == "GET":
        return "watch" if watch else ("get" if named else "list")
    if method == "DELETE":
        return "delete" if named else "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}[method]


def granted(access: Access, service_namespace: str, features: frozenset[str]) -> bool:
    """Whether ``GRANTS`` (with ``features`` on) cover ``access``."""
    for grant in GRANTS:
        res = grant.resource
        if (res.group, res.plural) != (access.group, access.resource):
            continue
        if access.verb not in grant.verbs or (grant.feature and grant.feature not in features):
            continue
        if grant.scope == "cluster" or access.namespace == service_namespace:
            return True
    return False


def permissions(scope: Scope, feature: str = "") -> set[tuple[str, str, str]]:
    """(apiGroup, resource, verb) of every grant of one Role (``scope``, ``feature``)."""
    return {(g.resource.group, g.resource.plural, verb) for g in GRANTS
            if g.scope == scope and g.feature == feature for verb in g.verbs}
