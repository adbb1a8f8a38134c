"""Render the port's desired objects into the exact Kubernetes shapes of spec §6.3, §6.6, §6.7.

Pure functions over plain JSON dicts (no client import), shared by the adapter and test fakes.
The fields a manifest sets are the fields the service owns: ``owned`` is what a drift repair
puts back with a server-side apply, ``drift`` finds which listed objects no longer hold them.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from typing import Any

from context_service.domain.cluster import (
    MANAGED_BY,
    MANAGER,
    NAME_LABEL,
    POOL_LABEL,
    REPLICAS_KEY,
    SNAPSHOT_LABEL,
    TYPE_LABEL,
    BuiltinRuntime,
    ContextClaim,
    ContextSnapshot,
    Drift,
    PoolObject,
    PoolSandbox,
    PoolSandboxClaim,
    ProfileRuntime,
    QueryIndexMirror,
    WorkspaceClaim,
    context_claim_name,
    query_mirror_name,
    sandbox_claim_name,
    sandbox_name,
    snapshot_object_name,
    workspace_claim_name,
)

JSON = dict[str, Any]
TEMPLATE_ONLY_KEYS = (
    "networkPolicy",
    "networkPolicyManagement",
    "envVarsInjectionPolicy",
    "volumeClaimTemplatesPolicy",
)
BUILTIN_COMMAND = ["/bin/sh", "-c", "mkdir -p /workspace && exec sleep infinity"]


def context_labels(context: str, type_: str) -> dict[str, str]:
    return {MANAGED_BY: MANAGER, NAME_LABEL: context, TYPE_LABEL: type_}


def pool_labels(pool: str) -> dict[str, str]:
    return {POOL_LABEL: pool, MANAGED_BY: MANAGER}


def _claim_spec(size: str, access_mode: str, storage_class: str) -> JSON:
    spec: JSON = {"accessModes": [access_mode], "resources": {"requests": {"storage": size}}}
    if storage_class:
        spec["storageClassName"] = storage_class
    return spec


def context_claim(claim: ContextClaim) -> JSON:
    spec = _claim_spec(claim.size, claim.access_mode, claim.storage_class)
    if claim.source_snapshot:
        spec["dataSource"] = {
            "apiGroup": "snapshot.storage.k8s.io",
            "kind": "VolumeSnapshot",
            "name": claim.source_snapshot,
        }
    metadata: JSON = {
        "name": context_claim_name(claim.context),
        "namespace": claim.namespace,
        "labels": context_labels(claim.context, claim.type),
    }
    if claim.annotations:
        metadata["annotations"] = dict(claim.annotations)
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": metadata, "spec": spec}


def workspace_claim(claim: WorkspaceClaim) -> JSON:
    labels = {**pool_labels(claim.pool), REPLICAS_KEY: str(claim.replicas)}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": workspace_claim_name(claim.pool, claim.index),
            "namespace": claim.namespace,
            "labels": labels,
        },
        "spec": _claim_spec(claim.size, claim.access_mode, claim.storage_class),
    }


def _workspace_mount(read_only: bool) -> JSON:
    return {"name": "workspace", "mountPath": "/workspace", "readOnly": read_only}


def _workspace_volume(claim: str, read_only: bool) -> JSON:
    return {
        "name": "workspace",
        "persistentVolumeClaim": {"claimName": claim, "readOnly": read_only},
    }


def builtin_pod_template(sandbox: PoolSandbox, runtime: BuiltinRuntime) -> JSON:
    container: JSON = {
        "name": "sandbox",
        "image": runtime.image,
        "command": list(BUILTIN_COMMAND),
        "workingDir": "/workspace",
        "volumeMounts": [_workspace_mount(sandbox.read_only)],
        "resources": {
            "requests": {"memory": "64Mi", "cpu": "50m"},
            "limits": {"memory": "256Mi"},
        },
    }
    spec: JSON = {
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {POOL_LABEL: sandbox.pool}},
            }
        ],
        "containers": [container],
        "volumes": [_workspace_volume(sandbox.claim, sandbox.read_only)],
    }
    if runtime.service_account:
        spec["serviceAccountName"] = runtime.service_account
    return {"metadata": {"labels": pool_labels(sandbox.pool)}, "spec": spec}


def profile_sandbox_spec(sandbox: PoolSandbox, runtime: ProfileRuntime) -> JSON:
    """The template ``spec`` minus template-only keys, with the workspace wired in. The spec
    is assumed validated (spec §2.3 step 9: a podTemplate.spec with an object first container)."""
    spec = copy.deepcopy(runtime.template_spec)
    for key in TEMPLATE_ONLY_KEYS:
        spec.pop(key, None)
    template: JSON = spec.setdefault("podTemplate", {})
    metadata: JSON = template.get("metadata") or {}
    metadata["labels"] = {**(metadata.get("labels") or {}), **pool_labels(sandbox.pool)}
    template["metadata"] = metadata
    pod_spec: JSON = template.setdefault("spec", {})
    first: JSON = pod_spec["containers"][0]
    first["volumeMounts"] = [
        *(first.get("volumeMounts") or []),
        _workspace_mount(sandbox.read_only),
    ]
    pod_spec["volumes"] = [
        *(pod_spec.get("volumes") or []),
        _workspace_volume(sandbox.claim, sandbox.read_only),
    ]
    if runtime.service_account and not pod_spec.get("serviceAccountName"):
        pod_spec["serviceAccountName"] = runtime.service_account
    return spec


def sandbox(desired: PoolSandbox) -> JSON:
    annotations = {
        "context.rossoctl.io/workspace-read-only": "true" if desired.read_only else "false",
        REPLICAS_KEY: str(desired.replicas),
    }
    if desired.existing_claim:
        annotations["context.rossoctl.io/workspace-claim"] = desired.claim
    runtime = desired.runtime
    if isinstance(runtime, ProfileRuntime):
        annotations["context.rossoctl.io/sandbox-profile"] = runtime.profile
        spec = profile_sandbox_spec(desired, runtime)
    else:
        spec = {"podTemplate": builtin_pod_template(desired, runtime)}
    return {
        "apiVersion": "agents.x-k8s.io/v1beta1",
        "kind": "Sandbox",
        "metadata": {
            "name": sandbox_name(desired.pool, desired.index),
            "namespace": desired.namespace,
            "labels": pool_labels(desired.pool),
            "annotations": annotations,
        },
        "spec": spec,
    }


def sandbox_claim(desired: PoolSandboxClaim) -> JSON:
    return {
        "apiVersion": "extensions.agents.x-k8s.io/v1beta1",
        "kind": "SandboxClaim",
        "metadata": {
            "name": sandbox_claim_name(desired.pool, desired.index),
            "namespace": desired.namespace,
            "labels": pool_labels(desired.pool),
        },
        "spec": {
            "warmPoolRef": {"name": desired.warm_pool},
            "additionalPodMetadata": {"labels": {POOL_LABEL: desired.pool}},
        },
    }


def volume_snapshot(desired: ContextSnapshot) -> JSON:
    claim = context_claim_name(desired.context)
    labels = {
        MANAGED_BY: MANAGER,
        NAME_LABEL: desired.context,
        SNAPSHOT_LABEL: desired.snapshot,
        TYPE_LABEL: desired.type,
    }
    annotations = {
        "context.rossoctl.io/source-claim": claim,
        "context.rossoctl.io/storage-size": desired.size,
        "context.rossoctl.io/access-mode": desired.access_mode,
        "context.rossoctl.io/storage-class": desired.storage_class,
        "context.rossoctl.io/context-type": desired.type,
        "context.rossoctl.io/source-revision": desired.source_revision,
        "context.rossoctl.io/protected": "true" if desired.protected else "false",
        "context.rossoctl.io/snapshot-labels": json.dumps(
            desired.user_labels, separators=(",", ":"), sort_keys=True
        ),
    }
    return {
        "apiVersion": "snapshot.storage.k8s.io/v1",
        "kind": "VolumeSnapshot",
        "metadata": {
            "name": snapshot_object_name(desired.context, desired.snapshot),
            "namespace": desired.namespace,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": {
            "volumeSnapshotClassName": desired.snapshot_class,
            "source": {"persistentVolumeClaimName": claim},
        },
    }


def query_mirror(desired: QueryIndexMirror) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": query_mirror_name(desired.context),
            "namespace": desired.namespace,
            "labels": context_labels(desired.context, desired.type),
            "annotations": {"context.rossoctl.io/query-index-revision": desired.revision},
        },
        "data": {"index.json": desired.index_json},
    }


def owned(desired: PoolObject) -> tuple[str, JSON]:
    """(kind, apply body) of what the service owns on a pool object: everything it renders for a
    Sandbox or SandboxClaim, only the labels of a PVC (its spec cannot change once created)."""
    if isinstance(desired, WorkspaceClaim):
        body = workspace_claim(desired)
        meta = body["metadata"]
        return "pvc", {"apiVersion": body["apiVersion"], "kind": body["kind"], "metadata": {
            "name": meta["name"], "namespace": meta["namespace"], "labels": meta["labels"]}}
    if isinstance(desired, PoolSandbox):
        return "sandbox", sandbox(desired)
    return "sandboxclaim", sandbox_claim(desired)


def drift(wanted: Iterable[PoolObject], found: Mapping[tuple[str, str], JSON]) -> Drift:
    """Which ``wanted`` objects among those ``found`` (listed, by kind and name) no longer hold
    the fields the service owns, and where. One wanted but not found is no drift: it is made."""
    edited: Drift = {}
    for desired in wanted:
        kind, body = owned(desired)
        key = (kind, body["metadata"]["name"])
        if key in found:
            paths = drifted(body, found[key])
            if paths:
                edited[key] = tuple(paths)
    return edited


def drifted(body: JSON, observed: JSON) -> list[str]:
    """The owned paths of ``body`` that ``observed`` no longer holds (items of a list answer
    carry no apiVersion or kind, and those never change anyway)."""
    owned_fields = {k: v for k, v in body.items() if k not in ("apiVersion", "kind")}
    return differences(owned_fields, observed)


def differences(desired: Any, observed: Any, path: str = "") -> list[str]:
    """The paths where ``observed`` does not hold what ``desired`` sets. Keys only ``observed``
    has belong to others (defaults, controllers, operators) and are no difference; a list is one
    field (the server keeps it whole), so it must match item by item. An empty or null desired
    value matches an absent one, which is how the server may store it."""
    if desired in (None, {}, []) and observed in (None, _ABSENT):
        return []
    if isinstance(desired, dict):
        if not isinstance(observed, dict):
            return [path]
        found: list[str] = []
        for key, value in desired.items():
            found += differences(value, observed.get(key, _ABSENT), f"{path}.{key}".lstrip("."))
        return found
    if isinstance(desired, list):
        if not isinstance(observed, list) or len(observed) != len(desired):
            return [path]
        return [p for i, (d, o) in enumerate(zip(desired, observed, strict=True))
                for p in differences(d, o, f"{path}[{i}]")]
    same = type(desired) is type(observed) and desired == observed
    return [] if same else [path]


_ABSENT = object()
