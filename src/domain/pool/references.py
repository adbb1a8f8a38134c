"""Create-time checks of a pool against the cluster (spec 2.3 step 9, spec 1.12 step 4).

Pure decisions over the ``Cluster`` port: the profile is validated and copied into the runtime
blueprint recorded with the pool, an existing claim is read, and the name must be free, also of
the live contexts recorded in ``CS_NAMESPACE`` whose PVC the pool would create.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

from context_service.domain.cluster import (
    MANAGED_BY,
    MANAGER,
    POOL_LABEL,
    BuiltinRuntime,
    ClaimInfo,
    Cluster,
    ClusterError,
    ProfileRuntime,
    Runtime,
    context_claim_name,
    sandbox_claim_name,
    sandbox_name,
    workspace_claim_name,
)
from context_service.domain.errors import PoolExistsError, PoolReferenceInvalidError
from context_service.domain.pool.commands import RequestPool
from context_service.domain.pool.events import Workspace
from context_service.domain.pool.secrets import literal_secret
from context_service.domain.pool.state import PoolState
from context_service.domain.values import (
    canonical_quantity,
    is_context_name,
    is_positive_quantity,
    quote,
)

TEMPLATE_ONLY_KEYS = ("networkPolicy", "networkPolicyManagement", "envVarsInjectionPolicy",
                      "volumeClaimTemplatesPolicy")


def _none_recorded(name: str) -> PoolState:
    return PoolState()


def resolve(cluster: Cluster, namespace: str, request: RequestPool, strategy: str,
            image: str, service_account: str,
            recorded: Callable[[str], PoolState] = _none_recorded,
            ) -> tuple[Runtime | None, Workspace | None]:
    """The runtime blueprint and, for an existing claim, the claim as read now. ``recorded``
    loads one pool of the log by name: an existing claim may be no live pool's workspace."""
    if strategy == "warm-pool":
        _warm_pool(cluster, namespace, request.warm_pool_ref)
        return None, None
    runtime: Runtime = BuiltinRuntime(image=image, service_account=service_account)
    if request.sandbox_profile:
        runtime = _profile(cluster, namespace, request.sandbox_profile, service_account)
    claim = None
    if strategy == "existing-claim":
        claim = _existing_claim(cluster, namespace, request, recorded)
    return runtime, claim


def _warm_pool(cluster: Cluster, namespace: str, ref: str) -> None:
    try:
        pool = cluster.get_warm_pool(namespace, ref)
    except ClusterError as exc:
        if not (exc.not_found or exc.api_not_installed):
            raise
        pool = None
    if pool is None:
        raise PoolReferenceInvalidError(f"warm pool {quote(ref)} not found")
    if pool.deleting:  # its sandboxes go with it: the claims would stay provisioning for good
        raise PoolReferenceInvalidError(f"warm pool {quote(ref)} is being deleted")


