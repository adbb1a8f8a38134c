"""Storage- and snapshot-class resolution (spec 6.4, 6.6) and capabilities (spec 1.11), over the
in-memory cluster."""

from __future__ import annotations

import msgspec
import pytest

from context_service.domain.cluster import ClusterError
from context_service.domain.context import snapshot_classes as sc
from context_service.domain.context.events import Storage
from context_service.domain.context.state import ContextState
from context_service.domain.errors import (
    ContextInvalidError,
    DomainError,
    LifecycleUnsupportedError,
)
from tests.support.fake_cluster import FakeCluster

UNSUPPORTED = "context lifecycle operation is not supported by this storage backend: "


def context(storage_class: str = "fast", observed: str = "") -> ContextState:
    return ContextState(live=True, namespace="team1", name="notes", type="memory",
                        storage=Storage("pvc", "1Gi", "ReadWriteOnce", storage_class),
                        observed_storage_class=observed)


@pytest.fixture
def cluster() -> FakeCluster:
    fake = FakeCluster()
    fake.add_storage_class("fast", "fast.csi")
    fake.add_storage_class("slow", "slow.csi", default=True)
    fake.add_storage_class("zzz-default", "zzz.csi", beta_default=True)
    return fake


def failure(call: object) -> tuple[type[DomainError], str]:
    with pytest.raises(DomainError) as info:
        call()  # type: ignore[operator]
    return type(info.value), info.value.message


def test_an_explicit_matching_class_is_used(cluster: FakeCluster) -> None:
    cluster.add_snapshot_class("fast-a", "fast.csi")
    cluster.add_snapshot_class("fast-b", "fast.csi", default=True)
    assert sc.resolve(cluster, context(), "fast-a") == sc.Resolution("fast", "fast.csi", "fast-a")


def test_the_first_default_class_wins_over_others(cluster: FakeCluster) -> None:
    for name, default in (("fast-c", True), ("fast-a", False), ("fast-b", True)):
        cluster.add_snapshot_class(name, "fast.csi", default=default)
    cluster.add_snapshot_class("aaa-other", "other.csi", default=True)
    assert sc.resolve(cluster, context()).snapshot_class == "fast-b"


def test_a_single_match_is_used_without_a_default(cluster: FakeCluster) -> None:
    cluster.add_snapshot_class("only", "fast.csi")
    cluster.add_snapshot_class("other", "slow.csi")
    assert sc.resolve(cluster, context()).snapshot_class == "only"


def test_no_matching_class_is_unsupported(cluster: FakeCluster) -> None:
    cluster.add_snapshot_class("other", "slow.csi", default=True)
    assert failure(lambda: sc.resolve(cluster, context())) == (
        LifecycleUnsupportedError, UNSUPPORTED + 'no VolumeSnapshotClass for storage driver '
                                                 '"fast.csi"')


def test_several_matches_without_a_default_are_ambiguous(cluster: FakeCluster) -> None:
    cluster.add_snapshot_class("fast-a", "fast.csi")
    cluster.add_snapshot_class("fast-b", "fast.csi")
    assert failure(lambda: sc.resolve(cluster, context())) == (
        ContextInvalidError, 'invalid context resource: multiple VolumeSnapshotClasses match '
                             'storage driver "fast.csi"; specify snapshotClass')


@pytest.mark.parametrize("requested", ["slow-snap", "missing"])
def test_an_explicit_class_of_another_driver_is_a_mismatch(cluster: FakeCluster,
                                                           requested: str) -> None:
    cluster.add_snapshot_class("fast-snap", "fast.csi")
    cluster.add_snapshot_class("slow-snap", "slow.csi")
    assert failure(lambda: sc.resolve(cluster, context(), requested)) == (
        ContextInvalidError, f'invalid context resource: snapshot class "{requested}" does not '
                             'match storage driver "fast.csi"')


def test_the_observed_class_then_the_first_default_class_is_the_context_class(
        cluster: FakeCluster) -> None:
    assert sc.storage_driver(cluster, context("", observed="fast")) == sc.StorageDriver(
        "fast", "fast.csi")
    assert sc.storage_driver(cluster, context("")) == sc.StorageDriver("slow", "slow.csi")


def test_a_context_without_any_class_cannot_resolve() -> None:
    bare = FakeCluster()
    bare.add_storage_class("fast", "fast.csi")
    assert failure(lambda: sc.storage_driver(bare, context(""))) == (
        ContextInvalidError, "invalid context resource: context PVC has no storage class")


def test_an_unknown_storage_class_cannot_resolve(cluster: FakeCluster) -> None:
    assert failure(lambda: sc.storage_driver(cluster, context('we"ird'))) == (
        ContextInvalidError, 'invalid context resource: storage class "we\\"ird" not found')


def test_a_missing_snapshot_api_is_unsupported(cluster: FakeCluster) -> None:
    cluster.uninstall("volumesnapshotclasses")
    kind, message = failure(lambda: sc.resolve(cluster, context()))
    assert kind is LifecycleUnsupportedError
    assert message == UNSUPPORTED + sc.API_MISSING
    assert "snapshot.storage.k8s.io/v1" in message


def test_other_cluster_failures_propagate(cluster: FakeCluster) -> None:
    cluster.fail("list_snapshot_classes", ClusterError(503, "Unavailable", "down"))
    with pytest.raises(ClusterError):
        sc.capabilities(cluster, context())


# --- capabilities -----------------------------------------------------------------------------


def caps(cluster: FakeCluster, state: ContextState) -> dict[str, object]:
    out = msgspec.to_builtins(sc.capabilities(cluster, state))
    assert isinstance(out, dict)
    return out


def test_capabilities_with_a_snapshot_class(cluster: FakeCluster) -> None:
    cluster.add_snapshot_class("fast-snap", "fast.csi")
    assert caps(cluster, context()) == {
        "snapshots": True, "clones": True, "restore": False, "driver": "fast.csi",
        "snapshot_class": "fast-snap", "reason": "restore requires cloning into a new context"}


def test_capabilities_without_a_snapshot_class_name_the_driver(cluster: FakeCluster) -> None:
    assert caps(cluster, context()) == {
        "snapshots": False, "clones": False, "restore": False, "driver": "fast.csi",
        "snapshot_class": "", "reason": UNSUPPORTED + 'no VolumeSnapshotClass for storage '
                                                      'driver "fast.csi"'}
    cluster.add_snapshot_class("a", "fast.csi")
    cluster.add_snapshot_class("b", "fast.csi")
    assert caps(cluster, context())["reason"] == (
        'invalid context resource: multiple VolumeSnapshotClasses match storage driver '
        '"fast.csi"; specify snapshotClass')
    cluster.uninstall("volumesnapshotclasses")
    assert caps(cluster, context())["reason"] == UNSUPPORTED + sc.API_MISSING


def test_capabilities_without_a_storage_class_give_only_the_reason(cluster: FakeCluster) -> None:
    assert caps(cluster, context("gone")) == {
        "snapshots": False, "clones": False, "restore": False, "driver": "",
        "snapshot_class": "", "reason": 'invalid context resource: storage class "gone" not '
                                        'found'}
