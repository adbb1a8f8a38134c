"""The cluster port's contract, run against the real API server (``k8s``) and the in-memory fake.

Both backends are seeded with the same raw JSON and must answer the same observations, so unit
tests that use the fake can trust it to behave like the adapter.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from context_service.domain import cluster as port
from context_service.domain.cluster import (
    ContextClaim,
    WorkspaceClaim,
)
from tests.support.kube_fixtures import PortBackend as Backend

JSON = dict[str, Any]


@pytest.fixture
def backend(port_backend: Backend) -> Backend:
    return port_backend


def unique(backend: Backend, name: str) -> str:
    """Cluster-scoped names are shared across tests on the session server."""
    return f"{backend.ns}-{name}"


def storage_class(name: str, provisioner: str, annotations: dict[str, str], **fields: Any) -> JSON:
    meta = {"name": name, "annotations": annotations}
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": meta,
        "provisioner": provisioner,
        **fields,
    }


# --- storage classes ------------------------------------------------------------------------


def test_storage_classes_apply_spec_defaults_and_both_default_annotations(backend: Backend) -> None:
    ga = {"storageclass.kubernetes.io/is-default-class": "true"}
    beta = {"storageclass.beta.kubernetes.io/is-default-class": "true"}
    driver = f"{backend.ns}.csi.test"
    backend.put("storageclasses", storage_class(unique(backend, "b-plain"), driver, {}))
    backend.put(
        "storageclasses",
        storage_class(
            unique(backend, "a-ga"),
            driver,
            ga,
            volumeBindingMode="WaitForFirstConsumer",
            reclaimPolicy="Retain",
            allowVolumeExpansion=True,
        ),
    )
    backend.put("storageclasses", storage_class(unique(backend, "c-beta"), driver, beta))
    backend.put(
        "storageclasses",
        storage_class(
            unique(backend, "d-no"),
            driver,
            {"storageclass.kubernetes.io/is-default-class": "false"},
        ),
    )

    mine = [c for c in backend.cluster.list_storage_classes() if c.provisioner == driver]

    assert [c.name for c in mine] == [
        unique(backend, n) for n in ("a-ga", "b-plain", "c-beta", "d-no")
    ]
    assert [c.default for c in mine] == [True, False, True, False]
    assert mine[0] == port.StorageClassInfo(
        name=unique(backend, "a-ga"),
        default=True,
        provisioner=driver,
        volume_binding_mode="WaitForFirstConsumer",
        reclaim_policy="Retain",
        allow_volume_expansion=True,
    )
    assert (
        mine[1].volume_binding_mode,
        mine[1].reclaim_policy,
        mine[1].allow_volume_expansion,
    ) == ("Immediate", "Delete", False)


# --- context claims -------------------------------------------------------------------------


def context_claim(ns: str, **changes: Any) -> ContextClaim:
    fields: dict[str, Any] = dict(
        namespace=ns,
        context="notes",
        type="memory",
        size="1Gi",
        access_mode="ReadWriteOnce",
        storage_class="fast",
        annotations={
            "context.rossoctl.io/access-grants": "[]",
            "context.rossoctl.io/current-revision": "a" * 64,
        },
    )
    fields.update(changes)
    return ContextClaim(**fields)


def test_context_claim_is_created_once_with_the_spec_shape(backend: Backend) -> None:
    assert backend.cluster.ensure_context_claim(context_claim(backend.ns)) is True
    assert backend.cluster.ensure_context_claim(context_claim(backend.ns)) is False

    raw = backend.read("persistentvolumeclaims", "context-notes")
    assert raw is not None
    assert raw["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "context-service",
        "context.rossoctl.io/name": "notes",
        "context.rossoctl.io/type": "memory",
    }
    assert raw["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert raw["spec"]["resources"] == {"requests": {"storage": "1Gi"}}
    assert raw["spec"]["storageClassName"] == "fast"
    info = backend.cluster.get_claim(backend.ns, "context-notes")
    assert info is not None
    assert (info.phase, info.storage_class, info.access_modes, info.size, info.deleting) == (
        "Pending",
        "fast",
        ("ReadWriteOnce",),
        "1Gi",
        False,
    )
    assert info.annotations["context.rossoctl.io/current-revision"] == "a" * 64


def test_context_claim_keeps_annotations_current(backend: Backend) -> None:
    backend.cluster.ensure_context_claim(context_claim(backend.ns))
    source = {"context.rossoctl.io/source-context": "origin"}
    later = context_claim(
        backend.ns,
        annotations={"context.rossoctl.io/access-grants": '[{"subject":"user:a"}]', **source},
    )

    assert backend.cluster.ensure_context_claim(later) is False

    info = backend.cluster.get_claim(backend.ns, "context-notes")
    assert info is not None
    assert info.annotations == {
        "context.rossoctl.io/access-grants": '[{"subject":"user:a"}]',
        **source,
    }


def test_clone_claim_has_a_snapshot_data_source(backend: Backend) -> None:
    clone = context_claim(backend.ns, context="copy", source_snapshot="context-notes-s1")
    backend.cluster.ensure_context_claim(clone)
    raw = backend.read("persistentvolumeclaims", "context-copy")
    assert raw is not None
    assert raw["spec"]["dataSource"] == {
        "apiGroup": "snapshot.storage.k8s.io",
        "kind": "VolumeSnapshot",
        "name": "context-notes-s1",
    }
    info = backend.cluster.get_claim(backend.ns, "context-copy")
    assert info is not None and info.data_source == "context-notes-s1"


def test_claim_delete_ignores_not_found_and_get_answers_none(backend: Backend) -> None:
    backend.cluster.ensure_context_claim(context_claim(backend.ns))
    assert backend.cluster.delete_claim(backend.ns, "context-notes") is True
    assert backend.cluster.delete_claim(backend.ns, "context-notes") is False
    assert backend.cluster.get_claim(backend.ns, "context-notes") is None
    assert backend.cluster.get_claim(backend.ns, "never") is None


def test_observed_claim_phase_class_and_context_listing(backend: Backend) -> None:
    backend.cluster.ensure_context_claim(context_claim(backend.ns))
    backend.write_status(
        "persistentvolumeclaims",
        "context-notes",
        {"phase": "Bound", "capacity": {"storage": "1Gi"}},
    )
    backend.cluster.ensure_workspace_claim(
        WorkspaceClaim(
            namespace=backend.ns,
            pool="p",
            index=None,
            replicas=2,
            size="1Gi",
            access_mode="ReadWriteMany",
        )
    )

    info = backend.cluster.get_claim(backend.ns, "context-notes")
    assert info is not None and (info.phase, info.capacity) == ("Bound", "1Gi")
    assert [c.name for c in backend.cluster.list_context_claims(backend.ns)] == ["context-notes"]


# --- observed pod consumers (spec §3.6) -------------------------------------------------------


def pod(
    name: str,
    claim: str,
    *,
    containers: list[JSON],
    init: list[JSON] | None = None,
    service_account: str = "",
    labels: dict[str, str] | None = None,
) -> JSON:
    spec: JSON = {
        "containers": containers,
        "volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": claim}},
            {"name": "other", "emptyDir": {}},
        ],
    }
    if init:
        spec["initContainers"] = init
    if service_account:
        spec["serviceAccountName"] = service_account
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": spec,
    }


def container(name: str, *mounts: tuple[str, bool | None]) -> JSON:
    volume_mounts = []
    for volume, read_only in mounts:
        mount: JSON = {"name": volume, "mountPath": f"/{volume}"}
        if read_only is not None:
            mount["readOnly"] = read_only
        volume_mounts.append(mount)
    return {"name": name, "image": "busybox:1.36", "volumeMounts": volume_mounts}


def test_pods_mounting_a_claim_map_to_consumers(backend: Backend) -> None:
    claim = "context-notes"
    backend.put(
        "pods",
        pod("writer", claim, containers=[container("c", ("data", None))], service_account="agent"),
    )
    backend.write_status("pods", "writer", {"phase": "Running"})
    backend.put("pods", pod("reader", claim, containers=[container("c", ("data", True))]))
    backend.put(
        "pods",
        pod(
            "init-writer",
            claim,
            containers=[container("c", ("data", True))],
            init=[container("i", ("data", False))],
        ),
    )
    backend.put("pods", pod("unmounted", claim, containers=[container("c", ("other", False))]))
    backend.put(
        "pods", pod("elsewhere", "context-other", containers=[container("c", ("data", False))])
    )
    backend.put_deleting("pods", pod("leaving", claim, containers=[container("c", ("data", None))]))
    backend.write_status("pods", "leaving", {"phase": "Running"})

    found = {c.pod: c for c in backend.cluster.list_claim_consumers(backend.ns, claim)}

    assert sorted(found) == ["init-writer", "leaving", "reader", "unmounted", "writer"]
    assert [(p, found[p].access_mode, found[p].active) for p in sorted(found)] == [
        ("init-writer", "readWrite", False),
        ("leaving", "readWrite", False),
        ("reader", "readOnly", False),
        ("unmounted", "readOnly", False),  # the volume is declared but no container mounts it
        ("writer", "readWrite", True),
    ]
    assert found["writer"].subject_name == f"{backend.ns}/agent"
    assert found["reader"].subject_name == f"{backend.ns}/default"
    assert found["writer"].since is not None


def test_query_index_mirror_is_applied_replaced_and_deleted(backend: Backend) -> None:
    mirror = port.QueryIndexMirror(
        namespace=backend.ns,
        context="notes",
        type="knowledge",
        revision="r1",
        index_json='{"revision":"r1","records":[]}',
    )
    backend.cluster.apply_query_mirror(mirror)
    backend.cluster.apply_query_mirror(
        port.QueryIndexMirror(
            **{
                **msgspec.structs.asdict(mirror),
                "revision": "r2",
                "index_json": '{"revision":"r2","records":[]}',
            }
        )
    )

    raw = backend.read("configmaps", "context-notes-query")
    assert raw is not None
    assert raw["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "context-service",
        "context.rossoctl.io/name": "notes",
        "context.rossoctl.io/type": "knowledge",
    }
    assert raw["metadata"]["annotations"] == {"context.rossoctl.io/query-index-revision": "r2"}
    assert raw["data"] == {"index.json": '{"revision":"r2","records":[]}'}
    assert backend.cluster.delete_query_mirror(backend.ns, "notes") is True
    assert backend.cluster.delete_query_mirror(backend.ns, "notes") is False
