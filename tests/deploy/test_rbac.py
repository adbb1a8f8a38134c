"""The service under the deploy manifests' ServiceAccount, on an API server that enforces RBAC:
every call of the cluster port is allowed and together they need every grant (nothing is
missing, nothing is excess), and the pool and context scenario converges end to end through
HTTP with the reconciler running, without one request being denied."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
import yaml
from litestar.testing import TestClient

from context_service import bootstrap
from context_service.adapters.kubernetes.access import (
    GRANTS,
    QUERY_MIRROR,
    Access,
    granted,
)
from context_service.adapters.kubernetes.client import close
from context_service.adapters.kubernetes.cluster import KubernetesCluster
from context_service.adapters.kubernetes.rest import Rest
from context_service.config import Settings
from context_service.devcluster.controlplane import ControlPlane
from context_service.devcluster.devsim import DevSimulator
from context_service.domain.cluster import (
    SANDBOXES,
    BuiltinRuntime,
    ClusterError,
    ContextClaim,
    ContextSnapshot,
    PoolSandbox,
    PoolSandboxClaim,
    QueryIndexMirror,
    WorkspaceClaim,
    query_mirror_name,
    snapshot_object_name,
)
from tests.support.deploy import (
    RecordingRest,
    client_as,
    kubectl,
    render,
    service_account_token,
)
from tests.support.kube import running_apiserver
from tests.support.pool_fixtures import IMAGE, Seed, eventually

pytestmark = [pytest.mark.k8s, pytest.mark.slow]
SERVICE_NS = "cs-system"  # where the manifests are deployed: CS_NAMESPACE
EVERY_GRANT = {(g.resource.group, g.resource.plural, v) for g in GRANTS for v in g.verbs}
REVISION = "ab" * 32
WATCHED = {"persistentvolumeclaims", "pods", "sandboxes", "sandboxclaims", "volumesnapshots"}


@pytest.fixture(scope="module")
def plane(kube_bin_dir: pathlib.Path,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """A server of its own that enforces RBAC (the session server allows everything)."""
    work = tmp_path_factory.mktemp("kube-rbac")
    with running_apiserver(kube_bin_dir, work, authorization="RBAC") as server:
        yield server


@pytest.fixture(scope="module")
def admin(plane: ControlPlane) -> Iterator[Rest]:
    api = plane.api_client()
    yield Rest(api)
    close(api)


@pytest.fixture(scope="module")
def token(plane: ControlPlane, admin: Rest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The manifests (with the query-mirror component) applied; a token of their account."""
    KubernetesCluster(admin).ensure_namespace(SERVICE_NS)
    docs = render(tmp_path_factory.mktemp("overlay"), SERVICE_NS, mirror=True)
    kubectl("apply", "-f", "-", kubeconfig=plane.kubeconfig, stdin=yaml.safe_dump_all(docs))
    seed = Seed(admin, SERVICE_NS)  # platform objects the pools refer to
    seed.template("dev")
    seed.warm_pool("warm", "dev")
    seed.claim("team-data")
    return service_account_token(admin, SERVICE_NS)


@pytest.fixture
def recording(plane: ControlPlane, token: str) -> Iterator[RecordingRest]:
    api = client_as(plane, token)
    yield RecordingRest(api)
    close(api)


@pytest.fixture
def service(recording: RecordingRest) -> KubernetesCluster:
    """The cluster port as the service builds it in a Pod of the manifests."""
    return KubernetesCluster(recording, pool_namespace=SERVICE_NS)


def namespace(admin: Rest, name: str) -> str:
    KubernetesCluster(admin).ensure_namespace(name)
    return name


def asked(recording: RecordingRest) -> set[tuple[str, str, str]]:
    return {(a.group, a.resource, a.verb) for a in recording.accesses}


def assert_all_granted(recording: RecordingRest) -> None:
    assert recording.denied == []
    outside = [a for a in sorted(recording.accesses)
               if not granted(a, SERVICE_NS, frozenset({QUERY_MIRROR}))]
    assert outside == []


