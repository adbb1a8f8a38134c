"""Pool objects through the cluster port (spec §6.7, §6.8), on the real server and the fake."""

from __future__ import annotations

from typing import Any

import pytest

from context_service.domain.cluster import (
    BuiltinRuntime,
    PoolSandbox,
    PoolSandboxClaim,
    ProfileRuntime,
    WorkspaceClaim,
)
from tests.support.kube_fixtures import PortBackend as Backend

JSON = dict[str, Any]
POOL = {"context.rossoctl.io/pool": "docs", "app.kubernetes.io/managed-by": "context-service"}
WORKSPACE_MOUNT = {"name": "workspace", "mountPath": "/workspace", "readOnly": False}


@pytest.fixture
def backend(port_backend: Backend) -> Backend:
    return port_backend


def builtin(ns: str, index: int = 0, **changes: Any) -> PoolSandbox:
    fields: dict[str, Any] = dict(
        namespace=ns,
        pool="docs",
        index=index,
        replicas=2,
        claim="docs-workspace",
        runtime=BuiltinRuntime(image="busybox:1.36", service_account="runner"),
    )
    fields.update(changes)
    return PoolSandbox(**fields)


def test_builtin_sandbox_has_the_spec_shape(backend: Backend) -> None:
    assert backend.cluster.ensure_sandbox(builtin(backend.ns)) is True
    assert backend.cluster.ensure_sandbox(builtin(backend.ns)) is False

    raw = backend.read("sandboxes", "sandbox-docs-0")
    assert raw is not None
    assert raw["metadata"]["labels"] == POOL
    assert raw["metadata"]["annotations"] == {
        "context.rossoctl.io/workspace-read-only": "false",
        "context.rossoctl.io/replicas": "2",
    }
    assert raw["spec"]["podTemplate"] == {
        "metadata": {"labels": POOL},
        "spec": {
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "kubernetes.io/hostname",
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": {"context.rossoctl.io/pool": "docs"}},
                }
            ],
            "containers": [
                {
                    "name": "sandbox",
                    "image": "busybox:1.36",
                    "command": ["/bin/sh", "-c", "mkdir -p /workspace && exec sleep infinity"],
                    "workingDir": "/workspace",
                    "volumeMounts": [WORKSPACE_MOUNT],
                    "resources": {
                        "requests": {"memory": "64Mi", "cpu": "50m"},
                        "limits": {"memory": "256Mi"},
                    },
                }
            ],
            "volumes": [
                {
                    "name": "workspace",
                    "persistentVolumeClaim": {"claimName": "docs-workspace", "readOnly": False},
                }
            ],
            "serviceAccountName": "runner",
        },
    }


def test_existing_claim_sandbox_is_read_only_and_names_the_claim(backend: Backend) -> None:
    sandbox = builtin(
        backend.ns,
        claim="shared-data",
        read_only=True,
        existing_claim=True,
        runtime=BuiltinRuntime(image="img"),
    )
    backend.cluster.ensure_sandbox(sandbox)

    raw = backend.read("sandboxes", "sandbox-docs-0")
    assert raw is not None
    assert raw["metadata"]["annotations"]["context.rossoctl.io/workspace-read-only"] == "true"
    assert raw["metadata"]["annotations"]["context.rossoctl.io/workspace-claim"] == "shared-data"
    pod_spec = raw["spec"]["podTemplate"]["spec"]
    assert pod_spec["volumes"][0]["persistentVolumeClaim"] == {
        "claimName": "shared-data",
        "readOnly": True,
    }
    assert pod_spec["containers"][0]["volumeMounts"][0]["readOnly"] is True
    assert "serviceAccountName" not in pod_spec


TEMPLATE_SPEC: JSON = {
    "podTemplate": {
        "metadata": {"labels": {"team": "a", "context.rossoctl.io/pool": "wrong"}},
        "spec": {
            "containers": [
                {
                    "name": "agent",
                    "image": "agent:1",
                    "volumeMounts": [{"name": "cache", "mountPath": "/cache"}],
                },
                {"name": "side", "image": "side:1"},
            ],
            "volumes": [{"name": "cache", "emptyDir": {}}],
            "serviceAccountName": "template-sa",
        },
    },
    "networkPolicyManagement": "Unmanaged",
    "envVarsInjectionPolicy": "Allowed",
}


