"""The development stand-in for node-side controllers, against the real API server."""

from __future__ import annotations

from typing import Any

import pytest

from context_service.adapters.kubernetes.cluster import (
    SANDBOX_TEMPLATE,
    WARM_POOL,
    KubernetesCluster,
)
from context_service.adapters.kubernetes.rest import PODS, STORAGE_CLASSES
from context_service.devcluster.devsim import DevSimulator
from context_service.domain.cluster import (
    BuiltinRuntime,
    ContextClaim,
    ContextSnapshot,
    PoolSandbox,
    PoolSandboxClaim,
    WorkspaceClaim,
)

pytestmark = pytest.mark.k8s
JSON = dict[str, Any]


def test_managed_pool_becomes_ready(
    kube_cluster: KubernetesCluster, kube_ns: str, kube_sim: DevSimulator
) -> None:
    for i in (0, 1):
        kube_cluster.ensure_workspace_claim(
            WorkspaceClaim(
                namespace=kube_ns,
                pool="docs",
                index=i,
                replicas=2,
                size="1Gi",
                access_mode="ReadWriteOnce",
            )
        )
        kube_cluster.ensure_sandbox(
            PoolSandbox(
                namespace=kube_ns,
                pool="docs",
                index=i,
                replicas=2,
                claim=f"docs-workspace-{i}",
                runtime=BuiltinRuntime(image="busybox:1.36"),
            )
        )

    kube_sim.settle()

    objects = kube_cluster.list_pool_objects(kube_ns, "docs")
    assert [(s.name, s.ready, s.reason) for s in objects.sandboxes] == [
        ("sandbox-docs-0", True, "DependenciesReady"),
        ("sandbox-docs-1", True, "DependenciesReady"),
    ]
    assert [(p.name, p.phase, p.ready) for p in objects.pods] == [
        ("sandbox-docs-0", "Running", True),
        ("sandbox-docs-1", "Running", True),
    ]
    assert objects.pods[0].claims == ("docs-workspace-0",)
    assert [c.phase for c in objects.claims] == ["Bound", "Bound"]


def _seed_warm_pool(kube_cluster: KubernetesCluster, ns: str) -> None:
    template = {
        "apiVersion": "extensions.agents.x-k8s.io/v1beta1",
        "kind": "SandboxTemplate",
        "metadata": {"name": "developer"},
        "spec": {
            "podTemplate": {
                "metadata": {"labels": {"team": "a"}},
                "spec": {"containers": [{"name": "a", "image": "i"}]},
            }
        },
    }
    pool = {
        "apiVersion": "extensions.agents.x-k8s.io/v1beta1",
        "kind": "SandboxWarmPool",
        "metadata": {"name": "warm"},
        "spec": {"sandboxTemplateRef": {"name": "developer"}},
    }
    kube_cluster.rest.create(SANDBOX_TEMPLATE.path(ns), template, "test")
    kube_cluster.rest.create(WARM_POOL.path(ns), pool, "test")


def test_warm_pool_claims_become_ready_and_release_in_the_foreground(
    kube_cluster: KubernetesCluster, kube_ns: str, kube_sim: DevSimulator
) -> None:
    _seed_warm_pool(kube_cluster, kube_ns)
    for i, warm in ((0, "warm"), (1, "warm"), (2, "cold")):
        kube_cluster.ensure_sandbox_claim(
            PoolSandboxClaim(namespace=kube_ns, pool="review", index=i, warm_pool=warm)
        )

    kube_sim.settle()

    objects = kube_cluster.list_pool_objects(kube_ns, "review")
    assert [(c.name, c.ready, c.sandbox) for c in objects.sandbox_claims] == [
        ("claim-review-0", True, "claim-review-0"),
        ("claim-review-1", True, "claim-review-1"),
        ("claim-review-2", False, ""),
    ]
    assert objects.sandbox_claims[2].reason == "WarmPoolNotReady"
    assert [(p.name, p.ready) for p in objects.pods] == [
        ("claim-review-0", True),
        ("claim-review-1", True),
    ]
    assert objects.pods[0].labels == {"team": "a", "context.rossoctl.io/pool": "review"}

    assert kube_cluster.delete_sandbox_claim(kube_ns, "claim-review-0") is True
    held = kube_cluster.get_sandbox_claim(kube_ns, "claim-review-0")
    assert held is not None and held.deleting  # foreground: waits for its Sandbox and Pod
    kube_sim.settle()
    assert kube_cluster.get_sandbox_claim(kube_ns, "claim-review-0") is None
    assert kube_cluster.get_sandbox(kube_ns, "claim-review-0") is None
    assert [p.name for p in kube_cluster.list_pool_objects(kube_ns, "review").pods] == [
        "claim-review-1"
    ]