def test_every_port_call_is_allowed_and_together_they_need_every_grant(
        admin: Rest, recording: RecordingRest, service: KubernetesCluster) -> None:
    ns = namespace(admin, "team-a")  # contexts live in any namespace
    sa = service
    assert sa.has_resource(*SANDBOXES)
    sa.list_storage_classes()
    sa.list_snapshot_classes()

    claim = ContextClaim(namespace=ns, context="sweep", type="memory", size="1Gi",
                         access_mode="ReadWriteOnce")
    assert sa.ensure_context_claim(claim)
    revised = msgspec.structs.replace(
        claim, annotations={"context.rossoctl.io/current-revision": "ab" * 32})
    assert not sa.ensure_context_claim(revised)  # exists: labels and annotations patched
    assert sa.get_claim(ns, "context-sweep") is not None
    assert "context-sweep" in {c.name for c in sa.list_context_claims(None)}
    assert [c.name for c in sa.list_context_claims(ns)] == ["context-sweep"]
    Seed(admin, ns).pod("reader", "context-sweep")
    assert [c.pod for c in sa.list_claim_consumers(ns, "context-sweep")] == ["reader"]

    assert sa.get_sandbox_template(SERVICE_NS, "dev") is not None
    assert sa.get_warm_pool(SERVICE_NS, "warm") is not None
    workspace = WorkspaceClaim(namespace=SERVICE_NS, pool="sweep", index=0, replicas=1,
                               size="1Gi", access_mode="ReadWriteOnce")
    assert sa.ensure_workspace_claim(workspace)
    assert sa.restore_workspace_claim(workspace)  # drift repair: server-side apply
    sandbox = PoolSandbox(namespace=SERVICE_NS, pool="sweep", index=0, replicas=1,
                          claim="sweep-workspace-0", runtime=BuiltinRuntime(image=IMAGE))
    assert sa.ensure_sandbox(sandbox)
    assert sa.restore_sandbox(sandbox)
    assert sa.get_sandbox(SERVICE_NS, "sandbox-sweep-0") is not None
    sandbox_claim = PoolSandboxClaim(namespace=SERVICE_NS, pool="sweep", index=0,
                                     warm_pool="warm")
    assert sa.ensure_sandbox_claim(sandbox_claim)
    assert sa.restore_sandbox_claim(sandbox_claim)
    assert sa.get_sandbox_claim(SERVICE_NS, "claim-sweep-0") is not None
    objects = sa.list_pool_objects(SERVICE_NS, "sweep")
    assert [s.name for s in objects.sandboxes] == ["sandbox-sweep-0"]
    assert len(sa.list_pool_objects(SERVICE_NS).sandbox_claims) >= 1

    snapshot = ContextSnapshot(namespace=ns, context="sweep", snapshot="s1", type="memory",
                               snapshot_class="fast", size="1Gi", access_mode="ReadWriteOnce",
                               storage_class="fast")
    assert sa.ensure_snapshot(snapshot)
    object_name = snapshot_object_name("sweep", "s1")
    assert sa.get_snapshot(ns, object_name) is not None
    assert [s.name for s in sa.list_snapshots(ns)] == [object_name]
    assert [s.name for s in sa.list_snapshots(ns, "sweep")] == [object_name]

    index = '{"revision":"r1","records":[]}'
    sa.apply_query_mirror(QueryIndexMirror(namespace=ns, context="sweep", type="memory",
                                           revision="r1", index_json=index))
    assert sa.get_query_mirror(ns, "sweep") == index

    watch = sa.watch(None, lambda change: None)
    try:
        eventually(lambda: {a.resource for a in recording.accesses if a.verb == "watch"}
                   == WATCHED, timeout=10)
    finally:
        watch.stop()

    assert sa.delete_query_mirror(ns, "sweep")
    assert sa.delete_snapshot(ns, object_name)
    assert sa.delete_sandbox_claim(SERVICE_NS, "claim-sweep-0")
    assert sa.delete_sandbox(SERVICE_NS, "sandbox-sweep-0")
    assert sa.delete_claim(SERVICE_NS, "sweep-workspace-0")
    assert sa.delete_claim(ns, "context-sweep")

    assert_all_granted(recording)
    assert asked(recording) == EVERY_GRANT  # nothing granted that the code never asks for
    pool_watches = {a for a in recording.accesses
                    if a.verb == "watch" and a.resource in ("sandboxes", "sandboxclaims")}
    assert {a.namespace for a in pool_watches} == {SERVICE_NS}


def test_rbac_is_enforced_outside_the_grants(admin: Rest, service: KubernetesCluster) -> None:
    ns = namespace(admin, "team-a")
    stray = PoolSandbox(namespace=ns, pool="stray", index=0, replicas=1, claim="x",
                        runtime=BuiltinRuntime(image=IMAGE))
    with pytest.raises(ClusterError) as denied:  # the Role holds only in CS_NAMESPACE
        service.ensure_sandbox(stray)
    assert denied.value.status == 403
    with pytest.raises(ClusterError) as listed:
        service.rest.items("/api/v1/secrets")
    assert listed.value.status == 403