def _profile(cluster: Cluster, namespace: str, profile: str,
             service_account: str) -> ProfileRuntime:
    name = quote(profile)
    try:
        template = cluster.get_sandbox_template(namespace, profile)
    except ClusterError as exc:
        if not (exc.not_found or exc.api_not_installed):
            raise
        template = None
    if template is None:
        raise PoolReferenceInvalidError(f"sandbox profile {name} not found")
    spec = template.spec
    if not isinstance(spec, dict):
        raise PoolReferenceInvalidError(f"sandbox profile {name} has no spec")
    pod_template = spec.get("podTemplate")
    if not isinstance(pod_template, dict):
        raise PoolReferenceInvalidError(f"sandbox profile {name} has no podTemplate")
    pod_spec = pod_template.get("spec")
    if not isinstance(pod_spec, dict):
        raise PoolReferenceInvalidError(f"sandbox profile {name} has no podTemplate.spec")
    containers = pod_spec.get("containers")
    if not isinstance(containers, list) or not containers:
        raise PoolReferenceInvalidError(f"sandbox profile {name} must define a container")
    if not isinstance(containers[0], dict) or not _list_or_absent(containers[0], "volumeMounts"):
        raise PoolReferenceInvalidError(f"sandbox profile {name} has an invalid first container")
    if not _list_or_absent(pod_spec, "volumes"):  # the workspace volume is appended to it
        raise PoolReferenceInvalidError(
            f"sandbox profile {name} has invalid podTemplate.spec.volumes")
    if _uses_workspace(pod_spec):
        raise PoolReferenceInvalidError(
            f'sandbox profile {name} uses reserved volume name "workspace"')
    if spec.get("volumeClaimTemplates"):
        raise PoolReferenceInvalidError(
            f"sandbox profile {name} must not define volumeClaimTemplates; "
            "request storage through workspace")
    copied = {k: copy.deepcopy(v) for k, v in spec.items() if k not in TEMPLATE_ONLY_KEYS}
    if _holds_nul(copied):  # recorded with the pool: PostgreSQL text and jsonb cannot hold it,
        # and the one event would stop the pool view for every pool
        raise PoolReferenceInvalidError(
            f"sandbox profile {name} holds U+0000, which cannot be recorded")
    if (secret := literal_secret(copied)) is not None:  # recorded too (decision 0060)
        raise PoolReferenceInvalidError(f"sandbox profile {name} {secret}")
    return ProfileRuntime(profile=profile, template_spec=copied, service_account=service_account)


def _holds_nul(value: Any) -> bool:
    """Whether a JSON value holds U+0000 in a string or a key (the API server keeps any
    string in the opaque parts of a template). A walk with a stack: nesting has no bound."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return True
        elif isinstance(item, dict):
            stack += [*item.keys(), *item.values()]
        elif isinstance(item, list):
            stack += item
    return False


def _list_or_absent(parent: dict[str, Any], key: str) -> bool:
    """The value under ``key`` is a JSON array, or absent (``null`` counts as absent)."""
    return isinstance(parent.get(key), list | None)


def _items(parent: dict[str, Any], key: str) -> list[Any]:
    found = parent.get(key)
    return found if isinstance(found, list) else []


def _uses_workspace(pod_spec: dict[str, Any]) -> bool:
    volumes = _items(pod_spec, "volumes")
    if any(isinstance(v, dict) and v.get("name") == "workspace" for v in volumes):
        return True
    for key in ("containers", "initContainers"):
        for container in _items(pod_spec, key):
            if not isinstance(container, dict):
                continue
            mounts = _items(container, "volumeMounts")
            if any(isinstance(m, dict) and m.get("name") == "workspace" for m in mounts):
                return True
    return False


def _existing_claim(cluster: Cluster, namespace: str, request: RequestPool,
                    recorded: Callable[[str], PoolState]) -> Workspace:
    name = quote(request.claim_name)
    claim = cluster.get_claim(namespace, request.claim_name)
    if claim is None:
        raise PoolReferenceInvalidError(f"workspace claim {name} not found")
    if claim.deleting:  # no new Pod can mount it: the pool would stay provisioning for good
        raise PoolReferenceInvalidError(f"workspace claim {name} is being deleted")
    if (owner := _owning_pool(claim)):
        raise PoolReferenceInvalidError(
            f"workspace claim {name} belongs to sandbox pool {quote(owner)}")
    ensure_claim_wanted_by_no_pool(recorded, request.claim_name)
    if (request.replicas or 0) > 1 and "ReadWriteMany" not in claim.access_modes:
        raise PoolReferenceInvalidError(
            f"workspace claim {name} must support ReadWriteMany for multiple sandboxes")
    size = canonical_quantity(claim.size) if is_positive_quantity(claim.size) else claim.size
    return Workspace(size=size, access_mode=claim.access_modes[0] if claim.access_modes else "",
                     storage_class=claim.storage_class, claim_name=request.claim_name,
                     read_only=request.read_only)


def _owning_pool(claim: ClaimInfo) -> str:
    """The pool whose workspace a PVC is ("" for none). Such a PVC lives and dies with that
    pool (spec 6.9 deletes it at release, spec 6.10 adopts it with its pool), so no other pool
    may mount it as the caller's claim. A context's PVC is no pool's: it is meant to be shared."""
    if claim.labels.get(MANAGED_BY) != MANAGER:
        return ""
    return claim.labels.get(POOL_LABEL, "")


