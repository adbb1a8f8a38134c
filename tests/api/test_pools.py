"""POST /v1/sandbox-pools through HTTP against the real API server: every validation message of
spec 2.3 in order, the 409 rules of spec 1.12 step 4, the create response shapes, and the
storage-class view (spec 1.4)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from context_service import bootstrap
from context_service.adapters.kubernetes.cluster import SANDBOX, KubernetesCluster
from context_service.adapters.kubernetes.rest import STORAGE_CLASSES, Rest
from context_service.config import Settings
from context_service.devcluster.devsim import DevSimulator
from context_service.domain.cluster import BuiltinRuntime, PoolSandbox, PoolSandboxClaim
from tests.support.fake_cluster import FakeCluster
from tests.support.pool_fixtures import IMAGE, Seed, eventually

pytestmark = [pytest.mark.k8s, pytest.mark.postgres]
POOLS = "/v1/sandbox-pools"
NAME_MESSAGE = "name must be a lowercase Kubernetes name no longer than 50 characters"
WS = {"size": "1Gi", "accessMode": "ReadWriteOnce"}


def error(response: Any) -> tuple[int, str, str]:
    body = response.json()
    return response.status_code, body["error"], body["message"]


def bad(message: str) -> tuple[int, str, str]:
    return 400, "invalid_request", message


# --- spec 2.3 steps 1-8: request validation, first failure wins ---------------------------------

VALIDATION = [
    ({"replicas": 1, "workspace": WS}, NAME_MESSAGE),
    ({"name": "Bad", "replicas": 0}, NAME_MESSAGE),
    ({"name": "a" * 51, "replicas": 1, "workspace": WS}, NAME_MESSAGE),
    ({"name": "a.b", "replicas": 1, "workspace": WS}, NAME_MESSAGE),
    ({"name": "p", "workspace": WS}, "replicas must be between 1 and 100"),
    ({"name": "p", "replicas": 0, "sandboxProfile": "Bad"}, "replicas must be between 1 and 100"),
    ({"name": "p", "replicas": 101, "workspace": WS}, "replicas must be between 1 and 100"),
    ({"name": "p", "replicas": 1, "sandboxProfile": "Bad_", "warmPoolRef": "w"},
     "sandboxProfile must be a lowercase Kubernetes name"),
    ({"name": "p", "replicas": 1, "sandboxProfile": "dev", "warmPoolRef": "Bad"},
     "sandboxProfile cannot be combined with warmPoolRef; "
     "the warm pool already selects a template"),
    ({"name": "p", "replicas": 1, "warmPoolRef": "Bad", "workspace": WS},
     "warmPoolRef must be a lowercase Kubernetes name"),
    ({"name": "p", "replicas": 1, "warmPoolRef": "w", "workspace": {"size": "1Gi"}},
     "warmPoolRef cannot be combined with workspace settings"),
    ({"name": "p", "replicas": 1, "warmPoolRef": "w", "workspace": {"readOnly": False}},
     "warmPoolRef cannot be combined with workspace settings"),
    ({"name": "p", "replicas": 1, "warmPoolRef": "w", "workspace": {"storageClass": "x"}},
     "warmPoolRef cannot be combined with workspace settings"),
    ({"name": "p", "replicas": 1, "workspace": {"claimName": "Bad", "size": "1Gi"}},
     "workspace.claimName must be a lowercase Kubernetes name"),
    ({"name": "p", "replicas": 1, "workspace": {"claimName": "c", "accessMode": "ReadWriteOnce"}},
     "workspace.claimName cannot be combined with size, accessMode, or storageClass"),
    ({"name": "p", "replicas": 1, "workspace": {"claimName": "c", "storageClass": "x"}},
     "workspace.claimName cannot be combined with size, accessMode, or storageClass"),
    ({"name": "p", "replicas": 1, "workspace": {"claimName": "c"}},
     "workspace.readOnly is required with workspace.claimName"),
    ({"name": "p", "replicas": 1, "workspace": {"readOnly": True, "size": "x"}},
     "workspace.readOnly requires workspace.claimName"),
    ({"name": "p", "replicas": 1}, "workspace.size is required"),
    ({"name": "p", "replicas": 1, "workspace": {"size": "  ", "accessMode": "x"}},
     "workspace.size is required"),
    ({"name": "p", "replicas": 1, "workspace": {"size": "1Gb", "accessMode": "x"}},
     "workspace.size must be a positive Kubernetes quantity"),
    ({"name": "p", "replicas": 1, "workspace": {"size": "0", "accessMode": "ReadWriteOnce"}},
     "workspace.size must be a positive Kubernetes quantity"),
    ({"name": "p", "replicas": 1, "workspace": {"size": "1Gi"}},
     "workspace.accessMode must be ReadWriteMany or ReadWriteOnce"),
    ({"name": "p", "replicas": 1, "workspace": {"size": "1Gi", "accessMode": "ReadOnlyMany"}},
     "workspace.accessMode must be ReadWriteMany or ReadWriteOnce"),
]


def test_request_validation_messages_in_order(pool_client: TestClient[Any]) -> None:
    for body, message in VALIDATION:
        assert error(pool_client.post(POOLS, json=body)) == bad(message), body
    assert pool_client.get(POOLS).json() == {"items": []}


def test_body_decoding_comes_first(pool_client: TestClient[Any]) -> None:
    assert error(pool_client.post(POOLS, content=b"")) == bad("request body is required")
    status, code, _ = error(pool_client.post(POOLS, json={"name": "p", "bogus": 1}))
    assert (status, code) == (400, "invalid_request")
    status, code, _ = error(pool_client.post(POOLS, json={"name": "p", "replicas": "3"}))
    assert (status, code) == (400, "invalid_request")


# --- spec 2.3 step 9: references checked against the cluster -------------------------------------


def ref(detail: str) -> tuple[int, str, str]:
    return bad(f"invalid sandbox pool: {detail}")


def test_reference_messages(pool_client: TestClient[Any], seed: Seed) -> None:
    def post(**body: Any) -> tuple[int, str, str]:
        return error(pool_client.post(POOLS, json={"name": "p", "replicas": 2, **body}))

    seed.template("dev")
    seed.claim("rwo", modes=("ReadWriteOnce",))
    seed.template("novol", {"podTemplate": {"spec": {"containers": [
        {"name": "c", "volumeMounts": [{"name": "workspace", "mountPath": "/w"}]}]}}})
    seed.template("vol", {"podTemplate": {"spec": {"containers": [{"name": "c"}],
                                                   "volumes": [{"name": "workspace"}]}}})
    seed.template("init", {"podTemplate": {"spec": {"containers": [{"name": "c"}],
                  "initContainers": [{"name": "i", "volumeMounts": [{"name": "workspace"}]}]}}})
    seed.template("vct", {"podTemplate": {"spec": {"containers": [{"name": "c"}]}},
                          "volumeClaimTemplates": [{"metadata": {"name": "x"}, "spec": {}}]})
    seed.template("empty", {"podTemplate": {"spec": {"containers": []}}})
    seed.template("scalar", {"podTemplate": {"spec": {"containers": ["c"]}}})

    assert post(warmPoolRef="nope") == ref('warm pool "nope" not found')
    assert post(sandboxProfile="nope", workspace={"claimName": "missing", "readOnly": True}) == \
        ref('sandbox profile "nope" not found')
    assert post(sandboxProfile="empty", workspace=WS) == \
        ref('sandbox profile "empty" must define a container')
    assert post(sandboxProfile="scalar", workspace=WS) == \
        ref('sandbox profile "scalar" has an invalid first container')
    for name in ("novol", "vol", "init"):
        assert post(sandboxProfile=name, workspace=WS) == \
            ref(f'sandbox profile "{name}" uses reserved volume name "workspace"')
    assert post(sandboxProfile="vct", workspace=WS) == ref(
        'sandbox profile "vct" must not define volumeClaimTemplates; '
        'request storage through workspace')
    assert post(sandboxProfile="dev", workspace={"claimName": "missing", "readOnly": True}) == \
        ref('workspace claim "missing" not found')
    assert post(workspace={"claimName": "rwo", "readOnly": False}) == \
        ref('workspace claim "rwo" must support ReadWriteMany for multiple sandboxes')
    one = pool_client.post(POOLS, json={"name": "p", "replicas": 1,
                                        "workspace": {"claimName": "rwo", "readOnly": False}})
    assert one.status_code == 201
    # request validation still comes before any reference
    assert post(name="Bad", warmPoolRef="nope") == bad(NAME_MESSAGE)


@pytest.fixture
def fake_pool_client(tmp_path: Path, database_url: str) -> Iterator[tuple[TestClient[Any],
                                                                          FakeCluster]]:
    """The pool routes over the in-memory cluster, for template shapes our CRDs reject."""
    settings = Settings(data_dir=tmp_path, sandbox_image=IMAGE, kube_mode="off", namespace="p")
    container = bootstrap.build(settings, url=database_url, pool_size=4)
    fake = FakeCluster()
    container.cluster = fake
    container.start_workers(("projections",))
    try:
        with TestClient(app=bootstrap.app(container)) as client:
            yield client, fake
    finally:
        container.close()


def test_template_shape_messages(fake_pool_client: tuple[TestClient[Any], FakeCluster]) -> None:
    client, fake = fake_pool_client
    fake.add_template("p", "nospec", None)
    fake.add_template("p", "nopod", {"volumeClaimTemplates": []})
    fake.add_template("p", "nopodspec", {"podTemplate": {"metadata": {}}})
    fake.add_template("p", "nocontainers", {"podTemplate": {"spec": {}}})
    for profile, detail in (("nospec", "has no spec"), ("nopod", "has no podTemplate"),
                            ("nopodspec", "has no podTemplate.spec"),
                            ("nocontainers", "must define a container")):
        body = {"name": "p", "replicas": 1, "sandboxProfile": profile, "workspace": WS}
        assert error(client.post(POOLS, json=body)) == ref(f'sandbox profile "{profile}" {detail}')
    fake.uninstall("sandboxtemplates")
    fake.uninstall("sandboxwarmpools")
    body = {"name": "p", "replicas": 1, "sandboxProfile": "nospec", "workspace": WS}
    assert error(client.post(POOLS, json=body)) == ref('sandbox profile "nospec" not found')
    body = {"name": "p", "replicas": 1, "warmPoolRef": "w"}
    assert error(client.post(POOLS, json=body)) == ref('warm pool "w" not found')


# --- spec 1.12 step 4: name availability ---------------------------------------------------------

EXISTS = (409, "already_exists", "sandbox pool already exists")


def test_a_live_pool_name_is_taken(pool_client: TestClient[Any]) -> None:
    body = {"name": "p", "replicas": 1, "workspace": WS}
    assert pool_client.post(POOLS, json=body).status_code == 201
    assert error(pool_client.post(POOLS, json={**body, "replicas": 2})) == EXISTS


def test_labelled_or_same_named_objects_take_the_name(
        pool_client: TestClient[Any], kube_cluster: KubernetesCluster, kube_ns: str,
        seed: Seed) -> None:
    runtime = BuiltinRuntime(image=IMAGE)
    kube_cluster.ensure_sandbox(PoolSandbox(namespace=kube_ns, pool="labelled", index=7,
                                            replicas=9, claim="x", runtime=runtime))
    seed.claim("same-workspace")
    seed.claim("ded-workspace-1")
    kube_cluster.ensure_sandbox_claim(PoolSandboxClaim(namespace=kube_ns, pool="other",
                                                       index=0, warm_pool="w"))
    seed.template("dev")
    seed.warm_pool("w", "dev")
    # an unlabelled Sandbox named like one the pool would create
    unlabelled = {"apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox",
                  "metadata": {"name": "sandbox-n-0"},
                  "spec": {"podTemplate": {"spec": {"containers": [{"name": "c"}]}}}}
    kube_cluster.rest.create(SANDBOX.path(kube_ns), unlabelled, "test")
    cases = [
        {"name": "labelled", "replicas": 1, "workspace": WS},
        {"name": "same", "replicas": 1, "workspace": {"size": "1Gi",
                                                      "accessMode": "ReadWriteMany"}},
        {"name": "ded", "replicas": 2, "workspace": WS},
        {"name": "n", "replicas": 1, "workspace": WS},
        {"name": "other", "replicas": 1, "warmPoolRef": "w"},
    ]
    for body in cases:
        assert error(pool_client.post(POOLS, json=body)) == EXISTS, body["name"]
    # objects that exist under other names do not matter
    assert pool_client.post(POOLS, json={"name": "ded", "replicas": 1,
                                         "workspace": WS}).status_code == 201


def test_a_released_pool_holds_its_name_until_its_objects_are_gone(
        pool_client: TestClient[Any], kube_cluster: KubernetesCluster, kube_ns: str, seed: Seed,
        kube_sim: DevSimulator) -> None:
    seed.template("dev")
    seed.warm_pool("w", "dev")
    body = {"name": "agents", "replicas": 2, "warmPoolRef": "w"}
    assert pool_client.post(POOLS, json=body).status_code == 201
    eventually(lambda: len(kube_cluster.list_pool_objects(kube_ns, "agents").sandbox_claims) == 2)
    kube_sim.settle()
    assert pool_client.delete(f"{POOLS}/agents").status_code == 204
    # foreground deletion holds the claims until the garbage collector has run
    eventually(lambda: all(c.deleting for c in
                           kube_cluster.list_pool_objects(kube_ns, "agents").sandbox_claims))
    assert error(pool_client.post(POOLS, json=body)) == EXISTS
    kube_sim.settle()
    assert pool_client.post(POOLS, json=body).status_code == 201


# --- create response shapes ----------------------------------------------------------------------


def test_create_answers_the_spec_example(pool_client: TestClient[Any], seed: Seed) -> None:
    seed.template("developer")
    body = {"name": "shared-review", "replicas": 3, "sandboxProfile": "developer",
            "workspace": {"size": "5Gi", "accessMode": "ReadWriteMany",
                          "storageClass": "ibm-scale-csi"}}
    response = pool_client.post(POOLS, json=body)
    assert response.status_code == 201
    assert response.text == (
        '{"name":"shared-review","status":"provisioning","replicas":3,"readyReplicas":0,'
        '"sandboxSelector":"context.rossoctl.io/pool=shared-review","sandboxProfile":"developer",'
        '"workspace":{"size":"5Gi","accessMode":"ReadWriteMany","storageClass":"ibm-scale-csi"}}')
    assert int(response.headers["X-Context-Position"]) > 0


def test_create_canonicalises_size_and_answers_each_strategy(
        pool_client: TestClient[Any], seed: Seed, kube_ns: str) -> None:
    seed.template("dev")
    seed.warm_pool("w", "dev")
    seed.claim("team-data", size="2048Mi", modes=("ReadWriteMany", "ReadOnlyMany"))
    dedicated = pool_client.post(POOLS, json={"name": "ded", "replicas": 2, "workspace": {
        "size": "1024Mi", "accessMode": "ReadWriteOnce"}})
    assert dedicated.text == (
        '{"name":"ded","status":"provisioning","replicas":2,"readyReplicas":0,'
        '"sandboxSelector":"context.rossoctl.io/pool=ded",'
        '"workspace":{"size":"1Gi","accessMode":"ReadWriteOnce"}}')
    warm = pool_client.post(POOLS, json={"name": "warm", "replicas": 1, "warmPoolRef": "w"})
    assert warm.text == (
        '{"name":"warm","status":"provisioning","replicas":1,"readyReplicas":0,'
        '"sandboxSelector":"context.rossoctl.io/pool=warm","warmPoolRef":"w",'
        '"workspace":{"size":"","accessMode":""}}')
    existing = pool_client.post(POOLS, json={"name": "ext", "replicas": 2, "workspace": {
        "claimName": "team-data", "readOnly": True}})
    assert existing.status_code == 201
    assert existing.text == (
        '{"name":"ext","status":"provisioning","replicas":2,"readyReplicas":0,'
        '"sandboxSelector":"context.rossoctl.io/pool=ext","workspace":{"size":"2Gi",'
        '"accessMode":"ReadWriteMany","claimName":"team-data","readOnly":true}}')
    listed = pool_client.get(POOLS).json()["items"]
    assert [p["name"] for p in listed] == ["ded", "ext", "warm"]


# --- storage classes ----------------------------------------------------------------------------


def test_storage_classes_view(pool_client: TestClient[Any], kube_rest: Rest,
                              kube_ns: str) -> None:
    driver = f"{kube_ns}.csi.test"
    made = [f"{kube_ns}-a", f"{kube_ns}-b"]
    classes: list[dict[str, Any]] = [
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
         "metadata": {"name": made[1], "annotations": {
             "storageclass.beta.kubernetes.io/is-default-class": "true"}},
         "provisioner": driver, "volumeBindingMode": "WaitForFirstConsumer",
         "reclaimPolicy": "Retain", "allowVolumeExpansion": True},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
         "metadata": {"name": made[0]}, "provisioner": driver},
    ]
    try:
        for body in classes:
            kube_rest.create(STORAGE_CLASSES.path(), body, "test")
        response = pool_client.get("/v1/storage-classes")
        assert response.status_code == 200
        items = [i for i in response.json()["items"] if i["provisioner"] == driver]
        assert items == [
            {"name": made[0], "default": False, "provisioner": driver,
             "volumeBindingMode": "Immediate", "reclaimPolicy": "Delete",
             "allowVolumeExpansion": False},
            {"name": made[1], "default": True, "provisioner": driver,
             "volumeBindingMode": "WaitForFirstConsumer", "reclaimPolicy": "Retain",
             "allowVolumeExpansion": True}]
        names = [i["name"] for i in response.json()["items"]]
        assert names == sorted(names)
        assert '"name":"' + made[0] + '","default":false,"provisioner"' in response.text
    finally:
        for name in made:
            kube_rest.delete(STORAGE_CLASSES.path(None, name))
