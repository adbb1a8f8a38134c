"""Snapshots through the cluster port (spec §6.6), on the real server and the fake."""

from __future__ import annotations

from typing import Any

import pytest

from context_service.domain.cluster import ContextSnapshot, snapshot_object_name
from tests.support.kube_fixtures import PortBackend as Backend

JSON = dict[str, Any]


@pytest.fixture
def backend(port_backend: Backend) -> Backend:
    return port_backend


def snapshot(ns: str, name: str = "s1", **changes: Any) -> ContextSnapshot:
    fields: dict[str, Any] = dict(
        namespace=ns,
        context="notes",
        snapshot=name,
        type="memory",
        snapshot_class="fast-snap",
        size="1Gi",
        access_mode="ReadWriteOnce",
        storage_class="fast",
        source_revision="",
        protected=True,
        user_labels={"b": "2", "a": "1"},
    )
    fields.update(changes)
    return ContextSnapshot(**fields)


def snapshot_class(name: str, driver: str, default: bool) -> JSON:
    annotations = {"snapshot.storage.kubernetes.io/is-default-class": "true"} if default else {}
    return {
        "apiVersion": "snapshot.storage.k8s.io/v1",
        "kind": "VolumeSnapshotClass",
        "metadata": {"name": name, "annotations": annotations},
        "driver": driver,
        "deletionPolicy": "Delete",
    }


def test_snapshot_classes_are_listed_with_driver_and_default(backend: Backend) -> None:
    driver = f"{backend.ns}.csi.test"
    backend.put("volumesnapshotclasses", snapshot_class(f"{backend.ns}-b", driver, False))
    backend.put("volumesnapshotclasses", snapshot_class(f"{backend.ns}-a", driver, True))

    mine = [c for c in backend.cluster.list_snapshot_classes() if c.driver == driver]

    assert [(c.name, c.default, c.deletion_policy) for c in mine] == [
        (f"{backend.ns}-a", True, "Delete"),
        (f"{backend.ns}-b", False, "Delete"),
    ]


def test_volume_snapshot_has_the_spec_shape(backend: Backend) -> None:
    assert backend.cluster.ensure_snapshot(snapshot(backend.ns)) is True
    assert backend.cluster.ensure_snapshot(snapshot(backend.ns)) is False

    raw = backend.read("volumesnapshots", "context-notes-s1")
    assert raw is not None
    assert raw["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "context-service",
        "context.rossoctl.io/name": "notes",
        "context.rossoctl.io/snapshot": "s1",
        "context.rossoctl.io/type": "memory",
    }
    assert raw["metadata"]["annotations"] == {
        "context.rossoctl.io/source-claim": "context-notes",
        "context.rossoctl.io/storage-size": "1Gi",
        "context.rossoctl.io/access-mode": "ReadWriteOnce",
        "context.rossoctl.io/storage-class": "fast",
        "context.rossoctl.io/context-type": "memory",
        "context.rossoctl.io/source-revision": "",
        "context.rossoctl.io/protected": "true",
        "context.rossoctl.io/snapshot-labels": '{"a":"1","b":"2"}',
    }
    assert raw["spec"] == {
        "volumeSnapshotClassName": "fast-snap",
        "source": {"persistentVolumeClaimName": "context-notes"},
    }


def test_snapshot_status_is_observed(backend: Backend) -> None:
    cluster = backend.cluster
    for name in ("ok", "bad", "new"):
        cluster.ensure_snapshot(snapshot(backend.ns, name))
    backend.write_status(
        "volumesnapshots", "context-notes-ok", {"readyToUse": True, "restoreSize": "1Gi"}
    )
    backend.write_status(
        "volumesnapshots",
        "context-notes-bad",
        {
            "readyToUse": False,
            "error": {"message": "driver failed", "time": "2026-01-01T00:00:00Z"},
        },
    )

    ok = cluster.get_snapshot(backend.ns, "context-notes-ok")
    bad = cluster.get_snapshot(backend.ns, "context-notes-bad")
    new = cluster.get_snapshot(backend.ns, "context-notes-new")

    assert ok is not None and (ok.ready_to_use, ok.restore_size, ok.error_message) == (
        True,
        "1Gi",
        "",
    )
    assert bad is not None and (bad.ready_to_use, bad.error_message) == (False, "driver failed")
    assert new is not None and (new.ready_to_use, new.error_message) == (False, "")
    assert new.created_at is not None and new.source_claim == "context-notes"
    assert [s.name for s in cluster.list_snapshots(backend.ns, "notes")] == [
        "context-notes-bad",
        "context-notes-new",
        "context-notes-ok",
    ]
    assert cluster.list_snapshots(backend.ns, "other") == []


def test_snapshot_delete_ignores_not_found(backend: Backend) -> None:
    backend.cluster.ensure_snapshot(snapshot(backend.ns))
    assert backend.cluster.delete_snapshot(backend.ns, "context-notes-s1") is True
    assert backend.cluster.delete_snapshot(backend.ns, "context-notes-s1") is False
    assert backend.cluster.get_snapshot(backend.ns, "context-notes-s1") is None


def test_long_snapshot_names_are_hashed_to_63_characters(backend: Backend) -> None:
    long_name = snapshot(backend.ns, "s" * 60)
    name = snapshot_object_name("notes", "s" * 60)
    assert len(name) == 63 and name.startswith("context-notes-sss")
    backend.cluster.ensure_snapshot(long_name)
    assert backend.cluster.get_snapshot(backend.ns, name) is not None


def test_installed_apis_are_discovered(backend: Backend) -> None:
    cluster = backend.cluster
    assert cluster.has_resource("snapshot.storage.k8s.io", "v1", "volumesnapshots")
    assert cluster.has_resource("agents.x-k8s.io", "v1beta1", "sandboxes")
    assert cluster.has_resource("", "v1", "persistentvolumeclaims")
    assert not cluster.has_resource("agents.x-k8s.io", "v1alpha1", "sandboxes")
    assert not cluster.has_resource("snapshot.storage.k8s.io", "v1", "volumesnapshotcontents")