def test_profile_sandbox_copies_the_template_and_wires_the_workspace(backend: Backend) -> None:
    template: JSON = {
        "apiVersion": "extensions.agents.x-k8s.io/v1beta1",
        "kind": "SandboxTemplate",
        "metadata": {"name": "developer"},
        "spec": TEMPLATE_SPEC,
    }
    backend.put("sandboxtemplates", template)
    read = backend.cluster.get_sandbox_template(backend.ns, "developer")
    assert read is not None and read.spec is not None
    assert backend.cluster.get_sandbox_template(backend.ns, "missing") is None

    runtime = ProfileRuntime(profile="developer", template_spec=read.spec, service_account="x")
    backend.cluster.ensure_sandbox(builtin(backend.ns, index=1, runtime=runtime))

    raw = backend.read("sandboxes", "sandbox-docs-1")
    assert raw is not None
    assert raw["metadata"]["annotations"]["context.rossoctl.io/sandbox-profile"] == "developer"
    for key in (
        "networkPolicyManagement",
        "envVarsInjectionPolicy",
        "networkPolicy",
        "volumeClaimTemplatesPolicy",
    ):
        assert key not in raw["spec"]
    template_out = raw["spec"]["podTemplate"]
    assert template_out["metadata"]["labels"] == {"team": "a", **POOL}
    first, side = template_out["spec"]["containers"]
    assert first["volumeMounts"] == [{"name": "cache", "mountPath": "/cache"}, WORKSPACE_MOUNT]
    assert "volumeMounts" not in side
    assert template_out["spec"]["volumes"][-1] == {
        "name": "workspace",
        "persistentVolumeClaim": {"claimName": "docs-workspace", "readOnly": False},
    }
    assert template_out["spec"]["serviceAccountName"] == "template-sa"
    assert "topologySpreadConstraints" not in template_out["spec"]


def test_warm_pool_claims_and_workspace_claims_have_the_spec_shape(backend: Backend) -> None:
    claim = PoolSandboxClaim(namespace=backend.ns, pool="docs", index=3, warm_pool="warm")
    assert backend.cluster.ensure_sandbox_claim(claim) is True
    assert backend.cluster.ensure_sandbox_claim(claim) is False
    for index in (None, 0):
        backend.cluster.ensure_workspace_claim(
            WorkspaceClaim(
                namespace=backend.ns,
                pool="docs",
                index=index,
                replicas=2,
                size="2Gi",
                access_mode="ReadWriteOnce",
                storage_class="nfs",
            )
        )

    raw = backend.read("sandboxclaims", "claim-docs-3")
    assert raw is not None
    assert raw["metadata"]["labels"] == POOL
    assert raw["spec"]["warmPoolRef"] == {"name": "warm"}
    assert raw["spec"]["additionalPodMetadata"] == {"labels": {"context.rossoctl.io/pool": "docs"}}
    assert "env" not in raw["spec"] and "volumeClaimTemplates" not in raw["spec"]
    shared = backend.read("persistentvolumeclaims", "docs-workspace")
    dedicated = backend.read("persistentvolumeclaims", "docs-workspace-0")
    assert shared is not None and dedicated is not None
    assert shared["metadata"]["labels"] == {**POOL, "context.rossoctl.io/replicas": "2"}
    assert dedicated["spec"]["storageClassName"] == "nfs"
    assert dedicated["spec"]["resources"] == {"requests": {"storage": "2Gi"}}