def test_wait_for_first_consumer_binds_only_once_mounted(
    kube_cluster: KubernetesCluster, kube_ns: str, kube_sim: DevSimulator
) -> None:
    name = f"{kube_ns}-wffc"
    kube_cluster.rest.create(
        STORAGE_CLASSES.path(),
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": name},
            "provisioner": f"{kube_ns}.csi.test",
            "volumeBindingMode": "WaitForFirstConsumer",
        },
        "t",
    )
    try:
        kube_cluster.ensure_context_claim(
            ContextClaim(
                namespace=kube_ns,
                context="notes",
                type="memory",
                size="1Gi",
                access_mode="ReadWriteOnce",
                storage_class=name,
            )
        )
        kube_sim.settle()
        claim = kube_cluster.get_claim(kube_ns, "context-notes")
        assert claim is not None and claim.phase == "Pending"

        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "user"},
            "spec": {
                "containers": [
                    {"name": "c", "image": "i", "volumeMounts": [{"name": "d", "mountPath": "/d"}]}
                ],
                "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "context-notes"}}],
            },
        }
        kube_cluster.rest.create(PODS.path(kube_ns), pod, "test")
        kube_sim.settle()

        claim = kube_cluster.get_claim(kube_ns, "context-notes")
        assert claim is not None and (claim.phase, claim.capacity) == ("Bound", "1Gi")
        [consumer] = kube_cluster.list_claim_consumers(kube_ns, "context-notes")
        assert (consumer.pod, consumer.active, consumer.access_mode) == ("user", True, "readWrite")
    finally:
        kube_cluster.rest.delete(STORAGE_CLASSES.path(name=name))


def test_snapshots_become_ready_or_fail_and_clones_bind_after_them(
    kube_cluster: KubernetesCluster, kube_ns: str, kube_sim: DevSimulator
) -> None:
    claim = ContextClaim(
        namespace=kube_ns,
        context="notes",
        type="memory",
        size="1024Mi",
        access_mode="ReadWriteOnce",
    )
    kube_cluster.ensure_context_claim(claim)
    for name in ("good", "bad"):
        kube_cluster.ensure_snapshot(
            ContextSnapshot(
                namespace=kube_ns,
                context="notes",
                snapshot=name,
                type="memory",
                snapshot_class="c",
                size="1Gi",
                access_mode="ReadWriteOnce",
                storage_class="",
            )
        )
    kube_sim.fail_snapshot(kube_ns, "context-notes-bad", "no space left")
    clone = ContextClaim(
        namespace=kube_ns,
        context="copy",
        type="memory",
        size="1Gi",
        access_mode="ReadWriteOnce",
        source_snapshot="context-notes-good",
    )
    kube_cluster.ensure_context_claim(clone)

    kube_sim.settle()

    good = kube_cluster.get_snapshot(kube_ns, "context-notes-good")
    bad = kube_cluster.get_snapshot(kube_ns, "context-notes-bad")
    assert good is not None and (good.ready_to_use, good.restore_size) == (True, "1Gi")
    assert bad is not None and (bad.ready_to_use, bad.error_message) == (False, "no space left")
    copy = kube_cluster.get_claim(kube_ns, "context-copy")
    assert copy is not None and copy.phase == "Bound"


def test_deleted_sandbox_leaves_no_pods_or_claims_behind(
    kube_cluster: KubernetesCluster, kube_ns: str, kube_sim: DevSimulator
) -> None:
    sandbox = PoolSandbox(
        namespace=kube_ns,
        pool="tmp",
        index=0,
        replicas=1,
        claim="x",
        runtime=BuiltinRuntime(image="i"),
    )
    kube_cluster.ensure_sandbox(sandbox)
    kube_sim.settle()
    assert kube_cluster.list_pool_objects(kube_ns, "tmp").pods

    kube_cluster.delete_sandbox(kube_ns, "sandbox-tmp-0")
    kube_sim.settle()

    assert kube_cluster.list_pool_objects(kube_ns, "tmp").pods == ()