def until_ready(client: TestClient[Any], sim: DevSimulator, path: str) -> dict[str, Any]:
    def ready() -> dict[str, Any] | None:
        sim.run_once()
        body: dict[str, Any] = client.get(path).json()
        return body if body.get("status") == "ready" else None

    return eventually(ready, timeout=30, interval=0.1)


@pytest.mark.postgres
def test_pools_and_contexts_converge_under_the_service_account(
        admin: Rest, recording: RecordingRest, service: KubernetesCluster, database_url: str,
        tmp_path: pathlib.Path) -> None:
    ns = namespace(admin, "team-b")
    settings = Settings(data_dir=tmp_path, sandbox_image=IMAGE, kube_mode="off",
                        namespace=SERVICE_NS, mirror_query_index=True,
                        workers=("projections", "query-index", "reconciler", "snapshots"))
    container = bootstrap.build(settings, url=database_url, pool_size=4)
    container.cluster = service
    sim = DevSimulator(admin)  # node-side controllers, as an administrator
    try:
        bootstrap.adopt(container)  # what `serve` does first
        container.start_workers()
        with TestClient(app=bootstrap.app(container)) as http:
            pools = {
                "ded": {"replicas": 2, "workspace": {"size": "1Gi",
                                                     "accessMode": "ReadWriteOnce"}},
                "sha": {"replicas": 2, "workspace": {"size": "1Gi",
                                                     "accessMode": "ReadWriteMany"}},
                "ext": {"replicas": 1, "workspace": {"claimName": "team-data",
                                                     "readOnly": True}},
                "wrm": {"replicas": 2, "warmPoolRef": "warm"}}
            for name, body in pools.items():
                answer = http.post("/v1/sandbox-pools", json={"name": name, **body})
                assert answer.status_code == 201, answer.text
            context = {"name": "notes", "namespace": ns, "type": "memory",
                       "storage": {"backend": "pvc", "size": "1Gi",
                                   "accessMode": "ReadWriteOnce"}}
            assert http.post("/v1/contexts", json=context).status_code == 201
            base = f"/v1/namespaces/{ns}/contexts/notes"
            grant = {"subject": {"kind": "agent", "name": "bot"}, "permissions": ["read"]}
            assert http.put(f"{base}/grants", json=grant).status_code == 200
            revision = {"id": REVISION, "createdAt": "2026-01-01T00:00:00Z",
                        "operation": "sync", "files": 1, "bytes": 1}
            assert http.post(f"{base}/revisions", json=revision).status_code == 201
            index = {"revision": REVISION, "records": [
                {"id": "m1", "context": "notes", "type": "memory", "revision": REVISION,
                 "text": "remember the milk"}]}
            answer = http.put(f"{base}/query-index", json=index)
            assert answer.status_code == 204, answer.text
            mirror = f"/api/v1/namespaces/{ns}/configmaps/{query_mirror_name('notes')}"
            eventually(lambda: admin.find(mirror) is not None, timeout=30)

            for name in pools:
                assert until_ready(http, sim, f"/v1/sandbox-pools/{name}")["readyReplicas"] >= 1
            assert until_ready(http, sim, base)["status"] == "ready"
            Seed(admin, ns).pod("reader", "context-notes", read_only=True)
            eventually(lambda: http.get(f"{base}/consumers").json()["items"] != [], timeout=30)
            assert http.get("/v1/storage-classes").status_code == 200

            for name in pools:
                assert http.delete(f"/v1/sandbox-pools/{name}").status_code == 204
            assert http.delete(f"{base}?force=true").status_code == 204

            def gone() -> bool:
                sim.run_once()
                left = admin.items(f"/apis/agents.x-k8s.io/v1beta1/namespaces/{SERVICE_NS}/"
                                   "sandboxes", "context.rossoctl.io/pool")
                return not left and admin.find(mirror) is None and admin.find(
                    f"/api/v1/namespaces/{ns}/persistentvolumeclaims/context-notes") is None

            eventually(gone, timeout=30, interval=0.2)
    finally:
        container.close()
    assert_all_granted(recording)
    assert {a for a in recording.accesses if a.verb in ("create", "delete")} >= {
        Access("create", "agents.x-k8s.io", "sandboxes", SERVICE_NS),
        Access("create", "extensions.agents.x-k8s.io", "sandboxclaims", SERVICE_NS),
        Access("create", "", "persistentvolumeclaims", ns),
        Access("delete", "", "persistentvolumeclaims", ns),
        Access("delete", "", "configmaps", ns)}
