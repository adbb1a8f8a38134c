"""Adapter behaviour only a real API server shows: errors, canonical quantities, discovery of
missing CRDs (on a throwaway server) and watches."""

from __future__ import annotations

import pathlib
import queue

import pytest

from context_service.adapters.kubernetes.cluster import KubernetesCluster
from context_service.adapters.kubernetes.rest import PVCS, Rest
from context_service.domain.cluster import (
    BuiltinRuntime,
    Change,
    ClusterError,
    ContextClaim,
    ContextSnapshot,
    PoolSandbox,
    PoolSandboxClaim,
)
from tests.support.kube import running_apiserver

pytestmark = pytest.mark.k8s


def test_sizes_read_back_in_canonical_form(kube_cluster: KubernetesCluster, kube_ns: str) -> None:
    kube_cluster.ensure_context_claim(
        ContextClaim(
            namespace=kube_ns,
            context="notes",
            type="memory",
            size="1024Mi",
            access_mode="ReadWriteMany",
        )
    )
    claim = kube_cluster.get_claim(kube_ns, "context-notes")
    assert claim is not None and claim.size == "1Gi"


def test_server_errors_carry_status_reason_and_message(
    kube_cluster: KubernetesCluster, kube_ns: str
) -> None:
    with pytest.raises(ClusterError) as invalid:
        kube_cluster.ensure_context_claim(
            ContextClaim(
                namespace=kube_ns,
                context="notes",
                type="memory",
                size="1Gi",
                access_mode="Sometimes",
            )
        )
    assert (invalid.value.status, invalid.value.reason) == (422, "Invalid")
    assert 'Unsupported value: "Sometimes"' in invalid.value.message

    with pytest.raises(ClusterError) as malformed:
        kube_cluster.ensure_context_claim(
            ContextClaim(
                namespace=kube_ns,
                context="notes",
                type="memory",
                size="lots",
                access_mode="ReadWriteOnce",
            )
        )
    assert (malformed.value.status, malformed.value.reason) == (400, "BadRequest")

    with pytest.raises(ClusterError) as missing_namespace:
        kube_cluster.ensure_sandbox(
            PoolSandbox(
                namespace=f"{kube_ns}-absent",
                pool="p",
                index=0,
                replicas=1,
                claim="c",
                runtime=BuiltinRuntime(image="i"),
            )
        )
    assert missing_namespace.value.not_found and not missing_namespace.value.api_not_installed


def test_unreachable_server_is_a_503_cluster_error(kube_api: object) -> None:
    from kubernetes.client import ApiClient, Configuration

    configuration = Configuration()
    configuration.host = "https://127.0.0.1:1"
    configuration.retries = False
    api = ApiClient(configuration)
    try:
        with pytest.raises(ClusterError) as error:
            KubernetesCluster(Rest(api)).list_storage_classes()
    finally:
        api.close()
    assert error.value.status == 503


def test_watch_reports_changes_until_stopped(kube_cluster: KubernetesCluster, kube_ns: str) -> None:
    changes: queue.Queue[Change] = queue.Queue()
    watch = kube_cluster.watch(kube_ns, changes.put)
    try:
        # the watch starts from a fresh list; give it a moment, then change things
        claim = ContextClaim(
            namespace=kube_ns, context="w", type="memory", size="1Gi", access_mode="ReadWriteOnce"
        )
        seen: set[tuple[str, str, bool]] = set()
        for _ in range(50):
            kube_cluster.ensure_context_claim(claim)
            try:
                change = changes.get(timeout=0.2)
            except queue.Empty:
                continue
            seen.add((change.kind, change.name, change.deleted))
            break
        kube_cluster.delete_claim(kube_ns, "context-w")
        while ("persistentvolumeclaims", "context-w", True) not in seen:
            change = changes.get(timeout=5)
            seen.add((change.kind, change.name, change.deleted))
    finally:
        watch.stop()
    assert ("persistentvolumeclaims", "context-w", False) in seen
    assert all(not t.is_alive() for t in watch._threads)


@pytest.mark.slow
def test_missing_crds_are_discovered_on_a_bare_server(
    kube_bin_dir: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    with running_apiserver(kube_bin_dir, tmp_path, crds=None) as plane:
        api = plane.api_client()
        try:
            cluster = KubernetesCluster(Rest(api))
            cluster.ensure_namespace("bare")
            assert not cluster.has_resource("snapshot.storage.k8s.io", "v1", "volumesnapshots")
            assert not cluster.has_resource("agents.x-k8s.io", "v1beta1", "sandboxes")
            assert cluster.get_sandbox_template("bare", "developer") is None
            assert cluster.get_warm_pool("bare", "warm") is None
            assert cluster.get_snapshot("bare", "s") is None
            assert cluster.delete_sandbox_claim("bare", "c") is False
            assert cluster.list_pool_objects("bare", "p").sandboxes == ()
            assert cluster.list_snapshots("bare") == []
            with pytest.raises(ClusterError) as classes:
                cluster.list_snapshot_classes()
            assert classes.value.api_not_installed and classes.value.status == 404
            with pytest.raises(ClusterError) as create:
                cluster.ensure_sandbox_claim(
                    PoolSandboxClaim(namespace="bare", pool="p", index=0, warm_pool="w")
                )
            assert create.value.api_not_installed
            with pytest.raises(ClusterError) as snapshot:
                cluster.ensure_snapshot(
                    ContextSnapshot(
                        namespace="bare",
                        context="c",
                        snapshot="s",
                        type="memory",
                        snapshot_class="x",
                        size="1Gi",
                        access_mode="ReadWriteOnce",
                        storage_class="",
                    )
                )
            assert snapshot.value.api_not_installed
            assert cluster.list_storage_classes() == []
            assert cluster.rest.items(PVCS.path("bare")) == []
        finally:
            api.close()