def ensure_name_free(cluster: Cluster, namespace: str, name: str, strategy: str,
                     replicas: int) -> None:
    """409 when labelled objects of the pool exist, or an object the pool would create does.
    Its Pods count too: a released pool's Sandboxes go at once, their Pods once stopped, and
    a new pool of the name would count those as its own and route work to them."""
    objects = cluster.list_pool_objects(namespace, name)
    if objects.sandboxes or objects.sandbox_claims or objects.claims:
        raise PoolExistsError()
    if any(pod.labels.get(MANAGED_BY) == MANAGER for pod in objects.pods):
        raise PoolExistsError()  # the listing's Pods carry the pool label; these ours too
    for i in range(replicas):
        if strategy == "warm-pool":
            if cluster.get_sandbox_claim(namespace, sandbox_claim_name(name, i)) is not None:
                raise PoolExistsError()
            continue
        if cluster.get_sandbox(namespace, sandbox_name(name, i)) is not None:
            raise PoolExistsError()
        if strategy == "dedicated" and cluster.get_claim(
                namespace, workspace_claim_name(name, i)) is not None:
            raise PoolExistsError()
    if strategy == "shared" and cluster.get_claim(
            namespace, workspace_claim_name(name, None)) is not None:
        raise PoolExistsError()


WORKSPACE_CLAIM = re.compile(r"(?P<pool>.+)-workspace(?:-(?P<index>0|[1-9][0-9]*))?")


def ensure_claim_wanted_by_no_pool(recorded: Callable[[str], PoolState], claim: str) -> None:
    """400 when a live pool recorded in the log wants ``claim`` as its workspace PVC (spec 6.7
    names). Until the reconciler made it, a PVC of that name without owner labels is taken as
    the pool's own and labelled, and from then on that pool's release deletes it: it is no
    caller's claim, even before its labels say so. ``recorded`` loads one pool by name."""
    match = WORKSPACE_CLAIM.fullmatch(claim)
    owner = match["pool"] if match else ""
    if not is_context_name(owner):
        return
    state = recorded(owner)
    if state.live and claim in workspace_claim_names(owner, state.strategy, state.replicas):
        raise PoolReferenceInvalidError(
            f"workspace claim {quote(claim)} belongs to sandbox pool {quote(owner)}")


def workspace_claim_names(name: str, strategy: str, replicas: int) -> list[str]:
    """The PVCs the pool creates (spec 6.7): one shared, one per sandbox when dedicated, none
    when it mounts an existing claim or a warm pool brings its own."""
    if strategy == "shared":
        return [workspace_claim_name(name, None)]
    if strategy == "dedicated":
        return [workspace_claim_name(name, i) for i in range(replicas)]
    return []


def contexts_claiming(name: str, strategy: str, replicas: int) -> list[str]:
    """The context names whose claim ``context-<name>`` is one of the pool's workspace claims."""
    prefix = context_claim_name("")
    return [claim.removeprefix(prefix)
            for claim in workspace_claim_names(name, strategy, replicas)
            if claim.startswith(prefix) and len(claim) > len(prefix)]


def ensure_no_context_claims(live_context: Callable[[str], bool], name: str, strategy: str,
                             replicas: int) -> None:
    """409 when a live context of the pools' namespace would create a PVC the pool would: the
    reconciler gives a claim to one owner only, so the second would stay provisioning for good.
    ``live_context`` looks one context name up in the catalog; a pool whose name does not start
    with ``context-`` never asks."""
    for context in contexts_claiming(name, strategy, replicas):
        if live_context(context):
            raise PoolExistsError()
