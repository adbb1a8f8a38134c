"""Read Kubernetes JSON objects into the port's observation Structs.

Defaults for unset fields follow the spec (§1.4 storage classes, §3.6 pod consumers, §6.8
statuses); nothing here talks to the server.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from context_service.domain.cluster import (
    DEFAULT_SNAPSHOT_CLASS_ANNOTATION,
    ClaimInfo,
    PodConsumer,
    PodInfo,
    SandboxClaimInfo,
    SandboxInfo,
    SandboxTemplateInfo,
    SnapshotClassInfo,
    SnapshotInfo,
    StorageClassInfo,
    WarmPoolInfo,
    is_default_class,
)

JSON = dict[str, Any]


def obj(value: Any) -> JSON:
    """``value`` if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def strings(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in obj(value).items() if isinstance(v, str)}


def timestamp(value: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) and value else None
    except ValueError:
        return None


def meta(item: JSON) -> JSON:
    return obj(item.get("metadata"))


def _common(item: JSON) -> JSON:
    m = meta(item)
    return {
        "namespace": text(m.get("namespace")),
        "name": text(m.get("name")),
        "labels": strings(m.get("labels")),
        "deleting": bool(m.get("deletionTimestamp")),
        "created_at": timestamp(m.get("creationTimestamp")),
    }


def ready_condition(item: JSON) -> tuple[bool, str]:
    """(Ready is "True", the Ready condition's reason or "")."""
    for condition in obj(item.get("status")).get("conditions") or []:
        c = obj(condition)
        if c.get("type") == "Ready":
            return c.get("status") == "True", text(c.get("reason"))
    return False, ""


def storage_class(item: JSON) -> StorageClassInfo:
    expansion = item.get("allowVolumeExpansion")
    return StorageClassInfo(
        name=text(meta(item).get("name")),
        default=is_default_class(strings(meta(item).get("annotations"))),
        provisioner=text(item.get("provisioner")),
        volume_binding_mode=text(item.get("volumeBindingMode")) or "Immediate",
        reclaim_policy=text(item.get("reclaimPolicy")) or "Delete",
        allow_volume_expansion=expansion if isinstance(expansion, bool) else False,
    )


def claim(item: JSON) -> ClaimInfo:
    spec, status, m = obj(item.get("spec")), obj(item.get("status")), meta(item)
    annotations = strings(m.get("annotations"))
    storage_class_name = text(spec.get("storageClassName")) or annotations.get(
        "volume.beta.kubernetes.io/storage-class", ""
    )
    source = obj(spec.get("dataSource"))
    return ClaimInfo(
        **_common(item),
        phase=text(status.get("phase")) or "Pending",
        storage_class=storage_class_name,
        access_modes=tuple(text(a) for a in spec.get("accessModes") or []),
        size=text(obj(obj(spec.get("resources")).get("requests")).get("storage")),
        capacity=text(obj(status.get("capacity")).get("storage")),
        annotations=annotations,
        data_source=text(source.get("name")) if source.get("kind") == "VolumeSnapshot" else "",
        uid=text(m.get("uid")),
    )


def mounted_claims(item: JSON) -> dict[str, str]:
    """Volume name -> claim name for every persistentVolumeClaim volume of a Pod."""
    found = {}
    for volume in obj(item.get("spec")).get("volumes") or []:
        name = text(obj(obj(volume).get("persistentVolumeClaim")).get("claimName"))
        if name:
            found[text(obj(volume).get("name"))] = name
    return found


def pod(item: JSON) -> PodInfo:
    status = obj(item.get("status"))
    ready = any(
        obj(c).get("type") == "Ready" and obj(c).get("status") == "True"
        for c in status.get("conditions") or []
    )
    return PodInfo(
        **_common(item),
        phase=text(status.get("phase")) or "Pending",
        ready=ready,
        claims=tuple(sorted(set(mounted_claims(item).values()))),
    )


def consumer(item: JSON, claim_name: str) -> PodConsumer | None:
    """The spec §3.6 consumer record of a Pod for ``claim_name``; None when it does not mount it."""
    volumes = {v for v, c in mounted_claims(item).items() if c == claim_name}
    if not volumes:
        return None
    spec, m = obj(item.get("spec")), meta(item)
    containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    writes = any(
        text(obj(mount).get("name")) in volumes and obj(mount).get("readOnly") is not True
        for container in containers
        for mount in obj(container).get("volumeMounts") or []
    )
    phase = text(obj(item.get("status")).get("phase"))
    return PodConsumer(
        namespace=text(m.get("namespace")),
        pod=text(m.get("name")),
        service_account=text(spec.get("serviceAccountName")) or "default",
        access_mode="readWrite" if writes else "readOnly",
        active=phase == "Running" and not m.get("deletionTimestamp"),
        since=timestamp(m.get("creationTimestamp")),
    )


def sandbox(item: JSON) -> SandboxInfo:
    ready, reason = ready_condition(item)
    return SandboxInfo(
        **_common(item),
        ready=ready,
        reason=reason,
        annotations=strings(meta(item).get("annotations")),
    )


def sandbox_claim(item: JSON) -> SandboxClaimInfo:
    ready, reason = ready_condition(item)
    spec, status = obj(item.get("spec")), obj(item.get("status"))
    return SandboxClaimInfo(
        **_common(item),
        warm_pool=text(obj(spec.get("warmPoolRef")).get("name")),
        ready=ready,
        reason=reason,
        sandbox=text(obj(status.get("sandbox")).get("name")),
    )


def sandbox_template(item: JSON) -> SandboxTemplateInfo:
    spec = item.get("spec")
    return SandboxTemplateInfo(
        namespace=text(meta(item).get("namespace")),
        name=text(meta(item).get("name")),
        spec=spec if isinstance(spec, dict) else None,
    )


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def warm_pool(item: JSON) -> WarmPoolInfo:
    spec, status = obj(item.get("spec")), obj(item.get("status"))
    return WarmPoolInfo(
        namespace=text(meta(item).get("namespace")),
        name=text(meta(item).get("name")),
        template=text(obj(spec.get("sandboxTemplateRef")).get("name")),
        replicas=_int(spec.get("replicas")),
        ready_replicas=_int(status.get("readyReplicas")),
        deleting=bool(meta(item).get("deletionTimestamp")),
    )


def snapshot_class(item: JSON) -> SnapshotClassInfo:
    annotations = strings(meta(item).get("annotations"))
    return SnapshotClassInfo(
        name=text(meta(item).get("name")),
        driver=text(item.get("driver")),
        deletion_policy=text(item.get("deletionPolicy")),
        default=annotations.get(DEFAULT_SNAPSHOT_CLASS_ANNOTATION) == "true",
        parameters=strings(item.get("parameters")),
    )


def snapshot(item: JSON) -> SnapshotInfo:
    spec, status = obj(item.get("spec")), obj(item.get("status"))
    size = status.get("restoreSize")
    return SnapshotInfo(
        **_common(item),
        ready_to_use=status.get("readyToUse") is True,
        error_message=text(obj(status.get("error")).get("message")),
        restore_size=str(size) if isinstance(size, str | int) else "",
        source_claim=text(obj(spec.get("source")).get("persistentVolumeClaimName")),
        snapshot_class=text(spec.get("volumeSnapshotClassName")),
        annotations=strings(meta(item).get("annotations")),
    )