def test_pool_objects_are_found_by_label(backend: Backend) -> None:
    cluster = backend.cluster
    for i in (0, 1):
        cluster.ensure_sandbox(builtin(backend.ns, index=i))
    cluster.ensure_sandbox(builtin(backend.ns, pool="other"))
    cluster.ensure_sandbox_claim(
        PoolSandboxClaim(namespace=backend.ns, pool="docs", index=0, warm_pool="warm")
    )
    cluster.ensure_workspace_claim(
        WorkspaceClaim(
            namespace=backend.ns,
            pool="docs",
            index=None,
            replicas=2,
            size="1Gi",
            access_mode="ReadWriteMany",
        )
    )
    pod: JSON = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "claimed", "labels": {"context.rossoctl.io/pool": "docs"}},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }
    backend.put("pods", pod)
    backend.write_status(
        "pods", "claimed", {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    )
    backend.write_status(
        "sandboxes",
        "sandbox-docs-1",
        {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "False",
                    "reason": "DependenciesNotReady",
                    "message": "",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ]
        },
    )

    docs = cluster.list_pool_objects(backend.ns, "docs")
    everything = cluster.list_pool_objects(backend.ns)

    assert [s.name for s in docs.sandboxes] == ["sandbox-docs-0", "sandbox-docs-1"]
    assert [(s.ready, s.reason) for s in docs.sandboxes] == [
        (False, ""),
        (False, "DependenciesNotReady"),
    ]
    assert docs.sandboxes[0].annotations["context.rossoctl.io/replicas"] == "2"
    assert [(c.name, c.warm_pool) for c in docs.sandbox_claims] == [("claim-docs-0", "warm")]
    assert [c.name for c in docs.claims] == ["docs-workspace"]
    assert [(p.name, p.phase, p.ready) for p in docs.pods] == [("claimed", "Running", True)]
    assert [s.name for s in everything.sandboxes] == [
        "sandbox-docs-0",
        "sandbox-docs-1",
        "sandbox-other-0",
    ]


def test_pool_lookups_and_deletes(backend: Backend) -> None:
    pool: JSON = {
        "apiVersion": "extensions.agents.x-k8s.io/v1beta1",
        "kind": "SandboxWarmPool",
        "metadata": {"name": "warm"},
        "spec": {"replicas": 3, "sandboxTemplateRef": {"name": "developer"}},
    }
    backend.put("sandboxwarmpools", pool)
    cluster = backend.cluster
    cluster.ensure_sandbox(builtin(backend.ns))
    cluster.ensure_sandbox_claim(
        PoolSandboxClaim(namespace=backend.ns, pool="docs", index=0, warm_pool="warm")
    )

    warm = cluster.get_warm_pool(backend.ns, "warm")
    assert warm is not None and (warm.template, warm.replicas) == ("developer", 3)
    assert cluster.get_warm_pool(backend.ns, "cold") is None
    sandbox = cluster.get_sandbox(backend.ns, "sandbox-docs-0")
    assert sandbox is not None and sandbox.labels == POOL
    assert cluster.get_sandbox_claim(backend.ns, "claim-docs-0") is not None
    assert cluster.delete_sandbox(backend.ns, "sandbox-docs-0") is True
    assert cluster.delete_sandbox(backend.ns, "sandbox-docs-0") is False
    assert cluster.get_sandbox(backend.ns, "sandbox-docs-0") is None
    assert cluster.delete_sandbox_claim(backend.ns, "claim-docs-0") is True
    assert cluster.delete_sandbox_claim(backend.ns, "missing") is False


def test_a_warm_pool_being_deleted_says_so(backend: Backend) -> None:
    """A pool claiming from a warm pool on its way out would never be served (spec 2.3
    step 9 refuses it): the lookup reports the deletion."""
    pool: JSON = {
        "apiVersion": "extensions.agents.x-k8s.io/v1beta1",
        "kind": "SandboxWarmPool",
        "metadata": {"name": "going"},
        "spec": {"replicas": 1, "sandboxTemplateRef": {"name": "developer"}},
    }
    backend.put_deleting("sandboxwarmpools", pool)
    backend.put("sandboxwarmpools", {**pool, "metadata": {"name": "staying"}})
    going = backend.cluster.get_warm_pool(backend.ns, "going")
    staying = backend.cluster.get_warm_pool(backend.ns, "staying")
    assert going is not None and going.deleting
    assert staying is not None and not staying.deleting
