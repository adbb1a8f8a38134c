"""Storage-class and snapshot-class resolution for lifecycle operations (spec 6.4, 6.6), and
the capabilities they imply (spec 1.11).

Pure decisions over the ``Cluster`` port: the context's class (requested or observed, else the
cluster default) gives the CSI driver, whose VolumeSnapshotClasses decide whether, and with
which class, a snapshot can be taken. Failures are the snapshot route's errors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from context_service.domain.cluster import Cluster, ClusterError, SnapshotClassInfo
from context_service.domain.echoed import quoted
from context_service.domain.errors import (
    ContextInvalidError,
    DomainError,
    LifecycleUnsupportedError,
)
from context_service.domain.values import quote

if TYPE_CHECKING:
    from context_service.domain.context.state import ContextState

API_MISSING = "the VolumeSnapshot API (snapshot.storage.k8s.io/v1) is not installed"
RESTORE_REASON = "restore requires cloning into a new context"


class StorageDriver(msgspec.Struct, frozen=True):
    storage_class: str
    driver: str  # the class's provisioner


class Resolution(msgspec.Struct, frozen=True):
    storage_class: str
    driver: str
    snapshot_class: str


class Capabilities(msgspec.Struct, frozen=True, kw_only=True):
    snapshots: bool
    clones: bool
    restore: bool
    driver: str = ""
    snapshot_class: str = ""
    reason: str = ""


def storage_driver(cluster: Cluster, state: ContextState) -> StorageDriver:
    """The context's class (requested, observed, else the first default class by name) and its
    provisioner."""
    classes = sorted(cluster.list_storage_classes(), key=lambda c: c.name)
    name = state.storage_class
    if not name:
        name = next((c.name for c in classes if c.default), "")
    if not name:
        raise ContextInvalidError("context PVC has no storage class")
    for found in classes:
        if found.name == name:
            return StorageDriver(name, found.provisioner)
    raise ContextInvalidError(f"storage class {quoted(name)} not found")  # the caller's: cut


def snapshot_class(cluster: Cluster, driver: str, requested: str = "") -> str:
    """The VolumeSnapshotClass for ``driver``: the requested one if it matches, else the first
    default match, else the only match."""
    matches = sorted((c for c in _snapshot_classes(cluster) if c.driver == driver),
                     key=lambda c: c.name)
    if requested:
        if all(c.name != requested for c in matches):
            raise ContextInvalidError(f"snapshot class {quoted(requested)} does not match "
                                      f"storage driver {quote(driver)}")
        return requested
    defaults = [c for c in matches if c.default]
    if defaults:
        return defaults[0].name
    if len(matches) == 1:
        return matches[0].name
    if not matches:
        raise LifecycleUnsupportedError(
            f"no VolumeSnapshotClass for storage driver {quote(driver)}")
    raise ContextInvalidError(f"multiple VolumeSnapshotClasses match storage driver "
                              f"{quote(driver)}; specify snapshotClass")


def resolve(cluster: Cluster, state: ContextState, requested: str = "") -> Resolution:
    found = storage_driver(cluster, state)
    chosen = snapshot_class(cluster, found.driver, requested)
    return Resolution(found.storage_class, found.driver, chosen)


def capabilities(cluster: Cluster, state: ContextState) -> Capabilities:
    """What the backend can do for this context; when it cannot, why (the snapshot route's
    message). Cluster failures other than a missing API propagate."""
    try:
        found = storage_driver(cluster, state)
    except DomainError as exc:
        return Capabilities(snapshots=False, clones=False, restore=False, reason=exc.message)
    try:
        chosen = snapshot_class(cluster, found.driver)
    except DomainError as exc:
        return Capabilities(snapshots=False, clones=False, restore=False, driver=found.driver,
                            reason=exc.message)
    return Capabilities(snapshots=True, clones=True, restore=False, driver=found.driver,
                        snapshot_class=chosen, reason=RESTORE_REASON)


def _snapshot_classes(cluster: Cluster) -> list[SnapshotClassInfo]:
    try:
        return cluster.list_snapshot_classes()
    except ClusterError as exc:
        if exc.api_not_installed:
            raise LifecycleUnsupportedError(API_MISSING) from exc
        raise
