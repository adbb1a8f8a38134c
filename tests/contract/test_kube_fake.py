"""The fake's test controls (the port behaviour itself is covered by the shared contract)."""

from __future__ import annotations

import pytest

from context_service.domain.cluster import (
    SANDBOX_CLAIMS,
    Change,
    ClusterError,
    PoolSandboxClaim,
    WorkspaceClaim,
)
from tests.support.fake_cluster import FakeCluster

CLAIM = PoolSandboxClaim(namespace="ns", pool="p", index=0, warm_pool="w")


def test_injected_failures_surface_once_and_calls_are_recorded() -> None:
    fake = FakeCluster()
    fake.fail("ensure_sandbox_claim", ClusterError(500, "InternalError", "etcd down"))

    with pytest.raises(ClusterError, match="etcd down"):
        fake.ensure_sandbox_claim(CLAIM)
    assert fake.ensure_sandbox_claim(CLAIM) is True
    assert fake.calls == [("ensure_sandbox_claim", "ns", "p", "0")] * 2


def test_uninstalled_apis_behave_like_missing_crds() -> None:
    fake = FakeCluster()
    fake.uninstall("sandboxclaims")
    fake.uninstall("volumesnapshotclasses")

    assert not fake.has_resource(*SANDBOX_CLAIMS)
    assert fake.get_sandbox_claim("ns", "claim-p-0") is None
    assert fake.delete_sandbox_claim("ns", "claim-p-0") is False
    with pytest.raises(ClusterError) as create:
        fake.ensure_sandbox_claim(CLAIM)
    assert create.value.api_not_installed
    with pytest.raises(ClusterError) as classes:
        fake.list_snapshot_classes()
    assert classes.value.api_not_installed


def test_held_deletes_stay_visible_until_finished_and_watchers_hear_of_it() -> None:
    fake = FakeCluster()
    changes: list[Change] = []
    watch = fake.watch("ns", changes.append)
    fake.hold_deletes = True
    fake.ensure_sandbox_claim(CLAIM)

    fake.delete_sandbox_claim("ns", "claim-p-0")
    held = fake.get_sandbox_claim("ns", "claim-p-0")
    assert held is not None and held.deleting
    assert len(fake.list_pool_objects("ns", "p").sandbox_claims) == 1
    fake.finish_deletes()
    watch.stop()
    fake.ensure_workspace_claim(
        WorkspaceClaim(
            namespace="ns",
            pool="p",
            index=None,
            replicas=1,
            size="1Gi",
            access_mode="ReadWriteMany",
        )
    )

    assert fake.get_sandbox_claim("ns", "claim-p-0") is None
    assert [(c.kind, c.name, c.deleted) for c in changes] == [
        ("sandboxclaims", "claim-p-0", False),
        ("sandboxclaims", "claim-p-0", False),
        ("sandboxclaims", "claim-p-0", True),
    ]


def test_helpers_play_the_controllers() -> None:
    fake = FakeCluster()
    fake.ensure_sandbox_claim(CLAIM)
    fake.set_ready("sandboxclaims", "ns", "claim-p-0")
    fake.add_pod("ns", "claim-p-0", labels={"context.rossoctl.io/pool": "p"})
    fake.add_claim("ns", "shared", access_modes=("ReadWriteMany",), storage_class="nfs")
    fake.add_storage_class("nfs", "nfs.csi", beta_default=True)

    objects = fake.list_pool_objects("ns", "p")
    assert objects.sandbox_claims[0].ready and objects.pods[0].ready
    claim = fake.get_claim("ns", "shared")
    assert claim is not None and (claim.phase, claim.access_modes) == ("Bound", ("ReadWriteMany",))
    assert [c.default for c in fake.list_storage_classes()] == [True]
